"""Preflight: the ten-second checks that catch what would otherwise fail an hour into a run: the
Python version, the model files, free disk, busy ports, missing engine binaries or images, and
the accelerator the engine will really use. Each check returns a Finding (PASS, WARN or FAIL)
with the lab pages' advice. The parsing functions are pure; the readers are passed in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from harness.errors import InstallError
from harness.io.ports import holder, is_port, port_open
from harness.run.context import BlockContext, block_context
from harness.run.engine_defs import engine_env, fill, launch_argv
from harness.run.plans import Block, Plan
from harness.run.launchers import stand_in_argv

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
    from harness.core.diagnoses import diagnose
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


@dataclass(frozen=True)
class Target:
    """One block as the preflight sees it: its context, the program its launcher runs, and why that
    program could not be found (None when it was)."""

    block: Block
    ctx: BlockContext
    argv0: str
    missing: str | None = None


def plan_targets(plan: Plan, run_dir: Path, dry_run: bool = False) -> list[Target]:
    """Each block's context for the preflight; an engine that cannot be found is a finding, not an
    exception (its context is then the dry run's, which names what is missing)."""
    run_dir = run_dir.absolute()
    out = []
    for block in plan.blocks.values():
        try:
            ctx = block_context(plan, block, run_dir, dry_run)
            out.append(Target(block, ctx, stand_in_argv(ctx, launch_argv(block.engine, ctx.settings))[0]))
        except InstallError as exc:
            ctx = block_context(plan, block, run_dir, dry_run=True)
            out.append(Target(block, ctx, "<missing>", str(exc)))
    return out


class _Seen:
    """What the checks already covered, so a binary, model or port shared by blocks is checked once."""

    def __init__(self) -> None:
        self.ports: set = set()
        self.bins: set = set()
        self.models: set = set()
        self.services: set = set()  # a service is asked once, however many blocks load into it
        self.images: list[str] = []
        self.docker_ok = False


def _binary_findings(exe: str, allow_cpu: bool, run: Callable, seen: _Seen) -> list[Finding]:
    """The engine's program, and what it says about itself: Docker's engine, llama-server's devices."""
    seen.bins.add(exe)
    findings = [binary(exe)]
    if exe == "docker" and shutil.which("docker"):
        text = run(["docker", "info", "--format", "{{.ServerVersion}}"])
        seen.docker_ok = bool(text) and text.strip()[:1].isdigit()
        findings.append(
            Finding("PASS", "docker", f"Docker engine {text.strip()}")
            if seen.docker_ok
            else Finding(
                "FAIL",
                "docker",
                "the Docker engine is not reachable (docker info failed); "
                "start it, or check that this user may use it",
            )
        )
    if Path(exe).name == "llama-server" and Path(exe).is_file():
        text = run([exe, "--list-devices"])
        if text is not None:
            findings.append(llama_devices(text, allow_cpu=allow_cpu))
    return findings


def _target_findings(t: Target, allow_cpu: bool, run: Callable, seen: _Seen) -> list[Finding]:
    """One block's checks: its program, its image, its model file, its port."""
    kind, settings, ctx = t.block.launcher, t.ctx.settings, t.ctx
    findings = []
    if t.missing:
        findings.append(
            Finding("WARN", "binary", f"optional block {t.block.id} will be skipped: {t.missing}")
            if t.block.optional
            else Finding("FAIL", "binary", t.missing)
        )
    exe = {"container": "docker", "compose": "docker"}.get(kind)
    if exe is None and kind not in ("external", "shim"):  # a shim engine's program is on the shim's host
        exe = t.argv0
    own: list[Finding] = []  # what an optional block only warns about: it is skipped without them
    if exe and exe not in seen.bins and not exe.startswith("<"):
        own += _binary_findings(exe, allow_cpu, run, seen)
    if kind == "shim" and ("shim", t.block.engine.name) not in seen.bins:  # its host's devices
        seen.bins.add(("shim", t.block.engine.name))
        own += shim_devices(t.ctx, allow_cpu)
    if kind in ("container", "compose") and settings.get("image") and settings["image"] not in seen.images:
        seen.images.append(settings["image"])
    model = settings.get("model")
    imitation = bool((t.block.stand_in or {}).get("imitates"))  # loads no model
    if (
        kind == "host"
        and not imitation
        and isinstance(model, str)
        and model.startswith("/")
        and model not in seen.models
    ):
        seen.models.add(model)
        own.append(model_file(model))
    if t.block.engine.get("guards") and not imitation:
        from harness.run.guards import engine_guards  # guards.py builds on this module's Finding

        from harness.io.shim_host import host_system  # a shim engine's host is the shim's

        own += engine_guards(
            t.block.engine["guards"], str(model or ""), host_system() if kind == "shim" else None
        )
    before = t.block.engine.get("service", {}).get("before", [])
    if kind == "service" and (t.block.stand_in or {}).get("daemon"):
        # a rehearsal: the stand-in service is started by its block, so there is none to ask yet
        own.append(Finding("PASS", "service", f"{t.block.id}: its stand-in service starts with the block"))
    elif kind == "service" and before and shutil.which(t.argv0) and t.argv0 not in seen.services:
        seen.services.add(t.argv0)
        first = before[0]["argv"] if isinstance(before[0], dict) else before[0]
        own.append(
            service_ready(
                [fill(x, settings) for x in first], engine_env(t.block.engine, settings), t.block.engine.name
            )
        )
    if t.block.optional:
        own = [
            Finding("WARN", f.check, f"optional block {t.block.id} will be skipped: {f.text}")
            if f.level == "FAIL"
            else f
            for f in own
        ]
    findings += own
    if kind not in ("external", "service") and (ctx.host, ctx.port) not in seen.ports:
        seen.ports.add((ctx.host, ctx.port))
        findings.append(port_free(ctx.host, ctx.port))
    return findings


def shim_devices(ctx: BlockContext, allow_cpu: bool) -> list[Finding]:
    """An engine's devices on the shim's host: the shim runs the listing its allow-list fixed
    (llama-server --list-devices); an engine without one has no finding."""
    from harness.errors import ConfigError, EngineError
    from harness.run.launchers import make_launcher

    try:
        text = make_launcher(ctx).devices()  # type: ignore[attr-defined]
    except (EngineError, ConfigError) as exc:
        return [Finding("FAIL", "accelerator", f"{ctx.block.id}: {exc}")]
    return [llama_devices(text, allow_cpu)] if text is not None else []


def plan_findings(
    plan,
    targets: list[Target],
    run_dir: Path,
    usage: Callable = shutil.disk_usage,
    run: Callable | None = None,
) -> list[Finding]:
    """Every check a plan needs, for the blocks ``plan_targets`` gives (a missing CPU llama-server
    shows up as a target's ``missing``). ``run`` answers the machine's commands: by default here, or
    the host-side shim's answers when the engines run on its host (harness.io.shim_host)."""
    from harness.io.shim_host import host_run

    run = run or host_run(run_text)
    v = plan.variables
    findings = [python_version()]
    seen = _Seen()
    for t in targets:
        findings += _target_findings(t, bool(v.get("ALLOW_CPU")), run, seen)
    from harness.run import guards  # guards.py builds on this module's Finding

    findings += guards.install_tools(str(v.get("INSTALL_TOOLS", ""))) + guards.plan_tier(plan, run)
    findings += guards.environment_sizes(str(v.get("ENV_DIRS", "")))
    run_dir.mkdir(parents=True, exist_ok=True)
    findings.append(free_disk(str(run_dir), float(v.get("DISK_GB", 1)), usage))
    accel = v.get("ACCELERATOR", "cpu")
    if accel == "nvidia":
        text = run(
            [
                "nvidia-smi",
                "--query-gpu=name,memory.total,memory.used,driver_version",
                "--format=csv,noheader,nounits",
            ]
        )
        findings += (
            nvidia(text)
            if text
            else [
                Finding(
                    "FAIL",
                    "gpu",
                    "nvidia-smi not found or failed: this track needs an NVIDIA GPU with a working driver",
                )
            ]
        )
        if seen.docker_ok:
            findings += [container_gpu(image, run) for image in seen.images]
    elif accel == "rocm":
        text = run(["rocm-smi", "--showmeminfo", "vram", "gtt"])
        findings.append(
            Finding("PASS", "gpu", "rocm-smi answered")
            if text and "VRAM" in text
            else Finding(
                "FAIL",
                "gpu",
                "rocm-smi not found or shows no VRAM: install ROCm as the track's install lesson describes",
            )
        )
    elif accel == "metal":
        text = run(["sysctl", "-n", "hw.memsize"])
        ok = bool(text and text.strip().isdigit())
        findings.append(
            Finding("PASS", "memory", f"hw.memsize {int(text) / GB:.0f} GB")
            if ok
            else Finding(
                "FAIL", "memory", "sysctl hw.memsize did not answer: this track needs macOS on Apple silicon"
            )
        )
    return distinct(findings)


def distinct(findings: list[Finding]) -> list[Finding]:
    """Each finding once, in first-seen order: blocks sharing one binary or one port share its
    finding (four llama-server blocks without llama-server are one FAIL, not four)."""
    first: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        first.setdefault((f.level, f.check, f.text), f)
    return list(first.values())
