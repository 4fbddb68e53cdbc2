"""A track run's engines: start a block's engine with its stated settings (its model file there,
the lab's ports free, a fresh log, a service's own steps, the idle memory snapshot, the files it
reads), record it in the manifest, and stop it, proving the port free and the memory released.
The runner (``runner.Runner``) is built on this; what it shares with it is named below.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from harness.records.manifest import MANIFEST, EngineEntry
from harness.errors import HarnessError
from harness.run.api_keys import api_key_env
from harness.run.child import run_harness
from harness.run.context import BlockContext, check_model_file, file_target
from harness.engines.command_line import engine_files
from harness.engines.handover_watch import HandOver, release_line, stop_and_judge
from harness.run.launcher_table import Launcher, make_launcher
from harness.engines.launchers.base import Prepares, StartsLoadWorkers, read_version
from harness.run.manifest import Manifest
from harness.run.plans import Plan
from harness.run.startup import explain, refuse_busy_lab_ports, service_facts, service_notes


def _rounded(mb: float | None) -> float | None:
    return None if mb is None else round(mb, 1)


class EngineControl:
    """The engine half of a run: the attributes below are the runner's (set in its __init__), and
    ``step_env`` and ``_not_running_here`` are its methods."""

    plan: Plan
    run_dir: Path
    out: Callable[[str], None]
    launcher: Launcher | None
    ctx: BlockContext | None
    child_env: dict[str, str]
    manifest: Manifest | None
    handover: HandOver | None
    versions: dict[tuple, str]

    def _prepare(self, ctx: BlockContext, launcher: Launcher) -> None:
        """Everything before the engine starts: its model file, the lab's ports free, a fresh log, a
        service's own steps, the idle memory snapshot, the files it reads, and its manifest entry."""
        block, engine = ctx.block, ctx.block.engine
        check_model_file(ctx)
        ctx.out.parent.mkdir(parents=True, exist_ok=True)
        refuse_busy_lab_ports(self.plan, self.run_dir, ctx, launcher.keeps_port, self._not_running_here())
        ctx.log.unlink(missing_ok=True)
        if isinstance(launcher, Prepares):  # a service's own steps first: a model left loaded is unloaded
            launcher.prepare(float(block.start_timeout_s or engine.get("health_timeout_s", 300)))
        if any(s.kind == "measure" for s in self.plan.steps if s.block is block):
            # The idle memory reading the measure step subtracts, taken before this engine loads.
            log = self.run_dir / "steps" / f"{block.id}__idle-snapshot.txt"
            argv = ["measure", "--snapshot-only", str(ctx.idle)]
            if run_harness(argv, log, self.step_env(block), self.out) != 0:
                self.out("    WARN  no idle memory snapshot; the memory column will be empty")
        for name, text in engine_files(engine, ctx.settings).items():
            target = file_target(self.run_dir, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        self.manifest.data[MANIFEST.engines][block.id] = EngineEntry(
            engine=engine.name,
            command=launcher.command(),
            settings={k: v for k, v in ctx.settings.items() if "key" not in k.lower()},
            changed=block.changed,
            log=str(ctx.log),
        ).to_dict()
        self.manifest.save()

    def start_engine(self, ctx: BlockContext, entry: dict) -> bool:
        """Start the block's engine and record it; False (the reason in ``ctx.state.start_error``)
        when it would not start, after stopping whatever did."""
        block, state = ctx.block, ctx.state
        try:
            launcher = make_launcher(ctx)
            entry["command"] = launcher.command()
            self._prepare(ctx, launcher)
            self.out(f"    start: {launcher.command()}")
            self.handover = HandOver.started(block.launcher, launcher, ctx.port)  # memory before
            t0 = time.monotonic()
            self.launcher = launcher
            launcher.start(timeout=float(block.start_timeout_s or block.engine.get("health_timeout_s", 300)))
            state.startup_s = time.monotonic() - t0
            state.pid = launcher.pid
            state.container = getattr(launcher, "container_name", None)
            state.base_url = getattr(launcher, "api_base", None)
            self.child_env = api_key_env(block, ctx.settings)
            state.version = read_version(launcher, self.versions)
            if isinstance(launcher, StartsLoadWorkers):
                state.workers = launcher.load_workers()
            # What harness cleanup needs to stop this server later, by our own record.
            self.manifest.data["engines"][block.id].update(
                command=launcher.command(),  # as executed (a compose launcher finds its CLI on start)
                version=state.version,
                pid=None if launcher.keeps_port else launcher.pid,  # cleanup stops a pid: never a service's
                **service_facts(launcher),
                host=ctx.host,
                port=ctx.port,
                running=True,
                memory_mb=_rounded(launcher.memory_mb()),
            )
            self.manifest.save()
            self.out(f"    healthy after {state.startup_s:.1f} s: {ctx.api_url} ({state.version})")
            for note in service_notes(launcher):
                self.out(f"    note: {note}")
            return True
        except HarnessError as exc:
            state.start_error = str(exc)
            try:
                self.stop_engine()
            except HarnessError as stop_exc:
                state.start_error += f"; and stopping it: {stop_exc}"
            diagnosis = explain(block.engine.name, state.start_error, ctx.log, ctx.out)
            if diagnosis is not None:  # the labs' troubleshooting row its log matches
                self.out(f"    WHY   {diagnosis.text()}")
                entry["result"] = {"diagnosis": diagnosis.to_dict()}
                state.start_error += f"; {diagnosis.cause}: {diagnosis.remedy}"
            return False

    def stop_engine(self) -> None:
        """Stop the running engine, if any; raises EngineError when its port stays busy."""
        launcher, self.launcher = self.launcher, None
        if launcher is None:
            return
        started = bool(self.ctx and self.ctx.state.version)
        memory = _rounded(launcher.memory_mb()) if started else None
        handover, self.handover = (self.handover if started else None), None
        released = stop_and_judge(handover, launcher, memory)  # the port, and the memory came back
        if self.manifest:
            entry = self.manifest.data["engines"].get(self.ctx.block.id) if started else None
            if entry is not None:
                entry.update(
                    {
                        k: v
                        for k, v in (("memory_mb_at_stop", memory), ("memory_release", released))
                        if v is not None
                    }
                )
            self.manifest.mark_stopped()
            self.manifest.save()
        if self.ctx and not launcher.keeps_port:
            self.out(f"    stopped; port {self.ctx.port} is free")
        if released is not None:
            self.out(release_line(released))
