"""A step's harness command run as a child process: this interpreter (so the run uses this
installation), its output appended to the step's log and echoed, indented, to the console."""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable


def harness_argv(args: list[str]) -> list[str]:
    """How a step runs a harness command: this interpreter, so the run uses this installation."""
    return [sys.executable, "-m", "harness.cli.entry", *args]


def _dies_with_parent() -> Callable[[], None] | None:
    """Where Linux allows it, what makes a step's command get SIGTERM when the runner dies (a
    SIGKILL leaves no one to pass a signal on): it stops as on Ctrl-C, keeping its whole levels,
    instead of measuring on beside a resumed run. Elsewhere None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:  # in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the runner died before the line above
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def run_harness(args: list[str], log_path: Path, env: dict[str, str], out: Callable[[str], None]) -> int:
    """Run ``harness ARGS`` with ``env`` added to the environment; its exit status. Ctrl-C is passed
    on to the child (SIGINT, then a kill after 30 s) and raised again."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"$ harness {shlex.join(args)}\n")
        proc = subprocess.Popen(
            harness_argv(args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env={**os.environ, **env},
            preexec_fn=_dies_with_parent(),
        )
        try:
            # text mode reads with universal newlines: a progress bar's bare \r ends a line too, so
            # no update is glued to the next line (tests/integration/test_live_output.py)
            for line in proc.stdout:
                log.write(line)
                out("    " + line.rstrip("\n"))
            return proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
