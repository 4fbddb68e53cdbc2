"""``harness check`` (``make check``): this machine's memory bandwidth and the speed limit it sets for
the model (bandwidth / model size), measured single-user speeds as a share of that limit,
the notebook's admission recommendations, and whether the practice server is up (the figures are
``harness.report.speed_check``'s)."""

from __future__ import annotations

from pathlib import Path

from harness.report import speed_check
from harness.engines.command_line import api_model
from harness import options
from harness.options.load import BASE_URL
from harness.options.shared import LABBOOK, MACHINE, MODEL_GB


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="print memory bandwidth, the speed limit, and whether the practice server is up"
    )
    options.to_argparse(p, BASE_URL, command="check")
    options.to_argparse(p, MACHINE, command="check")
    options.to_argparse(p, MODEL_GB, command="check")
    options.to_argparse(p, LABBOOK, command="check")
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
