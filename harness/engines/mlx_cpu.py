"""mlx_lm.server on MLX's Linux CPU backend (PyPI ``mlx[cpu]`` and ``mlx-lm``) serving the project's
Gemma 3 270M: its own virtual environment, the pitfalls handled, the model converted once to MLX
float32 and checked. It stands in for mlx_lm.server on a Mac in the Apple silicon track's
rehearsal: a rehearsal on MLX's CPU backend, never a Mac figure.

Why each step exists (all seen on this machine, 2026-12-06):

- MLX lives in ``.venv-mlx`` (about 1.3 GB), never in the harness's ``.venv``: mlx-lm pins
  transformers 5, which the harness does not need.
- The ``mlx-cpu`` wheel bundles the reference (Netlib) BLAS: a float32 matrix product ran at about
  1 GFLOP/s. MKL's ``libmkl_rt`` (PyPI ``mkl``) preloaded in its place supplies ``cblas_sgemm``:
  prefill of a 501-token prompt 5 -> 105 tokens/s, decode 1.7 -> 4.8 tokens/s, the same greedy text.
  One thread (``MKL_THREADING_LAYER=SEQUENTIAL``): two MKL threads beside other work decoded at
  0.7 tokens/s. MKL is x86-64 only; elsewhere the bundled BLAS serves, and the install says so.
- Float32, not bfloat16 or 4-bit: MLX's CPU backend has no BLAS path for bfloat16 (prefill 8
  tokens/s) and a slow quantised product (32 tokens in 100-109 s at 4 bits).
- No weights from a hub: the MLX model is converted from the bf16 safetensors folder that
  ``make vllm-cpu`` writes, when its manifest checks; else that folder is made here first with
  transformers and PyTorch's CPU wheel (about 1 GB, not vLLM's 3.5 GB), from the project's GGUF.
- ``/v1/models`` scans the Hugging Face cache and raises ``CacheNotFound`` when the folder is
  missing: the server runs with ``HF_HUB_CACHE`` naming a folder in the environment, and
  ``HF_HUB_OFFLINE=1``.
- ``/health`` answers before the model is loaded: readiness is a real completion.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from pathlib import Path

from harness import paths
from harness.errors import InstallError
from harness.engines.own_env import OwnEnv, run
from harness.engines import llama_cpu, vllm_cpu

MLX_VERSION = "0.32.4"
MLX_LM_VERSION = "0.32.2"
PINS = (f"mlx[cpu]=={MLX_VERSION}", f"mlx-lm=={MLX_LM_VERSION}")
BLAS_PIN = "mkl==2026.2.1"  # libmkl_rt with the standard CBLAS names (x86-64 only)
# transformers (mlx-lm brings it) reads the GGUF only with these beside it.
CONVERT_PACKAGES = ("torch==2.13.0", "gguf>=0.10", "accelerate")
TORCH_NOTE = (
    "torch==2.13.0 is PyTorch's CPU build where pip's configuration names a wheel store holding it "
    f"(find-links); elsewhere add --extra-index-url {vllm_cpu.TORCH_INDEX}, or run `make vllm-cpu` "
    "first (its bf16 folder is reused and no torch is needed)"
)
MODEL_DIR = "gemma-3-270m-mlx-f32"
DTYPE = "float32"
MANIFEST = "harness-manifest.json"
HUB_CACHE = "hf-hub-cache"  # inside the environment: /v1/models scans it
NEED_DISK_GB = 3.5  # the environment (1.3 GB, 2.3 with torch), the model (1.1 GB), pip's unpacking
INSTALL_HINT = "run `make mlx-cpu` (its own environment .venv-mlx, about 2-4 minutes, 1.3-2.3 GB)"
PYTHONS = ((3, 10), (3, 11), (3, 12), (3, 13), (3, 14))
LABEL = "a rehearsal on MLX's CPU backend"


ENV = OwnEnv("MLX", "mlx[cpu]", "MLX_VENV", ".venv-mlx", PYTHONS)
venv_dir, venv_python, find_base_python = ENV.directory, ENV.python, ENV.base_python


def server_bin() -> Path:
    return ENV.bin("mlx_lm.server")


def model_dir() -> Path:
    return paths.models_dir() / MODEL_DIR


def hub_cache() -> Path:
    return venv_dir() / HUB_CACHE


def blas_library(venv: Path | None = None) -> Path | None:
    """MKL's ``libmkl_rt`` in the environment (``lib/libmkl_rt.so.N``), or None."""
    found = sorted((venv or venv_dir()).glob("lib/libmkl_rt.so*"))
    return found[-1] if found else None


