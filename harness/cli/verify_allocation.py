"""``harness verify-allocation``: read the engine's own load log and compare it with the prediction
before anything is measured. Exit 1 on a mismatch, naming both figures and the likely cause."""

from __future__ import annotations

import json
from pathlib import Path

from harness.core import engine_logs
from harness.errors import ConfigError
from harness.io.model_info import load_model
from harness.core.predictions import fraction_check, fraction_pool, predict_allocation
from harness.core.engine_records import Allocation
from harness.core.records import now_stamp
from harness.io.notebook import append_record
from harness.cli.predict import add_vllm_pool_args, vllm_pool_kwargs


def add_parser(sub) -> None:
    p = sub.add_parser(
        "verify-allocation", help="check an engine's load log against the predicted KV allocation"
    )
    p.add_argument("--log", help="the engine's load log")
    p.add_argument("--engine", default="auto", choices=["auto", "llama-server", "vllm"])
    p.add_argument(
        "--model", default="qwen3-8b", help=".gguf file, Hugging Face directory or model-table name"
    )
    p.add_argument("--slots", type=int, default=20)
    p.add_argument("--ctx-per-slot", type=int, default=4096)
    p.add_argument("--cache-type", default="f16", choices=["f16", "bf16", "f32", "q8_0", "q4_0", "fp8"])
    p.add_argument("--swa-full", action="store_true")
    p.add_argument("--kv-bytes", type=int, help="vLLM --kv-cache-memory-bytes")
    add_vllm_pool_args(p)
    p.add_argument("--labbook", help="append the allocation record to this notebook")
    p.add_argument("--label", default="")
    p.add_argument(
        "--observe-only",
        action="store_true",
        help="read and record what the log allocated without predicting it (vLLM sized by a memory "
        "fraction, where the pool is what is left after weights and activations)",
    )
    p.add_argument(
        "--expect-offload",
        action="store_true",
        help="llama-server: fail unless the log offloads every layer (N/N) to the accelerator",
    )
    p.add_argument(
        "--expect-device", help="llama-server: the device the log must use (ROCm0, Vulkan0, CUDA0, MTL0)"
    )
    p.add_argument(
        "--expect-prompt-cache-off",
        action="store_true",
        help="llama-server: fail unless the log says the prompt cache is disabled (--cache-ram 0)",
    )
    p.add_argument(
        "--equal-pool",
        nargs=2,
        metavar=("LOG_A", "LOG_B"),
        help="instead: say whether two engines' logs show the same KV pool in tokens",
    )
    p.set_defaults(func=run)


EXPECT = ("expect_offload", "expect_device", "expect_prompt_cache_off")


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"log {path} not found; pass the file the engine wrote its load log to")
    return p.read_text(encoding="utf-8", errors="replace")


def _engine_of(text: str, wanted: str, path: str) -> str:
    found = engine_logs.detect_engine(text)
    if found is None:
        raise ConfigError(
            f"{path} has no llama-server or vLLM allocation lines; is it the engine's load log?"
        )
    if wanted != "auto" and wanted != found:
        raise ConfigError(
            f"{path} looks like a {found} log, not {wanted}; pass the right log or --engine {found}"
        )
    return found


def gguf_format(model) -> dict | None:
    """The GGUF format's bytes a llama-server load log is read against: the file's own, or the model
    table's only GGUF format; None when neither says."""
    ggufs = [f for name, f in model.formats.items() if name.startswith("GGUF")]
    return ggufs[0] if len(ggufs) == 1 else None


def facts(engine: str, text: str) -> dict:
    return engine_logs.parse_llama_server(text) if engine == "llama-server" else engine_logs.parse_vllm(text)


