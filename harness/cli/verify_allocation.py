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
from harness.io.clock import now_stamp
from harness.io.notebook import append_record
from harness.cli.predict import add_vllm_pool_args, vllm_pool_kwargs
from harness import options
from harness.options.allocation import KV_BYTES, LOG_ENGINE, SWA_FULL
from harness.options.record import LABEL
from harness.options.serve import CACHE_TYPE, CTX_PER_SLOT, SLOTS
from harness.options.shared import LABBOOK, MODEL_FILES


def add_parser(sub) -> None:
    p = sub.add_parser(
        "verify-allocation", help="check an engine's load log against the predicted KV allocation"
    )
    p.add_argument("--log", help="the engine's load log")
    options.to_argparse(p, LOG_ENGINE, command="verify-allocation")
    options.to_argparse(p, MODEL_FILES, command="verify-allocation")
    options.to_argparse(p, SLOTS, command="verify-allocation")
    options.to_argparse(p, CTX_PER_SLOT, command="verify-allocation")
    options.to_argparse(p, CACHE_TYPE, command="verify-allocation")
    options.to_argparse(p, SWA_FULL, command="verify-allocation")
    p.add_argument(
        "--kv-unified",
        action="store_true",
        help="llama-server: predict one KV stream shared by every slot (its default when --parallel is not "
        "given, or with -kvu) instead of one per slot",
    )
    p.add_argument(
        "--kv-max-tokens",
        type=int,
        help="TensorRT-LLM: the kv_cache_config.max_tokens cap the log's paged KV cache must not exceed",
    )
    options.to_argparse(p, KV_BYTES, command="verify-allocation")
    add_vllm_pool_args(p)
    options.to_argparse(p, LABBOOK, command="verify-allocation")
    options.to_argparse(p, LABEL, command="verify-allocation")
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
            f"{path} has no llama-server, vLLM or TensorRT-LLM lines this harness knows; is it the engine's "
            "load log?"
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
    return engine_logs.facts(engine, text)


def observed_line(path: str, engine: str, observed: dict, block_size: int) -> str:
    """What the log holds, in one line: its pool in tokens (saying when a block size was assumed), or
    the one line naming what it does not state."""
    pool = engine_logs.pool_tokens(engine, observed)
    assumed = ""
    if pool is None and engine == "vllm":
        pool = engine_logs.pool_tokens(engine, observed, block_size)
        if pool is not None:
            blocks = observed.get("gpu_blocks") or observed.get("cpu_blocks")
            assumed = (
                f" ({blocks:,} blocks x {block_size} tokens, the --block-size assumed: the log does "
                "not state it)"
            )
    if pool is None:
        return f"observed: {path}: {engine_logs.unread(engine, observed)}; {json.dumps(observed)}"
    return f"observed: {path} holds {pool:,} tokens of KV{assumed}; {json.dumps(observed)}"


def trtllm(args, observed: dict) -> int:
    """A TensorRT-LLM log: its paged KV pool read and, with ``--kv-max-tokens``, held to the lab's cap
    (it allocates the lesser of the cap and its free-memory fraction, in whole blocks)."""
    print(observed_line(args.log, "trtllm", observed, args.block_size))
    pool, cap, problems = engine_logs.pool_tokens("trtllm", observed), args.kv_max_tokens, []
    if cap is not None and pool is None:
        problems.append(engine_logs.unread("trtllm", observed))
    elif cap is not None and pool is not None and pool > cap:
        problems.append(
            f"paged KV cache: log says {pool:,} tokens, over the kv_cache_config.max_tokens cap of {cap:,}"
        )
    elif cap is not None and pool is not None and pool < cap - (observed.get("tokens_per_block") or 0):
        print(
            f"note: the pool is {pool:,} tokens, under the {cap:,} cap: the free-memory fraction decided "
            "it, not max_tokens"
        )
    for problem in problems:
        print(f"MISMATCH: {problem}")
    if args.labbook:
        record = Allocation(
            label=args.label,
            engine="trtllm",
            model=args.model,
            log=str(args.log),
            settings={"kv_max_tokens": cap},
            observed=observed,
            predicted={
                "log_lines": [f"a paged KV cache of at most {cap:,} tokens"] if cap else [],
                "kv_max_tokens": cap,
            },
            verdict="mismatch" if problems else "match" if cap else "observed",
            problems=problems,
            recorded_at=now_stamp(),
        )
        append_record(args.labbook, record.to_dict(), "allocation")
    return 1 if problems else 0


def llama_checks(args, engine: str, observed: dict, model) -> list[str]:
    """The accelerator checks a llama-server load log must pass besides its pool, even when the pool
    is only observed."""
    if engine != "llama-server":
        return []
    return engine_logs.accelerator_problems(
        observed, args.expect_offload, args.expect_device, args.expect_prompt_cache_off
    ) + engine_logs.buffer_problems(observed, gguf_format(model))


def run(args) -> int:
    if args.equal_pool:
        return equal_pool(args.equal_pool)
    if not args.log:
        raise ConfigError("pass --log FILE (or --equal-pool LOG_A LOG_B)")
    text = _read(args.log)
    engine = _engine_of(text, args.engine, args.log)
    observed = facts(engine, text)
    if engine != "llama-server" and any(getattr(args, k) for k in EXPECT):
        raise ConfigError(
            f"{args.log} is a {engine} log: --expect-offload, --expect-device and --expect-prompt-cache-off "
            "check llama-server's load log; leave them out"
        )
    if engine == "trtllm":
        return trtllm(args, observed)
    model = load_model(args.model)
    pool = vllm_pool_kwargs(args)
    pool["device"] = observed.get("kv_device", args.device)
    pred = predict_allocation(
        model,
        engine,
        args.slots,
        args.ctx_per_slot,
        args.cache_type,
        args.swa_full,
        args.kv_bytes,
        unified=args.kv_unified,
        **pool,
    )
    problems = [] if args.observe_only else engine_logs.compare(engine, observed, pred, args.block_size)
    if args.observe_only and observed.get("failure"):
        problems.append(engine_logs.unread(engine, observed))
    problems += llama_checks(args, engine, observed, model)
    for line in [] if args.observe_only else pred.log_lines:
        print(f"predicted: {line}")
    if args.observe_only:
        print(observed_line(args.log, engine, observed, args.block_size))
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
        pools.append(
            (path, engine, engine_logs.pool_tokens(engine, facts(engine, text)))
        )  # no block size assumed
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
            "kv_unified": args.kv_unified,
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
