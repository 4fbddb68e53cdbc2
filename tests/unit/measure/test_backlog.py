"""Server-limited open loops: a schedule the server cannot keep is said to
be the server's limit, with its figures, distinct from the client's; the client-limited verdict
wins when both apply. The rule (harness.measure.backlog) on simulated servers: seats and a service
time, requests beyond the seats waiting in arrival order."""

from __future__ import annotations

import heapq
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.measure.backlog import Flight, backlog, peak_in_flight, server_note
from harness.measure.backlog import rules as backlog_rules
from harness.records.level import LevelContext
from harness.measure.levels import level_record
from harness.measure.sample import Sample
from harness.workloads.level_part import workload_stats
from tests.unit.properties import examples


def served(arrivals: list[float], service: list[float], seats: int) -> list[Flight]:
    """Each request's departure and end on a server of ``seats`` seats, first come first served."""
    free = [0.0] * seats
    heapq.heapify(free)
    out = []
    for t, s in zip(arrivals, service, strict=True):
        start = max(t, heapq.heappop(free))
        heapq.heappush(free, start + s)
        out.append(Flight(t, start + s))
    return out


def even(rate: float, n: int) -> list[float]:
    return [i / rate for i in range(n)]


def test_a_server_at_twice_its_capacity_is_server_limited_with_its_figures():
    # 2 seats of 0.4 s: 5 requests/s at most; offered 10/s for 40 requests
    flights = served(even(10, 40), [0.4] * 40, 2)
    found = backlog(flights)
    assert found.judged and found.server_limited
    assert abs((found.finished_rps or 0) - 5) < 0.6 and abs((found.offered_rps or 0) - 10) < 0.6
    assert found.in_flight_rise is not None and found.in_flight_rise >= 10
    assert found.peak_in_flight == peak_in_flight(flights) >= 18
    note = server_note(found, client_limited=False) or ""
    assert note.startswith("server-limited: the server did not keep up with the arrivals")
    assert "requests/s of the" in note and f"(peak {found.peak_in_flight})" in note


def test_an_easy_rate_is_not_server_limited():
    found = backlog(served(even(2, 40), [0.4] * 40, 2))
    assert found.judged and not found.server_limited and server_note(found, False) is None


def test_a_level_too_short_to_tell_says_so():
    found = backlog(served(even(50, 10), [1.3] * 10, 100))  # all sent within one request's time
    assert not found.judged and not found.server_limited and "too short to tell" in (found.reason or "")
    assert "too few" in (backlog(served(even(1, 4), [0.1] * 4, 1)).reason or "")
    never = [Flight(0.0, None)] + served([i / 10 + 0.1 for i in range(20)], [0.05] * 20, 4)
    assert "never ended" in (backlog(never).reason or "")


def test_the_client_wins_when_both_apply_and_says_so():
    found = backlog(served(even(10, 40), [0.4] * 40, 2))
    note = server_note(found, client_limited=True) or ""
    assert note.startswith("the server fell behind too") and "so the level is client-limited" in note


@settings(max_examples=examples(80))
@given(
    st.integers(16, 120),
    st.floats(0.5, 50),
    st.floats(0.01, 2.0),
    st.floats(1.0, 2.0),
    st.integers(0, 10_000),
    st.booleans(),
)
def test_a_server_with_room_for_every_request_is_never_server_limited(n, rate, base, spread, seed, poisson):
    """Seats for all: no request ever waits, whatever the arrivals (even or Poisson) and the
    service times (each from base to spread x base): no pile-up, so never server-limited."""
    rng = random.Random(seed)
    arrivals = even(rate, n)
    if poisson:
        t, arrivals = 0.0, []
        for _ in range(n):
            arrivals.append(t)
            t += rng.expovariate(rate)
    service = [base * rng.uniform(1.0, spread) for _ in range(n)]
    assert not backlog(served(arrivals, service, n)).server_limited


@settings(max_examples=examples(80))
@given(st.integers(1, 16), st.floats(0.01, 1.0), st.floats(1.6, 10.0), st.integers(40, 200))
def test_a_server_offered_well_past_its_capacity_is_server_limited(seats, service, over, n):
    """Capacity seats / service; offered ``over`` times that, evenly, long enough that the first
    requests finish well inside the schedule: the level is server-limited, finishing at about the
    capacity."""
    capacity = seats / service
    rate = capacity * over
    if (n - 1) / rate < 8 * service:  # within a few requests' time: too short to see a pile-up
        return
    found = backlog(served(even(rate, n), [service] * n, seats))
    assert found.judged and found.server_limited, found
    assert (found.finished_rps or 0) <= 1.5 * capacity