def run(args) -> int:
    if args.equal_pool:
        return equal_pool(args.equal_pool)
    if not args.log:
        raise ConfigError("pass --log FILE (or --equal-pool LOG_A LOG_B)")
    text = _read(args.log)
    engine = _engine_of(text, args.engine, args.log)
    model = load_model(args.model)
    observed = facts(engine, text)
    pool = vllm_pool_kwargs(args)
    pool["device"] = observed.get("kv_device", args.device)
    pred = predict_allocation(
        model, engine, args.slots, args.ctx_per_slot, args.cache_type, args.swa_full, args.kv_bytes, **pool
    )
    problems = [] if args.observe_only else engine_logs.compare(engine, observed, pred)
    if engine != "llama-server" and any(getattr(args, k) for k in EXPECT):
        raise ConfigError(
            f"{args.log} is a {engine} log: --expect-offload, --expect-device and --expect-prompt-cache-off "
            "check llama-server's load log; leave them out"
        )
    if engine == "llama-server":  # the accelerator checks hold even when the pool is only observed
        problems += engine_logs.accelerator_problems(
            observed, args.expect_offload, args.expect_device, args.expect_prompt_cache_off
        )
        problems += engine_logs.buffer_problems(observed, gguf_format(model))
    for line in [] if args.observe_only else pred.log_lines:
        print(f"predicted: {line}")
    if args.observe_only:
        pool = engine_logs.pool_tokens(engine, observed)
        print(
            f"observed: {args.log} holds {f'{pool:,}' if pool is not None else 'an unreadable number of'} "
            "tokens "
            f"of KV; {json.dumps(observed)}"
        )
        problems += _fraction(args, model, observed)
    if problems:
        for problem in problems:
            print(f"MISMATCH: {problem}")
    elif not args.observe_only:
        print(
            f"match: {args.log} allocates what {model.name} with {args.slots} x {args.ctx_per_slot:,} tokens "
            "at "
            f"{args.cache_type} should"
        )
    if args.labbook:
        record_allocation(args, engine, model, observed, pred, problems)
    return 1 if problems else 0


def _fraction(args, model, observed: dict) -> list[str]:
    """A memory-fraction start: blocks, tokens and concurrency from its "Available KV cache memory",
    checked against the pool it logged (nothing to check without that line)."""
    if observed.get("available_kv_gib") is None:
        return []
    pool = fraction_pool(
        model,
        observed["available_kv_gib"],
        args.ctx_per_slot,
        args.block_size,
        args.cache_type,
        args.max_num_batched_tokens,
    )
    lines, problems = fraction_check(observed, pool)
    observed["fraction_pool"] = {
        k: pool[k] for k in ("available_bytes", "num_blocks", "tokens", "max_concurrency")
    }
    for line in lines:
        print(f"from the available memory: {line}")
    return problems


def equal_pool(paths: list[str]) -> int:
    """Refuse an "equal pool" comparison when the two logs hold different numbers of KV tokens."""
    pools = []
    for path in paths:
        text = _read(path)
        engine = _engine_of(text, "auto", path)
        pools.append((path, engine, engine_logs.pool_tokens(engine, facts(engine, text))))
    (pa, ea, a), (pb, eb, b) = pools
    if a is None or b is None or a != b:
        print(
            f"not an equal pool: {ea} ({pa}) holds {a if a is not None else '?'} tokens, {eb} ({pb}) "
            "holds "
            f"{b if b is not None else '?'}; give both the same number of KV tokens before comparing them"
        )
        return 1
    print(f"equal pool: {a:,} tokens of KV in each ({ea} and {eb})")
    return 0


def record_allocation(args, engine: str, model, observed: dict, pred, problems: list[str]) -> None:
    record = Allocation(
        label=args.label,
        engine=engine,
        model=model.name,
        log=str(args.log),
        settings={
            "slots": args.slots,
            "ctx_per_slot": args.ctx_per_slot,
            "cache_type": args.cache_type,
            "swa_full": args.swa_full,
            "kv_bytes": args.kv_bytes,
            **{k: v for k in EXPECT if (v := getattr(args, k, None))},
            **({"block_size": args.block_size} if engine == "vllm" else {}),
        },
        observed=observed,
        predicted={
            "log_lines": pred.log_lines,
            "pool_bytes": pred.pool_bytes,
            "vllm_tokens": pred.vllm_tokens,
            **({"vllm_pool": pred.vllm_pool} if pred.vllm_pool else {}),
        },
        verdict="mismatch" if problems else "observed" if args.observe_only else "match",
        problems=problems,
        recorded_at=now_stamp(),
    )
    append_record(args.labbook, record.to_dict(), "allocation")
