"""``harness preflight PLAN``: the plan's preflight on its own (also the first step of every plan):
Python, model files, free disk, ports, engine binaries, the accelerator. Exit 1 on any FAIL."""

from __future__ import annotations

import json
from pathlib import Path

from harness.run.plan_variables import parse_sets
from harness.run.plans import load_plan
from harness import options
from harness.options.track import RUN_DIR, SET, TIER
from harness.options.track import FINDINGS_FILE


def add_parser(sub) -> None:
    p = sub.add_parser(
        "preflight", help="check what a track plan needs before anything starts (exit 1 on FAIL)"
    )
    p.add_argument("plan", help="plan file, or a name in tracks/ (cpu, s, n, x, m)")
    options.to_argparse(p, TIER, command="preflight")
    options.to_argparse(p, SET, command="preflight")
    options.to_argparse(p, RUN_DIR, command="preflight")
    options.to_argparse(p, FINDINGS_FILE, command="preflight")
    p.set_defaults(func=run)


def run(args) -> int:
    from harness.run.preflight import plan_findings, plan_targets
    from harness.run.preflight_checks import summary

    plan = load_plan(args.plan, args.tier, parse_sets(args.set))
    findings = plan_findings(plan, plan_targets(plan, Path(args.run_dir)), Path(args.run_dir))
    print(f"==> preflight for {plan.name}" + (f" (tier {plan.tier})" if plan.tier else ""))
    for f in findings:
        print("    " + f.line())
    result = summary(findings)
    print(
        f"    {result['counts']['PASS']} pass, {result['counts']['WARN']} warn, {result['counts']['FAIL']} "
        "fail"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 1 if result["counts"]["FAIL"] else 0
