"""``harness measure``: single-user prefill, decode and memory for one server, a drop-in for the
lab's compare-engines.py (same options, same record fields), and the power and energy of each
test's repetitions (the sweep's ``--telemetry`` options; the engine tables' energy). The tests
themselves are ``harness.engines.single_user``'s."""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

from harness.cli import sweep_energy
from harness.engines import single_user
from harness.errors import ConfigError
from harness.io.machines import lookup
from harness.io.notebook import append_record, check_writable, validate
from harness.report.single_user_lines import limit_share, result_lines


def add_parser(sub) -> None:
    p = sub.add_parser(
        "measure", help="single-user prefill, decode and memory (drop-in for compare-engines.py)"
    )
    p.add_argument(
        "--snapshot-only",
        metavar="FILE",
        help="write an idle memory snapshot to FILE and exit (with no model server running)",
    )
    p.add_argument("--engine")
    p.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    p.add_argument("--model")
    p.add_argument("--api-key", default="", help="bearer token (prefer --api-key-env; never recorded)")
    p.add_argument("--api-key-env")
    p.add_argument("--engine-version", default="")
    p.add_argument("--backend", default="", help="CUDA, Metal, Vulkan, ROCm, CPU, ...")
    p.add_argument("--host", default="")
    p.add_argument("--quant", default="")
    p.add_argument("--context-length", type=int, default=0)
    p.add_argument(
        "--checkpoint",
        default="",
        help="the GGUF file or model folder the server loaded: its chat template's SHA-256 is recorded "
        "(the identity row's template column)",
    )
    p.add_argument("--server-pid", type=int, default=0, help="server process id, for its resident set")
    p.add_argument(
        "--container",
        default="",
        help="the engine's container: its resident set from docker stats/top, not the docker client's",
    )
    p.add_argument("--idle-snapshot", default="", help="the file --snapshot-only wrote")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--long-repeats", type=int, default=16, help="paragraph repeats in the long prompt")
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one request may take in all")
    p.add_argument(
        "--idle-timeout", type=float, help="seconds a request may go without a byte (default: --timeout)"
    )
    p.add_argument("--wait-seconds", type=int, default=120)
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument(
        "--reuse-prompt",
        action="store_true",
        help="drop the run tag so repeats hit the prefix cache: a demonstration, nothing is recorded",
    )
    p.add_argument(
        "--machine", help="machine-table key: the short test's decode as a share of the speed limit"
    )
    p.add_argument("--model-gb", type=float, help="with --machine: model size in GB for the speed limit")
    p.add_argument("--labbook", default="labbook.md")
    p.add_argument("--print-only", action="store_true")
    sweep_energy.add_options(p)  # the power and energy of each test's repetitions (docs/telemetry.md)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.snapshot_only:
        snap = single_user.write_snapshot(args.snapshot_only)
        print(f"    idle snapshot written to {args.snapshot_only}")
        print("    " + ", ".join(f"{k} {round(v)}" for k, v in snap.items() if isinstance(v, float)))
        return 0
    if not args.engine or not args.model:
        raise ConfigError("--engine and --model are needed (unless --snapshot-only)")
    single_user.check_numbers(args)
    if args.machine and not args.model_gb:
        raise ConfigError("--machine needs --model-gb (the model's size in GB) for the speed limit")
    bandwidth = float(lookup(args.machine)["bandwidth_gb_s"]) if args.machine else None
    if not (args.print_only or args.reuse_prompt):
        check_writable(args.labbook)
    idle = single_user.idle_snapshot(args)
    key = (os.environ.get(args.api_key_env) if args.api_key_env else None) or args.api_key or None
    parts = urlsplit(args.base_url)
    telemetry = sweep_energy.plan_options(args, f"{parts.scheme}://{parts.netloc}")["telemetry"]
    single_user.wait_for(args.base_url, key, args.wait_seconds)
    meter = sweep_energy.start(telemetry)  # absent sources in one line each; the idle baseline

    def energy(summary, tokens: int, requests: int, wall_s: float) -> dict:
        price_h, price_kwh = args.price_per_hour, args.price_per_kwh
        return sweep_energy.record_parts(meter, summary, tokens, requests, wall_s, price_h, price_kwh)

    try:
        got = single_user.measure(args, key, idle, meter, energy)
    finally:
        if meter is not None:
            meter.close()
    short, long = got.short, got.long
    for line in result_lines(args.engine, short, long, got.prefill, got.added, got.tree, got.template):
        print(line)
    if bandwidth and short["decode_tokens_per_s"]:
        rate = short["decode_tokens_per_s"]
        short["speed_limit"], line = limit_share(args.engine, args.machine, bandwidth, args.model_gb, rate)
        print(line)
    if args.reuse_prompt:
        print(
            "    --reuse-prompt: these runs measured the prefix cache, not prefill; nothing recorded",
            file=sys.stderr,
        )
        return 0
    if not args.print_only:
        _record(args.labbook, short, long)
    return 0


def _record(labbook: str, short: dict, long: dict) -> None:
    """Both speed records, each checked against its schema before either is written."""
    for rec in (short, long):
        validate(rec, "engine-speed", where=labbook)
    for rec in (short, long):
        append_record(labbook, rec, "engine-speed")
    print(f"    recorded 2 line(s) in {labbook}")
