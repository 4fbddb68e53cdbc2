"""The interrupt that lands in the import machinery is raised once its frames are left; a reader
that went away ends the command quietly."""

from __future__ import annotations

import os
import signal
import sys
import time
import types

import pytest

from harness import signals


def _frame(filename: str):
    return types.SimpleNamespace(f_code=types.SimpleNamespace(co_filename=filename))


def test_an_interrupt_in_our_own_code_is_raised_where_it_lands():
    with pytest.raises(KeyboardInterrupt):
        signals._raise_outside_imports(_frame("/work/harness/load/sweep.py"))


def test_an_interrupt_in_the_import_machinery_is_raised_a_moment_later():
    before = signal.getsignal(signal.SIGALRM)
    try:
        signals._raise_outside_imports(_frame("<frozen importlib._bootstrap>"))  # not raised here
        with pytest.raises(KeyboardInterrupt):
            deadline = time.monotonic() + 60  # the retry is 20 ms away; 60 s only catches a lost one
            while time.monotonic() < deadline:
                time.sleep(0.005)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def test_a_reader_gone_leaves_stdout_writing_nowhere_with_sigpipes_status(tmp_path, monkeypatch):
    """``harness summarise ... | head``: what is left to print goes to /dev/null, and the status is
    a SIGPIPE death's (141), so Python's flush at exit finds no broken pipe."""
    out = tmp_path / "stdout"
    with open(out, "w") as fh:
        monkeypatch.setattr(sys, "stdout", fh)
        assert signals.reader_gone() == 141
        os.write(fh.fileno(), b"after the reader left\n")
    assert out.read_text() == ""
