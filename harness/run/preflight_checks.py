"""The preflight's single checks, each a Finding (PASS, WARN or FAIL) with the lab pages' advice:
the Python version, a model file, free disk, a port, a program, llama-server's devices, an NVIDIA
card and whether containers reach it, a service's own status. The parsing functions are pure; the
readers are passed in. ``preflight`` runs them for a plan; ``guards`` adds an engine's own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from harness.engines.ports import holder, is_port, port_open

GB = 1e9


@dataclass
class Finding:
    level: str  # PASS | WARN | FAIL
    check: str
    text: str

    def line(self) -> str:
        return f"{self.level:<4}  {self.check:<22} {self.text}"


def python_version(info=sys.version_info, minimum=(3, 10)) -> Finding:
    have = f"{info[0]}.{info[1]}.{info[2]}"
    if tuple(info[:2]) >= minimum:
        return Finding("PASS", "python", f"Python {have}")
    return Finding(
        "FAIL", "python", f"Python {have} is older than {minimum[0]}.{minimum[1]}; install a newer one"
    )


def model_file(path: str, size: int | None = None) -> Finding:
    p = Path(path).expanduser()
    if not p.exists():
        return Finding("FAIL", "model", f"{p} not found; download it first (the lab's hf download command)")
    if p.is_dir():
        if not (p / "config.json").is_file():
            return Finding("FAIL", "model", f"{p} has no config.json; the download is incomplete")
        total = sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        return Finding("PASS", "model", f"{p} ({total / GB:.2f} GB)")
    got = p.stat().st_size
    if size is not None and got != size:
        return Finding(
            "FAIL",
            "model",
            f"{p} is {got:,} bytes, expected {size:,}; the download is incomplete or "
            "another file; download it again",
        )
    return Finding("PASS", "model", f"{p} ({got:,} bytes)")


def free_disk(path: str, need_gb: float, usage: Callable = shutil.disk_usage) -> Finding:
    free = usage(path).free / GB
    if free < need_gb:
        return Finding(
            "FAIL",
            "disk",
            f"{free:.1f} GB free under {path}, the plan needs {need_gb:.1f} GB; free "
            "space (harness cleanup lists what the models and environments take)",
        )
    level = "WARN" if free < need_gb * 1.2 else "PASS"
    return Finding(level, "disk", f"{free:.1f} GB free under {path} (the plan needs {need_gb:.1f} GB)")


def port_free(host: str, port: int) -> Finding:
    if not is_port(port):  # port_open cannot connect to 99999999 either: that is no "free"
        return Finding("FAIL", "port", f"{port!r} is not a TCP port (1 to 65535); fix the plan's port")
    if port_open(host, port):
        who = holder(port)
        return Finding(
            "FAIL",
            "port",
            f"{port} is in use{f' by {who}' if who else ''}; stop it first (one server at a time)",
        )
    return Finding("PASS", "port", f"{port} is free")


def binary(name: str) -> Finding:
    found = shutil.which(name) if "/" not in name else (name if Path(name).is_file() else None)
    if not found:
        return Finding(
            "FAIL", "binary", f"{name} not found; install it as the track's install lesson describes"
        )
    return Finding("PASS", "binary", found)


def llama_devices(text: str, allow_cpu: bool = False) -> Finding:
    """``llama-server --list-devices``: an empty list means a CPU-only build."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("Available devices"))
    except StopIteration:
        return Finding(
            "WARN", "accelerator", "llama-server --list-devices printed no device list; read its output"
        )
    devices = [line.strip() for line in lines[start + 1 :] if line.strip()]
    if not devices or devices == ["(none)"]:
        if allow_cpu:
            return Finding(
                "PASS", "accelerator", "llama-server lists no GPU device: a CPU build, as this plan expects"
            )
        return Finding(
            "FAIL",
            "accelerator",
            "llama-server lists no device: a CPU-only build; rebuild llama.cpp with "
            "the track's backend (CUDA, Vulkan, HIP or Metal) before going on",
        )
    return Finding("PASS", "accelerator", "; ".join(devices))


BUSY_MIB = 300  # the serving lab's preflight: memory.used above "a few hundred MiB" with no model loaded


