"""Property-based tests of the capacity search's ends and the gate: any
promise is refused or a finite time; any server (passing, failing, failing requests, contradicting
itself) ends the search in bounded steps with an answer no measured level contradicts; a run
gated against itself passes, and one clearly worse fails."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.sizing import gate, criterion as sizing
from harness.bounds import MAX_SECONDS
from tests.unit.properties import examples

P95 = sizing.Criterion("ttft", "p95", 0.5)
FAST, SLOW = [0.1] * 8, [3.0] * 8
# what the server does with one run: keeps the promise, breaks it, fails every request, or dies
# part-way (some answered, the rest refused)
RUN = st.sampled_from(["fast", "slow", "error", "dies"])


@settings(max_examples=examples(200))
@given(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["ttft-p95", "e2e-p99", "goodput"]))
def test_a_promise_is_refused_or_a_positive_finite_limit(limit, text):
    try:
        crit = sizing.Criterion.parse(text, limit)
    except ValueError as exc:
        assert "--promise" in str(exc)
        return
    assert math.isfinite(crit.limit) and 0 < crit.limit <= (1 if text == "goodput" else MAX_SECONDS)


def search(server, max_users: int, confirm: int = 2, max_runs: int = 4):
    """The search's loop over the pure steps (harness.sizing.capacity_search.search without the load):
    ``server(level, run)`` says what each run does."""
    levels: dict[int, sizing.LevelRuns] = {}
    steps, ended = 0, None
    while (k := sizing.next_level(levels, P95, max_users, 0.9, confirm, max_runs)) is not None:
        steps += 1
        assert steps <= 8 * max_users * max_runs, "the search does not end"
        number = (levels[k].runs if k in levels else 0) + 1
        kind = server(k, number)
        if kind in ("error", "dies"):
            errors, completed = (
                (["HTTP 500: x"] * 8, 0) if kind == "error" else (["ConnectionError: x"] * 4, 4)
            )
            ended = sizing.server_failure(errors, completed)
            assert ended
            break
        values = FAST if kind == "fast" else SLOW
        own = sizing.verdict(sizing.LevelRuns(k, list(values), 1), P95).outcome
        levels.setdefault(k, sizing.LevelRuns(k)).add(values, 0, None, own)
        clash = sizing.contradiction(levels[k])
        if clash:
            ended = clash
            break
    state = sizing.settled(levels, P95, 0.9, max_runs)
    return state, sizing.answer(state, max_users, ended=ended), ended


@settings(max_examples=examples(200))
@given(st.dictionaries(st.tuples(st.integers(1, 16), st.integers(1, 4)), RUN), RUN, st.integers(1, 16))
def test_any_server_ends_the_search_with_an_answer_no_measured_level_contradicts(plan, default, max_users):
    state, (cap, reading, sentence), ended = search(lambda k, n: plan.get((k, n), default), max_users)
    assert reading in ("exact", "at least", "between", "none")
    if ended:
        assert ended in sentence  # the reason is said, whatever the answer
    if cap is None:
        assert reading == "none"
        return
    assert 1 <= cap <= max_users and state.verdicts[cap].outcome == "pass"
    assert not any(v.outcome == "fail" and k <= cap for k, v in state.verdicts.items())


def records(draw_figures, runs: int, levels: list[int]):
    return [
        {
            "label": "x",
            "concurrency": c,
            "arrival": "closed",
            "model": "m",
            "requests": 16,
            "failed": f[0],
            "output_tokens_per_s": f[1],
            "goodput_requests_per_s": f[2],
            "ttft_s": {"p95": f[3]},
            "tpot_s": {"p50": f[4]},
            "itl_s": {"p50": f[4]},
            "e2e_s": {"p95": f[3] + f[4]},
        }
        for c in levels
        for f in draw_figures[: runs * len(levels)]
    ]


FIGURES = st.tuples(
    st.integers(0, 16),
    st.floats(0, 1e6),
    st.floats(0, 1e3),
    st.floats(1e-4, 100),
    st.floats(1e-5, 10),
)


@settings(max_examples=examples(150))
@given(
    st.lists(FIGURES, min_size=8, max_size=8),
    st.integers(1, 4),
    st.lists(st.integers(1, 64), min_size=1, max_size=2, unique=True),
)
def test_a_run_gated_against_itself_passes(figures, runs, levels):
    side = gate.by_level(records(figures, runs, levels))
    decision = gate.decide(side, side, 0.0)
    assert (decision.exit_code, decision.why) == (0, None)


@settings(max_examples=examples(150))
@given(st.lists(FIGURES, min_size=3, max_size=3), st.floats(1.5, 100))
def test_a_candidate_worse_in_every_run_beyond_the_noise_fails(figures, factor):
    base = records(figures, 3, [8])
    worst = max(r["tpot_s"]["p50"] for r in base)
    cand = [{**r, "tpot_s": {"p50": worst * factor + i * 1e-6}} for i, r in enumerate(base)]
    decision = gate.decide(gate.by_level(base), gate.by_level(cand), 0.05)
    assert decision.exit_code == 1
    assert any(x.metric == "TPOT p50" and x.outcome == "worse" for x in decision.lines)
