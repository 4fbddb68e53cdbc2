"""``harness export``: which format other tools read, and where the files go (``--out``, which
``harness setup shim-allow`` takes too, for its one file)."""

from __future__ import annotations

from types import MappingProxyType

from harness.options import Option

FORMAT = Option(
    "format",
    default="llm-d",
    help="llm-d: each level as llm-d-benchmark's Benchmark Report v0.2.1 (one JSON file per level); "
    "csv: every level as one row of levels.csv",
    choices=("llm-d", "csv"),
)
OUT = Option(
    "out",
    default="export",
    help="where the output goes: export's folder (made if missing), shim-allow's file",
    defaults=MappingProxyType({"shim-allow": "runs/shim/allow.json"}),
)