@settings(max_examples=examples(60))
@given(st.lists(st.tuples(st.floats(0, 100), st.one_of(st.none(), st.floats(0, 50))), max_size=60))
def test_any_flights_give_a_verdict_or_its_reason(pairs):
    flights = [Flight(t, None if d is None else t + d) for t, d in pairs]
    found = backlog(flights)
    assert found.judged or found.reason
    assert not (found.server_limited and not found.judged)
    assert found.peak_in_flight <= len(flights)
    found.to_dict()


def _samples(flights: list[Flight], late: float = 0.0) -> list[Sample]:
    out = []
    for i, f in enumerate(flights):
        s = Sample(t_send=f.departed, ok=True, prompt_tokens=10, tags={"schedule_lateness_s": late * i})
        s.t_sent, s.t_first, s.t_end = f.departed + late * i, f.departed + 0.01, f.ended
        s.output_tokens, s.token_times = 2, [f.departed + 0.01, f.ended]
        out.append(s)
    return out


def _record(samples: list[Sample], cpu: float = 0.1) -> dict:
    stats = workload_stats(samples, "prompts", {}, open_loop=True)
    context = LevelContext("open", "fake", "m", "http://x/v1", "mixed", 16, 0.0)
    wall = max(s.t_end for s in samples) - min(s.t_send for s in samples)
    return level_record(
        samples, 30, wall, context, "2026-01-01T00:00:00Z", client_cpu=cpu, workload=stats
    ).to_dict()


def test_the_level_record_says_server_limited_and_validates(tmp_path):
    from harness.records.notebook import append_record, read_records

    rec = _record(_samples(served(even(10, 40), [0.4] * 40, 2)))
    assert rec["server_limited"] is True and rec["client_limited"] is False
    assert rec["server_note"].startswith("server-limited") and rec["backlog"]["judged"] is True
    easy = _record(_samples(served(even(2, 40), [0.4] * 40, 2)))
    assert easy["server_limited"] is False and "server_note" not in easy
    book = tmp_path / "b.md"
    append_record(book, rec, "level")
    append_record(book, easy, "level")
    result = read_records(book, "level")
    assert not result.warnings and len(result.records) == 2


def test_in_the_record_a_late_client_wins_over_a_slow_server():
    # departures 50 ms later each: the client could not keep its schedule (schedule_note)
    rec = _record(_samples(served(even(10, 40), [0.4] * 40, 2), late=0.05))
    assert rec["client_limited"] is True and rec["schedule_note"].startswith("client-limited")
    assert rec["server_limited"] is False and rec["server_note"].startswith("the server fell behind too")


def test_the_check_and_the_tables_name_the_server(capsys):
    from harness.cli.sweep import print_level
    from harness.report.workload_tables import markdown, workload_rows

    rec = {**_record(_samples(served(even(10, 40), [0.4] * 40, 2))), "rate_rps": 10, "arrival": "fixed-rate"}
    found = backlog_rules({"open": {rec["concurrency"]: rec}})
    assert found[0][0] == "WARN" and "the server did not keep up with the arrivals at 10/s" in found[0][1]
    easy = {**_record(_samples(served(even(2, 40), [0.4] * 40, 2))), "rate_rps": 2}
    assert backlog_rules({"open": {1: easy}})[0][0] == "PASS"
    (row,) = workload_rows([rec])
    assert row[-1].startswith("server (") and workload_rows([easy])[0][-1] == "kept up"
    assert any("open at 10/s: server-limited" in line for line in markdown([rec]))
    print_level(rec)
    out = capsys.readouterr().out
    assert "warning: server-limited: the server did not keep up" in out and "in flight +" in out


@settings(max_examples=200)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.one_of(st.none(), st.integers(0, 30))), min_size=0, max_size=40)
)
def test_most_at_once_is_the_most_spans_open_at_any_moment(raw):
    """The sweep-line count (harness.measure.backlog.most_at_once, which the level's peak in flight
    and the backlog's both use) against a count at every start: an end at a start closes first,
    an end of None never closes."""
    from harness.measure.backlog import most_at_once

    spans = [(float(a), None if d is None else float(a + d)) for a, d in raw]
    brute = max((sum(1 for s, e in spans if s <= t and (e is None or e > t)) for t, _ in spans), default=0)
    assert most_at_once(spans) == brute
