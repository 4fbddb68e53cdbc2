"""The runs a comparison reads, from what the command line names: a run directory or a notebook
(each label in it a run), ``PATH:LABEL`` (that label), or a label in ``--labbook``. The names are
the gate's (``harness.sizing.gate_runs.notebook_of``); the records are read and checked as
``harness summarise`` reads them."""

from __future__ import annotations

from pathlib import Path

from harness.compare.sets import Run
from harness.sizing import gate
from harness.records.base import is_level
from harness.errors import ConfigError
from harness.records.notebook import read_records
from harness.report.summary import line_break, negative_figure
from harness.sizing.gate_runs import notebook_of
from harness.records.level import LEVEL


def _labels(records: list[dict]) -> list[str]:
    return list(dict.fromkeys(str(r.get(LEVEL.label)) for r in records))


def _kept(records: list[dict], source: str, warnings: list[str]) -> list[dict]:
    """The records fit to compare; a warning for each one skipped (a negative figure, a line break)."""
    kept = []
    for rec in records:
        bad = negative_figure(rec) or line_break(rec)
        if bad:
            where = f"label {rec.get(LEVEL.label)!r} at c={rec.get(LEVEL.concurrency)}"
            warnings.append(f"warning: {source}: {where}: {bad} is not as measured; record skipped")
        else:
            kept.append(rec)
    return kept


def _runs_in(what: str, labbook: str, warnings: list[str]) -> list[tuple[str, str, list[dict]]]:
    """(label, source, records) for each run ``what`` names."""
    path, label = notebook_of(what, labbook)
    result = read_records(path, "level", select=is_level)
    warnings += [f"warning: {w}" for w in result.warnings]
    records = _kept(result.records, str(path), warnings)
    labels = _labels(records)
    if label and label not in labels:
        raise ConfigError(
            f"no level records for label {label!r} in {path} (for {what!r}); labels: "
            f"{', '.join(labels[:10]) or 'none'}"
        )
    if not labels:
        raise ConfigError(f"{path} holds no level record (for {what!r}); name a notebook a sweep wrote")
    chosen = [label] if label else labels
    return [(name, str(path), [r for r in records if str(r.get(LEVEL.label)) == name]) for name in chosen]


def read_runs(named: list[str], labbook: str) -> tuple[list[Run], list[str]]:
    """Every run the arguments name, in order (one named twice is read once), each with a name
    unique in the comparison (its label, and its notebook where two labels are alike), and the
    warnings of the lines not read. ConfigError (one line) when fewer than two runs are named."""
    warnings: list[str] = []
    found: dict[tuple[str, str], list[dict]] = {}
    for what in named:
        for label, source, records in _runs_in(what, labbook, warnings):
            found.setdefault((label, source), records)
    if len(found) < 2:
        raise ConfigError(
            f"compare needs two runs or more; {' '.join(named)} name(s) {len(found)}: name more run "
            "directories, notebooks or labels"
        )
    names = _names(list(found))
    runs = []
    for (label, source), records in found.items():
        name = names[(label, source)]
        try:
            gate.by_level(records)
        except KeyError:
            raise ConfigError(
                f"an open-loop level record of {label!r} in {source} has no rate_rps, so its level is "
                "not known"
            ) from None
        runs.append(Run(name, source, tuple(records)))
    return runs, warnings


def _names(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A name for each (label, notebook): the label; where two are alike, the label and its run
    directory (or notebook file name); where those are alike too, the label and the whole path."""

    def short(source: str) -> str:
        path = Path(source)
        return path.parent.name if path.name == "labbook.md" and path.parent.name else path.name

    out = {}
    for label, source in keys:
        same = [s for x, s in keys if x == label]
        if len(same) == 1:
            out[(label, source)] = label
        elif len({short(s) for s in same}) == len(same):
            out[(label, source)] = f"{label} ({short(source)})"
        else:
            out[(label, source)] = f"{label} ({source})"
    return out
