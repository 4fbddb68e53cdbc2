"""Read every telemetry source at a stated interval while a level runs, off the load loop, in
bounded memory; and a short idle baseline before the first level.

The reads run on a native thread even under gevent (the load's loop, which stamps the tokens, never
waits on a device's library or a sysfs file): gevent patches ``threading`` so that a ``Thread`` is
a greenlet, so the sampler starts its thread and makes its locks with ``_thread``'s original
functions (gevent's ``get_original``), patched or not.

Each source's readings go into a ``energy.readings.Accumulator`` (constant memory, exact energy),
and at most ``keep`` of them are kept for charts: past that every other one is dropped and the
stride of those kept doubles, so a long level keeps an even spread. A read that fails is counted
with its one line, never a figure. A source whose first or latest read failed is ``partial``: its
figures are those of the readings before the fault, which do not span the level."""

from __future__ import annotations

import _thread
import time
from typing import Callable, Sequence

from harness.energy.arithmetic import SPAN
from harness.energy.readings import SAMPLED, SOURCE, Accumulator, Reading
from harness.errors import HarnessError
from harness.energy.sources.base import Source

DEFAULT_INTERVAL = 0.5
KEEP = 2048


def _native() -> tuple[Callable, Callable]:
    """(start_new_thread, allocate_lock) of native threads, never greenlets of the gevent hub."""
    try:
        from gevent import monkey
    except ImportError:
        return _thread.start_new_thread, _thread.allocate_lock
    if not monkey.is_module_patched("threading"):
        return _thread.start_new_thread, _thread.allocate_lock
    start, allocate = (monkey.get_original("_thread", n) for n in ("start_new_thread", "allocate_lock"))
    return start, allocate


class _Flag:
    """A one-way flag on a native lock (held while unset): ``wait`` blocks only the thread that
    calls it, for at most ``timeout`` seconds."""

    def __init__(self, allocate: Callable) -> None:
        self._lock, self._set = allocate(), False
        self._lock.acquire()

    def set(self) -> None:
        if not self._set:
            self._set = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        got = self._lock.acquire(True, timeout) if timeout > 0 else self._lock.acquire(False)
        if got:
            self._lock.release()
        return self._set


class _Track:
    """One source's readings: the accumulator, the kept readings, the failures, and whether the
    span's first and latest reads failed (then its readings do not reach the span's ends)."""

    def __init__(self, keep: int) -> None:
        self.acc, self.kept, self.keep, self.stride, self.seen = Accumulator(), [], keep, 1, 0
        self.errors, self.last_error, self.reads = 0, None, 0
        self.head_failed = self.tail_failed = False
        self.last: Reading | None = None  # where a split's next span starts

    def failed(self, line: str) -> None:
        self.head_failed = self.head_failed or self.reads == 0
        self.errors, self.last_error, self.reads, self.tail_failed = (
            self.errors + 1,
            line,
            self.reads + 1,
            True,
        )

    def add(self, r: Reading) -> None:
        self.acc.add(r)
        self.reads, self.tail_failed = self.reads + 1, False
        self.last = r
        if self.seen % self.stride == 0:
            self.kept.append(r)
            if len(self.kept) > self.keep:
                self.kept, self.stride = self.kept[::2], self.stride * 2
        self.seen += 1


