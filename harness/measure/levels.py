"""Level aggregates: a pure function from exact per-request samples to one notebook record.

Field names and meanings follow the lab's load generator (so notebooks written by either can be
read by either); added fields are marked below. Percentiles are nearest rank over exact samples.
Failed and incomplete requests never enter the latency distributions; an empty distribution is
None, never 0.
"""

from __future__ import annotations

import dataclasses
import math
from array import array

import statistics
from collections import Counter
from typing import Any, ClassVar, Protocol, Sequence, cast

from harness.records.base import LAB_ID, SCHEMA_VERSION  # noqa: F401  (re-exported: callers import them here)
from harness.records.level import (
    Arrival,
    ClientCheck,
    Distribution,
    LevelContext,
    LevelRecord,
    LevelStats,
    RunMark,
)
from harness.records.base import Objectives
from harness.records.sample import SampleLine
from harness.measure.backlog import Backlog, most_at_once
from harness.measure.stats import BIG, in_order, percentile, ranked
from harness.measure.tally import LevelTally
from harness.measure.sample import MAX_DECODE_RATE, Sample, decode_rate

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


class WorkloadPart(Protocol):
    """What a level reads of its workload part (workloads.level_part.WorkloadStats, a dataclass),
    named here so that measurement does not import the workloads above it."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    schedule_note: str | None
    backlog: Backlog | None
    client_limited: bool


def spread(values: Sequence[float], digits: int) -> Distribution:
    """p50, p90, p95 (added), p99 and mean, rounded; None for each when there are no values."""

    def r(v):
        return None if v is None else round(v, digits)

    ordered = in_order(values)  # sorted once for the four ranks
    return Distribution(
        p50=r(ranked(ordered, 50)),
        p90=r(ranked(ordered, 90)),
        p95=r(ranked(ordered, 95)),
        p99=r(ranked(ordered, 99)),
        mean=r(statistics.fmean(values)) if len(values) else None,
    )


def distribution(values: list[float], digits: int) -> dict:
    """``spread`` as the plain object a record or the web UI's table holds."""
    return spread(values, digits).to_dict()


def _token_counts(sources: Counter[str]) -> str | dict[str, int]:
    """Where the completed requests' token counts came from: one source, or each with its count."""
    if not sources:
        return "none"
    if len(sources) == 1:
        return next(iter(sources))
    return dict(sources)


def flood_note(ok: list[Sample]) -> str | None:
    """How many completed streams came faster than any engine decodes one stream (``decode_rate``
    says implausible: past ``MAX_DECODE_RATE``, a flood of deltas, a replay or a proxy's buffer let
    go), or None when none did."""
    return _flood_words(sum(1 for s in ok if (decode_rate(s)[1] or "").startswith("implausible")), len(ok))


def _flood_words(fast: int, completed: int) -> str | None:
    if not fast:
        return None
    return (
        f"implausible: {fast} of {completed} completed streams came faster than {MAX_DECODE_RATE:,.0f} "
        "tokens/s for one stream, faster than tokens are made (a flood of deltas, a replay or a proxy's "
        "buffer): this level's TPOT and throughput are no decode speed"
    )


def _mean(values: Sequence[float]) -> float | None:
    """Mean of a column, to one decimal; None when it is empty."""
    if not len(values):
        return None
    return round(sum(values) / len(values), 1)


def aggregate(
    samples: list[Sample], concurrency: int, wall_s: float, slo_ttft: float, slo_tpot: float
) -> dict:
    """The level's measured fields as the record holds them (``level_stats`` as a dict)."""
    return level_stats(samples, concurrency, wall_s, Objectives(slo_ttft, slo_tpot)).to_dict()


