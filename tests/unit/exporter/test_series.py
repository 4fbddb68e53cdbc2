"""The server's readings and the client's figures at the same instants (a level's ``series``),
checked by hand on a few samples and readings."""

from __future__ import annotations

from harness.measure.sample import Sample
from harness.exporter import series as es


def _done(t_send: float, t_end: float, tokens: int, ok: bool = True) -> Sample:
    return Sample(
        t_send, ok=ok, t_first=t_send + 0.1 if ok else None, t_end=t_end, output_tokens=tokens if ok else None
    )


SAMPLES = [_done(10.0, 11.0, 5), _done(10.2, 12.0, 7), _done(10.5, 10.9, 0, ok=False)]
READINGS = [
    (10.0, {"llamacpp:requests_processing": 0.0, "llamacpp:tokens_predicted_total": 100.0}),
    (10.6, {"llamacpp:requests_processing": 2.0, "llamacpp:tokens_predicted_total": 104.0}),
    (11.5, {"llamacpp:requests_processing": 1.0, "llamacpp:tokens_predicted_total": 110.0}),
    (12.5, {"llamacpp:requests_processing": 0.0}),
]


def test_the_client_figures_at_each_reading():
    got = es.client_at(SAMPLES, [10.0, 10.6, 11.5, 12.5])
    assert got == {
        "in_flight_requests": [1, 3, 1, 0],
        "completed_requests": [0, 0, 1, 2],
        "failed_requests": [0, 0, 1, 1],
        "output_tokens": [0, 0, 5, 12],
    }


def test_the_series_part_counts_a_counter_from_its_first_reading_and_keeps_a_gap_as_none():
    part = es.series_part(READINGS, SAMPLES)
    assert part["t_s"] == [0.0, 0.6, 1.5, 2.5]
    assert part["server"]["llamacpp:requests_processing"] == [0.0, 2.0, 1.0, 0.0]
    assert part["server"]["llamacpp:tokens_predicted_total"] == [0.0, 4.0, 10.0, None]
    assert part["client"]["output_tokens"] == [0, 0, 5, 12]


def test_no_series_without_two_readings_or_without_samples():
    assert es.series_part(READINGS[:1], SAMPLES) is None
    assert es.series_part(READINGS, []) is None


def test_a_long_level_keeps_evenly_spaced_readings_first_and_last_among_them():
    readings = [(float(i), {"vllm:num_requests_running": float(i)}) for i in range(1000)]
    part = es.series_part(readings, [_done(0.0, 999.0, 3)])
    t = part["t_s"]
    assert len(t) == es.MAX_POINTS and t[0] == 0.0 and t[-1] == 999.0


def test_side_by_side_lays_the_two_sides_figures_together():
    got = es.side_by_side(es.series_part(READINGS, SAMPLES))
    assert got["readings"] == 4 and got["client_in_flight"] == 1.25 and got["server_running"] == 0.75
    assert got["server_waiting_peak"] is None  # no waiting gauge was read
    assert got["client_tokens_per_s"] == round(12 / 2.5, 1)
    assert got["server_tokens_per_s"] == round(10 / 1.5, 1)  # to its last known value
