"""``harness cleanup`` (``make clean-servers``): stop what our runs started and left running (by
their manifests, never by process name), prove the ports free, list what each install made (its
size and the command that removes it), and remove one checkpoint only when asked by name."""

from __future__ import annotations

import os
from pathlib import Path

from tabulate import tabulate

from harness.errors import ConfigError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "cleanup", help="stop servers our runs left running, prove ports free, list what each install made"
    )
    p.add_argument("--runs", default="runs", help="the runs folder whose manifests say what we started")
    p.add_argument("--models", default=os.path.expanduser("~/models"), help="the model library")
    p.add_argument("--remove-checkpoint", metavar="PATH", help="remove this one checkpoint (inside --models)")
    p.set_defaults(func=run)


def size_text(size: int | None) -> str:
    return "—" if size is None else f"{size / 1e9:.2f} GB"


def print_installs(rows: list[dict]) -> None:
    """What each install made that is here, with its size and the command that removes it; then,
    in one line each, what is not here (or cannot be told here)."""
    here = [r for r in rows if r["present"]]
    total = size_text(sum(r["bytes"] or 0 for r in here))
    print(f"==> what each install made: {len(here)} here, {total} in all")
    table = [
        [
            r["made_by"],
            r["what"] + (f" ({r['note']})" if r["note"] else ""),
            r["where"],
            size_text(r["bytes"]),
            r["remove"],
        ]
        for r in here
    ]
    head = ["made by", "what", "where", "size", "removed by"]
    print(tabulate(table, headers=head, tablefmt="github") if table else "    nothing here")
    for r in rows:
        if r["present"] is False:
            print(f"    not here: {r['where']} (made by {r['made_by']})")
        elif r["present"] is None:
            made = f"made by {r['made_by']}; {r['note']}"
            print(f"    cannot tell here: {r['where']} ({made}); removed by {r['remove']}")
    print(
        "    each command removes exactly what it names: check it before pressing return, and note in the "
        "notebook what you removed"
    )


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
    for line in cleanup.cut_runs(runs):
        print(f"==> {line}")
    print_installs(cleanup.installs_made(Path(args.models)))
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
