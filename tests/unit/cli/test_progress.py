"""The sweep's live progress line: its text, and plain lines when the output is not a terminal."""

from __future__ import annotations

import io

from harness.cli.progress import LevelProgress, progress_text
from types import SimpleNamespace


def Progress(done, budget, in_flight, output_tokens, elapsed_s):  # the runner's, without importing Locust
    return SimpleNamespace(
        done=done, budget=budget, in_flight=in_flight, output_tokens=output_tokens, elapsed_s=elapsed_s
    )


def test_progress_text_says_done_of_budget_in_flight_rate_and_elapsed():
    assert progress_text(8, 37, 64, 8, 1000, 4.0) == "c=8: 37/64 requests, 8 in flight, 250.0 tok/s, 4.0 s"
    assert progress_text(2.5, 3, None, 1, 0, 0.0) == "c=2.5: 3 requests, 1 in flight, 0.0 tok/s, 0.0 s"


def test_not_a_terminal_gives_plain_lines_no_control_codes():
    out = io.StringIO()
    shown = LevelProgress(stream=out, plain_every_s=0.0)
    shown.update(4, Progress(done=10, budget=48, in_flight=4, output_tokens=640, elapsed_s=2.0))
    shown.update(4, Progress(done=20, budget=48, in_flight=4, output_tokens=1280, elapsed_s=4.0))
    shown.end()
    lines = out.getvalue().splitlines()
    assert lines == [
        "    ... c=4: 10/48 requests, 4 in flight, 320.0 tok/s, 2.0 s",
        "    ... c=4: 20/48 requests, 4 in flight, 320.0 tok/s, 4.0 s",
    ]
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()


def test_updates_closer_than_the_interval_are_dropped():
    out = io.StringIO()
    shown = LevelProgress(stream=out, plain_every_s=3600.0)
    for done in range(5):
        shown.update(1, Progress(done, 10, 1, 0, 1.0))
    assert len(out.getvalue().splitlines()) == 1


def test_in_flight_means_in_flight_for_a_closed_loop_whose_workers_only_say_what_finished():
    # a --processes sweep knows only the unfinished share of the budget: 20 of 20 at c = 1
    assert progress_text(1, 0, 20, 20, 0, 1.0) == "c=1: 0/20 requests, 1 in flight, 0.0 tok/s, 1.0 s"
    assert progress_text(8, 60, 64, 64, 0, 1.0).startswith("c=8: 60/64 requests, 4 in flight")
    # an open loop's (a rate, not a crowd) count is its own, and is kept
    assert progress_text(2.0, 0, 20, 7, 0, 1.0) == "c=2: 0/20 requests, 7 in flight, 0.0 tok/s, 1.0 s"
