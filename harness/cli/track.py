"""``harness track PLAN``: a whole lab in one command (``make track-cpu``, ``make demo``,
``make track-s`` ...). Engines start one at a time; every step's outcome goes to the run manifest;
``--resume`` continues an interrupted run without repeating finished steps; ``--dry-run`` prints
every command the plan would run, and starts nothing."""

from __future__ import annotations

import os

from harness import options
from harness.options.shared import DRY_RUN
from harness.options.track import QUICK, REHEARSE, RUN_DIR, SET, SMOKE, TIER, VIA_SHIM
from harness.run.plan_variables import free_ports, parse_sets, plan_size
from harness.run.plans import load_plan


def add_parser(sub) -> None:
    p = sub.add_parser(
        "track",
        help="run a track plan end to end (engines, sweeps, checks, report)",
        description="Run a track plan (tracks/*.yaml) into a run directory.",
    )
    p.add_argument("plan", help="plan file, or a name in tracks/ (practice, cpu, s, n, x, m)")
    options.to_argparse(p, DRY_RUN, command="track")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir (default: the latest run "
        "of this plan) without repeating finished steps",
    )
    options.to_argparse(p, RUN_DIR, command="track")
    options.to_argparse(p, TIER, command="track")
    options.to_argparse(p, REHEARSE, command="track")
    options.to_argparse(p, QUICK, command="track")
    options.to_argparse(p, SMOKE, command="track")
    options.to_argparse(p, SET, command="track")
    options.to_argparse(p, VIA_SHIM, command="track")
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
