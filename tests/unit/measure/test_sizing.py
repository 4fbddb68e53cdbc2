"""The capacity search's verdicts and steps, and when it ends without an answer, on hand-made
values (the gate's comparison is tests/unit/sizing/test_gate.py's)."""

import pytest

from harness.sizing import criterion as sizing
from harness.measure.stats import all_worse_chance, bootstrap, percentile

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
    from harness.records.notebook import problems
    from harness.records.sizing import Capacity, SearchCriterion, SearchRun, TriedRun

    tried = [TriedRun(8, 1, 0.14, 0.14, [0.13, 0.15], "pass", "90% interval 0.130-0.150 within")]
    rec = Capacity(
        "cap",
        SearchRun.of({"engine": "practice", "model": "m", "max_tokens": 128}),
        "r1",
        SearchCriterion("ttft", "p95", 0.5, "TTFT p95 <= 0.5 s"),
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
    assert not problems(out, "capacity") and Capacity.read(out) == rec
    assert problems({**out, "reading": "exactly"}, "capacity")  # the reading is one of four words
    rate = Capacity(**{**rec.__dict__, "rate_step_rps": 0.5}).to_dict()
    assert rate["search"] == "rate" and not problems(rate, "capacity")
    failed = TriedRun(16, 1, 0.14, None, None, "error", "x")
    ended = Capacity(
        **{**rec.__dict__, "tried": [*tried, failed], "stopped": "server", "end_reason": "16 at once: x"}
    ).to_dict()
    assert ended["end_reason"] == "16 at once: x" and not problems(ended, "capacity")
    assert problems({**ended, "stopped": "crashed"}, "capacity")
    assert problems({**ended, "end_reason": 5}, "capacity")


@pytest.mark.parametrize("promise", [float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 1e9, 1e308])
def test_a_promise_that_is_no_positive_finite_time_is_refused(promise):
    with pytest.raises(ValueError, match="--promise takes a positive number of seconds"):
        sizing.Criterion.parse("ttft-p95", promise)
    with pytest.raises(ValueError, match="a share of requests in"):
        sizing.Criterion.parse("goodput", promise)


def test_a_run_the_server_failed_is_no_latency():
    assert sizing.server_failure([], 8) is None
    # past their bound: latencies (they break the promise), not the server's failure
    assert (
        sizing.server_failure(["Timeout: the request passed its total bound of 3 s", "Cancelled: x"], 6)
        is None
    )
    none = sizing.server_failure(["HTTP 500: out of KV cache"] * 4, 0)
    assert none == "no request of 4 completed (first error: HTTP 500: out of KV cache)"
    assert sizing.server_failure(["Timeout: no byte"] * 3, 0).startswith("no request of 3 completed")
    # every request past its bound after smaller levels were answered: slow there, a failed level
    assert sizing.server_failure(["Timeout: no byte"] * 3, 0, answered_before=True) is None
    assert sizing.server_failure(["HTTP 503: busy"] * 3, 0, answered_before=True).startswith("no request")
    some = sizing.server_failure(["Timeout: slow", "ConnectionError: refused", None], 5)
    assert some == "the server failed 2 of 8 request(s) (first: ConnectionError: refused)"
    assert sizing.server_failure([], 0) == "no request of 0 completed (first error: no request was sent)"
    nasty = sizing.server_failure(["HTTP 500: \x1b[31mred\x07" + "x" * 5000], 0)
    assert "\x1b" not in nasty and "\x07" not in nasty and len(nasty) < 300


def test_late_requests_fail_their_level_and_say_why():
    r = sizing.LevelRuns(4)
    r.add([0.1] * 10, 2, "Timeout: the request passed its total bound of 3 s", "fail")
    v = sizing.verdict(r, P95)
    assert v.outcome == "fail" and v.why == (
        "2 request(s) failed past their bound (first: Timeout: the request passed its total bound of 3 s)"
    )


def test_a_level_whose_runs_give_opposite_verdicts_is_a_contradiction():
    r = sizing.LevelRuns(2, own=["fail", "unsure", "pass"])
    assert sizing.contradiction(r) == (
        "2 at once broke the promise in run 1 and kept it in run 3: the server's answers to one load "
        "contradict each other"
    )
    assert "kept the promise in run 1 and broke it in run 2" in sizing.contradiction(
        sizing.LevelRuns(9, own=["pass", "fail"]), lambda k: f"{k / 2:g} requests/s"
    )
    assert sizing.contradiction(sizing.LevelRuns(2, own=["pass", "unsure", "pass"])) is None


def test_runs_either_side_of_the_promise_but_near_it_are_noise_pooled_and_run_again():
    """Day 3's smoke rehearsal on the CPU llama-server: 5 at once read p95 0.473 s, then 0.543 s
    against a 0.5 s promise, each run's own (two-request) interval on its side. That is noise near
    the boundary: no contradiction; pooled, the level straddles the promise and is run again."""
    near = sizing.LevelRuns(5)
    near.add([0.47, 0.473], 0, None, "pass", 0.473)
    near.add([0.54, 0.543], 0, None, "fail", 0.543)
    assert sizing.contradiction(near) is None
    levels = {4: runs(4, [0.38] * 20, times=2), 5: near, 6: runs(6, [0.9] * 20, times=2)}
    assert sizing.settled(levels, P95, 0.9, 4).verdicts[5].outcome == "unsure"
    assert sizing.next_level(levels, P95, 64) == 5
    far = sizing.LevelRuns(5)
    far.add([0.05] * 4, 0, None, "pass", 0.05)
    far.add([1.0] * 4, 0, None, "fail", 1.0)
    assert "kept the promise in run 1 and broke it in run 2" in sizing.contradiction(far)
    goodput = sizing.LevelRuns(3, own=["pass", "fail"], figures=[0.95, 0.3])  # a share: 3x apart
    assert sizing.contradiction(goodput) is not None


def test_a_contradicted_level_draws_no_boundary_and_the_search_asks_for_no_more():
    """Level 2 fast, then slow: pooled, its p95 is the slow run's, which would read as "1 keeps
    the promise and 2 breaks it". Its runs contradict each other, so it has no verdict at all."""
    flip = sizing.LevelRuns(2)
    flip.add([0.1] * 20, 0, None, "pass")
    flip.add([3.0] * 20, 0, None, "fail")
    levels = {1: runs(1, [0.1] * 20, times=2), 2: flip}
    state = sizing.settled(levels, P95, 0.9, 4)
    assert (state.lo, state.hi, sorted(state.verdicts)) == (1, None, [1])
    assert sizing.next_level(levels, P95, 64) is None
    clash = sizing.contradiction(flip)
    cap, reading, text = sizing.answer(state, 64, ended=clash)
    assert (cap, reading) == (1, "at least") and text.endswith(f"before a level broke it: {clash})")


def test_an_ended_search_says_what_passed_and_why_it_ended():
    why = "4 at once, run 1: no request of 12 completed (first error: HTTP 500: x)"
    passed = {c: runs(c, [0.1] * 20) for c in (1, 2)}
    state = sizing.settled(passed, P95, 0.9, 4)
    cap, reading, text = sizing.answer(state, 64, ended=why)
    assert (cap, reading) == (2, "at least")
    assert text == (
        "at least 2 at once: every level measured up to it kept the promise (the search ended before "
        f"a level broke it: {why})"
    )
    nothing = sizing.answer(sizing.settled({}, P95, 0.9, 4), 64, ended=why)
    said = f"none known: the search ended before a level had a verdict that holds: {why}"
    assert nothing == (None, "none", said)
    # without a reason (the time budget), an unjudged search still never claims a latency verdict
    assert sizing.answer(sizing.settled({}, P95, 0.9, 4), 64)[2].startswith("none known: the search ran out")
    broke = sizing.answer(sizing.settled({1: runs(1, [3.0] * 20)}, P95, 0.9, 4), 64)
    assert broke[:2] == (None, "none") and "90% interval 3.000-3.000 beyond" in broke[2]
    pair = {1: runs(1, [0.1] * 20), 2: runs(2, [3.0] * 20)}
    exact = sizing.answer(sizing.settled(pair, P95, 0.9, 4), 64, ended="a contradiction")
    assert exact[:2] == (1, "exact") and exact[2].endswith(
        "; the search ended before confirming it: a contradiction"
    )
