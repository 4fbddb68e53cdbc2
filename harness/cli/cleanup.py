"""``harness cleanup`` (``make clean-servers``): stop what our runs started and left running (by
their manifests, never by process name), prove the ports free, list the disk the models and
environments take, and remove one checkpoint only when asked by name."""

from __future__ import annotations

import os
from pathlib import Path

from tabulate import tabulate

from harness import paths
from harness.errors import ConfigError


def add_parser(sub) -> None:
    p = sub.add_parser("cleanup", help="stop servers our runs left running, prove ports free, list disk use")
    p.add_argument("--runs", default="runs", help="the runs folder whose manifests say what we started")
    p.add_argument("--models", default=os.path.expanduser("~/models"), help="the model library")
    p.add_argument("--remove-checkpoint", metavar="PATH", help="remove this one checkpoint (inside --models)")
    p.set_defaults(func=run)


def run(args) -> int:
    from harness.run import cleanup

    runs = Path(args.runs)
    servers = cleanup.recorded_servers(runs)
    print(f"==> servers our runs left running: {len(servers)}")
    stuck = 0
    for entry in servers:
        outcome = cleanup.stop_server(entry)
        stuck += "still held" in outcome
        print(f"    {entry['manifest'].parent.name}/{entry['block']}: {outcome}")
    here = paths.workdir()
    folders = [
        Path(args.models),
        here / "models",
        here / ".venv",
        Path(os.path.expanduser("~/vllm/.venv")),
        Path(os.path.expanduser("~/tabbyAPI")),
    ]
    rows = [(p, f"{size / 1e9:.2f} GB") for p, size in cleanup.disk_table(folders)]
    print("==> disk used (du -sh)")
    print(tabulate(rows, headers=["path", "size"], tablefmt="github") if rows else "    nothing to list")
    if args.remove_checkpoint:
        try:
            rec = cleanup.remove_checkpoint(
                Path(args.remove_checkpoint), Path(args.models), runs / "cleanup.jsonl"
            )
        except (ValueError, OSError) as exc:
            raise ConfigError(str(exc)) from None
        print(
            f"==> removed {rec['removed']} ({rec['bytes'] / 1e9:.2f} GB); "
            f"recorded in {runs / 'cleanup.jsonl'}"
        )
    return 1 if stuck else 0
