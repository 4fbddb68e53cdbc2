"""Memory and speed predicted from stated inputs, before anything runs (``harness predict``): the
KV pool and the lines the engine should log, weights plus pool against the machine's memory, and
decode ceilings per weight format. Each line goes to the caller's ``say``."""

from __future__ import annotations

import subprocess
from typing import Callable

from harness.sizing.arithmetic import kv_bytes_per_token, speed_limit
from harness.sizing.format_compare import format_for_quant
from harness.engines.logs import device_memory
from harness.sizing.predictions import (
    GIB,
    Prediction,
    aggregate_ceiling,
    ceiling_table,
    decode_ceiling,
    predict_allocation,
    serving_table,
    vllm_pool_kwargs,
)
from harness.errors import ConfigError
from harness.sizing.machines import load_machines, lookup, memory_for_tier
from harness.engines.models.info import ModelInfo, load_model

Say = Callable[[str], None]  # where each line goes (the command line prints it)

LAB_ENGINES = {
    "llama-server, Q4_K_M GGUF": ("GGUF Q4_K_M", ["f16", "q8_0"]),
    "vLLM, AWQ safetensors": ("AWQ 4-bit g128", ["f16", "fp8"]),
}
LAB08_PAIRS = {
    "spark": ["GGUF Q4_K_M", "bf16"],
    "strix": ["GGUF Q4_K_M"],
    "m4-max": ["GGUF Q4_K_M", "MLX 4-bit g64"],
    "rtx-4090": ["GGUF Q4_K_M", "EXL3 4.0 bpw", "AWQ 4-bit g128"],
}


ENGINE_FORMATS = {"llama-server": "GGUF Q4_K_M", "vllm": "AWQ 4-bit g128"}  # what each lab serves


def weight_format(model: ModelInfo, stated: str | None, engine: str) -> str | None:
    """The model-table format whose weights are counted: the one ``--format`` names (any word only it
    has, as a record's quant does: ``awq``, ``Q4_K_M``, ``bf16``), else the one the engine serves in
    the labs (vLLM AWQ, llama-server GGUF Q4_K_M), else the model file's own."""
    if stated:
        name = stated if stated in model.formats else format_for_quant(stated, model.formats)
        if name is None:
            raise ConfigError(
                f"--format {stated!r} names no format of {model.name}; use one of: {', '.join(model.formats)}"
            )
        return name
    if ENGINE_FORMATS.get(engine) in model.formats:
        return ENGINE_FORMATS[engine]
    return next(iter(model.formats), None)


def lab_table(table: str, model: ModelInfo, say: Say) -> None:
    """One of the labs' prediction tables (``lab09`` serving, ``lab08`` decode ceilings)."""
    machines = load_machines()
    if table == "lab09":
        say(
            serving_table(
                model,
                20,
                4096,
                LAB_ENGINES,
                [
                    (
                        f"{machines[k]['label']} {machines[k]['bandwidth_gb_s']} GB/s",
                        machines[k]["bandwidth_gb_s"],
                    )
                    for k in LAB08_PAIRS
                ],
                "GGUF Q4_K_M",
            )
        )
    else:
        say(
            ceiling_table(
                model,
                [
                    (
                        f"{machines[k]['label']}, {machines[k]['bandwidth_gb_s']} GB/s",
                        machines[k]["bandwidth_gb_s"],
                        fmts,
                    )
                    for k, fmts in LAB08_PAIRS.items()
                ],
            )
        )


def allocation(args, model: ModelInfo, say: Say) -> Prediction:
    """The model's shape, KV bytes per token, the pool and the lines the engine should log."""
    pred = predict_allocation(
        model,
        args.engine,
        args.slots,
        args.ctx_per_slot,
        args.cache_type,
        args.swa_full,
        args.kv_bytes,
        **vllm_pool_kwargs(args),
    )
    say(
        f"==> {model.name} ({model.source}): {model.layers} layers ({model.swa_layers} sliding-window, "
        "window "
        f"{model.swa_window or '-'}), {model.kv_heads} KV heads x {model.head_dim}"
    )
    per_type = ", ".join(
        f"{ct} {kv_bytes_per_token(model.layers, model.kv_heads, model.head_dim, ct):,.0f}"
        for ct in ("f16", "q8_0", "q4_0", "fp8")
    )
    say(f"    KV bytes per token by cache type: {per_type}")
    sized = (
        "set by --kv-cache-memory-bytes"
        if args.engine == "vllm" and args.kv_bytes
        else f"{args.slots} x {args.ctx_per_slot:,} tokens"
    )
    say(
        f"    KV cache {args.cache_type}: {pred.kv_per_token:,.0f} bytes per token; {sized} -> "
        f"{pred.pool_bytes:,.0f} bytes = {pred.pool_bytes / 2**20:,.2f} MiB"
    )
    say(f"    {args.engine} should log:")
    for line in pred.log_lines:
        say(f"      {line}")
    if pred.vllm_pool is not None:
        vllm_pool(pred.vllm_pool, args.ctx_per_slot, args.max_num_batched_tokens, model.swa_window, say)
    return pred


def visible_gb(binary: str, say: Say, run=None) -> float | None:
    """The free memory of the first device ``BINARY --list-devices`` lists, in GB, printed with its
    line; None (and why, printed) when it lists none or cannot be run."""
    text = (run or _list_devices)(binary)
    devices = device_memory(text or "")
    if not devices:
        say(
            f"    GPU-visible memory: {binary} --list-devices gave no device line; the fit below is against "
            "the machine's memory, not the visible share (the GPU-visible cap)"
        )
        return None
    d = devices[0]
    say(
        f"    GPU-visible memory: {d['device']} {d['free_mib']:,} MiB free of {d['total_mib']:,} MiB "
        "(llama-server --list-devices): the KV pool comes out of this share, not the machine total"
    )
    return d["free_mib"] * 2**20 / 1e9


