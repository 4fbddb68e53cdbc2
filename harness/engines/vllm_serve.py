"""Serving with vLLM's CPU build: the ``vllm serve`` command line with every setting that changes a
result stated, the launcher whose readiness is a real completion, and the dry run's line.

The environment and the converted model it serves come from ``harness.engines.vllm_cpu``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.errors import InstallError
from harness.engines.launchers.vllm_cpu import VllmLauncher, ready_body
from harness.engines.vllm_cpu import (
    INSTALL_HINT,
    SERVED_NAME,
    find_model,
    model_dir,
    server_env,
    unsupported_reason,
    venv_dir,
    vllm_bin,
)


def server_argv(
    binary: Path,
    model: Path,
    port: int,
    max_model_len: int = 2048,
    max_num_seqs: int = 4,
    kv_cache_gib: float = 1.0,
    host: str = "127.0.0.1",
    enforce_eager: bool = True,
    prefix_caching: bool = True,
    tool_call_parser: str | None = None,
    served_name: str = SERVED_NAME,
    extra: list[str] | None = None,
) -> list[str]:
    """``vllm serve`` with every setting that changes a result stated; the KV pool is set in bytes
    (``--kv-cache-memory-bytes``) so the logged token count follows from it, not from free memory.
    ``--enable-prompt-tokens-details`` makes usage carry ``cached_tokens`` (the prefix-cache reading).
    Without ``tool_call_parser`` vLLM answers 400 to ``tools`` with tool_choice auto or required."""
    argv = [
        str(binary),
        "serve",
        str(model),
        "--served-model-name",
        served_name,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        str(max_model_len),
        "--max-num-seqs",
        str(max_num_seqs),
        "--kv-cache-memory-bytes",
        str(int(kv_cache_gib * 2**30)),
        "--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching",
        "--enable-prompt-tokens-details",
    ]
    if tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", tool_call_parser]
    if enforce_eager:
        argv.append("--enforce-eager")
    return argv + list(extra or [])


READY_BODY = ready_body(SERVED_NAME)


def launcher(port: int, log_path: Path, **settings) -> VllmLauncher:
    if reason := unsupported_reason():
        raise InstallError(reason)
    binary = vllm_bin()
    if not binary.is_file():
        raise InstallError(f"no vllm in {venv_dir()}; {INSTALL_HINT}")
    host = settings.get("host", "127.0.0.1")
    argv = server_argv(binary, find_model(), port, **settings)
    return VllmLauncher(
        argv=argv,
        host=host,
        port=port,
        health_url=f"http://{host}:{port}/health",
        log_path=log_path,
        env=server_env(host),
        ready_body=READY_BODY,
    )


def dry_run_command(port: int, **settings) -> str:
    """The command line with its environment, whether or not vLLM is installed (for ``--dry-run``)."""
    argv = server_argv(vllm_bin(), model_dir(), port, **settings)
    env = " ".join(f"{k}={v}" for k, v in server_env(settings.get("host", "127.0.0.1")).items())
    return f"{env} {shlex.join(argv)}"
