"""``harness track PLAN``: a whole lab in one command (``make track-cpu``, ``make demo``,
``make track-s`` ...). Engines start one at a time; every step's outcome goes to the run manifest;
``--resume`` continues an interrupted run without repeating finished steps; ``--dry-run`` prints
every command the plan would run, and starts nothing."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from harness.errors import ConfigError
from harness.io.ports import free_port
from harness.run.plans import find_plan, load_plan
from harness import options
from harness.options.shared import DRY_RUN
from harness.options.track import QUICK, REHEARSE, RUN_DIR, SET, SMOKE, TIER, VIA_SHIM

FREE = "free"  # a plan variable with this value is given a port no one holds (tracks/practice.yaml)


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


def parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set takes NAME=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


def free_ports(plan: str, sets: dict[str, str]) -> dict[str, str]:
    """``--set`` values for the plan's variables whose value is ``free`` and that ``--set`` leaves
    alone: a free port each, chosen here before the plan loads (the runner still refuses a port
    that is busy by the time its engine starts)."""
    try:
        variables = (yaml.safe_load(find_plan(plan).read_text(encoding="utf-8")) or {}).get("variables") or {}
    except (OSError, yaml.YAMLError):
        return {}  # load_plan says what is wrong with the file
    if not isinstance(variables, dict):
        return {}
    return {k: str(free_port()) for k, v in variables.items() if v == FREE and k not in sets}


def size(args) -> bool | str:
    """--quick and --smoke as load_plan takes them (--smoke wins: it is the smaller)."""
    return "smoke" if args.smoke else args.quick


def run(args) -> int:
    from harness.report.headlines import headline_lines, headlines
    from harness.report.run_report import levels_in, plan_admissions, plan_pairs, searches_in
    from harness.run.run_dirs import fresh_run_dir, latest_run_dir
    from harness.run.runner import Runner

    sets = parse_sets(args.set)
    chosen = free_ports(args.plan, sets)
    for name, port in chosen.items():
        print(f"==> {name}: free port {port} (--set {name}=PORT to choose one)", flush=True)
    plan = load_plan(args.plan, args.tier, {**sets, **chosen}, args.rehearse, size(args), args.via_shim)
    for engine, why in (plan.rehearsal.fallbacks if plan.rehearsal else {}).items():
        print(f"==> {engine}: {why}", flush=True)
    if args.via_shim:
        from harness.run.shim_allow import via_shim

        via_shim(plan, os.environ.get("HARNESS_SHIM_HOST"))
    if args.run_dir:
        run_dir = Path(args.run_dir)
    elif args.resume:
        run_dir = latest_run_dir(plan)
        if run_dir is None:
            raise ConfigError(f"no earlier run of {plan.name} under runs/ to resume; run without --resume")
    else:
        run_dir = fresh_run_dir(plan)
    runner = Runner(plan, run_dir, dry_run=args.dry_run, out=lambda line: print(line, flush=True))
    if args.dry_run:
        runner.dry_run_print()
        return 0
    code = runner.execute(resume=args.resume)
    report = run_dir / "report.md"
    if report.is_file():
        curve_labels, pairs = plan_pairs(plan)
        promise = float(plan.variables.get("PROMISE_S", plan.sweep.get("slo_ttft", 2.0)))
        print("\n==> headline numbers")
        for line in headline_lines(
            headlines(
                levels_in(run_dir / "labbook.md"),
                curve_labels,
                pairs,
                promise,
                plan_admissions(plan),
                searches_in(run_dir / "labbook.md"),
            ),
            promise,
        ):
            print(f"    {line}")
        print(
            f"\n    report:   {report} (one file to open or attach: {report.with_suffix('.html')})"
            f"\n    charts:   {run_dir / 'charts'}"
            f"\n    notebook: {run_dir / 'labbook.md'}"
            f"\n    manifest: {run_dir / 'manifest.json'}"
        )
    return code