def level_stats(
    samples: list[Sample] | LevelTally, concurrency: int, wall_s: float, objectives: Objectives
) -> LevelStats:
    """The level's measured fields (run context such as label and engine is added by the caller),
    from its samples or from its tally (``harness.measure.tally``: the same figures)."""
    t = samples if isinstance(samples, LevelTally) else LevelTally.of(samples)
    itls, lags, ttfts = t.col("itl"), t.col("read_lag"), t.col("ttft")
    gap = token_gap_of(itls)
    per_s = (lambda n: round(n / wall_s, 3)) if wall_s > 0 else (lambda n: 0.0)
    good = t.within(objectives.ttft_s, objectives.tpot_s)
    busy = sum(t.col("busy"))
    return LevelStats(
        concurrency=concurrency,
        requests=t.requests,
        completed=t.completed,
        failed=t.failed,
        incomplete=t.incomplete,  # added: streams that ended without finish reason or [DONE]
        cancelled=t.cancelled,  # added: requests still unfinished (or unsent) at the level's bound
        wall_s=round(wall_s, 3),
        output_tokens=t.out_tokens,
        output_tokens_per_s=round(t.out_tokens / wall_s, 2) if wall_s > 0 else 0.0,
        requests_per_s=per_s(t.completed),
        goodput_requests_per_s=per_s(good),
        within_slo=good,
        mean_in_flight=round(busy / wall_s, 2) if wall_s > 0 else 0.0,
        ttft_s=spread(ttfts, 4),
        tpot_s=spread(t.col("tpot"), 5),
        itl_s=spread(itls, 5),  # added: every inter-token gap, for tails
        prompt_tokens_mean=_mean(t.col("prompt_tokens")),
        cached_tokens_mean=_mean(t.col("cached_tokens")),
        token_counts=_token_counts(t.token_sources),
        finish_reasons=dict(t.finish_reasons),
        output_tokens_dist=spread(t.col("output_tokens"), 1),
        first_error=t.first_error,
        arrival_clock=t.clock(),
        # added: per token, how long its packet waited in the socket before the client read it
        # (kernel-stamped streams only): the client's own lateness, measured
        client_read_lag_s=spread(lags, 5),
        client_late_share=late_share(lags, gap),
        client_first_late_share=_share_over(t.col("first_lag"), gap),
        client_send_delay_s=spread(t.col("send_delay"), 5),
        e2e_s=spread(t.col("e2e"), 4),
        decode_note=_flood_words(t.floods, t.completed),
        ttft_absent=t.ttft_absent if not len(ttfts) else None,
    )


def level_record(
    samples: list[Sample] | LevelTally,
    concurrency: int,
    wall_s: float,
    context: LevelContext,
    recorded_at: str,
    arrival: Arrival | None = None,
    client_cpu: float | None = None,
    server_metrics: dict | None = None,
    run: RunMark | None = None,
    workload: WorkloadPart | None = None,
) -> LevelRecord:
    """The one builder of a level record, shared by the sweep and the headless or web-UI Locust
    run: the statistics under the context's objectives and, when the client's CPU share is
    known (the sweep), whether the client looked like the limit."""
    tally = samples if isinstance(samples, LevelTally) else LevelTally.of(samples)
    stats = level_stats(tally, concurrency, wall_s, context.objectives)
    client = None
    if client_cpu is not None:
        if not math.isfinite(client_cpu) or wall_s < CPU_SHARE_FLOOR_S:
            client = ClientCheck(None, False, server_metrics)  # no share from a too-short wall
        else:
            limited = client_limited(
                client_cpu,
                stats.mean_in_flight,
                concurrency,
                stats.client_late_share,
                stats.client_first_late_share,
            )
            # an open loop that could not keep its schedule was the client's limit, whatever its CPU
            limited = limited or bool(workload is not None and workload.schedule_note)
            first = tally.col("first_lag")  # first_read_lags: each completed stamped first token's wait
            note = (
                client_limit_note(client_cpu, stats, concurrency, ranked(in_order(first), 99))
                if limited
                else None
            )
            client = ClientCheck(client_cpu, limited, server_metrics, note)
            if limited and workload is not None and workload.backlog is not None:
                # the client's verdict wins over the server's (harness.measure.backlog)
                workload = dataclasses.replace(workload, client_limited=True)
    return LevelRecord(context, stats, recorded_at, arrival, client, run, workload)