def unsupported_reason(machine: str | None = None, system: str | None = None) -> str | None:
    """One line saying why mlx[cpu] cannot run here, or None when it can."""
    system = system or platform.system()
    machine = machine or platform.machine()
    if system != "Linux":
        return f"mlx[cpu] is MLX's Linux CPU backend; this is {system} (on a Mac, mlx-lm runs on Metal)"
    if machine not in ("x86_64", "AMD64", "aarch64", "arm64"):
        return f"mlx-cpu {MLX_VERSION} has wheels for x86-64 and aarch64; this machine is {machine}"
    return None


def install_status() -> str | None:
    """None when mlx_lm.server and the converted model are ready, else why not (one line)."""
    if reason := unsupported_reason():
        return reason
    if not server_bin().is_file():
        return f"mlx_lm.server is not installed in {venv_dir()}; {INSTALL_HINT}"
    if not (model_dir() / MANIFEST).is_file():
        return f"the MLX model {model_dir()} is missing; {INSTALL_HINT}"
    return None


# -- the environment ----------------------------------------------------------------------------


def installed_versions() -> dict:
    return ENV.versions(("mlx", "mlx-cpu", "mlx-lm", "transformers", "mkl", "torch"))


def wants_blas(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in ("x86_64", "AMD64")


def ensure_environment(say=print) -> dict:
    """Create ``.venv-mlx`` with mlx[cpu], mlx-lm and (x86-64) MKL; idempotent. Returns timings."""
    timings: dict = {}
    venv = venv_dir()
    ENV.create(say)
    versions = installed_versions()
    want = list(PINS) + ([BLAS_PIN] if wants_blas() else [])
    if (
        versions["mlx-cpu"] != MLX_VERSION
        or versions["mlx-lm"] != MLX_LM_VERSION
        or (wants_blas() and not versions["mkl"])
    ):
        ENV.check_free_disk(NEED_DISK_GB)
        say(f"==> pip install {' '.join(want)} into {venv} (about 1.5 minutes, 1.3 GB)")
        timings["pip_install_s"] = ENV.pip(want, f"pip install {' '.join(want)}")
    hub_cache().mkdir(parents=True, exist_ok=True)
    timings["versions"] = installed_versions()
    return timings


def server_env(venv: Path | None = None) -> dict:
    """mlx_lm.server's environment here: offline, a Hugging Face cache folder that exists (its
    /v1/models scans it), and MKL's BLAS in place of the wheel's reference BLAS, on one thread."""
    venv = venv or venv_dir()
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_CACHE": str(venv / HUB_CACHE),
    }
    blas = blas_library(venv)
    if blas is not None:
        env.update({"LD_PRELOAD": str(blas), "MKL_THREADING_LAYER": "SEQUENTIAL"})
    return env


def blas_note(venv: Path | None = None) -> str:
    blas = blas_library(venv)
    if blas is not None:
        return f"MKL's {blas.name} preloaded on one thread in place of the wheel's reference BLAS"
    return "the wheel's own reference BLAS (no MKL for this machine): matrix products about 20 times slower"


def check_environment() -> str:
    """Import MLX the way mlx_lm.server does, on its CPU device; its version line, or InstallError."""
    code = (
        "import mlx.core as mx, mlx_lm\n"
        "a = mx.ones((64, 64)); mx.eval(a @ a)\n"
        'print(f"mlx-lm {mlx_lm.__version__} / mlx {mx.__version__} on {mx.default_device()}")'
    )
    out = run([venv_python(), "-c", code], "importing MLX in its environment", env=server_env())
    return out.strip().splitlines()[-1]


# -- the model ----------------------------------------------------------------------------------


