"""The runs a regression gate compares: a label, run directory or notebook named on the command
line, read into every run of the label per offered level; and the tolerance, as a share."""

from __future__ import annotations

from pathlib import Path

from harness.sizing import gate
from harness.records.base import is_level
from harness.errors import ConfigError
from harness.records.notebook import read_records, special_file
from harness.records.level import LEVEL


def tolerance(text: str) -> float:
    """``--tolerance`` as a share: 5% or 0.05 (ConfigError, one line, for anything else)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ConfigError(f"--tolerance takes a share such as 5% or 0.05, got {text!r}") from None
    if not 0 <= value < 10:
        raise ConfigError(f"--tolerance must be from 0% to below 1000%, got {text!r}")
    return value


def notebook_of(what: str, labbook: str) -> tuple[Path, str]:
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


def runs_of(what: str, labbook: str) -> tuple[str, dict[float, list[dict]], list[str]]:
    """The label and its records per offered level (every run of it) named by ``what``, with a
    warning for each notebook line not read; one line
    (ConfigError) when it names no usable records, or when any of the label's records is invalid
    (a NaN or 1e308 figure, a field out of its schema): the gate decides on every run or none."""
    source, label = notebook_of(what, labbook)
    result = read_records(source, "level", select=is_level)
    warnings = [f"warning: {w}" for w in result.warnings]
    labels = sorted({str(r.get(LEVEL.label)) for r in result.records + [obj for obj, _ in result.rejected]})
    if not label:
        if len(labels) != 1:
            raise ConfigError(
                f"{source} holds {len(labels)} labels of level records ({', '.join(labels[:10]) or 'none'}); "
                f"say which as {what}:LABEL"
            )
        label = labels[0]
    bad = [said for obj, said in result.rejected if str(obj.get(LEVEL.label)) == label]
    if bad:
        raise ConfigError(
            f"{len(bad)} level record(s) of {label!r} are invalid and the gate decides on every run or "
            f"none: {bad[0]}"
        )
    mine = [r for r in result.records if r[LEVEL.label] == label]
    if not mine:
        raise ConfigError(
            f"no level records for label {label!r} in {source}; labels: {', '.join(labels[:10]) or 'none'}"
        )
    try:
        return f"{label} ({source})", gate.by_level(mine), warnings
    except KeyError:
        raise ConfigError(
            f"an open-loop level record of {label!r} in {source} has no rate_rps, so its level is not known"
        ) from None
