"""``harness setup install``: the NVIDIA track's installs as the engines lab does them (its plan's
install step): vLLM in its own ``uv`` environment and TabbyAPI's ``git`` clone, each where the
machine has its tool and a network, and skipped with the reason where not
(``harness/engines/installs.py``)."""

from __future__ import annotations

import os

from harness.engines import installs as ti
from harness import options
from harness.options.shared import DRY_RUN
from harness.options.track import VLLM_REQUIREMENT


def add_parser(sub) -> None:
    p = sub.add_parser(
        "install",
        help="the NVIDIA track's installs: vLLM's uv environment and TabbyAPI's git clone, where they run",
    )
    p.add_argument("--vllm-venv", help="make vLLM's environment here (uv venv, then uv pip install)")
    options.to_argparse(p, VLLM_REQUIREMENT, command="install")
    p.add_argument("--tabby-dir", help="clone TabbyAPI here")
    p.add_argument("--tabby-repo", default=ti.TABBY_REPO, help="TabbyAPI's repository")
    options.to_argparse(p, DRY_RUN, command="install")
    p.set_defaults(func=run)


def run(args) -> int:
    todo = ti.installs(args.vllm_venv, args.tabby_dir, args.vllm or ti.VLLM_PIN, args.tabby_repo)
    if not todo:
        print("==> nothing to install: give --vllm-venv, --tabby-dir or both")
        return 0
    rehearsal = bool(os.environ.get("HARNESS_REHEARSAL"))
    return ti.run_installs(todo, dry_run=args.dry_run, rehearsal=rehearsal)
