"""``harness verify-allocation``: read the engine's own load log and compare it with the prediction
before anything is measured (``harness.engines.allocation`` reads and compares). Exit 1 on a
mismatch, naming both figures and the likely cause."""

from __future__ import annotations

from harness.cli.predict import add_vllm_pool_args
from harness.engines import allocation
from harness.records.notebook import append_record
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


def run(args) -> int:
    if args.equal_pool:
        same, line = allocation.equal_pool(args.equal_pool)
        print(line)
        return 0 if same else 1
    checked = allocation.verify(args)
    for line in checked.lines:
        print(line)
    if args.labbook:
        append_record(args.labbook, checked.record, "allocation")
    return 1 if checked.problems else 0
