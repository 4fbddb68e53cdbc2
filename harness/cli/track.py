"""``harness track PLAN``: a whole lab in one command (``make track-cpu``, ``make demo``,
``make track-s`` ...). Engines start one at a time; every step's outcome goes to the run manifest;
``--resume`` continues an interrupted run without repeating finished steps; ``--dry-run`` prints
every command the plan would run, and starts nothing."""

from __future__ import annotations

import os

from harness.run.plan_variables import free_ports, parse_sets, plan_size
from harness.run.plans import load_plan


def add_parser(sub) -> None:
    p = sub.add_parser(
        "track",
        help="run a track plan end to end (engines, sweeps, checks, report)",
        description="Run a track plan (tracks/*.yaml) into a run directory.",
    )
    p.add_argument("plan", help="plan file, or a name in tracks/ (practice, cpu, s, n, x, m)")
    p.add_argument("--dry-run", action="store_true", help="print every command in order; start nothing")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir (default: the latest run "
        "of this plan) without repeating finished steps",
    )
    p.add_argument("--run-dir", help="run directory (default: runs/<date>-<plan>)")
    p.add_argument("--tier", help="memory tier of the plan (its tiers: see the plan file)")
    p.add_argument(
        "--rehearse",
        action="store_true",
        help="run a GPU track's own plan on this machine's CPU stand-ins (harness/data/rehearsals/); "
        "its records say rehearsal, its run directory is runs/<date>-rehearsal-<plan>",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="with --rehearse: the overlay's quick sizes (a few minutes a track)",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="with --rehearse: the overlay's smoke sizes, smaller than --quick (every step once at "
        "the least size that passes it; what CI runs)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one of the plan's variables (repeatable), e.g. --set REQUESTS=8",
    )
    p.add_argument(
        "--via-shim",
        action="store_true",
        help="start every engine whose definition has a shim section through the host-side shim "
        "(docs/shim.md); HARNESS_SHIM_URL, HARNESS_SHIM_TOKEN_FILE and HARNESS_SHIM_HOST say where",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from harness.report.run_report import finished_lines
    from harness.run.run_dirs import chosen_run_dir
    from harness.run.runner import Runner

    sets = parse_sets(args.set)
    chosen = free_ports(args.plan, sets)
    for name, port in chosen.items():
        print(f"==> {name}: free port {port} (--set {name}=PORT to choose one)", flush=True)
    plan = load_plan(args.plan, args.tier, {**sets, **chosen}, args.rehearse, plan_size(args), args.via_shim)
    for engine, why in (plan.rehearsal.fallbacks if plan.rehearsal else {}).items():
        print(f"==> {engine}: {why}", flush=True)
    if args.via_shim:
        from harness.run.shim_allow import via_shim

        via_shim(plan, os.environ.get("HARNESS_SHIM_HOST"))
    run_dir = chosen_run_dir(plan, args.run_dir, args.resume)
    runner = Runner(plan, run_dir, dry_run=args.dry_run, out=lambda line: print(line, flush=True))
    if args.dry_run:
        runner.dry_run_print()
        return 0
    code = runner.execute(resume=args.resume)
    for line in finished_lines(run_dir, plan):
        print(line)
    return code
