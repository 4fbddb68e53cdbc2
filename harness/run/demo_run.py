"""The one-minute demo's run: the kit practice server on a free port and ``harness sweep`` against
it, one level record per crowd size in the demo's notebook; the server stopped either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.errors import HarnessError
from harness.engines.ports import free_port
from harness.run.child import harness_argv
from harness.engines.launchers.host import HostLauncher

LABEL = "practice-demo"


def run_demo(args, say) -> Path:
    """The demo's sweep against a practice server started here; its notebook's path (HarnessError
    when the sweep failed)."""
    log_dir = Path(args.log_dir)
    notebook = log_dir / "labbook.md"
    port = free_port()
    launcher = practice_launcher(port, log_dir)
    launcher.start(timeout=30)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        say(
            f"practice server (kit profile, 8 seats) on {base}; at least {args.requests} requests per crowd "
            f"size ({args.rounds} or more per person), up to {args.max_tokens} tokens out; "
            f"notebook {notebook}"
        )
        code = subprocess.run(harness_argv(sweep_args(args, base, notebook))).returncode
    finally:
        launcher.stop()
    if code != 0:
        raise HarnessError(f"the sweep against the practice server failed (exit {code}); read {log_dir}")
    return notebook


def sweep_args(args, base: str, notebook: Path) -> list[str]:
    """The ``harness sweep`` the demo runs: the practice server's conditions stated for the record."""
    return [
        "sweep",
        "--base-url",
        base,
        "--model",
        "local-chat",
        "--concurrency",
        args.crowds,
        "--requests",
        str(args.requests),
        "--min-rounds",
        str(args.rounds),
        "--max-tokens",
        str(args.max_tokens),
        "--label",
        LABEL,
        "--engine",
        "practice",
        "--quant",
        "made-up (practice kit)",
        "--context-length",
        "4096",
        "--server-slots",
        "8",
        "--labbook",
        str(notebook),
    ]


def practice_launcher(port: int, log_dir: Path) -> HostLauncher:
    """The kit practice server on ``port``, its log and output kept in ``log_dir``."""
    return HostLauncher(
        argv=[
            sys.executable,
            "-m",
            "harness.cli",
            "practice",
            "--profile",
            "kit",
            "--port",
            str(port),
            "--log-file",
            str(log_dir / "practice.log"),
        ],
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=log_dir / "practice.out",
    )
