"""The regression gate's comparison (harness.sizing.gate) on hand-made level records: levels matched
by offered load, unlike runs refused with their reason, the same run passing, a worse one failing."""

import pytest

from harness.sizing import gate


def rec(c, tok_s, tpot50, **extra):
    return {
        "label": "x",
        "concurrency": c,
        "requests": 16,
        "failed": 0,
        "output_tokens_per_s": tok_s,
        "goodput_requests_per_s": 1.0,
        "ttft_s": {"p95": 0.1},
        "tpot_s": {"p50": tpot50},
        "prompt_set": "mixed",
        "max_tokens": 128,
        "model": "m",
        "arrival": "closed",
        **extra,
    }


TPOT = next(m for m in gate.GATE_METRICS if m.name == "TPOT p50")


def test_gate_names_a_regression_beyond_tolerance_and_noise():
    base = [rec(8, 300 + i, 0.025 + i * 0.0001) for i in range(3)]
    slow = [rec(8, 250 + i, 0.030 + i * 0.0001) for i in range(3)]
    line = gate.gate_line(TPOT, "c=8", base, slow, 0.05)
    assert line.outcome == "worse" and line.worse_share == pytest.approx(0.2, abs=0.01)
    assert "WORSE" in line.text(0.05) and "TPOT p50" in line.text(0.05) and "c=8" in line.text(0.05)
    assert gate.gate_line(TPOT, "c=8", base, base, 0.05).outcome == "ok"
    # worse by more than the tolerance, but one candidate run beats a baseline run: noise
    mixed = [rec(8, 300, 0.024), rec(8, 300, 0.031), rec(8, 300, 0.032)]
    assert gate.gate_line(TPOT, "c=8", base, mixed, 0.05).outcome == "noise"
    decision = gate.decide(gate.by_level(base), gate.by_level(slow), 0.05)
    assert decision.exit_code == 1 and decision.why is None


def test_the_same_run_as_both_sides_passes_however_few_its_runs():
    for n in (1, 3):
        side = gate.by_level([rec(c, 300, 0.025) for c in (4, 8) for _ in range(n)])
        decision = gate.decide(side, side, 0.05)
        assert (decision.exit_code, decision.why) == (0, None)
        assert all(x.outcome in ("ok", "absent") for x in decision.lines)


def test_a_difference_beyond_the_tolerance_needs_three_runs_a_side():
    one, slow = gate.by_level([rec(8, 300, 0.025)]), gate.by_level([rec(8, 200, 0.05)])
    decision = gate.decide(one, slow, 0.05)
    assert decision.exit_code == 2 and "too few repeats at c=8: 1 baseline and 1 candidate" in decision.why


def test_failed_requests_are_gated_so_a_failing_candidate_is_worse():
    base = [rec(8, 300, 0.025) for _ in range(3)]
    failing = [rec(8, 300, 0.025, failed=4) for _ in range(3)]
    decision = gate.decide(gate.by_level(base), gate.by_level(failing), 0.05)
    assert decision.exit_code == 1
    assert [x.metric for x in decision.lines if x.outcome == "worse"] == ["failed share"]


@pytest.mark.parametrize(
    "change, words",
    [
        (
            {"max_tokens": 64},
            "different conditions: max tokens is 128 in the baseline and 64 in the candidate",
        ),
        ({"model": "other"}, "model is m in the baseline and other"),
        (
            {"workload": {"kind": "conversations", "turns": "fixed:4"}},
            'workload is {"kind": "prompts"} in the baseline and {"kind": "conversations"',
        ),
        ({"arrival": "poisson", "rate_rps": 2.0}, "arrival is closed in the baseline and poisson"),
        ({"temperature": 0.7}, "temperature is none in the baseline and 0.7"),
    ],
)
def test_unlike_runs_cannot_be_gated(change, words):
    base = gate.by_level([rec(8, 300, 0.025)] * 3)
    other = gate.by_level([rec(8, 300, 0.025, **change)] * 3)
    decision = gate.decide(base, other, 0.05)
    assert decision.exit_code == 2 and words in decision.why, decision.why


def test_a_record_without_arrival_or_workload_ran_the_closed_loop_on_a_prompt_set():
    """The headless Locust run writes neither field; a sweep writes both: alike, so gated."""
    headless = gate.by_level([{k: v for k, v in rec(8, 300, 0.025).items() if k != "arrival"}] * 3)
    sweep = gate.by_level([rec(8, 300, 0.025, workload={"kind": "prompts"})] * 3)
    assert gate.decide(headless, sweep, 0.05).exit_code == 0


def test_a_side_that_mixes_runs_cannot_be_gated():
    mixed = gate.by_level([rec(8, 300, 0.025), rec(8, 300, 0.025, prompt_set="long"), rec(8, 300, 0.025)])
    why = gate.decide(mixed, mixed, 0.05).why
    assert why == "the baseline mixes runs: its prompt set is mixed and long in different records"


def test_levels_that_do_not_match_cannot_be_gated():
    base = gate.by_level([rec(c, 300, 0.025) for c in (4, 8)] * 3)
    cand = gate.by_level([rec(c, 300, 0.025) for c in (8, 16)] * 3)
    why = gate.decide(base, cand, 0.05).why
    assert why.startswith("the levels differ: the baseline measured c=4, c=8 and the candidate c=8, c=16")
    assert "no level record" in gate.decide({}, cand, 0.05).why


def test_open_loop_levels_are_matched_by_offered_rate_not_peak_in_flight():
    """8 requests/s against 2 requests/s was gated as one level (both had 3 in flight at peak) and
    called a regression; a slower server at one rate has more in flight, and was no match."""

    def at(rate, peak, tpot):
        return rec(peak, 300, tpot, arrival="fixed-rate", rate_rps=rate)

    two, eight = gate.by_level([at(2.0, 3, 0.025)] * 3), gate.by_level([at(8.0, 3, 0.05)] * 3)
    assert set(two) == {2.0} and set(eight) == {8.0}
    why = gate.decide(two, eight, 0.05).why
    assert why.startswith("the levels differ: the baseline measured 2 req/s and the candidate 8 req/s")
    slower = gate.by_level([at(2.0, 6, 0.05)] * 3)  # the same rate, more in flight: one level
    decision = gate.decide(two, slower, 0.05)
    assert decision.exit_code == 1 and any(
        x.level == "2 req/s" and x.outcome == "worse" for x in decision.lines
    )
    with pytest.raises(KeyError):
        gate.by_level([rec(3, 300, 0.025, arrival="poisson")])  # an open level without its rate