def _bf16_source(say, work: Path) -> tuple[Path, str]:
    """The bf16 safetensors folder the MLX model is made from: vLLM's, when its manifest checks,
    else one converted here (transformers and PyTorch's CPU wheel added to this environment)."""
    bf16 = vllm_cpu.model_dir()
    if vllm_cpu.manifest_matches(bf16, llama_cpu.MODEL_SHA256):
        return bf16, f"reused {bf16} (make vllm-cpu's conversion, its hashes checked)"
    versions = ENV.versions(("torch", "gguf", "accelerate"))
    if not all(versions.values()):
        say(f"==> pip install {' '.join(CONVERT_PACKAGES)} (to read the GGUF; about a minute, 1 GB)")
        say(f"    note: {TORCH_NOTE}")
        ENV.pip(list(CONVERT_PACKAGES), f"pip install {' '.join(CONVERT_PACKAGES)} ({TORCH_NOTE})")
    gguf = llama_cpu.assemble_model()
    out = work / "bf16"
    say(f"==> converting {gguf.name} to bf16 safetensors with transformers (1-2 minutes)")
    run(
        [venv_python(), Path(vllm_cpu.__file__).with_name("vllm_convert.py"), gguf, out],
        "converting the GGUF with transformers",
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    return out, f"converted from {gguf.name} with transformers in this environment"


def ensure_model(say=print, force: bool = False) -> tuple[Path, dict]:
    """The MLX float32 folder, converted once and checked against its manifest. Returns (folder, facts)."""
    dest = model_dir()
    if not force and vllm_cpu.manifest_matches(dest, llama_cpu.MODEL_SHA256):
        return dest, {"reused": True}
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    t0 = time.monotonic()
    source, how = _bf16_source(say, partial)
    out = partial / "mlx"
    say(f"==> mlx_lm.convert --dtype {DTYPE} into {dest} (about 20 s)")
    t1 = time.monotonic()
    run(
        [
            venv_dir() / "bin" / "mlx_lm.convert",
            "--hf-path",
            source,
            "--mlx-path",
            out,
            "--dtype",
            DTYPE,
        ],
        "mlx_lm.convert",
        env=server_env(),
    )
    conversion = {
        "dtype": DTYPE,
        "source": how,
        "mlx_convert_s": round(time.monotonic() - t1, 1),
        "wall_s": round(time.monotonic() - t0, 1),
        "mlx_lm": MLX_LM_VERSION,
        "mlx": MLX_VERSION,
    }
    gguf = llama_cpu.models_dir() / llama_cpu.MODEL_FILE
    vllm_cpu.write_manifest(out, gguf, llama_cpu.MODEL_SHA256, conversion)
    record = json.loads((out / MANIFEST).read_text())
    record["converted_by"] = "harness/engines/mlx_cpu.py (mlx_lm.convert)"
    (out / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    out.rename(dest)
    shutil.rmtree(partial, ignore_errors=True)
    return dest, {"reused": False, **conversion}


# -- serving ------------------------------------------------------------------------------------


def server_argv(port: int, prompt_cache_size: int = 10, model: Path | None = None) -> list[str]:
    """The mlx-lm engine definition's own command line (harness/data/engines/mlx-lm.yaml) with this
    environment's mlx_lm.server and the converted model: the flags are declared there, once."""
    from harness.engines.definitions import load_engine
    from harness.engines.command_line import engine_argv, resolve_settings

    engine = load_engine("mlx-lm")
    settings = resolve_settings(
        engine,
        {
            "server": str(server_bin()),
            "model": str(model or model_dir()),
            "port": port,
            "prompt_cache_size": prompt_cache_size,
        },
    )
    return engine_argv(engine, settings)


def launcher(port: int, log_path: Path, prompt_cache_size: int = 10):
    """mlx_lm.server on the CPU backend, ready after a real completion (harness.run.launcher_table)."""
    from harness.engines.launchers.vllm_cpu import MlxCpuLauncher, ready_body

    if why := install_status():
        raise InstallError(why)
    model = str(model_dir())
    return MlxCpuLauncher(
        argv=server_argv(port, prompt_cache_size),
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=log_path,
        env=server_env(),
        ready_body=ready_body(model),
        version_argv=[sys.executable, "-m", "harness.engines.versions", "mlx", str(server_bin())],
    )
