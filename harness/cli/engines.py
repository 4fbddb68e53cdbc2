"""``harness engines``: the single-user comparison tables and the lab's check (drop-in for
summarise-engines.py), plus each engine's decode rate against its predicted ceiling."""

from __future__ import annotations

import sys

from harness.report import engine_tables
from harness.io.machines import lookup
from harness.io.model_info import load_model
from harness.core.predictions import decode_ceiling, kv_per_token
from harness.core.records import is_engine_speed, is_features
from harness.io.notebook import read_records


def add_parser(sub) -> None:
    p = sub.add_parser("engines", help="single-user tables and check (drop-in for summarise-engines.py)")
    p.add_argument("--labbook", default="labbook.md")
    p.add_argument("--check", action="store_true", help="apply the lab's rules; exit 1 on any FAIL")
    p.add_argument("--allow-cpu", action="store_true", help="accept backend CPU (the CPU track and tests)")
    p.add_argument("--machine", help="machine-table key: compare decode with the predicted ceiling")
    p.add_argument("--model", default="qwen3-8b", help="with --machine: model for the ceiling")
    p.add_argument("--format", help="with --machine: weight format in the model (default: its first)")
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
    ceiling = None
    if args.machine:
        model = load_model(args.model)
        fmt = model.formats[args.format] if args.format else next(iter(model.formats.values()))
        ceiling = decode_ceiling(
            lookup(args.machine)["bandwidth_gb_s"],
            fmt["tensor_bytes"],
            fmt["embedding_bytes"],
            kv_per_token(model),
            0,
        )
    if not args.check:
        print(engine_tables.render(order, by_speed, by_feat, ceiling))
        return 0
    results = engine_tables.check(order, by_speed, by_feat, args.allow_cpu, ceiling)
    for level, engine, text in results:
        print(f"{level:<4}  {engine:<16} {text}")
    fails = sum(1 for level, _, _ in results if level == "FAIL")
    print(f"\n{fails} failure(s)")
    return 1 if fails else 0
