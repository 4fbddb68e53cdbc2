"""``harness predict``: memory and speed from stated inputs, before anything runs."""

from __future__ import annotations

import subprocess

from harness.core.arithmetic import speed_limit
from harness.core.engine_compare import format_for_quant
from harness.core.engine_logs import device_memory
from harness.errors import ConfigError
from harness.io.machines import load_machines, lookup, memory_for_tier
from harness.io.model_info import ModelInfo, load_model
from harness.core.arithmetic import kv_bytes_per_token
from harness.core.predictions import (
    GIB,
    Prediction,
    aggregate_ceiling,
    ceiling_table,
    decode_ceiling,
    predict_allocation,
    serving_table,
)
from harness import options
from harness.options.allocation import ARITHMETIC_ENGINE, KV_BYTES, SWA_FULL
from harness.options.serve import CACHE_TYPE, CTX_PER_SLOT, SLOTS
from harness.options.shared import MACHINE, MODEL_FILES
from harness.options.shared import WEIGHT_FORMAT

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


def add_parser(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="KV pool, expected log lines, fit in memory, decode ceilings",
        description="Predict what an engine allocates and how fast it can decode, from the model "
        "(a .gguf file, a Hugging Face directory, or a model-table name such as qwen3-8b).",
    )
    options.to_argparse(p, MODEL_FILES, command="predict")
    options.to_argparse(p, WEIGHT_FORMAT, command="predict")
    options.to_argparse(p, ARITHMETIC_ENGINE, command="predict")
    options.to_argparse(p, SLOTS, command="predict")
    options.to_argparse(p, CTX_PER_SLOT, command="predict")
    options.to_argparse(p, CACHE_TYPE, command="predict")
    options.to_argparse(p, SWA_FULL, command="predict")
    options.to_argparse(p, KV_BYTES, command="predict")
    add_vllm_pool_args(p)
    options.to_argparse(p, MACHINE, command="predict")
    p.add_argument(
        "--usable-gb", type=float, help="memory the engine may use, GB (default: the machine's memory)"
    )
    p.add_argument(
        "--usable-from",
        metavar="LLAMA_SERVER",
        help="read the memory the engine may use from this llama-server's --list-devices (the free MiB "
        "of its first device: on Track X the GPU-visible share, not the machine total)",
    )
    p.add_argument(
        "--table", choices=["lab09", "lab08"], help="print a lab page's Task 1 table from its inputs"
    )
    p.set_defaults(func=run)


def add_vllm_pool_args(p) -> None:
    """The vLLM settings its pool arithmetic needs besides the bytes (predict and verify-allocation)."""
    p.add_argument(
        "--block-size",
        type=int,
        default=16,
        help="vLLM tokens per KV block (16 on GPUs, 128 on the CPU build)",
    )
    p.add_argument(
        "--max-num-batched-tokens",
        type=int,
        default=2048,
        help="vLLM tokens in flight per step (sizes the sliding-window groups; 2048 is its default here)",
    )
    p.add_argument(
        "--device", default="GPU", help="the word vLLM's log line starts with (CPU on the CPU build)"
    )


def vllm_pool_kwargs(args) -> dict:
    return {
        "block_size": args.block_size,
        "in_flight_tokens": args.max_num_batched_tokens,
        "device": args.device,
    }


def run(args) -> int:
    model = load_model(args.model)
    if args.table:
        print_lab_table(args.table, model)
        return 0
    fmt_name = weight_format(model, args.format, args.engine)
    fmt = model.formats.get(fmt_name) if fmt_name else None
    pred = print_allocation(args, model)
    machine = lookup(args.machine) if args.machine else None
    if args.usable_from and not args.usable_gb:
        args.usable_gb = visible_gb(args.usable_from)
    if not args.usable_gb and machine and machine.get("memory_gb") is None:
        args.usable_gb = mac_memory_gb(machine)
    if fmt:
        print_fit(args, fmt_name, fmt, pred, machine)
    if machine:
        print_ceilings(args, model, fmt_name, fmt, pred, machine)
    return 0


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


