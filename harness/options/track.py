"""Running a track's plan (``harness track``, ``harness preflight``, ``harness shim-allow``): which
tier, which variables, which rehearsal sizes, and where the run writes."""

from __future__ import annotations

from types import MappingProxyType

from harness.options import Option

TIER = Option("tier", help="memory tier of the plan (its tiers: see the plan file)")
SET = Option(
    "set",
    many=True,
    default=(),
    metavar="NAME=VALUE",
    help="override one of the plan's variables (repeatable), e.g. --set REQUESTS=8",
)
RUN_DIR = Option(
    "run-dir",
    help="the run directory (track: default runs/<date>-<plan>; preflight: where the run will write, "
    "its free disk checked)",
    defaults=MappingProxyType({"preflight": "runs"}),
)
REHEARSE = Option(
    "rehearse",
    bool,
    False,
    "run a GPU track's own plan on this machine's CPU stand-ins (harness/data/rehearsals/); its "
    "records say rehearsal, its run directory is runs/<date>-rehearsal-<plan>",
)
QUICK = Option("quick", bool, False, "with --rehearse: the overlay's quick sizes (a few minutes a track)")
SMOKE = Option(
    "smoke",
    bool,
    False,
    "with --rehearse: the overlay's smoke sizes, smaller than --quick (every step once at the least "
    "size that passes it; what CI runs)",
)
VIA_SHIM = Option(
    "via-shim",
    bool,
    False,
    "start every engine whose definition has a shim section through the host-side shim "
    "(docs/shim.md); HARNESS_SHIM_URL, HARNESS_SHIM_TOKEN_FILE and HARNESS_SHIM_HOST say where",
)
FINDINGS_FILE = Option("json", metavar="FILE", help="also write the findings as JSON")
VLLM_REQUIREMENT = Option("vllm", help="the pinned vLLM requirement (default: the harness's own pin)")
