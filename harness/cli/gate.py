"""``harness gate``: a candidate's level records against a baseline's, a regression gate that
knows the run-to-run noise (``harness.sizing.gate``): exit 0 when nothing is worse, 1 when a metric
is worse beyond both the tolerance and the noise, 2 when it cannot decide (no usable records on a
side, a record that is invalid, different conditions or levels, too few repeats to call a
difference worse), with the reason in one line. Reads sweep records and headless Locust records
alike; open-loop levels are matched by their offered rate."""

from __future__ import annotations

import sys
from harness.sizing import gate
from harness.measure.stats import all_worse_chance
from harness import options
from harness.options.shared import LABBOOK
from harness.options.compare import REGRESSION
from harness.sizing.gate_runs import runs_of, tolerance

CANNOT_DECIDE = 2


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="regression gate: candidate against baseline, beyond tolerance and noise (exit 0/1/2)",
        description="Compare a candidate's levels with a baseline's, metric by metric at every level "
        "(both sides must have run alike: the same model, workload, arrival and levels; open-loop "
        "levels are matched by offered rate). Exit 1 when the candidate's median is worse by more "
        "than the tolerance and every candidate run is worse than every baseline run; 0 when no "
        "metric is; 2 when it cannot decide, with the reason. "
        "Every run recorded for a label at a level counts as one repeat.",
    )
    p.add_argument("--baseline", required=True, metavar="LABEL_OR_RUN", help=_WHAT)
    p.add_argument("--candidate", required=True, metavar="LABEL_OR_RUN", help=_WHAT)
    options.to_argparse(p, REGRESSION, command="gate")
    options.to_argparse(p, LABBOOK, command="gate")
    p.set_defaults(func=run)


_WHAT = (
    "a label in --labbook, or a run directory or notebook file (PATH, or PATH:LABEL when it holds "
    "several labels)"
)


def run(args) -> int:
    tol = tolerance(args.tolerance)
    base_name, base, warnings = runs_of(args.baseline, args.labbook)
    cand_name, cand, more = runs_of(args.candidate, args.labbook)
    for warning in warnings + more:
        print(warning, file=sys.stderr)
    print(f"==> gate: candidate {cand_name} against baseline {base_name}, tolerance {tol:.0%}")
    decision = gate.decide(base, cand, tol)
    if decision.lines:
        m, n = min(len(runs) for runs in base.values()), min(len(runs) for runs in cand.values())
        print(
            f"    noise test: worse only when every candidate run is worse than every baseline run "
            f"(by chance at most 1 in {round(1 / all_worse_chance(m, n))} with {m} and {n} runs); "
            "figures are medians of the runs"
        )
    for line in decision.lines:
        print(f"    {line.text(tol)}")
    if decision.why:
        print(f"    cannot decide: {decision.why}")
        return CANNOT_DECIDE
    worse = [f"{x.metric} at {x.level}" for x in decision.lines if x.outcome == "worse"]
    if worse:
        print(f"    FAIL: worse beyond the tolerance and the noise: {', '.join(worse)}")
        return 1
    print("    PASS: no metric is worse beyond both the tolerance and the noise")
    return 0
