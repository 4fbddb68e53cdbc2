"""Each worker's part of a distributed level (harness.load.worker_parts): the lost worker's requests
counted and named, the others' stopped ones cancelled, per-worker lines, no clock compared."""

from __future__ import annotations

import math

from harness.measure.levels import level_stats
from harness.records.base import DEFAULT_OBJECTIVES
from harness.measure.sample import Sample
from harness.load.worker_parts import WorkerPart, busiest_cpu, entries, fill, lost_line


def ok(t0: float, ttft: float) -> Sample:
    """A finished request on a worker whose clock reads ``t0`` at its send (clocks differ by hours)."""
    times = [t0 + ttft, t0 + ttft + 0.02, t0 + ttft + 0.04]
    return Sample(t_send=t0, ok=True, t_first=times[0], t_end=times[-1], token_times=times, output_tokens=3)


def test_a_lost_worker_names_what_never_came_back_and_the_others_stop_cleanly():
    lost = WorkerPart("w2", 1, 5, [ok(9000.0, 0.2)], lost="sent no heartbeat for 3 s")
    kept = WorkerPart("w1", 1, 5, [ok(10.0, 0.1), ok(11.0, 0.3)], issued=3)
    got = fill(lost, "w2", 1.0, 2.0) + fill(kept, "w2", 1.0, 2.0)
    assert len(got) == 10  # every request of the level accounted for
    errors = [s.error for s in got if not s.ok]
    assert (
        errors[:4]
        == ["WorkerLost: worker w2 sent no heartbeat for 3 s; this request of its share never came back"] * 4
    )
    assert errors[4:] == [
        "Cancelled: still in flight when the level stopped (worker w2 lost)",
        "Cancelled: not sent when the level stopped (worker w2 lost)",
        "Cancelled: not sent when the level stopped (worker w2 lost)",
    ]
    assert {s.tags["worker"] for s in got if not s.ok} == {"w1", "w2"}
    stats = level_stats(got, 2, 1.0, DEFAULT_OBJECTIVES)
    assert (stats.completed, stats.failed, stats.cancelled) == (3, 7, 3)
    # percentiles over all three samples pooled (0.1, 0.2, 0.3), whatever each worker's clock read
    assert (stats.ttft_s.p50, stats.ttft_s.p99) == (0.2, 0.3)
    line = lost_line([lost, kept], 2)
    assert "worker w2 sent no heartbeat for 3 s: 4 of its 5 requests never came back" in line


def test_each_worker_line_says_its_share_cpu_and_whether_it_kept_up():
    a = WorkerPart("a", 2, 2, [ok(1.0, 0.1), ok(2.0, 0.1)], cpu=[40.0, 60.0])
    b = WorkerPart("b", 2, 2, [ok(5.0, 0.5)], cpu=[95.0, 99.0])
    b.samples[0].read_lags = [0.0, 0.5, 0.5]  # two of its three tokens read long after they came
    one, two = entries([a, b])
    assert one == {
        "worker": "a",
        "users": 2,
        "requests": 2,
        "returned": 2,
        "completed": 2,
        "cpu_percent": 50.0,
        "late_share": None,
        "ttft_p50_s": 0.1,
        "limited": False,
    }
    assert two["limited"] and two["late_share"] == round(2 / 3, 5) and two["cpu_percent"] == 97.0
    assert busiest_cpu([a, b]) == 0.97
    assert math.isnan(busiest_cpu([WorkerPart("c", 1, 1)]))
