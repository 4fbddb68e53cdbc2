"""The run manifest (``manifest.json``): what ran, with which settings and versions, and each
step's outcome. It is rewritten after every step and validated before each write, so a run that
stops half-way can be resumed from it (docs/architecture.md, "Contracts")."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from harness import __version__
from harness.errors import ConfigError
from harness.records.base import SCHEMA_VERSION
from harness.records.clock import now_stamp
from harness.records.notebook import validate
from harness.run.plans import Plan


def now() -> str:
    return now_stamp()


class Manifest:
    """The run manifest: plan identity, engines started, each step's outcome."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data

    @classmethod
    def new(cls, path: Path, plan: Plan, run_dir: Path) -> "Manifest":
        data = {
            "record": "run-manifest",
            "harness_schema": SCHEMA_VERSION,
            "harness_version": __version__,
            "plan": plan.name,
            "plan_file": str(plan.path),
            "plan_sha256": plan.sha256,
            "tier": plan.tier,
            "variables": {k: v for k, v in plan.variables.items() if "KEY" not in k.upper()},
            **({"rehearsal": plan.rehearsal.to_dict()} if plan.rehearsal else {}),
            "run_dir": str(run_dir),
            "status": "running",
            "started": now(),
            "updated": now(),
            "host": {
                "node": platform.node(),
                "system": platform.platform(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
            },
            "engines": {},
            "steps": [
                {
                    "id": s.id,
                    "kind": s.kind,
                    "block": s.block.id if s.block else None,
                    "status": "pending",
                    "reason": None,
                    "command": None,
                    "started": None,
                    "ended": None,
                    "duration_s": None,
                    "attempts": 0,
                    "log": None,
                    "result": None,
                }
                for s in plan.steps
            ],
        }
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
            if manifest.data["plan_sha256"] != plan.sha256:
                raise ConfigError(
                    f"{plan.path} changed since {run_dir} started; start a new run (without --resume)"
                )
            manifest.data["status"] = "running"
            return manifest
        if path.exists():
            raise ConfigError(
                f"{run_dir} already holds a run; use --resume to continue it, or another --run-dir"
            )
        return cls.new(path, plan, run_dir)

    def step(self, step_id: str) -> dict:
        for entry in self.data["steps"]:
            if entry["id"] == step_id:
                return entry
        raise ConfigError(f"step {step_id} is not in {self.path}; the plan changed, start a new run")

    def done(self, step_id: str) -> bool:
        """Whether a step finished in an earlier attempt (passed or skipped): it is not repeated."""
        return self.step(step_id)["status"] in ("passed", "skipped")

    def mark_stopped(self) -> None:
        """No engine of this run is running any more (what harness cleanup reads)."""
        for entry in self.data["engines"].values():
            if entry.get("running"):
                entry["running"] = False

    def save(self) -> None:
        self.data["updated"] = now()
        validate(self.data, "run-manifest", where=str(self.path))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)
