"""``harness setup shim-allow PLAN``: write the host-side shim's allow-list (shim/harness_shim.py) from the
engine definitions of a plan's shim blocks (``make shim`` runs it before it starts the shim)."""

from __future__ import annotations

import json
from pathlib import Path

from harness import options
from harness.options.export import OUT
from harness.options.shared import LIBRARY
from harness.options.track import QUICK, REHEARSE, SET, SMOKE, TIER, VIA_SHIM
from harness.run.plan_variables import parse_sets, plan_size


def add_parser(sub) -> None:
    p = sub.add_parser(
        "shim-allow",
        help="write the host-side shim's allow-list from a plan's engine definitions",
        description="Write what the shim may start: each shim engine's program, argument templates and "
        "the settings a request may give, with their checks (docs/shim.md).",
    )
    p.add_argument("plan", help="plan file, or a name in tracks/ (cpu-shim)")
    options.to_argparse(p, OUT, command="shim-allow")
    options.to_argparse(p, LIBRARY, command="shim-allow")
    options.to_argparse(p, TIER, command="shim-allow")
    options.to_argparse(p, REHEARSE, command="shim-allow")
    options.to_argparse(p, QUICK, command="shim-allow")
    options.to_argparse(p, SMOKE, command="shim-allow")
    options.to_argparse(p, SET, command="shim-allow")
    options.to_argparse(p, VIA_SHIM, command="shim-allow")
    p.add_argument(
        "--powermetrics",
        action="store_true",
        help="let the shim answer GET /v1/power with macOS's powermetrics (it must run as root)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from harness.run.plans import load_plan
    from harness.run.shim_allow import allow_list, via_shim

    plan = load_plan(
        args.plan, args.tier, parse_sets(args.set), args.rehearse, plan_size(args), args.via_shim
    )
    if args.via_shim:
        via_shim(plan)
    library = str(Path(args.library).expanduser().absolute()) if args.library else None
    data = allow_list(plan, library, args.powermetrics)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    power = " and read powermetrics (as root)" if args.powermetrics else ""
    print(f"==> {out}: the shim may start {', '.join(sorted(data['engines']))}{power}")
    return 0
