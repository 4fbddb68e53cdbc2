"""``harness predict``: memory and speed from stated inputs, before anything runs (the lines are
``harness.report.predictions_shown``'s)."""

from __future__ import annotations

from harness import options
from harness.options.allocation import ARITHMETIC_ENGINE, KV_BYTES, SWA_FULL
from harness.options.serve import CACHE_TYPE, CTX_PER_SLOT, SLOTS
from harness.options.shared import MACHINE, MODEL_FILES
from harness.options.shared import WEIGHT_FORMAT
from harness.report.predictions_shown import predict


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
        "of its first device: on a unified-memory machine the GPU-visible share, not the machine total)",
    )
    p.add_argument(
        "--table", choices=["lab09", "lab08"], help="print a lab page's prediction table from its inputs"
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
