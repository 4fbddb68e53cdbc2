"""The admission step's two in-process parts (the serving lab's admission): before its sweep, the level it
runs at (the operating point of the sweep named by ``from``); after it, the admission
recommendation written to the notebook as its own record (``schemas/admission.schema.json``),
built by ``harness.sizing.admission`` from the notebook's level and capacity records."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from harness.sizing import admission
from harness.measure import curves
from harness.records.sizing import Capacity
from harness.records.base import is_admission, is_level
from harness.errors import HarnessError
from harness.records.clock import now_stamp
from harness.records.notebook import append_record, read_records
from harness.run.plans import Step


def _levels(notebook: Path, label: str | None) -> dict[int, dict]:
    if not label or not Path(notebook).is_file():
        return {}
    recs = read_records(notebook, "level", select=lambda o: is_level(o) and o.get("label") == label).records
    return curves.by_label(recs).get(label, {})


def admission_level(notebook: Path, step: Step) -> tuple[int | None, str]:
    """The operating point of the sweep named by the step's ``from`` option, and why; None (and
    why not) when that sweep recorded nothing or no level met the objective."""
    source = step.options.get("from")
    levels = _levels(notebook, source)
    if not levels:
        return None, f"no levels recorded for {source}; its sweep did not run"
    d = curves.curve(levels)
    if d.operating_point is None:
        return (
            None,
            f"no level of {source} met the objective (TTFT p90 <= {d.slo_ttft} s, TPOT p90 <= "
            f"{d.slo_tpot} s), so there is no admission level to recommend",
        )
    return d.operating_point, f"highest level of {source} inside the objective"


def _capacity(notebook: Path, label: str) -> Capacity | None:
    """The latest capacity record of the admission step's label (a search step wrote it)."""
    if not Path(notebook).is_file():
        return None
    recs = read_records(
        notebook, "capacity", select=lambda o: o.get("record") == "capacity" and o.get("label") == label
    ).records
    return Capacity.read(recs[-1]) if recs else None


def record_admission(
    notebook: Path, step: Step, level: int | None, why: str, env: Mapping[str, str] | None = None
) -> dict:
    """The admission recommendation for ``step`` appended to the notebook, and returned: the level
    chosen (None: none qualified, ``why``), the unacceptable region above it and what the step's
    own run measured there (a search step's level is the capacity its record found)."""
    source, label = str(step.options.get("from") or "?"), str(step.options.get("label") or step.id)
    capacity = _capacity(notebook, label) if step.options.get("search") and level is not None else None
    rec = admission.recommend(
        label,
        source,
        _levels(notebook, source),
        _levels(notebook, label),
        level,
        why,
        now_stamp(),
        capacity,
    ).to_dict()
    append_record(notebook, rec, "admission", env)
    return rec


def admission_records(notebook: Path) -> list[dict]:
    """Every admission record in the notebook, in the order written."""
    if not Path(notebook).is_file():
        return []
    return read_records(notebook, "admission", select=is_admission).records


def write_admission(
    notebook: Path,
    step: Step,
    entry: dict,
    out: Callable[[str], None],
    none_why: str | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """The runner's part: the recommendation recorded after the step's run at the level its entry
    chose, or (``none_why``) with no level; printed, and kept in the step's result. A record that
    cannot be written is a warning: the step's own run stands."""
    chosen = entry.get("result") or {}
    level = None if none_why is not None else chosen.get("admission_level")
    try:
        rec = record_admission(notebook, step, level, none_why or chosen.get("why", ""), env)
    except HarnessError as exc:
        out(f"    WARN  no admission record written: {exc}")
        return
    entry["result"] = {**chosen, "verdict": rec["verdict"], "recommendation": rec["recommendation"]}
    out(f"    admission: {rec['recommendation']}")
