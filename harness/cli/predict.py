"""``harness predict``: memory and speed from stated inputs, before anything runs (the lines are
``harness.sizing.predictions_shown``'s)."""

from __future__ import annotations

from harness.sizing.predictions_shown import predict


def add_parser(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="KV pool, expected log lines, fit in memory, decode ceilings",
        description="Predict what an engine allocates and how fast it can decode, from the model "
        "(a .gguf file, a Hugging Face directory, or a model-table name such as qwen3-8b).",
    )
    p.add_argument("--model", default="qwen3-8b")
    p.add_argument(
        "--format", help="weight format from the model table (default: the file's own, or GGUF Q4_K_M)"
    )
    p.add_argument("--engine", default="llama-server", choices=["llama-server", "vllm"])
    p.add_argument("--slots", type=int, default=20)
    p.add_argument("--ctx-per-slot", type=int, default=4096)
    p.add_argument("--cache-type", default="f16", choices=["f16", "q8_0", "q4_0", "fp8"])
    p.add_argument(
        "--swa-full", action="store_true", help="llama-server --swa-full (full-size sliding-window cache)"
    )
    p.add_argument("--kv-bytes", type=int, help="vLLM --kv-cache-memory-bytes (default: slots x context)")
    add_vllm_pool_args(p)
    p.add_argument("--machine", help="machine-table key for ceilings and fit (e.g. spark)")
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


def run(args) -> int:
    return predict(args, print)
