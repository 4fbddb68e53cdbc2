"""Records are the contract between measuring and reporting (docs/architecture.md, "Contracts").

A record is one JSON object on one line of a notebook file. The notebook may also hold prose and
other labs' lines: readers skip what is not theirs. Every kind of record has a JSON Schema in the
top-level ``schemas/`` folder; writing validates first (an invalid record is never written) and
reading validates each line, reporting the file, line and field of anything invalid.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import jsonschema

from harness import paths
from harness.errors import SchemaError

SCHEMA_DIR = paths.schemas_dir()


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """The schema ``schemas/<name>.schema.json``, checked to be a valid Draft 2020-12 schema."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise SchemaError(f"no schema named {name!r} (looked for {path}); is the checkout complete?")
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def problems(record: Any, schema_name: str) -> list[str]:
    """Every way ``record`` fails its schema, as ``field: message`` strings (empty when valid)."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    return [f"{_field_path(e)}: {e.message}" for e in errors]


def validate(record: Any, schema_name: str, where: str = "") -> None:
    """Raise SchemaError naming the place and the first bad field, or return quietly."""
    found = problems(record, schema_name)
    if found:
        prefix = f"{where}: " if where else ""
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise SchemaError(f"{prefix}{schema_name} record invalid at {found[0]}{more}")


def append_record(path: str | Path, record: dict, schema_name: str) -> None:
    """Validate, then append one line and flush it to disk before returning."""
    validate(record, schema_name, where=str(path))
    line = json.dumps(record, separators=(", ", ": "), ensure_ascii=False)
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@dataclass(frozen=True)
class ReadResult:
    records: list[dict]
    warnings: list[str]


def read_records(
    path: str | Path,
    schema_name: str,
    select: Callable[[dict], bool] = lambda obj: True,
) -> ReadResult:
    """Every line of ``path`` that is a JSON object chosen by ``select`` and valid for the schema.

    Prose lines and objects ``select`` rejects are skipped silently. A line that looks like JSON
    but does not parse, or a chosen object that fails the schema, is skipped with a warning that
    names the file, the line and the field.
    """
    path = Path(path)
    records: list[dict] = []
    warnings: list[str] = []
    for lineno, raw in enumerate(_lines(path), 1):
        text = raw.strip()
        if not text.startswith("{"):
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            warnings.append(
                f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno}); line skipped"
            )
            continue
        if not isinstance(obj, dict) or not select(obj):
            continue
        found = problems(obj, schema_name)
        if found:
            warnings.append(f"{path}:{lineno}: {schema_name} record invalid at {found[0]}; line skipped")
            continue
        records.append(obj)
    return ReadResult(records, warnings)


def _lines(path: Path) -> Iterable[str]:
    if not path.exists():
        raise SchemaError(f"{path} not found; run the step that writes it first or pass its path")
    with open(path, encoding="utf-8", errors="replace") as fh:
        yield from fh
