"""What an engine's own load log allocated, read and compared with the prediction for it
(``harness verify-allocation``): a llama-server, vLLM or TensorRT-LLM pool in tokens, the
accelerator checks of a llama-server log, a vLLM memory-fraction start, and whether two logs hold
the same pool."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.engines import logs as engine_logs
from harness.engines.models.info import load_model
from harness.records.engine import Allocation
from harness.sizing.predictions import fraction_check, fraction_pool, predict_allocation, vllm_pool_kwargs
from harness.errors import ConfigError
from harness.records.clock import now_stamp

EXPECT = ("expect_offload", "expect_device", "expect_prompt_cache_off")


@dataclass
class Checked:
    """A log's verdict: the lines to show in order, the problems found (none: a match or only
    observed) and the allocation record."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    record: dict = field(default_factory=dict)


def verify(args) -> Checked:
    """``harness verify-allocation``'s check of ``--log``: whose log it is (recognised, or the one
    named), the accelerator expectations refused for a log that is not llama-server's, then the
    pool against the prediction at the options' settings (TensorRT-LLM's against its cap)."""
    if not args.log:
        raise ConfigError("pass --log FILE (or --equal-pool LOG_A LOG_B)")
    text = read_log(args.log)
    engine = engine_of(text, args.engine, args.log)
    observed = engine_logs.facts(engine, text)
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
    sizes = (args.slots, args.ctx_per_slot, args.cache_type, args.swa_full, args.kv_bytes)
    pred = predict_allocation(model, engine, *sizes, unified=args.kv_unified, **pool)
    return compare(args, engine, observed, model, pred)


def read_log(path: str) -> str:
    """The load log's text (ConfigError when there is no such file)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"log {path} not found; pass the file the engine wrote its load log to")
    return p.read_text(encoding="utf-8", errors="replace")


def engine_of(text: str, wanted: str, path: str) -> str:
    """The engine whose log this is, which must be the one ``wanted`` names unless that is auto."""
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


def trtllm(args, observed: dict) -> Checked:
    """A TensorRT-LLM log: its paged KV pool read and, with ``--kv-max-tokens``, held to the lab's cap
    (it allocates the lesser of the cap and its free-memory fraction, in whole blocks)."""
    out = Checked([observed_line(args.log, "trtllm", observed, args.block_size)])
    pool, cap, problems = engine_logs.pool_tokens("trtllm", observed), args.kv_max_tokens, []
    if cap is not None and pool is None:
        problems.append(engine_logs.unread("trtllm", observed))
    elif cap is not None and pool is not None and pool > cap:
        problems.append(
            f"paged KV cache: log says {pool:,} tokens, over the kv_cache_config.max_tokens cap of {cap:,}"
        )
    elif cap is not None and pool is not None and pool < cap - (observed.get("tokens_per_block") or 0):
        out.lines.append(
            f"note: the pool is {pool:,} tokens, under the {cap:,} cap: the free-memory fraction decided "
            "it, not max_tokens"
        )
    out.lines += [f"MISMATCH: {problem}" for problem in problems]
    out.problems = problems
    out.record = Allocation(
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
    ).to_dict()
    return out


def llama_checks(args, engine: str, observed: dict, model) -> list[str]:
    """The accelerator checks a llama-server load log must pass besides its pool, even when the pool
    is only observed."""
    if engine != "llama-server":
        return []
    return engine_logs.accelerator_problems(
        observed, args.expect_offload, args.expect_device, args.expect_prompt_cache_off
    ) + engine_logs.buffer_problems(observed, gguf_format(model))


def compare(args, engine: str, observed: dict, model, pred) -> Checked:
    """A llama-server or vLLM log against ``pred`` (the prediction for ``model`` at ``args``'s
    settings), or only observed with ``--observe-only``."""
    problems = [] if args.observe_only else engine_logs.compare(engine, observed, pred, args.block_size)
    if args.observe_only and observed.get("failure"):
        problems.append(engine_logs.unread(engine, observed))
    problems += llama_checks(args, engine, observed, model)
    out = Checked([f"predicted: {line}" for line in ([] if args.observe_only else pred.log_lines)])
    if args.observe_only:
        out.lines.append(observed_line(args.log, engine, observed, args.block_size))
        lines, more = fraction(args, model, observed)
        out.lines += [f"from the available memory: {line}" for line in lines]
        problems += more
    if problems:
        out.lines += [f"MISMATCH: {problem}" for problem in problems]
    elif not args.observe_only:
        out.lines.append(
            f"match: {args.log} allocates what {model.name} with {args.slots} x {args.ctx_per_slot:,} tokens "
            f"at {args.cache_type} should"
        )
    out.problems, out.record = problems, allocation_record(args, engine, model, observed, pred, problems)
    return out


def fraction(args, model, observed: dict) -> tuple[list[str], list[str]]:
    """A memory-fraction start: blocks, tokens and concurrency from its "Available KV cache memory",
    checked against the pool it logged (nothing to check without that line)."""
    if observed.get("available_kv_gib") is None:
        return [], []
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
    return lines, problems


def equal_pool(paths: list[str]) -> tuple[bool, str]:
    """Whether the two logs hold the same number of KV tokens, and the line that says so (an "equal
    pool" comparison is refused when they do not)."""
    pools = []
    for path in paths:
        text = read_log(path)
        engine = engine_of(text, "auto", path)
        pools.append((path, engine, engine_logs.pool_tokens(engine, engine_logs.facts(engine, text))))
    (pa, ea, a), (pb, eb, b) = pools
    if a is None or b is None or a != b:
        return False, (
            f"not an equal pool: {ea} ({pa}) holds {a if a is not None else '?'} tokens, {eb} ({pb}) "
            "holds "
            f"{b if b is not None else '?'}; give both the same number of KV tokens before comparing them"
        )
    return True, f"equal pool: {a:,} tokens of KV in each ({ea} and {eb})"


def allocation_record(args, engine: str, model, observed: dict, pred, problems: list[str]) -> dict:
    """The allocation record of a llama-server or vLLM log's check."""
    return Allocation(
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
    ).to_dict()
