"""``harness export``'s outside world: read the level records of each run directory or notebook
named, and write the reports (llm-d: one JSON file per level, each checked against the vendored
schema first) or one CSV of every level."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jsonschema

from harness import __version__, paths
from harness.records.labels import file_label
from harness.records.base import is_level
from harness.errors import ConfigError, SchemaError
from harness.export import llmd, table
from harness.records.notebook import read_records, special_file

FORMATS = ("llm-d", "csv")


@dataclass
class Exported:
    files: list[Path] = field(default_factory=list)
    levels: int = 0
    warnings: list[str] = field(default_factory=list)


def notebook_path(what: str) -> Path:
    """The notebook a command-line name means: a run directory's labbook.md, or the file itself."""
    path = Path(what)
    if path.is_dir():
        path = path / "labbook.md"
    kind = special_file(path, follow=True) if path.exists() else None
    if not path.is_file() or kind:
        raise ConfigError(f"no notebook at {path}; name a run directory (with labbook.md) or a notebook file")
    return path


@lru_cache(maxsize=1)
def llmd_schema() -> dict:
    """The vendored Benchmark Report schema, checked to be a valid schema."""
    schema = json.loads((paths.schemas_dir() / llmd.SCHEMA_PATH).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def llmd_problems(report: dict) -> list[str]:
    """Every way a report fails llm-d-benchmark's schema (empty when it is valid)."""
    validator = jsonschema.Draft202012Validator(llmd_schema(), format_checker=jsonschema.FormatChecker())
    return [
        f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(report)
    ]


def export(sources: list[str], fmt: str, out: str) -> Exported:
    """Every level of ``sources`` written to ``out`` in ``fmt``; SchemaError before any file is
    written when a report would not validate."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format takes {' or '.join(FORMATS)}, got {fmt!r}")
    done = Exported()
    records: list[dict] = []
    for source in sources:
        path = notebook_path(source)
        found = read_records(path, "level", select=is_level)
        done.warnings += found.warnings
        if not found.records:
            done.warnings.append(f"{path}: no level records")
        records += found.records
    if not records:
        raise ConfigError("no level records in " + ", ".join(sources) + "; run `harness sweep` first")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    done.levels = len(records)
    if fmt == "csv":
        target = folder / "levels.csv"
        with open(target, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(table.COLUMNS)
            writer.writerows(table.row(r) for r in records)
        done.files.append(target)
        return done
    reports = [llmd.report(r, __version__) for r in records]
    for rep in reports:
        bad = llmd_problems(rep)
        if bad:
            raise SchemaError(
                f"the llm-d report of {rep['run']['uid']} fails its schema at {bad[0]}; nothing written"
            )
    for rep in reports:
        target = folder / f"{file_label(rep['run']['uid'])}.json"
        target.write_text(json.dumps(rep, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        done.files.append(target)
    return done