def print_lab_table(table: str, model: ModelInfo) -> None:
    """One of the labs' Task 1 tables (``lab09`` serving, ``lab08`` decode ceilings)."""
    machines = load_machines()
    if table == "lab09":
        print(
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
        print(
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


def print_allocation(args, model: ModelInfo) -> Prediction:
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
    print(
        f"==> {model.name} ({model.source}): {model.layers} layers ({model.swa_layers} sliding-window, "
        "window "
        f"{model.swa_window or '-'}), {model.kv_heads} KV heads x {model.head_dim}"
    )
    per_type = ", ".join(
        f"{ct} {kv_bytes_per_token(model.layers, model.kv_heads, model.head_dim, ct):,.0f}"
        for ct in ("f16", "q8_0", "q4_0", "fp8")
    )
    print(f"    KV bytes per token by cache type: {per_type}")
    sized = (
        "set by --kv-cache-memory-bytes"
        if args.engine == "vllm" and args.kv_bytes
        else f"{args.slots} x {args.ctx_per_slot:,} tokens"
    )
    print(
        f"    KV cache {args.cache_type}: {pred.kv_per_token:,.0f} bytes per token; {sized} -> "
        f"{pred.pool_bytes:,.0f} bytes = {pred.pool_bytes / 2**20:,.2f} MiB"
    )
    print(f"    {args.engine} should log:")
    for line in pred.log_lines:
        print(f"      {line}")
    if pred.vllm_pool is not None:
        print_vllm_pool(pred.vllm_pool, args.ctx_per_slot, args.max_num_batched_tokens, model.swa_window)
    return pred


def visible_gb(binary: str, run=None) -> float | None:
    """The free memory of the first device ``BINARY --list-devices`` lists, in GB, printed with its
    line; None (and why, printed) when it lists none or cannot be run."""
    text = (run or _list_devices)(binary)
    devices = device_memory(text or "")
    if not devices:
        print(
            f"    GPU-visible memory: {binary} --list-devices gave no device line; the fit below is against "
            "the machine's memory, not the visible share (Part 5's cap)"
        )
        return None
    d = devices[0]
    print(
        f"    GPU-visible memory: {d['device']} {d['free_mib']:,} MiB free of {d['total_mib']:,} MiB "
        "(llama-server --list-devices): the KV pool comes out of this share, not the machine total"
    )
    return d["free_mib"] * 2**20 / 1e9


def mac_memory_gb(machine: dict, run=None) -> float | None:
    """A machine the table leaves unsized (an Apple chip comes in several memory sizes): the memory
    of this Mac, ``sysctl -n hw.memsize`` (the serving lab's preflight), in GB, printed; None (and
    why, printed) for a machine that is no Mac or a Mac that did not answer."""
    if not (machine.get("unified") and str(machine.get("name", "")).startswith("Apple")):
        return None
    found = memory_for_tier("metal", run)
    if found is None:
        print(
            f"    usable memory: sysctl -n hw.memsize did not answer (not this {machine['name']}?); the "
            "table does not size it, so no fit verdict: give --usable-gb"
        )
        return None
    gb = found[0] * 2**30 / 1e9
    print(f"    usable memory: hw.memsize {gb:.1f} GB (sysctl, this Mac's memory)")
    return gb


def _list_devices(binary: str) -> str | None:
    try:
        done = subprocess.run(
            [binary, "--list-devices"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout + done.stderr


def print_fit(args, fmt_name: str | None, fmt: dict, pred: Prediction, machine: dict | None) -> None:
    """Weights plus pool against the machine's usable memory."""
    total = fmt["tensor_bytes"] + pred.pool_bytes
    usable = args.usable_gb or (machine or {}).get("memory_gb")
    verdict = "" if not usable else (" -> fits" if total <= usable * 1e9 else " -> does NOT fit")
    print(
        f"    weights ({fmt_name}) + pool = {total / GIB:.2f} GiB before compute buffers"
        f"{f' against {usable:g} GB usable' if usable else ''}{verdict}"
    )


def print_ceilings(
    args, model: ModelInfo, fmt_name: str | None, fmt: dict | None, pred: Prediction, machine: dict
) -> None:
    """Decode ceilings per format on the machine, and the aggregate at a few batch sizes."""
    bw = machine["bandwidth_gb_s"]
    print(
        f"    {machine['name']} at {bw} GB/s, decode ceilings (one sequence at 100 / 1,500 tokens of "
        "context; "
        f"speed limit = bandwidth / size):"
    )
    for name, f in model.formats.items():
        short = decode_ceiling(bw, f["tensor_bytes"], f["embedding_bytes"], pred.kv_per_token, 100)
        long = decode_ceiling(bw, f["tensor_bytes"], f["embedding_bytes"], pred.kv_per_token, 1500)
        print(
            f"      {name:<16} {short:7.1f} / {long:7.1f} tok/s; speed limit "
            f"{speed_limit(bw, f['tensor_bytes'] / 1e9):.1f} tok/s"
        )
    if fmt:
        read = fmt["tensor_bytes"] - fmt["embedding_bytes"]
        print(
            f"    aggregate at batch B ({fmt_name}, {args.cache_type} cache), tok/s in total (per sequence):"
        )
        for context in (100, 1500):
            cells = []
            for batch in batches(args.slots):
                total, per = aggregate_ceiling(bw, read, pred.kv_per_token, batch, context)
                cells.append(f"B={batch} {total:.0f} ({per:.1f})")
            print(f"      context {context:>5}: " + "  ".join(cells))


def batches(slots: int) -> list[int]:
    """Task 1's batch sizes, B = 1, 5, 10 and 20, up to the slots (and the slots themselves)."""
    return sorted({b for b in (1, 5, 10, 20) if b <= slots} | {max(1, slots)})


def print_vllm_pool(pool: dict, max_len: int, in_flight: int, window: int) -> None:
    """Why vLLM logs the token count it does: groups, blocks, blocks per request."""
    groups, block, blocks = pool["groups"], pool["block_size"], pool["num_blocks"]
    print(
        f"      ({blocks:,} blocks of {block} tokens x {pool['group_size']} layers = "
        f"{pool['block_bytes']:,} bytes each, shared by {groups['full']} full-attention and "
        f"{groups['sliding']} sliding-window group(s))"
    )
    per = pool["blocks_per_request"]
    if groups["sliding"]:
        print(
            f"      (a {max_len:,}-token request needs {per} blocks: {-(-max_len // block)} per full group, "
            f"min({window} - 1 + {in_flight}, {max_len:,}) tokens / {block} + 1 per sliding group; "
            f"tokens = {blocks:,} / {per} x {max_len:,}, not blocks x block size)"
        )
    else:
        print(f"      (a {max_len:,}-token request needs {per:,} blocks)")
