"""Where a setting given as ``auto`` points on this machine: the CPU llama-server and its small
model from ``make llama-cpu``, vLLM's CPU build and its converted model from ``make vllm-cpu``,
else this Python. The block contexts (``context``), a rehearsal's stand-ins (``rehearsal``) and
the shim's allow-list (``shim_allow``) all ask here, so none of them imports another for it."""

from __future__ import annotations

import sys

from harness.errors import InstallError

# What a dry run prints for a setting whose value `make llama-cpu` has not installed yet.
_NOT_INSTALLED = {
    "llama-cpu-binary": "<llama-server from make llama-cpu>",
    "llama-cpu-model": "<models/gemma-3-270m-q4_k_m.gguf from make llama-cpu>",
}


def resolve_auto(kind: str, dry_run: bool) -> str:
    """A setting given as ``auto``: the installed CPU llama-server or small model, else this Python.
    A dry run names what is missing instead of failing."""
    from harness.engines import llama_cpu  # imports the launchers; only needed here

    try:
        if kind.startswith("vllm-cpu-"):
            return _vllm_cpu(kind, check=not dry_run)
        if kind == "llama-cpu-binary":
            return str(llama_cpu.find_llama_server())
        if kind == "llama-cpu-model":
            return str(llama_cpu.find_model())
        return sys.executable
    except InstallError:
        if dry_run:
            return _NOT_INSTALLED[kind]
        raise


def _vllm_cpu(kind: str, check: bool = True) -> str:
    """vLLM's CPU build in .venv-vllm and its converted model; InstallError saying why not (a dry
    run prints where they will be, installed or not)."""
    from harness.engines import vllm_cpu, vllm_precision

    if kind in vllm_precision.PRECISION_KINDS:  # a property of this CPU, installed or not
        return vllm_precision.precision(kind)
    why = vllm_cpu.install_status() if check else None
    if why:
        raise InstallError(why)
    return str(vllm_cpu.vllm_bin() if kind == "vllm-cpu-binary" else vllm_cpu.model_dir())
