"""``harness check`` (``make check``): this machine's memory bandwidth and the speed limit it sets for
the model (seed 002: bandwidth / model size), measured single-user speeds as a share of that limit,
the notebook's admission recommendations, and whether the practice server is up (the figures are
``harness.report.speed_check``'s)."""

from __future__ import annotations

from pathlib import Path

from harness.practice.server import DEFAULT_PORT
from harness.report import speed_check
from harness.report.speed_check import SEED_MODEL_GB
from harness.run.engine_defs import api_model


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="print memory bandwidth, the speed limit, and whether the practice server is up"
    )
    p.add_argument(
        "--base-url", default=f"http://127.0.0.1:{DEFAULT_PORT}/v1", help="practice server base URL"
    )
    p.add_argument(
        "--machine",
        help="machine-table key (spark, strix, m4-max, ...): its bandwidth figure (default: recognised "
        "from the CPU or GPU name, else measured)",
    )
    p.add_argument(
        "--model-gb", type=float, help=f"model size in GB (default {SEED_MODEL_GB}, Day 3's model)"
    )
    p.add_argument(
        "--labbook", default="labbook.md", help="notebook whose single-user speeds to set against the limit"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    served = speed_check.served_models(args.labbook, api_model) if Path(args.labbook).is_file() else []
    for line in speed_check.lines(args.machine, args.model_gb, args.labbook, served):
        print(line)
    profile = speed_check.probe_practice(args.base_url)
    if profile is None:
        print(f"mock:        DOWN (nothing answers at {args.base_url}; start it with `make mock &`)")
        return 1
    seats = profile.get("seats", "?")
    print(
        f"mock:        UP at {args.base_url} (practice server, profile {profile.get('name', '?')}, "
        f"slots={seats}); its timing is made up by its profile, not bound by this machine's limit"
    )
    return 0
