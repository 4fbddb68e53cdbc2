"""``harness engines``: the single-user comparison tables and the lab's check (drop-in for
summarise-engines.py), plus the explanation of the differences: each engine's decode rate against
the ceiling of its own format, the native/portable ratios against the predicted ones, visible
memory and overhead, the winner."""

from __future__ import annotations

import sys

from harness.records.base import is_engine_speed, is_features
from harness.sizing.machines import feature_settings, lookup, visible_memory_rules
from harness.engines.models.info import load_model
from harness.records.notebook import read_records
from harness.report import engine_tables, engine_verdicts
from harness import options
from harness.options.shared import LAB_CHECK, LABBOOK, MACHINE, MODEL_FILES


def add_parser(sub) -> None:
    p = sub.add_parser("engines", help="single-user tables and check (drop-in for summarise-engines.py)")
    options.to_argparse(p, LABBOOK, command="engines")
    options.to_argparse(p, LAB_CHECK, command="engines")
    p.add_argument("--allow-cpu", action="store_true", help="accept backend CPU (the CPU track and tests)")
    options.to_argparse(p, MACHINE, command="engines")
    options.to_argparse(p, MODEL_FILES, command="engines")
    p.set_defaults(func=run)


def _read(path: str, schema: str, select):
    result = read_records(path, schema, select=select)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return result.records


def run(args) -> int:
    speed = _read(args.labbook, "engine-speed", is_engine_speed)
    feats = _read(args.labbook, "features", is_features)
    order, by_speed, by_feat = engine_tables.latest_per_engine(speed, feats)
    model = load_model(args.model)
    machine = lookup(args.machine) if args.machine else None
    bandwidth = float(machine["bandwidth_gb_s"]) if machine else None
    ceilings = engine_verdicts.ceilings(order, by_speed, model, bandwidth) if bandwidth else None
    if not args.check:
        print(engine_tables.render(order, by_speed, by_feat, ceilings))
        inputs = engine_verdicts.Inputs(
            model, bandwidth, machine["name"] if machine else "", visible_memory_rules(), feature_settings()
        )
        print(f"\n{engine_verdicts.TITLE}\n")
        print(engine_verdicts.render(order, by_speed, by_feat, inputs))
        return 0
    results = engine_tables.check(order, by_speed, by_feat, args.allow_cpu, ceilings)
    results += engine_tables.rerun_rules(speed)
    for level, engine, text in results:
        print(f"{level:<4}  {engine:<16} {text}")
    fails = sum(1 for level, _, _ in results if level == "FAIL")
    print(f"\n{fails} failure(s)")
    return 1 if fails else 0
