"""``harness telemetry``'s lines come from a sampler's summary of real readings: each source's
mean power and method over its readings, a stand-in's label beside it, and no figure said so."""

from __future__ import annotations

from harness.energy.readings import Accumulator, Reading, summary_lines


def summary(*sources: Accumulator) -> dict:
    return {"interval_s": 0.5, "sources": [s.summary() for s in sources]}


def source(readings: list[Reading]) -> Accumulator:
    acc = Accumulator()
    for r in readings:
        acc.add(r)
    return acc


def test_each_source_says_its_power_method_and_readings() -> None:
    counter = source([Reading("rapl", "package-0", t, energy_j=100 + 20 * t) for t in range(3)])
    watts = [Reading("practice", "seats", t / 2, power_w=50.0, label="imitation") for t in range(4)]
    lines = summary_lines(summary(counter, source(watts)))
    assert lines == [
        "rapl package-0: 20.0 W (counter) over 3 readings",
        "practice seats [imitation]: 50.0 W (power-integrated) over 4 readings",
    ]


def test_a_source_without_power_says_so_and_no_summary_gives_no_line() -> None:
    lone = source([Reading("hwmon", "card1", 0.0, power_w=10.0)])
    assert summary_lines(summary(lone)) == ["hwmon card1: no power figure over 1 readings"]
    assert summary_lines(None) == []
