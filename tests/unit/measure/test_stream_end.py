"""The stream's true end and the usage count's sanity (round two, classes 2 and 3): pure parsing."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.measure.levels import aggregate, sample_record
from harness.endpoints.base import MAX_COUNT, usage_disagreement
from harness.endpoints.chat import chat_parser


def _data(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode()


def _tok(text: str) -> bytes:
    return _data({"id": "c1", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


FINISH = _data({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


def _usage(n) -> bytes:
    return b'data: {"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": %s}}' % (
        str(n).encode()
    )


def _run(lines: list[bytes], times: list[float] | None = None):
    p = chat_parser(0.0)
    for i, line in enumerate(lines):
        p.feed(line, times[i] if times else 0.01 * (i + 1))
        p.feed(b"", times[i] if times else 0.01 * (i + 1))
    return p.finish(10.0)


def test_events_after_done_are_not_part_of_the_answer():
    lines = [_tok("a"), _tok("b"), FINISH, _usage(2), b"data: [DONE]"]
    late = [_tok(f"late{i}") for i in range(40)]
    s = _run(lines + late, [0.1, 0.102, 0.103, 0.103, 0.104] + [5.0 + i for i in range(40)])
    assert s.ok and s.output_tokens == 2 and s.text == "ab"
    assert s.token_times == [0.1, 0.102]  # the 40 late deltas never reach the TPOT or the ITL
    assert len(s.itl) == 1 and abs(s.itl[0] - 0.002) < 1e-9


def test_done_before_any_token_is_a_failure_with_its_reason():
    s = _run([b"data: [DONE]", _tok("after"), FINISH])
    assert not s.ok and s.error.startswith("NoText") and "[DONE]" in s.error
    s = _run([FINISH, b"data: [DONE]", _tok("after")])
    assert not s.ok and s.error.startswith("NoText")


def test_a_huge_usage_count_is_flagged_and_never_a_rate():
    s = _run([_tok("a"), _tok("b"), FINISH, _usage(10**8), b"data: [DONE]"])
    assert s.ok and s.output_tokens == 2 and s.token_source == "usage-rejected"
    assert "far above the 2 text deltas" in s.usage_note
    rec = aggregate([s], 1, 1.0, 2.0, 0.1)
    assert rec["output_tokens"] == 2 and rec["output_tokens_per_s"] < 10
    assert rec["token_counts"] == "usage-rejected"
    assert sample_record(s, "x", 1)["usage_note"] == s.usage_note


def test_one_usage_token_for_fifty_deltas_is_flagged():
    s = _run([_tok(f"w{i} ") for i in range(50)] + [FINISH, _usage(1), b"data: [DONE]"])
    assert s.token_source == "usage-rejected" and s.output_tokens == 50 and "under half" in s.usage_note


def test_a_usage_count_past_any_request_is_no_count():
    s = _run([_tok("a"), _tok("b"), FINISH, _usage(10**16), b"data: [DONE]"])
    assert s.token_source == "usage-rejected" and "not a token count" in s.usage_note


def test_integers_of_hundreds_of_digits_never_overflow():
    big = 10**300
    line = b'data: {"choices": [], "usage": {"prompt_tokens": %d, "completion_tokens": %d, ' % (big, big)
    line += b'"prompt_tokens_details": {"cached_tokens": %d}}}' % big
    s = _run([_tok("a"), FINISH, line, b"data: [DONE]"])
    assert s.prompt_tokens is None and s.cached_tokens is None and s.output_tokens == 1
    assert s.token_source == "usage-rejected" and "301 digits" in s.usage_note
    rec = aggregate([s], 1, 1.0, 2.0, 0.1)  # the level is built: no OverflowError
    assert rec["prompt_tokens_mean"] is None


def test_a_plausible_usage_count_is_taken():
    s = _run([_tok("a"), _tok("b"), FINISH, _usage(3), b"data: [DONE]"])
    assert s.token_source == "usage" and s.output_tokens == 3 and s.usage_note is None


@given(deltas=st.integers(1, 10**6), claimed=st.integers(-(10**20), 10**20))
def test_usage_check_takes_only_counts_within_its_stated_range(deltas, claimed):
    note = usage_disagreement(claimed, deltas)
    plausible = 0 <= claimed <= MAX_COUNT and 2 * claimed >= deltas
    plausible = plausible and claimed <= max(64 * deltas, deltas + 4096)
    assert (note is None) == plausible
    if note is not None:
        assert str(deltas) in note or "not a token count" in note


@given(deltas=st.integers(1, 10**6))
def test_usage_equal_to_the_deltas_is_always_taken(deltas):
    assert usage_disagreement(deltas, deltas) is None


def test_a_late_done_is_no_part_of_the_tpot():
    """Reliability round two, second sweep: a [DONE] (and the usage chunk) 0.2 s after the last of 11 tokens
    10 ms apart made TPOT 0.03 s, not 0.01 s: TPOT runs from the first token to the last."""
    p = chat_parser(0.0)
    for i in range(11):
        p.feed(_tok(f"t{i} "), 0.1 + 0.01 * i)
    p.feed(FINISH, 0.2)
    p.feed(_usage(11), 0.4)
    p.feed(b"data: [DONE]", 0.4)
    s = p.finish(0.4)
    assert s.ok and s.output_tokens == 11
    assert abs(s.tpot - 0.01) < 1e-9, s.tpot
    assert abs(sample_record(s, "x", 1)["end_s"] - 0.4) < 1e-9  # the request's end is still kept


def test_a_flood_of_deltas_has_no_decode_rate_only_the_reason():
    """Round two, second sweep: 1,500 deltas in 10 ms (150k tokens/s for one stream) was taken as a
    decode rate; no engine decodes one stream that fast, so it is flagged, never a figure."""
    from harness.measure.sample import MAX_DECODE_RATE, decode_rate

    p = chat_parser(0.0)
    for i in range(1500):
        p.feed(_tok("x"), 0.1 + i * (0.01 / 1500))
    p.feed(FINISH, 0.111)
    p.feed(b"data: [DONE]", 0.111)
    rate, why = decode_rate(p.finish(0.111))
    assert (
        rate is None and why.startswith("implausible: 150,000 tokens/s") and f"{MAX_DECODE_RATE:,.0f}" in why
    )
    q = chat_parser(0.0)  # a fast but real stream keeps its rate: 100 tokens in 0.1 s
    for i in range(100):
        q.feed(_tok("x"), 0.1 + i * 0.001)
    q.feed(FINISH, 0.2)
    q.feed(b"data: [DONE]", 0.2)
    rate, why = decode_rate(q.finish(0.2))
    assert why is None and abs(rate - 1000.0) < 1e-6


def _streamed(tokens: int, spread_s: float):
    p = chat_parser(0.0)
    for i in range(tokens):
        p.feed(_tok("x"), 0.1 + i * (spread_s / tokens))
    p.feed(FINISH, 0.1 + spread_s)
    p.feed(b"data: [DONE]", 0.1 + spread_s)
    return p.finish(0.1 + spread_s)


def test_a_level_of_flooded_streams_says_so_in_its_record():
    """Reliability round two: a flood (150k tokens/s for one stream) was flagged by measure but became a sweep
    level's TPOT and throughput silently. The level record now carries decode_note, which its
    schema admits; a level of real streams has none."""
    from harness.records.notebook import validate

    flood = [_streamed(1500, 0.01) for _ in range(3)] + [_streamed(100, 0.1)]
    rec = aggregate(flood, 4, 1.0, 2.0, 0.1)
    assert rec["decode_note"].startswith("implausible: 3 of 4 completed streams came faster than 20,000")
    assert "no decode speed" in rec["decode_note"]
    whole = {"lab": "x", "label": "flood", **rec}
    validate(whole, "level")
    real = aggregate([_streamed(100, 0.1)] * 2, 2, 1.0, 2.0, 0.1)
    assert "decode_note" not in real
    validate({"lab": "x", "label": "real", **real}, "level")


def test_more_cached_tokens_than_the_prompt_is_no_count():
    """Third sweep: 9,000 cached of a 5-token prompt was recorded; a count past the prompt is none."""
    for cached, kept in ((9000, None), (5, 5), (3, 3)):
        p = chat_parser(0.0)
        p.feed(_tok("a"), 0.1)
        p.feed(_tok("b"), 0.2)
        p.feed(FINISH, 0.2)
        usage = {
            "prompt_tokens": 5,
            "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        p.feed(_data({"id": "c1", "choices": [], "usage": usage}), 0.2)
        p.feed(b"data: [DONE]", 0.2)
        s = p.finish(0.2)
        assert s.ok and s.prompt_tokens == 5 and s.cached_tokens == kept, (cached, s.cached_tokens)