def mac_memory_gb(machine: dict, say: Say, run=None) -> float | None:
    """A machine the table leaves unsized (an Apple chip comes in several memory sizes): the memory
    of this Mac, ``sysctl -n hw.memsize`` (the serving lab's preflight), in GB, printed; None (and
    why, printed) for a machine that is no Mac or a Mac that did not answer."""
    if not (machine.get("unified") and str(machine.get("name", "")).startswith("Apple")):
        return None
    found = memory_for_tier("metal", run)
    if found is None:
        say(
            f"    usable memory: sysctl -n hw.memsize did not answer (not this {machine['name']}?); the "
            "table does not size it, so no fit verdict: give --usable-gb"
        )
        return None
    gb = found[0] * 2**30 / 1e9
    say(f"    usable memory: hw.memsize {gb:.1f} GB (sysctl, this Mac's memory)")
    return gb


def _list_devices(binary: str) -> str | None:
    try:
        done = subprocess.run(
            [binary, "--list-devices"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout + done.stderr


def fit(args, fmt_name: str | None, fmt: dict, pred: Prediction, machine: dict | None, say: Say) -> None:
    """Weights plus pool against the machine's usable memory."""
    total = fmt["tensor_bytes"] + pred.pool_bytes
    usable = args.usable_gb or (machine or {}).get("memory_gb")
    verdict = "" if not usable else (" -> fits" if total <= usable * 1e9 else " -> does NOT fit")
    say(
        f"    weights ({fmt_name}) + pool = {total / GIB:.2f} GiB before compute buffers"
        f"{f' against {usable:g} GB usable' if usable else ''}{verdict}"
    )


def ceilings(
    args, model: ModelInfo, fmt_name: str | None, fmt: dict | None, pred: Prediction, machine: dict, say: Say
) -> None:
    """Decode ceilings per format on the machine, and the aggregate at a few batch sizes."""
    bw = machine["bandwidth_gb_s"]
    say(
        f"    {machine['name']} at {bw} GB/s, decode ceilings (one sequence at 100 / 1,500 tokens of "
        "context; "
        f"speed limit = bandwidth / size):"
    )
    for name, f in model.formats.items():
        short = decode_ceiling(bw, f["tensor_bytes"], f["embedding_bytes"], pred.kv_per_token, 100)
        long = decode_ceiling(bw, f["tensor_bytes"], f["embedding_bytes"], pred.kv_per_token, 1500)
        say(
            f"      {name:<16} {short:7.1f} / {long:7.1f} tok/s; speed limit "
            f"{speed_limit(bw, f['tensor_bytes'] / 1e9):.1f} tok/s"
        )
    if fmt:
        read = fmt["tensor_bytes"] - fmt["embedding_bytes"]
        say(f"    aggregate at batch B ({fmt_name}, {args.cache_type} cache), tok/s in total (per sequence):")
        for context in (100, 1500):
            cells = []
            for batch in batches(args.slots):
                total, per = aggregate_ceiling(bw, read, pred.kv_per_token, batch, context)
                cells.append(f"B={batch} {total:.0f} ({per:.1f})")
            say(f"      context {context:>5}: " + "  ".join(cells))


def batches(slots: int) -> list[int]:
    """The labs' batch sizes, B = 1, 5, 10 and 20, up to the slots (and the slots themselves)."""
    return sorted({b for b in (1, 5, 10, 20) if b <= slots} | {max(1, slots)})


def vllm_pool(pool: dict, max_len: int, in_flight: int, window: int, say: Say) -> None:
    """Why vLLM logs the token count it does: groups, blocks, blocks per request."""
    groups, block, blocks = pool["groups"], pool["block_size"], pool["num_blocks"]
    say(
        f"      ({blocks:,} blocks of {block} tokens x {pool['group_size']} layers = "
        f"{pool['block_bytes']:,} bytes each, shared by {groups['full']} full-attention and "
        f"{groups['sliding']} sliding-window group(s))"
    )
    per = pool["blocks_per_request"]
    if groups["sliding"]:
        say(
            f"      (a {max_len:,}-token request needs {per} blocks: {-(-max_len // block)} per full group, "
            f"min({window} - 1 + {in_flight}, {max_len:,}) tokens / {block} + 1 per sliding group; "
            f"tokens = {blocks:,} / {per} x {max_len:,}, not blocks x block size)"
        )
    else:
        say(f"      (a {max_len:,}-token request needs {per:,} blocks)")


def predict(args, say: Say) -> int:
    """Every prediction ``harness predict``'s options ask for, each line given to ``say``."""
    model = load_model(args.model)
    if args.table:
        lab_table(args.table, model, say)
        return 0
    fmt_name = weight_format(model, args.format, args.engine)
    fmt = model.formats.get(fmt_name) if fmt_name else None
    pred = allocation(args, model, say)
    machine = lookup(args.machine) if args.machine else None
    if args.usable_from and not args.usable_gb:
        args.usable_gb = visible_gb(args.usable_from, say)
    if not args.usable_gb and machine and machine.get("memory_gb") is None:
        args.usable_gb = mac_memory_gb(machine, say)
    if fmt:
        fit(args, fmt_name, fmt, pred, machine, say)
    if machine:
        ceilings(args, model, fmt_name, fmt, pred, machine, say)
    return 0
