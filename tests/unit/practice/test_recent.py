"""The practice server's timing series stay bounded over hours (``truth.Recent``)."""

from __future__ import annotations

from harness.measure.stats import percentile
from harness.practice.truth import Recent


def test_a_series_keeps_its_latest_values_and_the_count_sum_and_largest_of_all():
    late = Recent(4)
    for v in [5.0, 1.0, 2.0, 3.0, 4.0, 0.5]:
        late.append(v)
    assert len(late) == 4 and sorted(late) == [0.5, 2.0, 3.0, 4.0]  # the first two went
    assert (late.count, late.total, late.largest) == (6, 15.5, 5.0)
    assert percentile(late, 50) == 2.0


def test_a_series_under_its_size_keeps_everything():
    late = Recent(100)
    for v in range(10):
        late.append(float(v))
    assert list(late) == [float(v) for v in range(10)] and late.count == 10
