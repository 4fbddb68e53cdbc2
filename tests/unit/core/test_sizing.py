"""The capacity search's verdicts and steps on hand-made values (the gate's comparison is
tests/unit/core/test_gate.py's)."""

import pytest

from harness.core import sizing
from harness.core.stats import all_worse_chance, bootstrap, percentile

P95 = sizing.Criterion("ttft", "p95", 0.5)


def runs(level, values, failed=0, times=1):
    r = sizing.LevelRuns(level)
    for _ in range(times):
        r.add(list(values), failed)
    return r


def test_bootstrap_is_seeded_and_brackets_the_statistic():
    values = [0.1] * 90 + [1.0] * 10
    first = bootstrap(values, lambda v: percentile(v, 95))
    assert first == bootstrap(values, lambda v: percentile(v, 95))
    assert first[0] <= percentile(values, 95) <= first[1]
    assert bootstrap([], lambda v: percentile(v, 95)) is None


def test_all_worse_chance_is_one_ordering_of_the_runs():
    assert all_worse_chance(3, 3) == pytest.approx(1 / 20)
    assert all_worse_chance(1, 1) == pytest.approx(1 / 2)
    assert all_worse_chance(0, 3) == 1.0


def test_verdicts_pass_fail_and_unsure():
    assert sizing.verdict(runs(4, [0.1] * 20), P95).outcome == "pass"
    assert sizing.verdict(runs(16, [3.0] * 20), P95).outcome == "fail"
    # 1 slow request in 20: the p95 is 0.1 but a resample often holds two slow ones
    assert sizing.verdict(runs(9, [0.1] * 19 + [3.0]), P95).outcome == "unsure"
    failed = sizing.verdict(runs(2, [0.1] * 20, failed=1), P95)
    assert failed.outcome == "fail" and "1 request(s) failed" in failed.why


def test_goodput_criterion_is_a_share_at_or_above_the_promise():
    crit = sizing.Criterion.parse("goodput", 0.9)
    assert crit.statistic([1, 1, 1, 0]) == 0.75 and not crit.within(0.75) and crit.within(0.95)
    with pytest.raises(ValueError, match="share"):
        sizing.Criterion.parse("goodput", 2)
    with pytest.raises(ValueError, match="not known"):
        sizing.Criterion.parse("speed-p95", 0.5)
    assert sizing.Criterion.parse("e2e-p99", 4).text == "end-to-end latency p99 <= 4 s"


def drive(true_capacity, max_users=64, confirm=2):
    """Run the search against a server whose p95 TTFT is 0.1 s up to ``true_capacity`` and 3 s above."""
    levels, path = {}, []
    while (c := sizing.next_level(levels, P95, max_users, confirm=confirm)) is not None:
        path.append(c)
        levels.setdefault(c, sizing.LevelRuns(c)).add([0.1 if c <= true_capacity else 3.0] * 20, 0)
        assert len(path) < 50
    return levels, path


def test_search_doubles_then_halves_then_confirms_the_boundary():
    levels, path = drive(8)
    assert path == [1, 2, 4, 8, 16, 12, 10, 9, 8, 9]
    state = sizing.settled(levels, P95, 0.9, 4)
    assert sizing.answer(state, 64)[:2] == (8, "exact")


def test_search_reads_at_least_and_none():
    levels, path = drive(100, max_users=32)
    assert path[-1] == 32
    cap, reading, text = sizing.answer(sizing.settled(levels, P95, 0.9, 4), 32)
    assert (cap, reading) == (32, "at least") and text.startswith("at least 32")
    levels, path = drive(0)
    assert path == [1]
    assert sizing.answer(sizing.settled(levels, P95, 0.9, 4), 64)[:2] == (None, "none")


def test_an_unsure_level_is_repeated_then_counted_as_failing():
    levels = {c: runs(c, [0.1] * 20, times=2) for c in (1, 2, 4, 8)}
    levels[9] = runs(9, [0.1] * 19 + [3.0])
    assert sizing.next_level(levels, P95, 64) == 9
    levels[9] = runs(9, [0.1] * 19 + [3.0], times=4)
    state = sizing.settled(levels, P95, 0.9, 4)
    assert state.verdicts[9].outcome == "fail" and "counted as failing" in state.verdicts[9].why
    assert (state.lo, state.hi) == (8, 9)


def test_answer_names_levels_as_crowds_or_rates():
    levels, _ = drive(8)
    state = sizing.settled(levels, P95, 0.9, 4)
    assert sizing.answer(state, 64)[2] == "8 at once keeps the promise and 9 at once breaks it"
    rate = sizing.answer(state, 64, lambda k: f"{k * 0.5:g} requests/s")[2]
    assert rate == "4 requests/s keeps the promise and 4.5 requests/s breaks it"


def test_the_capacity_record_is_schema_valid_and_says_its_search():
    from harness.core.records import Capacity
    from harness.io.notebook import problems

    tried = [
        {
            "level": 8,
            "run": 1,
            "figure": 0.14,
            "pooled": 0.14,
            "interval": [0.13, 0.15],
            "verdict": "pass",
            "why": "90% interval 0.130-0.150 within",
        }
    ]
    rec = Capacity(
        "cap",
        {"engine": "practice", "model": "m", "max_tokens": 128},
        "r1",
        {"metric": "ttft", "percentile": "p95", "limit": 0.5, "text": "TTFT p95 <= 0.5 s"},
        0.9,
        8,
        "at least",
        "at least 8 at once: ...",
        tried,
        1,
        1,
        12.0,
        240.0,
        "time",
        "t",
    )
    out = rec.to_dict()
    assert out["record"] == "capacity" and out["search"] == "concurrency" and out["capacity"] == 8
    assert not problems(out, "capacity")
    assert problems({**out, "reading": "exactly"}, "capacity")  # the reading is one of four words
    rate = Capacity(**{**rec.__dict__, "rate_step_rps": 0.5}).to_dict()
    assert rate["search"] == "rate" and not problems(rate, "capacity")
