"""Where a track's runs go: ``runs/<date>-<plan>``, a numbered sibling when that one holds a run,
and the latest one for ``--resume``."""

from __future__ import annotations

import time
from pathlib import Path

from harness.errors import ConfigError
from harness.run.plans import Plan


def run_name(plan: Plan) -> str:
    """A rehearsal's runs never share a folder (or a --resume) with the track's own."""
    return f"rehearsal-{plan.name}" if plan.rehearsal else plan.name


def default_run_dir(plan: Plan, root: Path = Path("runs")) -> Path:
    return root / f"{time.strftime('%Y-%m-%d')}-{run_name(plan)}"


def latest_run_dir(plan: Plan, root: Path = Path("runs")) -> Path | None:
    name = run_name(plan)
    found = sorted(
        p
        for p in root.glob(f"*-{name}*")
        if (p / "manifest.json").is_file() and (plan.rehearsal or "-rehearsal-" not in p.name)
    )
    return found[-1] if found else None


def fresh_run_dir(plan: Plan, root: Path = Path("runs")) -> Path:
    base = default_run_dir(plan, root)
    path, n = base, 2
    while (path / "manifest.json").exists():
        path = base.with_name(f"{base.name}-{n}")
        n += 1
    return path


def chosen_run_dir(plan: Plan, given: str | None, resume: bool) -> Path:
    """The run directory ``--run-dir`` names, else the latest run of the plan for ``--resume``
    (ConfigError when there is none), else a fresh one."""
    if given:
        return Path(given)
    if resume:
        found = latest_run_dir(plan)
        if found is None:
            raise ConfigError(f"no earlier run of {plan.name} under runs/ to resume; run without --resume")
        return found
    return fresh_run_dir(plan)