CPU_SHARE_FLOOR_S = 0.5  # below this wall time, CPU seconds per wall second mean nothing (start-up costs)


LEVEL_SLACK_S = 30.0  # added to a level's bound: spawning, connecting, draining


def level_bound(count: int, users: int, timeout: float) -> float:
    """The most a closed level of ``count`` requests over ``users`` users may last: every round
    of requests ends within its total bound (``timeout``), plus the slack. Requests not finished
    then are counted as cancelled, never dropped."""
    rounds = -(-count // max(users, 1))
    return rounds * (timeout + 1.0) + LEVEL_SLACK_S


def account(
    samples: list[Sample], count: int, issued: int, bound_s: float, t0: float, now: float
) -> list[Sample]:
    """Every request the level asked for, as a sample: the finished ones, then one failed sample
    per request still in flight or never sent when the level's bound came."""
    return list(samples) + cancelled(len(samples), count, issued, bound_s, t0, now)


def cancelled(done: int, count: int, issued: int, bound_s: float, t0: float, now: float) -> list[Sample]:
    """One failed sample per request of the ``count`` asked for that had not finished (``done``)
    at the level's bound: first those sent (``issued``) and still in flight, then those not sent."""
    missing = max(count - done, 0)
    in_flight = min(max(issued - done, 0), missing)
    return [
        Sample(
            t_send=t0,
            t_end=now,
            error=f"Cancelled: {'still in flight' if i < in_flight else 'not sent'} at the level's bound of "
            f"{bound_s:.0f} s",
        )
        for i in range(missing)
    ]


def token_gap(itls: list[float]) -> float | None:
    """The stream's token gap, against which a read is late: the median of the gaps that are not
    zero (tokens that came in one read have a zero gap between them; a client far behind merges
    so many that the plain median is zero and would hide its lateness). None without gaps."""
    return percentile([gap for gap in itls if gap > 0], 50)


def token_gap_of(itls: Sequence[float]) -> float | None:
    """``token_gap`` of a column: a large array is filtered and sorted by numpy (``in_order``)."""
    if isinstance(itls, array) and len(itls) > BIG:
        import numpy

        gaps = numpy.frombuffer(itls, dtype=numpy.float64)
        return ranked(cast(Sequence[float], numpy.sort(gaps[gaps > 0])), 50)
    return token_gap(list(itls))


def late_share(lags: Sequence[float], gap: float | None) -> float | None:
    """The share of kernel-stamped tokens the client read more than one token gap (``token_gap``)
    after they arrived: by then the next token had come too, the kernel merged the two and kept
    only the newer stamp, so those tokens' times are the client's. A token that came in one read
    with a later one carries the most it can have waited (``harness.load.socket_client``), so a
    merge the client caused counts here and one the server caused (two tokens written together)
    does not. None without stamps."""
    if not len(lags) or not gap:
        return None
    return round(sum(1 for lag in lags if lag > gap) / len(lags), 5)


def first_late_share(samples: list[Sample], gap: float | None) -> float | None:
    """The share of kernel-stamped first tokens read late (merged with the next, or read more than
    a token gap after they came): each of those is a TTFT timed by the client, not the server."""
    timed = [s for s in samples if s.clock == "kernel" and s.read_lags]
    if not timed or not gap:
        return None
    late = sum(1 for s in timed if s.read_lags[0] > gap)
    return round(late / len(timed), 5)


def _share_over(first_lags: Sequence[float], gap: float | None) -> float | None:
    """``first_late_share`` of the column of completed stamped first tokens' waits."""
    if not len(first_lags) or not gap:
        return None
    return round(sum(1 for lag in first_lags if lag > gap) / len(first_lags), 5)


def client_limited(
    client_cpu: float,
    mean_in_flight: float,
    concurrency: int,
    late: float | None,
    first_late: float | None = None,
) -> bool:
    """Whether the client, not the server, looked like the limit of a level. Any sign is enough:

    - more than 0.25 % of the stamped tokens were read late (``late_share``): each of those spoils
      two gaps, so at 0.5 % the level's p99 ITL would be the client's;
    - more than 0.5 % of the first tokens were read late (``first_late_share``): at 1 % the level's
      p99 TTFT would be the client's;
    - a full core with well under ``concurrency`` requests in flight (the lab's sign; the only
      one where the kernel gives no stamps, as over TLS).

    The shares are half of what would reach the p99, so a client near its limit is named before
    its own lateness shows in the percentiles (``make bench-client`` checks each verdict against
    the server's ground truth)."""
    if late is not None and late > 0.0025:
        return True
    if first_late is not None and first_late > 0.005:
        return True
    return client_cpu > 0.9 and mean_in_flight < 0.8 * concurrency


def first_read_lags(samples: list[Sample]) -> list[float]:
    """How long each completed kernel-stamped request's first token waited for the client."""
    return [s.read_lags[0] for s in samples if s.ok and s.clock == "kernel" and s.read_lags]


def client_limit_note(
    client_cpu: float, stats: LevelStats, concurrency: int, first_lag_p99: float | None = None
) -> str:
    """What ``client_limited`` saw, and by how much: each sign past its bound, and how late the
    client read at the p99, every token's (``client_read_lag_s``) and the first tokens': a late
    token carries a newer packet's stamp or its read's time, so its gap or TTFT is off by up to
    about that much."""
    late, first = stats.client_late_share, stats.client_first_late_share
    signs = []
    if late is not None and late > 0.0025:
        signs.append(f"{late:.2%} of tokens read a token gap late (bound 0.25 %)")
    if first is not None and first > 0.005:
        signs.append(f"{first:.2%} of first tokens read late (bound 0.5 %)")
    if client_cpu > 0.9 and stats.mean_in_flight < 0.8 * concurrency:
        signs.append(
            f"a full core ({client_cpu:.0%}) with {stats.mean_in_flight:g} of {concurrency} in flight"
        )
    words = "; ".join(signs) or "the open loop did not keep its schedule (schedule_note)"
    lag = stats.client_read_lag_s.p99
    if lag is not None:
        words += f"; read lag p99 {lag * 1000:.1f} ms"
        if first_lag_p99 is not None:
            words += f" (first tokens {first_lag_p99 * 1000:.1f} ms)"
        words += ": late tokens' times are off by up to about that"
    return words


def _clock(samples: list[Sample]) -> str | None:
    """How token arrivals were timed: by the kernel's receive stamps, when read, or both."""
    kinds = {s.clock for s in samples if s.clock}
    return None if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def peak_in_flight(samples: list[Sample]) -> int:
    """The most requests that were in flight at one moment, of those that ended (sends and ends as
    a sweep line)."""
    return most_at_once((s.t_send, s.t_end) for s in samples if s.t_end is not None)


def sample_record(s: Sample, label: str, concurrency: int) -> dict:
    """One raw sample as a JSON line for the samples file (times from the request's departure;
    ``send_delay_s``: the client's own time before it, when known)."""

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - s.t_departed, 6)

    return SampleLine(
        label=label,
        concurrency=concurrency,
        ok=s.ok,
        error=s.error,
        ttft_s=rel(s.t_first),
        end_s=rel(s.t_end),
        token_times_s=[round(t - s.t_departed, 6) for t in s.token_times],
        output_tokens=s.output_tokens,
        token_source=s.token_source,
        usage_note=s.usage_note,
        cached_note=s.cached_note,
        prompt_tokens=s.prompt_tokens,
        cached_tokens=s.cached_tokens,
        finish_reason=s.finish_reason,
        fields=s.fields,
        clock=s.clock,
        read_lags_s=[round(lag, 6) for lag in s.read_lags],
        merged_tokens=s.merged_tokens,
        send_delay_s=None if s.send_delay is None else round(s.send_delay, 6),
        departed_monotonic_s=round(s.t_departed, 6),
        request_id=s.request_id,
        ttft_absent=s.ttft_absent or None,
        tags=s.tags,  # conversation, turn, lengths asked for, schedule_lateness_s (workloads)
    ).to_dict()
