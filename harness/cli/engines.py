"""``harness engines``: the single-user comparison tables and the lab's check (drop-in for
summarise-engines.py), plus Task 9: each engine's decode rate against the ceiling of its own format,
the native/portable ratios against the predicted ones, visible memory and overhead, the winner."""

from __future__ import annotations

import sys

from harness.core.records import is_engine_speed, is_features
from harness.io.machines import feature_settings, lookup, visible_memory_rules
from harness.io.model_info import load_model
from harness.io.notebook import read_records
from harness.report import engine_tables, engine_verdicts


def add_parser(sub) -> None:
    p = sub.add_parser("engines", help="single-user tables and check (drop-in for summarise-engines.py)")
    p.add_argument("--labbook", default="labbook.md")
    p.add_argument("--check", action="store_true", help="apply the lab's rules; exit 1 on any FAIL")
    p.add_argument("--allow-cpu", action="store_true", help="accept backend CPU (the CPU track and tests)")
    p.add_argument(
        "--machine", help="machine-table key: each engine's decode against the ceiling of its own format"
    )
    p.add_argument("--model", default="qwen3-8b", help="model (table name, GGUF or dir) setting the ceilings")
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
        print("\nTask 9: explain the differences\n")
        print(engine_verdicts.render(order, by_speed, by_feat, inputs))
        return 0
    results = engine_tables.check(order, by_speed, by_feat, args.allow_cpu, ceilings)
    results += engine_tables.rerun_rules(speed)
    for level, engine, text in results:
        print(f"{level:<4}  {engine:<16} {text}")
    fails = sum(1 for level, _, _ in results if level == "FAIL")
    print(f"\n{fails} failure(s)")
    return 1 if fails else 0
