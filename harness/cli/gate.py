"""``harness gate``: a candidate's level records against a baseline's, a regression gate that
knows the run-to-run noise (``harness.core.sizing``): exit 0 when nothing is worse, 1 when a metric
is worse beyond both the tolerance and the noise, 2 when it cannot decide (too few repeats,
different conditions, nothing shared). Reads sweep records and headless Locust records alike."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.core import sizing
from harness.core.records import is_level
from harness.core.stats import all_worse_chance
from harness.errors import ConfigError
from harness.io.notebook import read_records

CANNOT_DECIDE = 2


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="regression gate: candidate against baseline, beyond tolerance and noise (exit 0/1/2)",
        description="Compare a candidate's levels with a baseline's, metric by metric at every shared "
        "level. Exit 1 when the candidate's median is worse by more than the tolerance and every "
        "candidate run is worse than every baseline run; 0 when no metric is; 2 when it cannot "
        "decide. Every run recorded for a label at a level counts as one repeat.",
    )
    p.add_argument("--baseline", required=True, metavar="LABEL_OR_RUN", help=_WHAT)
    p.add_argument("--candidate", required=True, metavar="LABEL_OR_RUN", help=_WHAT)
    p.add_argument("--tolerance", default="5%", help="how much worse is tolerated: 5%% or 0.05")
    p.add_argument("--labbook", default="labbook.md", help="the notebook a plain LABEL is read from")
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
        raise ConfigError(f"--tolerance must be between 0% and 1000%, got {text!r}")
    return value


def _notebook(path: Path) -> Path:
    return path / "labbook.md" if path.is_dir() else path


def runs_of(what: str, labbook: str) -> tuple[str, dict[int, list[dict]]]:
    """The label and its records per level (every run of it) named by ``what``."""
    head, _, tail = what.rpartition(":")
    if Path(what).exists():
        source, label = _notebook(Path(what)), ""
    elif head and Path(head).exists():
        source, label = _notebook(Path(head)), tail
    else:
        source, label = Path(labbook), what
    if not source.is_file():
        raise ConfigError(
            f"no notebook at {source} (for {what!r}); name a run directory, a notebook or a label"
        )
    result = read_records(source, "level", select=is_level)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    labels = sorted({str(r["label"]) for r in result.records})
    if not label:
        if len(labels) != 1:
            raise ConfigError(
                f"{source} holds {len(labels)} labels ({', '.join(labels) or 'none'}); say which as "
                f"{what}:LABEL"
            )
        label = labels[0]
    if label not in labels:
        raise ConfigError(
            f"no level records for label {label!r} in {source}; labels: {', '.join(labels) or 'none'}"
        )
    out: dict[int, list[dict]] = {}
    for r in result.records:
        if r["label"] == label and r.get("completed"):
            out.setdefault(int(r["concurrency"]), []).append(r)
    return f"{label} ({source})", out


def run(args) -> int:
    tol = tolerance(args.tolerance)
    base_name, base = runs_of(args.baseline, args.labbook)
    cand_name, cand = runs_of(args.candidate, args.labbook)
    shared = sorted(set(base) & set(cand))
    print(f"==> gate: candidate {cand_name} against baseline {base_name}, tolerance {tol:.0%}")
    why = sizing.gate_undecidable(base, cand)
    if why:
        print(f"    cannot decide: {why}")
        return CANNOT_DECIDE
    m, n = min(len(base[c]) for c in shared), min(len(cand[c]) for c in shared)
    print(
        f"    noise test: worse only when every candidate run is worse than every baseline run "
        f"(by chance at most 1 in {round(1 / all_worse_chance(m, n))} with {m} and {n} runs); "
        "figures are medians of the runs"
    )
    lines = [
        sizing.gate_line(metric, c, base[c], cand[c], tol) for c in shared for metric in sizing.GATE_METRICS
    ]
    for line in lines:
        print(f"    {line.text(tol)}")
    worse = [f"{x.metric} at c={x.level}" for x in lines if x.outcome == "worse"]
    if worse:
        print(f"    FAIL: worse beyond the tolerance and the noise: {', '.join(worse)}")
        return 1
    print("    PASS: no metric is worse beyond both the tolerance and the noise")
    return 0
