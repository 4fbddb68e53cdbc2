"""Each Locust worker's part of a distributed level (docs/workers.md): its users, its share of the
level's requests, how many samples came back, its CPU as its own heartbeats said, how late it read
its tokens; a worker lost mid-level is named, and each request of its share that never came back is
one failed sample saying so.

Nothing here compares two workers' clocks: a sample's times are one worker's (its TTFT, TPOT and
gaps are differences on that clock), and the level's percentiles are nearest-rank over every
worker's samples pooled, never an average of the workers' own. Pure: the master
(``harness.load.distributed``) gathers the counts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from harness.measure.levels import late_share, token_gap
from harness.measure.sample import Sample
from harness.measure.stats import percentile
from harness.records.level import WORKER

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

# Locust warns when a worker's own process passes this (its heartbeats carry the figure)
BUSY_CPU_PERCENT = 90.0
# the share of a worker's tokens read a whole token gap late past which it was the limit, as
# ``harness.measure.levels.client_limited`` judges the whole client
LATE_LIMIT = 0.0025


@dataclass
class WorkerPart:
    """One worker in one level, as the master saw it."""

    name: str
    users: int
    share: int  # the requests of the level handed to it
    samples: list[Sample] = field(default_factory=list)  # the ones that came back
    cpu: list[float] = field(default_factory=list)  # its heartbeats' CPU per cent, as read in the level
    lost: str | None = None  # why it was lost mid-level (None: it was not)
    issued: int | None = None  # when it was told to stop sending: how many it had sent by then

    def entry(self, gap: float | None) -> dict:
        """The record's line for this worker (``workers`` in schemas/level.schema.json)."""
        ok = [s for s in self.samples if s.ok]
        lags = [lag for s in ok for lag in s.read_lags]
        late = late_share(lags, gap)
        cpu = round(statistics.fmean(self.cpu), 1) if self.cpu else None
        ttft = percentile([s.ttft for s in ok if s.ttft is not None], 50)
        out: dict = {
            WORKER.worker: self.name,
            WORKER.users: self.users,
            WORKER.requests: self.share,
            WORKER.returned: len(self.samples),
            WORKER.completed: len(ok),
            WORKER.cpu_percent: cpu,
            WORKER.late_share: late,
            WORKER.ttft_p50_s: None if ttft is None else round(ttft, 4),
            WORKER.limited: bool((cpu is not None and cpu > BUSY_CPU_PERCENT) or (late or 0.0) > LATE_LIMIT),
        }
        if self.lost:
            out[WORKER.lost] = self.lost
        return out


def fill(part: WorkerPart, lost_names: str, t0: float, now: float) -> list[Sample]:
    """A level stopped because a worker was lost: the part's samples, then one failed sample for
    each request of its share that did not come back: on the lost worker, ``WorkerLost`` (in
    flight on it or not yet sent: the master cannot tell which); on one told to stop, the requests
    it had sent and not returned (``Cancelled: still in flight``) and those it never sent
    (``Cancelled: not sent``). ``t0`` and ``now`` are the master's clock (failed samples carry no
    latency)."""
    out = list(part.samples)
    mark = {"worker": part.name}  # each sample line says whose share it was
    missing = max(part.share - len(part.samples), 0)
    if part.lost:
        error = f"WorkerLost: worker {part.name} {part.lost}; this request of its share never came back"
        return out + [Sample(t_send=t0, t_end=now, error=error, tags=dict(mark)) for _ in range(missing)]
    sent = part.share if part.issued is None else min(part.issued, part.share)
    in_flight = min(max(sent - len(part.samples), 0), missing)
    for i in range(missing):
        what = "still in flight" if i < in_flight else "not sent"
        error = f"Cancelled: {what} when the level stopped (worker {lost_names} lost)"
        out.append(Sample(t_send=t0, t_end=now, error=error, tags=dict(mark)))
    return out


def entries(parts: list[WorkerPart]) -> list[dict]:
    """Every worker's line, each read lateness against the level's own token gap."""
    itls = [gap for p in parts for s in p.samples if s.ok for gap in s.itl]
    gap = token_gap(itls)
    return [p.entry(gap) for p in parts]


def busiest_cpu(parts: list[WorkerPart]) -> float:
    """The client CPU of a level whose workers are on other hosts: the busiest worker's mean share
    of one core from its heartbeats (NaN when none was read: the record then gives no share)."""
    means = [statistics.fmean(p.cpu) / 100.0 for p in parts if p.cpu]
    return max(means) if means else float("nan")


def lost_line(parts: list[WorkerPart], concurrency: int) -> str:
    """One line for a level that lost a worker: who, why, and what of its share never came back."""
    lost = [p for p in parts if p.lost]
    said = "; ".join(
        f"worker {p.name} {p.lost}: {p.share - len(p.samples)} of its {p.share} requests never came back"
        for p in lost
    )
    return (
        f"a Locust worker was lost during the level at c = {concurrency} ({said}); that level is "
        "recorded with them counted as failed (WorkerLost), the finished levels are kept, and no "
        "further level was run"
    )
