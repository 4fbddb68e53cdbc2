"""Where a track's runs go: ``runs/<date>-<plan>``, a numbered sibling when that one holds a run,
and the latest one for ``--resume``."""

from __future__ import annotations

import time
from pathlib import Path

from harness.run.plans import Plan


def default_run_dir(plan: Plan, root: Path = Path("runs")) -> Path:
    return root / f"{time.strftime('%Y-%m-%d')}-{plan.name}"


def latest_run_dir(plan: Plan, root: Path = Path("runs")) -> Path | None:
    found = sorted(p for p in root.glob(f"*-{plan.name}*") if (p / "manifest.json").is_file())
    return found[-1] if found else None


def fresh_run_dir(plan: Plan, root: Path = Path("runs")) -> Path:
    base = default_run_dir(plan, root)
    path, n = base, 2
    while (path / "manifest.json").exists():
        path = base.with_name(f"{base.name}-{n}")
        n += 1
    return path
