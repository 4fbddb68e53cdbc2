"""The sampler's split (the web UI's phases): the span so far and a new one from the
latest reading, with no device read on the caller's thread; the two spans meet at that reading, so
their energies add up to the whole test's, whichever way it is counted."""

from __future__ import annotations

import pytest

from harness.core.energy import COUNTER, INTEGRATED
from harness.core.telemetry import Reading
from harness.io.telemetry import TelemetrySampler
from harness.io.telemetry.meter import Meter, TelemetryPlan
from tests.unit.io.test_telemetry_sources import Steady


def ramp(counter: bool):
    """A source whose power climbs 10 W a tick (a crowd growing), on a clock of whole ticks."""
    ticks = iter(range(1000))

    class Ramp(Steady):
        def read(self):
            self.reads += 1
            at = float(next(ticks))
            watts = 10.0 * at
            return Reading(
                self.kind, self.device, at, power_w=watts, energy_j=5.0 * at * at if counter else None
            )

    return Ramp(clock=lambda: 0.0)


@pytest.mark.parametrize("counter", [True, False])
def test_two_spans_add_up_to_the_whole(counter):
    whole, split = TelemetrySampler([ramp(counter)]), TelemetrySampler([ramp(counter)])
    for _ in range(4):
        whole.poll_once()
        split.poll_once()
    reads = split.sources[0].reads
    [first] = split.split()["sources"]
    assert split.sources[0].reads == reads  # nothing read on the caller's thread
    for _ in range(5):
        whole.poll_once()
        split.poll_once()
    [second] = split.summary()["sources"]
    [total] = whole.summary()["sources"]
    assert first["method"] == second["method"] == (COUNTER if counter else INTEGRATED)
    assert (first["seconds"], second["seconds"]) == (3.0, 5.0)  # ticks 0-3, then 3-8
    assert first["energy_j"] + second["energy_j"] == pytest.approx(total["energy_j"])
    assert second["mean_power_w"] > first["mean_power_w"]
    assert second["readings"] == 6  # the shared reading, then five


def test_a_split_before_any_reading_is_an_empty_span():
    sampler = TelemetrySampler([Steady()])
    [empty] = sampler.split()["sources"]
    assert empty["readings"] == 0 and empty["energy_j"] is None


def test_the_meter_splits_its_running_sampler_only():
    class Found:
        sources = [Steady()]

    meter = Meter(TelemetryPlan("fake", interval=60), Found())  # type: ignore[arg-type]
    assert meter.split() is None  # no level running
    meter.start()
    try:
        assert meter.split()["sources"][0]["readings"] == 1  # the start's reading
    finally:
        last = meter.stop()
    assert last is not None and last["sources"][0]["readings"] == 2  # the shared one and the stop's