class TelemetrySampler:
    """Reads ``sources`` every ``interval`` seconds between ``start()`` and ``stop()``."""

    def __init__(
        self,
        sources: Sequence[Source],
        interval: float = DEFAULT_INTERVAL,
        keep: int = KEEP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not interval > 0 or keep < 2:
            raise ValueError("the interval must be above 0 s and at least 2 readings kept")
        self.sources, self.interval, self.clock = list(sources), interval, clock
        self.tracks = [_Track(keep) for _ in self.sources]
        self._start_thread, allocate = _native()
        self._stop, self._done, self._lock = _Flag(allocate), _Flag(allocate), allocate()
        self._started = False

    def poll_once(self) -> None:
        """One reading of every source (a failure counted with its line)."""
        for i, source in enumerate(self.sources):
            try:
                reading = source.read()
            except (HarnessError, OSError, ValueError) as exc:
                self._failed(i, str(exc))
                continue
            except Exception as exc:  # a reader's bug must not end the thread without a word
                self._failed(i, f"{type(exc).__name__}: {exc}")
                continue
            with self._lock:  # the track looked up under the lock: a split may have replaced it
                try:
                    self.tracks[i].add(reading)
                except ValueError as exc:  # a clock that went back: the reading is not counted
                    self.tracks[i].failed(str(exc))

    def _failed(self, i: int, line: str) -> None:
        with self._lock:
            self.tracks[i].failed(line)

    def _run(self) -> None:
        try:
            due = self.clock()
            while not self._stop.is_set():
                due += self.interval
                self._stop.wait(due - self.clock())
                if not self._stop.is_set():
                    self.poll_once()
        finally:
            self._done.set()

    def start(self) -> None:
        """A first reading now, then one each interval on the native thread."""
        self.poll_once()
        self._started = True
        self._start_thread(self._run, ())

    def stop(self) -> None:
        """Stop the thread and take a last reading, so the level's span is covered to its end. It
        waits for a read in progress (at most the interval and 5 s) on the caller's thread."""
        self._stop.set()
        if self._started:
            self._done.wait(self.interval + 5)
        self.poll_once()

    def readings(self) -> list[list[Reading]]:
        with self._lock:
            return [list(t.kept) for t in self.tracks]

    def summary(self) -> dict:
        """The level's telemetry: the interval and, per source, its figures (energy.readings's
        ``Accumulator.summary``) with its failed reads."""
        with self._lock:
            return self._summary()

    def _summary(self) -> dict:
        out = []
        for source, track in zip(self.sources, self.tracks, strict=True):
            entry = track.acc.summary()
            entry.update(source=source.kind, device=source.device)
            if track.errors:
                entry["errors"] = track.errors
                entry["last_error"] = track.last_error
                failed = f"{track.errors} of {track.reads} reads failed, the last: {track.last_error}"
                ends = [
                    end for end, cut in (("first", track.head_failed), ("last", track.tail_failed)) if cut
                ]
                if entry.get(SPAN.energy_j) is not None and ends:
                    entry[SOURCE.partial] = True  # its figures are those of the readings it has
                    entry[SPAN.reason] = (
                        f"its {' and '.join(ends)} read failed, so its readings do not span the level "
                        f"({failed}); the figures here are those of the {entry[SOURCE.readings]} before"
                    )
                elif entry.get(SPAN.energy_j) is None:
                    entry[SPAN.reason] = f"{entry.get(SPAN.reason) or 'no energy'}; {failed}"
            out.append(entry)
        return {SAMPLED.interval_s: self.interval, SAMPLED.sources: out}

    def split(self) -> dict:
        """The summary of the span so far, and a new span from here on, without a read on the
        caller's thread (the web UI's phases: the load's own loop calls it). The two spans meet at
        each source's latest reading, within one interval of the call; both hold that reading,
        so no energy is lost or counted twice."""
        with self._lock:
            out = self._summary()
            for i, track in enumerate(self.tracks):
                fresh = _Track(track.keep)
                if track.last is not None:
                    fresh.add(track.last)
                fresh.head_failed = track.tail_failed  # the shared reading is older than the split
                self.tracks[i] = fresh
        return out


def idle_baseline(
    sources: Sequence[Source],
    seconds: float = 3.0,
    interval: float = DEFAULT_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """A short reading with nothing running (before the first level): per source its mean power
    (W) over ``seconds``, with the method, as ``TelemetrySampler.summary`` gives it."""
    sampler = TelemetrySampler(sources, interval)
    sampler.start()
    try:
        sleep(seconds)
    finally:
        sampler.stop()
    summary = sampler.summary()
    summary[SAMPLED.seconds] = seconds
    return summary
