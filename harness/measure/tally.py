"""A level's samples folded as they finish: counts, firsts and columns of floats, so a level of
any length holds no sample objects, and its figures are the ones the samples give.

Each column keeps exactly the values a figure is read from, in the order the samples came, so
its percentiles (nearest rank) and means (``statistics.fmean``, an exactly rounded sum) equal
those of the list. Where a column lives is the caller's choice (``column``): in memory here, or
spilled to a file by the load (``harness.load.spill``), so memory stays flat over hours.
"""

from __future__ import annotations

import math

from array import array
from collections import Counter
from typing import Callable, Iterable, Protocol

from harness.measure.sample import Sample, decode_rate

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


class Column(Protocol):
    """Floats appended one at a time; ``values()`` gives them all, in order, at the level's end."""

    def append(self, value: float) -> None: ...

    def extend(self, values: Iterable[float]) -> None: ...

    def __len__(self) -> int: ...

    def values(self) -> array: ...


class MemoryColumn:
    """A column held in memory, 8 bytes a value (``array('d')``)."""

    def __init__(self) -> None:
        self._values = array("d")

    def append(self, value: float) -> None:
        self._values.append(value)

    def extend(self, values: Iterable[float]) -> None:
        self._values.extend(values)

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> array:
        return self._values


# The columns a tally keeps, each named for the figure it feeds.
COLUMNS = (
    "ttft",  # completed: request sent -> first token, where there was one
    "tpot_or_zero",  # beside each ttft: its TPOT, 0 where it has none (the goodput test)
    "tpot",  # completed: TPOT where it has one
    "itl",  # completed: every gap between tokens
    "read_lag",  # completed: every stamped token's wait in the socket
    "first_lag",  # completed, kernel-stamped: the first token's wait
    "output_tokens",  # completed: output tokens where counted
    "prompt_tokens",  # completed: prompt tokens where reported
    "cached_tokens",  # completed: cached tokens where reported
    "busy",  # completed with an end: end minus send
    "send_delay",  # completed: the client's own time before the departure
    "e2e",  # completed with an end: departure -> end
    # every request, in arrival order: when it left, when it ended (NaN: never), and its output
    # tokens if it completed (-1: it failed); the level's series reads the client's figures from them
    "t_departed",
    "t_end",
    "ok_tokens",
    "input_asked",  # every request: the input length the workload asked for (tag)
    "output_asked",  # every request: the output length the workload asked for (tag)
)


class LevelTally:
    """What a level's figures need from its samples, folded one sample at a time (``add``).
    ``keep``: also keep the samples themselves (workloads whose figures read each one: turns,
    conversations, schedules); those levels are bounded by their request count."""

    def __init__(self, column: Callable[[], Column] = MemoryColumn, keep: bool = False) -> None:
        self.columns: dict[str, Column] = {name: column() for name in COLUMNS}
        self.samples: list[Sample] | None = [] if keep else None
        self.requests = self.completed = self.failed = self.incomplete = self.cancelled = 0
        self.out_tokens = 0  # of the completed requests
        self.first_error: str | None = None
        self.token_sources: Counter[str] = Counter()
        self.finish_reasons: Counter[str] = Counter()
        self.clocks: set[str] = set()
        self.floods = 0  # completed streams faster than any engine decodes (``decode_rate``)
        self.ttft_absent: str | None = None  # the first completed request's reason for no TTFT
        self.cached_notes = 0
        self.first_cached_note: str | None = None
        self.last_end: float | None = None  # the latest end of any request

    @classmethod
    def of(cls, samples: Iterable[Sample], keep: bool = False) -> LevelTally:
        """A tally of ``samples`` in memory (the figures of a list of samples)."""
        tally = cls(keep=keep)
        for s in samples:
            tally.add(s)
        return tally

    def __len__(self) -> int:
        return self.requests

    def col(self, name: str) -> array:
        """Every value of one column, in the order the samples came."""
        return self.columns[name].values()

    def add(self, s: Sample) -> None:
        """Fold one finished (or cancelled) sample in."""
        self.requests += 1
        if self.samples is not None:
            self.samples.append(s)
        if s.t_end is not None and (self.last_end is None or s.t_end > self.last_end):
            self.last_end = s.t_end
        c = self.columns
        c["t_departed"].append(s.t_departed)
        c["t_end"].append(math.nan if s.t_end is None else s.t_end)
        c["ok_tokens"].append(float(s.output_tokens or 0) if s.ok else -1.0)
        for tag, name in (("input_tokens_asked", "input_asked"), ("output_tokens_asked", "output_asked")):
            if isinstance(s.tags.get(tag), (int, float)):
                c[name].append(float(s.tags[tag]))
        if s.cached_note:
            self.cached_notes += 1
            self.first_cached_note = self.first_cached_note or s.cached_note
        if not s.ok:
            self._failed(s)
        else:
            self._completed(s)

    def _failed(self, s: Sample) -> None:
        self.failed += 1
        error = s.error or ""
        self.incomplete += error.startswith("IncompleteStream")
        self.cancelled += error.startswith("Cancelled")
        if self.failed == 1:
            self.first_error = s.error

    def _completed(self, s: Sample) -> None:
        c = self.columns
        self.completed += 1
        self.out_tokens += s.output_tokens or 0
        self.token_sources[s.token_source or "none"] += 1
        self.finish_reasons[s.finish_reason or "none"] += 1
        if s.clock:
            self.clocks.add(s.clock)
        ttft, tpot = s.ttft, s.tpot
        if ttft is not None:
            c["ttft"].append(ttft)
            c["tpot_or_zero"].append(tpot if tpot is not None else 0.0)
        elif s.ttft_absent and self.ttft_absent is None:
            self.ttft_absent = s.ttft_absent
        if tpot is not None:
            c["tpot"].append(tpot)
        c["itl"].extend(s.itl)
        c["read_lag"].extend(s.read_lags)
        if s.clock == "kernel" and s.read_lags:
            c["first_lag"].append(s.read_lags[0])
        for name, value in (
            ("output_tokens", s.output_tokens),
            ("prompt_tokens", s.prompt_tokens),
            ("cached_tokens", s.cached_tokens),
        ):
            if value is not None:
                c[name].append(float(value))
        if s.t_end is not None:
            c["busy"].append(s.t_end - s.t_send)
            c["e2e"].append(s.t_end - s.t_departed)
        if s.send_delay is not None:
            c["send_delay"].append(s.send_delay)
        if (decode_rate(s)[1] or "").startswith("implausible"):
            self.floods += 1

    def within(self, ttft_s: float, tpot_s: float) -> int:
        """Completed requests that met both objectives (no TPOT counts as meeting it)."""
        pairs = zip(self.col("ttft"), self.col("tpot_or_zero"), strict=True)
        return sum(1 for a, b in pairs if a <= ttft_s and b <= tpot_s)

    def clock(self) -> str | None:
        """How token arrivals were timed: by the kernel's receive stamps, when read, or both."""
        kinds = set(self.clocks)
        return None if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"
