"""Preflight: the ten-second checks that catch what would otherwise fail an hour into a run: the
Python version, the model files, free disk, busy ports, missing engine binaries or images, and
the accelerator the engine will really use, for every block of a plan. Each check is one of
``preflight_checks`` (or an engine's ``guards``) and returns a Finding (PASS, WARN or FAIL)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.errors import InstallError
from harness.run import guards
from harness.run.context import BlockContext, block_context
from harness.engines.command_line import engine_env, fill, launch_argv
from harness.run.plans import Block, Plan
from harness.run.launcher_table import stand_in_argv
from harness.run.preflight_checks import (
    GB,
    Finding,
    binary,
    container_gpu,
    distinct,
    free_disk,
    llama_devices,
    model_file,
    nvidia,
    port_free,
    python_version,
    run_text,
    service_ready,
)


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
    kept = (t.block.stand_in or {}).get("guards", t.block.engine.get("guards"))  # a stand-in's own
    if kept and not imitation:
        from harness.endpoints.shim_host import host_system  # a shim engine's host is the shim's

        own += guards.engine_guards(kept, str(model or ""), host_system() if kind == "shim" else None)
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
    from harness.run.launcher_table import make_launcher

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
    the host-side shim's answers when the engines run on its host (harness.endpoints.shim_host)."""
    from harness.endpoints.shim_host import host_run

    run = run or host_run(run_text)
    v = plan.variables
    findings = [python_version()]
    seen = _Seen()
    for t in targets:
        findings += _target_findings(t, bool(v.get("ALLOW_CPU")), run, seen)
    findings += guards.install_tools(str(v.get("INSTALL_TOOLS", ""))) + guards.plan_tier(plan, run)
    findings += guards.memory_fractions(plan, findings)
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
