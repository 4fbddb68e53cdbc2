"""``harness measure``: single-user prefill, decode and memory for one server, a drop-in for the
lab's compare-engines.py (same options, same record fields), and the power and energy of each
test's repetitions (the sweep's ``--telemetry`` options; the engine tables' energy). The tests
themselves are ``harness.engines.single_user``'s."""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

from harness.cli import sweep_energy
from harness.core import server_timings
from harness.core.arithmetic import speed_limit, speed_share
from harness.engines import single_user
from harness.errors import ConfigError
from harness.io.machines import lookup
from harness.io.notebook import append_record, check_writable, validate


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


def _rate(rec: dict) -> str:
    value = rec["decode_tokens_per_s"]
    return f"{value:.2f}" if value is not None else f"- ({rec.get('decode_note', 'not measured')})"


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
    short, long, template = got.short, got.long, got.template
    print_results(args.engine, short, long, got.prefill, got.added, got.tree)
    if template:
        said = f"{template['sha256']} ({template['source']})" if template["sha256"] else template["note"]
        print(f"    {args.engine:>14} chat template: {said}")
    if bandwidth and short["decode_tokens_per_s"]:
        short["speed_limit"] = limit_share(args, bandwidth, short["decode_tokens_per_s"])
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


def limit_share(args, bandwidth: float, rate: float) -> dict:
    """Seed 002's sanity check: the short test's decode over bandwidth / model size, printed and kept."""
    limit = speed_limit(bandwidth, args.model_gb)
    share, reading = speed_share(rate, limit)
    print(
        f"    {args.engine:>14} speed limit {bandwidth:g} GB/s / {args.model_gb:g} GB = {limit:.1f} tok/s; "
        f"short decode {rate:.2f} tok/s is {share:.0%} of it: {reading}"
    )
    return {
        "machine": args.machine,
        "bandwidth_gb_s": bandwidth,
        "model_gb": args.model_gb,
        "tok_s": round(limit, 2),
        "share": round(share, 3),
    }


def print_results(engine: str, short: dict, long: dict, prefill, added: dict, tree: dict) -> None:
    rss = tree.get("rss_mb")
    for rec in (short, long):
        print(
            f"    {engine:>14} {rec['test']:>5}  prompt {rec['prompt_tokens']} tok  "
            f"ttft {rec['ttft_s']:.3f} s  "
            f"decode {_rate(rec)} tok/s  {rec['completion_tokens']} tok ({rec['finish_reason']}), "
            f"counts from {rec['token_source']}, cached {rec['max_cached_prompt_tokens']}"
        )
    print(
        f"    {engine:>14} prefill from the difference: "
        + (
            f"{prefill:.1f} tok/s over {long['prompt_tokens'] - short['prompt_tokens']:.0f} more prompt "
            "tokens"
            if prefill
            else f"not computable: {long.get('prefill_note')}"
        )
    )
    if long["server_prefill_tokens_per_s"] is not None:
        print(
            f"    {engine:>14} server's own timings (long): prefill "
            f"{long['server_prefill_tokens_per_s']:.1f} "
            f"tok/s, decode {long['server_decode_tokens_per_s']:.2f} tok/s"
        )
    agreement = server_timings.words(long.get("server_timings_check"))
    if agreement:
        print(f"    {engine:>14} {agreement}")
    for rec in (short, long):
        for line in sweep_energy.level_lines(rec):
            print(f"    {engine:>14} {rec['test']:>5} {line.strip()}")
    mem = ", ".join(f"{k} {v}" for k, v in added.items()) if added else "no idle snapshot given"
    resident = (
        "not read (give --server-pid)"
        if rss is None
        else f"{rss}, PSS {tree.get('pss_mb', '-')} ({tree.get('processes', 0)} process(es) summed)"
    )
    print(
        f"    {engine:>14} memory added since the idle snapshot (MB): {mem}; "
        f"server resident set (MB): {resident}"
    )
