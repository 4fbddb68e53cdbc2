"""The run manifest (``manifest.json``): what ran, with which settings and versions, and each
step's outcome. It is rewritten after every step and validated before each write, so a run that
stops half-way can be resumed from it (docs/architecture.md, "Contracts")."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import psutil

from harness import __version__
from harness.errors import ConfigError
from harness.records.clock import now_stamp
from harness.records.manifest import (
    CUT,
    ENGINE,
    HOST,
    MANIFEST,
    RUNNER,
    STEP,
    Cut,
    RunManifest,
    RunnerMark,
    StepEntry,
)
from harness.records.notebook import validate
from harness.run.plans import Plan


def now() -> str:
    return now_stamp()


class Manifest:
    """The run manifest: plan identity, engines started, each step's outcome."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data
        self.cut: dict | None = None  # the cut this attempt found the last one ended in (resume)

    @classmethod
    def new(cls, path: Path, plan: Plan, run_dir: Path) -> "Manifest":
        data = RunManifest(
            harness_version=__version__,
            plan=plan.name,
            plan_file=str(plan.path),
            plan_sha256=plan.sha256,
            tier=plan.tier,
            variables={k: v for k, v in plan.variables.items() if "KEY" not in k.upper()},
            rehearsal=plan.rehearsal.to_dict() if plan.rehearsal else None,
            run_dir=str(run_dir),
            status="running",
            started=now(),
            updated=now(),
            host={
                HOST.node: platform.node(),
                HOST.system: platform.platform(),
                HOST.python: platform.python_version(),
                HOST.cpus: os.cpu_count(),
            },
            engines={},
            steps=[StepEntry(s.id, s.kind, s.block.id if s.block else None) for s in plan.steps],
        ).to_dict()
        return cls(path, data)

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(
                f"cannot read {path} ({exc.__class__.__name__}); start a new run instead of --resume"
            ) from None
        validate(data, "run-manifest", where=str(path))
        return cls(path, data)

    @classmethod
    def open(cls, plan: Plan, run_dir: Path, resume: bool) -> "Manifest":
        """The manifest of a run to resume (the plan must be unchanged), or a new one for a fresh run
        (``run_dir`` must not hold a run already)."""
        path = run_dir / "manifest.json"
        if resume:
            manifest = cls.load(path)
            if manifest.data[MANIFEST.plan_sha256] != plan.sha256:
                raise ConfigError(
                    f"{plan.path} changed since {run_dir} started; start a new run (without --resume)"
                )
            if manifest.data[MANIFEST.status] == "running" and runner_alive(manifest.data):
                pid = manifest.data[MANIFEST.runner][RUNNER.pid]
                raise ConfigError(
                    f"{run_dir} is being run now by harness track (pid {pid}); "
                    "let it finish or stop it, then --resume"
                )
            manifest.cut = manifest.note_cut()
            manifest.data[MANIFEST.status] = "running"
        elif path.exists():
            raise ConfigError(
                f"{run_dir} already holds a run; use --resume to continue it, or another --run-dir"
            )
        else:
            manifest = cls.new(path, plan, run_dir)
        manifest.data[MANIFEST.runner] = runner_mark()
        return manifest

    def note_cut(self) -> dict | None:
        """When the last attempt was cut (still marked running, its runner gone): the step it was
        cut in, added to ``cuts`` and marked interrupted with the reason; None otherwise."""
        found = cut_of(self.data)
        if found is None:
            return None
        self.data.setdefault(MANIFEST.cuts, []).append(found)
        if found[CUT.step] is not None:
            self.step(found[CUT.step]).update(status="interrupted", ended=found[CUT.found], reason=CUT_REASON)
        return found

    def step(self, step_id: str) -> dict:
        for entry in self.data[MANIFEST.steps]:
            if entry[STEP.id] == step_id:
                return entry
        raise ConfigError(f"step {step_id} is not in {self.path}; the plan changed, start a new run")

    def done(self, step_id: str) -> bool:
        """Whether a step finished in an earlier attempt (passed or skipped): it is not repeated."""
        return self.step(step_id)[STEP.status] in ("passed", "skipped")

    def mark_stopped(self) -> None:
        """No engine of this run is running any more (what harness cleanup reads)."""
        for entry in self.data[MANIFEST.engines].values():
            if entry.get(ENGINE.running):
                entry[ENGINE.running] = False

    def save(self) -> None:
        self.data[MANIFEST.updated] = now()
        validate(self.data, "run-manifest", where=str(self.path))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)


CUT_REASON = "cut: the run stopped during this step without a word (a SIGKILL, a crash or a power loss)"


def runner_mark() -> dict:
    """This process, as the manifest names the runner of the attempt under way."""
    me = psutil.Process()
    return RunnerMark(me.pid, round(me.create_time(), 2)).to_dict()


def runner_alive(data: dict) -> bool:
    """Whether the runner a manifest names still runs (the same process: its start time matches)."""
    mark = data.get(MANIFEST.runner)
    if not mark:
        return False
    try:
        proc = psutil.Process(mark[RUNNER.pid])
        return abs(proc.create_time() - mark[RUNNER.since]) < 1 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def cut_of(data: dict) -> dict | None:
    """The cut a manifest shows, or None: it says running but its runner is gone. The step still
    marked running is the one cut (None: between two steps)."""
    if data.get(MANIFEST.status) != "running" or runner_alive(data):
        return None
    running = [s for s in data[MANIFEST.steps] if s[STEP.status] == "running"]
    step = running[0] if running else None
    return Cut(
        step=step[STEP.id] if step else None,
        attempt=step[STEP.attempts] if step else 0,
        started=step[STEP.started] if step else None,
        found=now(),
    ).to_dict()
