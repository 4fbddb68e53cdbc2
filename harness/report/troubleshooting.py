"""The serving lab's load-error rows (``load_errors`` in ``data/diagnoses.yaml``), read once and
validated, for the check (``summarise --check``, the report's validation) and the per-level line."""

from __future__ import annotations

from functools import lru_cache

import yaml

from harness import paths
from harness.records.notebook import validate


@lru_cache(maxsize=1)
def load_errors() -> tuple[dict, ...]:
    path = paths.data_file("diagnoses.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "diagnoses", where=str(path))
    return tuple(data.get("load_errors", []))
