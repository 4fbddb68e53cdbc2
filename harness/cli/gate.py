"""``harness gate``: a candidate's level records against a baseline's, a regression gate that
knows the run-to-run noise (``harness.core.gate``): exit 0 when nothing is worse, 1 when a metric
is worse beyond both the tolerance and the noise, 2 when it cannot decide (no usable records on a
side, a record that is invalid, different conditions or levels, too few repeats to call a
difference worse), with the reason in one line. Reads sweep records and headless Locust records
alike; open-loop levels are matched by their offered rate."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.core import gate
from harness.core.records import is_level
from harness.core.stats import all_worse_chance
from harness.errors import ConfigError
from harness.io.notebook import read_records, special_file
from harness import options
from harness.options.shared import LABBOOK
from harness.options.compare import REGRESSION

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


def tolerance(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ConfigError(f"--tolerance takes a share such as 5% or 0.05, got {text!r}") from None
    if not 0 <= value < 10:
        raise ConfigError(f"--tolerance must be from 0% to below 1000%, got {text!r}")
    return value


def _source(what: str, labbook: str) -> tuple[Path, str]:
    """The notebook ``what`` names and the label in it ("" when the notebook is to say)."""
    if not what.strip():
        raise ConfigError(
            "--baseline and --candidate each name a label, a run directory or a notebook; got ''"
        )
    head, _, tail = what.rpartition(":")
    if Path(what).exists():
        path, label, given = Path(what), "", what
    elif head and Path(head).exists():
        path, label, given = Path(head), tail, head
    elif what.startswith(("/", "./", "../")) or what.endswith(".md") or head.endswith(".md"):
        # a path that is not there (a label may hold a slash, so only these forms)
        raise ConfigError(
            f"no notebook or run directory at {head if head.endswith('.md') else what}; name a label "
            "in --labbook, a run directory or a notebook"
        )
    else:
        path, label, given = Path(labbook), what, "--labbook " + labbook
    if path.is_dir():
        if not (path / "labbook.md").exists():
            raise ConfigError(
                f"{given} is a directory with no labbook.md (for {what!r}); name a run directory, a "
                "notebook or a label"
            )
        path = path / "labbook.md"
    kind = special_file(path, follow=True)
    if kind:
        raise ConfigError(f"{path} is {kind}, not a notebook file (for {what!r}); name a notebook")
    if not path.is_file():
        raise ConfigError(
            f"no notebook at {path} (for {what!r}); name a run directory, a notebook or a label"
        )
    return path, label


def runs_of(what: str, labbook: str) -> tuple[str, dict[float, list[dict]]]:
    """The label and its records per offered level (every run of it) named by ``what``; one line
    (ConfigError) when it names no usable records, or when any of the label's records is invalid
    (a NaN or 1e308 figure, a field out of its schema): the gate decides on every run or none."""
    source, label = _source(what, labbook)
    result = read_records(source, "level", select=is_level)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    labels = sorted({str(r.get("label")) for r in result.records + [obj for obj, _ in result.rejected]})
    if not label:
        if len(labels) != 1:
            raise ConfigError(
                f"{source} holds {len(labels)} labels of level records ({', '.join(labels[:10]) or 'none'}); "
                f"say which as {what}:LABEL"
            )
        label = labels[0]
    bad = [said for obj, said in result.rejected if str(obj.get("label")) == label]
    if bad:
        raise ConfigError(
            f"{len(bad)} level record(s) of {label!r} are invalid and the gate decides on every run or "
            f"none: {bad[0]}"
        )
    mine = [r for r in result.records if r["label"] == label]
    if not mine:
        raise ConfigError(
            f"no level records for label {label!r} in {source}; labels: {', '.join(labels[:10]) or 'none'}"
        )
    try:
        return f"{label} ({source})", gate.by_level(mine)
    except KeyError:
        raise ConfigError(
            f"an open-loop level record of {label!r} in {source} has no rate_rps, so its level is not known"
        ) from None


def run(args) -> int:
    tol = tolerance(args.tolerance)
    base_name, base = runs_of(args.baseline, args.labbook)
    cand_name, cand = runs_of(args.candidate, args.labbook)
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
