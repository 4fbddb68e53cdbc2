"""Each run's headline, and its figures against the reference called with the gate's test
(harness.compare.figures)."""

from __future__ import annotations

from harness.compare import figures, sets
from harness.sizing.gate import GATE_METRICS
from tests.unit.compare.conftest import variant

TOKENS, TTFT = GATE_METRICS[0], GATE_METRICS[3]  # output tok/s (higher better), TTFT p95 (lower better)


def test_a_difference_is_called_only_beyond_tolerance_spread_and_chance():
    base = [100.0, 101.0, 102.0]
    assert figures.verdict(TOKENS, base, [120.0, 121.0, 122.0], 0.05) == "better"
    assert figures.verdict(TOKENS, base, [80.0, 81.0, 82.0], 0.05) == "worse"
    assert figures.verdict(TTFT, base, [80.0, 81.0, 82.0], 0.05) == "better"  # a shorter wait
    assert figures.verdict(TOKENS, base, [101.0, 102.0, 103.0], 0.05) == "within tolerance"
    assert figures.verdict(TOKENS, base, [95.0, 110.0, 120.0], 0.05) == "within the spread"
    # apart and beyond the tolerance, but one run a side: 1 in 2 by chance
    assert figures.verdict(TOKENS, [100.0], [130.0], 0.05) == "too few runs"
    assert figures.verdict(TOKENS, [100.0, 101.0], [130.0, 131.0], 0.05) == "too few runs"  # 1 in 6
    assert figures.verdict(TOKENS, [], [130.0], 0.05) == "not measured"


def test_repeated_runs_alike_call_nothing_and_a_faster_one_is_called_better(baseline):
    a = variant(baseline, "a", repeats=3)
    same = variant(baseline, "same", repeats=3)
    assert not [c for c in figures.calls(a, same, 0.05) if c.verdict in figures.CALLED]
    fast = variant(baseline, "fast", scale=1.2, repeats=3)
    found = figures.calls(a, fast, 0.05)
    tokens = [c for c in found if c.metric == "output tok/s"]
    assert [c.level for c in tokens] == ["c=1", "c=2", "c=4", "c=8", "c=16"]
    assert all(c.verdict == "better" and -0.21 < c.change < -0.19 for c in tokens)
    assert {c.verdict for c in found if c.metric != "output tok/s"} <= {"within tolerance", "not measured"}
    assert tokens[0].text() == (
        "output tok/s at c=1: 65.21 tok/s (3 run(s)) against 54.34 tok/s (3 run(s)), 20.0% better, called"
    )


def test_single_runs_apart_are_too_few_to_call(baseline):
    found = figures.calls(variant(baseline, "a"), variant(baseline, "b", scale=1.5), 0.05)
    assert {c.verdict for c in found if c.metric == "output tok/s"} == {"too few runs"}


def test_headline_reads_latencies_and_energy_at_the_matching_level(baseline):
    short = [r for r in baseline if r["concurrency"] <= 4]
    measured = [dict(r, energy={"j_per_output_token": 0.5, "label": "imitation"}) for r in baseline]
    found = sets.sets([variant(measured, "all"), variant(short, "short")])
    rows = figures.headline_rows(found, None)
    assert [r.at for r in rows] == [4, 4]
    four = next(r for r in baseline if r["concurrency"] == 4)
    assert rows[0].ttft_p95_s == four["ttft_s"]["p95"] and rows[0].tpot_p50_s == four["tpot_s"]["p50"]
    assert (rows[0].j_per_token, rows[0].energy_note) == (0.5, " (imitation)")
    assert (rows[1].j_per_token, rows[1].energy_note) == (None, "not measured")
    assert rows[0].peak == "275.8" and rows[1].peak == "170.6"
    assert rows[0].promise_s == 2.0 and figures.headline_rows(found, 0.5)[0].promise_s == 0.5
