"""A level's live progress on the terminal: one updating line where the output is a terminal
(rich), plain lines every ``plain_every_s`` seconds where it is not (a log, CI, a pipe)."""

from __future__ import annotations

import sys
import time


def progress_text(
    level: float, done: int, budget: int | None, in_flight: int, tokens: int, elapsed: float
) -> str:
    """``c=8: 37/64 requests, 8 in flight, 291.4 tok/s, 12.1 s`` (``budget`` None: a timed level).

    A closed-loop level (``level`` a whole number of users) never has more than ``level`` requests
    in flight, nor more than its budget's unfinished ones: the count is held to both. This matters
    where ``in_flight`` is only "not finished yet" (a sweep with Locust worker processes: the
    workers do not say what they sent, so c = 1 read "0/20 requests, 20 in flight")."""
    of = f"/{budget}" if budget is not None else ""
    if isinstance(level, int):
        in_flight = min(in_flight, level, budget - done if budget is not None else level)
    rate = tokens / elapsed if elapsed > 0 else 0.0
    return f"c={level:g}: {done}{of} requests, {in_flight} in flight, {rate:.1f} tok/s, {elapsed:.1f} s"


class LevelProgress:
    """Call ``update(level, progress)`` as often as wanted and ``end()`` before printing anything
    else; at most one refresh per ``every_s`` on a terminal (at least every 2 s is promised)."""

    def __init__(self, stream=None, every_s: float = 1.0, plain_every_s: float = 10.0) -> None:
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s if self.tty else plain_every_s
        self._last: float | None = None
        self._live = None

    def update(self, level: float, p) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self.every_s:
            return
        self._last = now
        text = progress_text(level, p.done, p.budget, p.in_flight, p.output_tokens, p.elapsed_s)
        if not self.tty:
            print(f"    ... {text}", file=self.stream, flush=True)
            return
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            # no refresh thread (the sweep runs under gevent): each update redraws the line itself
            self._live = Live(console=Console(file=self.stream), auto_refresh=False, transient=True)
            self._live.start()
        self._live.update(f"    {text}", refresh=True)

    def end(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._last = None
