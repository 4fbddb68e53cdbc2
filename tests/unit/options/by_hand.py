"""The options still declared by hand (``add_argument("--x")``) outside harness/options, by module.

Each is declared in that one module only. ``--version`` is argparse's own version action."""

from __future__ import annotations

# Options still declared by hand, each in one module only: work left, to move into harness/options.
# A name added by hand anywhere else fails; one moved into harness/options must leave this list.
BY_HAND = {
    "harness/cli/cleanup.py": {"--models", "--remove-checkpoint", "--runs"},
    "harness/cli/crosscheck.py": {
        "--batch",
        "--binary",
        "--exec",
        "--goodput",
        "--model-file",
        "--num-prompts",
        "--output",
        "--prompt-tokens",
        "--strict",
        "--threads",
        "--tool",
    },
    "harness/cli/demo.py": {"--crowds", "--log-dir", "--rounds"},
    "harness/cli/engines.py": {"--allow-cpu"},
    "harness/cli/gate.py": {"--baseline", "--candidate"},
    "harness/cli/setup/install.py": {"--tabby-dir", "--tabby-repo", "--vllm-venv"},
    "harness/cli/setup/mlx_cpu.py": {"--prompt-cache-size"},
    "harness/cli/setup/models.py": {"--ask-hub", "--hub", "--track"},
    "harness/cli/practice.py": {"--header-timeout", "--no-uvloop", "--profile", "--tls-cert", "--tls-key"},
    "harness/cli/predict.py": {
        "--block-size",
        "--device",
        "--max-num-batched-tokens",
        "--table",
        "--usable-from",
        "--usable-gb",
    },
    "harness/cli/setup/shim_allow.py": {"--powermetrics"},
    "harness/cli/summarise.py": {"--compare"},
    "harness/cli/telemetry.py": {"--interval", "--seconds"},
    "harness/cli/track.py": {"--resume"},
    "harness/cli/verify_allocation.py": {
        "--equal-pool",
        "--expect-device",
        "--expect-offload",
        "--expect-prompt-cache-off",
        "--kv-max-tokens",
        "--kv-unified",
        "--log",
        "--observe-only",
    },
    "harness/cli/setup/vllm_cpu.py": {
        "--kv-cache-gib",
        "--max-model-len",
        "--max-num-seqs",
        "--no-enforce-eager",
        "--tool-call-parser",
    },
    "harness/cli/worker.py": {"--name"},
}