def nvidia(csv: str, busy_mib: int = BUSY_MIB) -> list[Finding]:
    """Findings from the output of ``nvidia-smi --format=csv,noheader,nounits
    --query-gpu=name,memory.total,memory.used,driver_version``; more than ``busy_mib`` in use warns."""
    out = []
    for row in [r for r in csv.strip().splitlines() if r.strip()]:
        name, total, used, driver = [x.strip() for x in row.split(",")][:4]
        if not used.replace(".", "").isdigit():  # DGX Spark reports [N/A] / Not Supported for unified memory
            out.append(
                Finding("PASS", "gpu", f"{name}, driver {driver}; memory use not reported (unified memory)")
            )
            continue
        text = f"{name}, {int(float(total)):,} MiB, driver {driver}, {int(float(used)):,} MiB in use"
        if float(used) > busy_mib:
            out.append(
                Finding(
                    "WARN",
                    "gpu",
                    text + " with no model loaded: close what holds it, the lab cannot have that memory",
                )
            )
        else:
            out.append(Finding("PASS", "gpu", text))
    return out or [Finding("FAIL", "gpu", "nvidia-smi listed no GPU")]


def container_gpu(image: str, run: Callable) -> Finding:
    """``docker run --rm --gpus all IMAGE nvidia-smi``: do containers reach the GPU? (Never pulls.)"""
    text = run(
        [
            "docker",
            "run",
            "--rm",
            "--pull",
            "never",
            "--gpus",
            "all",
            image,
            "nvidia-smi",
            "--query-gpu=name",
            "--format=csv,noheader",
        ],
        timeout=300,
    )
    if text is None:
        return Finding("FAIL", "containers", f"docker run --gpus all {image} nvidia-smi did not finish")
    if "No such image" in text:
        return Finding(
            "WARN",
            "containers",
            f"{image} is not pulled yet, so GPU access from containers is unchecked: "
            f"docker pull {image}, then run the preflight again",
        )
    if "could not select device driver" in text or "nvidia-container-cli" in text:
        return Finding(
            "FAIL",
            "containers",
            "containers cannot reach the GPU: install the NVIDIA Container Toolkit, "
            "run sudo nvidia-ctk runtime configure --runtime=docker and restart "
            "Docker",
        )
    names = [x.strip() for x in text.strip().splitlines() if x.strip() and "error" not in x.lower()]
    if not names:
        last = (text.strip().splitlines() or ["no output"])[-1]
        return Finding("FAIL", "containers", f"docker run --gpus all {image} nvidia-smi failed: {last[:160]}")
    return Finding(
        "PASS",
        "containers",
        f"containers reach the GPU: {', '.join(names)} (docker run --gpus all {image} nvidia-smi)",
    )


def service_ready(argv: list[str], env: dict, engine: str) -> Finding:
    """A service's own status command (``lemonade status``): PASS when it answers, else FAIL with
    the troubleshooting row its output matches (lemond not running)."""
    from harness.engines.diagnoses import diagnose
    from harness.run.startup import rules

    line = " ".join(argv)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={**os.environ, **env})
    except (OSError, subprocess.TimeoutExpired):
        return Finding("FAIL", "service", f"{line} did not run or did not finish in 30 s")
    text = (done.stdout + done.stderr).strip()
    if done.returncode == 0:
        return Finding("PASS", "service", f"{line}: {(text.splitlines() or ['ok'])[0][:120]}")
    found = diagnose(f"{line} exited with status {done.returncode}\n{text}", list(rules()), engine)
    advice = f"{found.cause}: {found.remedy}" if found else f"read its output: {text[-160:]}"
    return Finding("FAIL", "service", f"{line} exited with status {done.returncode}; {advice}")


def run_text(argv: list[str], timeout: float = 30) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout + done.stderr


def summary(findings: list[Finding]) -> dict:
    return {
        "findings": [asdict(f) for f in findings],
        "counts": {k: sum(1 for f in findings if f.level == k) for k in ("PASS", "WARN", "FAIL")},
    }


def distinct(findings: list[Finding]) -> list[Finding]:
    """Each finding once, in first-seen order: blocks sharing one binary or one port share its
    finding (four llama-server blocks without llama-server are one FAIL, not four)."""
    first: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        first.setdefault((f.level, f.check, f.text), f)
    return list(first.values())
