"""What a person reads from the CLI in a pipeline: a reader that goes away (`| head`) ends the
command quietly, without a BrokenPipe traceback."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import FIXTURES, ROOT
from tests.integration.deadlines import START_S

NOTEBOOK = FIXTURES / "notebooks" / "practice-run.md"


def test_a_reader_that_leaves_ends_the_command_quietly():
    """The read end is closed before the command writes a byte: every write fails (EPIPE)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "summarise",
            "--labbook",
            str(NOTEBOOK),
            "--label",
            "practice-baseline",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141  # as a command ended by SIGPIPE
    assert err == ""


def test_summarise_into_head_prints_its_first_lines_only():
    done = subprocess.run(
        f"{sys.executable} -m harness.cli summarise --labbook {NOTEBOOK} --label practice-baseline | head -2",
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=START_S,  # a hang only: a harness command's start on a loaded machine
    )
    assert done.stdout.startswith("==> curve for practice-baseline")
    assert (
        len(done.stdout.splitlines()) == 2 and "Traceback" not in done.stderr and "Broken" not in done.stderr
    )
