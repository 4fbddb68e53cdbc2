"""Round three: the new inputs (trace files, length specs and files) refuse what is out
of range in one line naming where, and what they accept stays bounded (unit and property tests;
the fault matrix is tests/integration/faults/test_faults_round_three_inputs.py)."""

from __future__ import annotations

import json
import math
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.bounds import MAX_SECONDS, MAX_TOKENS
from harness.workloads.lengths import file_counts, parse_lengths
from harness.workloads.traces import MAX_LINE_CHARS, TracePlan, parse_trace, span_words
from harness.workloads.request import LengthPlan, largest_request
from harness.errors import ConfigError
from harness.workloads.files import read_text
from tests.unit.properties import examples


def moon(**row) -> str:
    return json.dumps({"timestamp": 0, "input_length": 10, "output_length": 4, **row})


# -- traces -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (
            '{"timestamp": NaN, "input_length": 10, "output_length": 4}',
            "timestamp must be milliseconds from 0",
        ),
        ('{"timestamp": Infinity, "input_length": 10, "output_length": 4}', "got inf"),
        (moon(timestamp=1e300), "got 1e+300"),
        ('{"timestamp": 1' + "0" * 400 + ', "input_length": 10, "output_length": 4}', "got 1000"),
        ('{"timestamp": -Infinity, "input_length": 10, "output_length": 4}', "got -inf"),
        (moon(timestamp=-5), "from 0 to 604800000"),
        (moon(timestamp="0"), "timestamp must be milliseconds"),
        (moon(output_length=10**9), "output_length must be a whole number from 1 to 1000000"),
        (moon(input_length=10**9), "input_length must be a whole number from 1 to 1000000"),
        (moon(input_length=2.5), "input_length"),
        (moon(output_length=True), "output_length"),
        ('{"timestamp": 0, "input_length": 10}', "output_length"),
        (moon(hash_ids=[1, -2]), "hash_ids must be a list of whole numbers"),
        (moon(hash_ids=[1, "x"]), "hash_ids"),
        (moon(hash_ids=[2**70]), "hash_ids"),
        ('{"timestamp": 0, "input_length": ' + "[" * 50_000 + "]" * 50_000 + "}", "not a JSON object"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_mooncake_row_out_of_range_is_refused_naming_the_file_and_line(line, words):
    text = moon() + "\n\n" + line + "\n"
    with pytest.raises(ConfigError, match="t.jsonl line 3: ") as err:
        parse_trace(text, "t.jsonl")
    assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("line", "words"),
    [("nan 10 4", "got nan"), ("inf 10 4", "got inf"), ("1e300 10 4", "from 0 to 604800"),
     ("-1 10 4", "from 0"), ("0 10 1000000000", "OUTPUT_TOKENS"), ("0 0 4", "INPUT_TOKENS"),
     ("0 ten 4", "SECONDS INPUT_TOKENS OUTPUT_TOKENS")],
)  # fmt: skip
def test_a_plain_row_out_of_range_is_refused_naming_the_line(line, words):
    with pytest.raises(ConfigError, match=f"t.txt line 2: .*{words}"):
        parse_trace("0 10 4\n" + line + "\n", "t.txt")


def test_a_non_json_line_after_mooncake_rows_and_an_overlong_line_name_their_line():
    with pytest.raises(ConfigError, match="line 2: not a JSON object"):
        parse_trace(moon() + "\nhello\n", "t")
    with pytest.raises(ConfigError, match=f"line 2: longer than {MAX_LINE_CHARS:,} characters"):
        parse_trace(moon() + "\n" + moon(hash_ids=list(range(200_000))) + "\n", "t")
    with pytest.raises(ConfigError, match="t: the trace holds no requests"):
        parse_trace("\n# only a comment\n", "t")


def test_a_huge_hash_ids_list_keeps_only_the_blocks_its_prompt_fills():
    (row,) = parse_trace(moon(input_length=1025, hash_ids=list(range(100_000))), "t", 512)[1]
    assert row.hash_ids == (0, 1, 2)  # 1,025 tokens fill three blocks of 512


def test_out_of_order_rows_are_sent_in_time_order_each_tagged_with_its_row_in_the_file():
    text = "# a comment line first\n3 10 4\n1 10 5\n\n2 10 6\n"
    fmt, rows = parse_trace(text, "t.txt")
    plan = TracePlan(tuple(rows), "t.txt", fmt)
    offsets, jobs = plan.schedule()
    assert offsets == [0.0, 1.0, 2.0] and [j.max_tokens for j in jobs] == [5, 6, 4]
    assert [(j.tags["trace_index"], j.tags["trace_line"]) for j in jobs] == [(1, 3), (2, 5), (0, 2)]
    assert "out of time order" in span_words(plan)


def test_the_replay_span_is_stated_and_a_microsecond_trace_is_named_past_an_hour():
    rows = parse_trace("\n".join(moon(timestamp=t * 4_000_000) for t in range(3)), "us.jsonl")[1]
    plan = TracePlan(tuple(rows), "us.jsonl", "mooncake")
    words = span_words(plan)
    assert plan.span_s() == 8000.0 and "8,000.0 s (2.2 h)" in words and "read as milliseconds" in words
    assert "--trace-time-scale" in words
    quick = TracePlan(tuple(rows), "us.jsonl", "mooncake", time_scale=0.001)
    assert quick.span_s() == pytest.approx(8.0) and "read as" not in span_words(quick)
    assert quick.params()["span_s"] == 8.0


def test_trace_prompts_are_built_when_asked_for_and_the_same_every_time():
    rows = parse_trace("\n".join(moon(timestamp=i, hash_ids=[7]) for i in range(1000)), "t")[1]
    plan = TracePlan(tuple(rows), "t", "mooncake", block_tokens=4)
    jobs = plan.schedule()[1]
    assert len(jobs) == 1000 and jobs._kept is None  # nothing built before it is asked for
    first = jobs[999].messages[0]["content"]
    assert first == plan.job(999).messages[0]["content"] and len(first.split()) == 10
    assert first.split()[:4] == jobs[0].messages[0]["content"].split()[:4]  # the shared block


@settings(max_examples=examples(60))
@given(
    st.lists(
        st.tuples(
            st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**12)),
            st.integers(-5, 2 * MAX_TOKENS),
            st.integers(-5, 2 * MAX_TOKENS),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_trace_is_refused_in_one_line_or_every_row_is_in_range(rows):
    text = "\n".join(moon(timestamp=t, input_length=i, output_length=o) for t, i, o in rows)
    try:
        fmt, parsed = parse_trace(text, "p.jsonl")
    except ConfigError as exc:
        assert str(exc).startswith("p.jsonl line ") and "\n" not in str(exc)
        return
    for r in parsed:
        assert math.isfinite(r.t_s) and 0 <= r.t_s <= MAX_SECONDS
        assert 1 <= r.input_tokens <= MAX_TOKENS and 1 <= r.output_tokens <= MAX_TOKENS
    assert [r.t_s for r in parsed] == sorted(r.t_s for r in parsed)


# -- length specs and files -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("fixed:inf", "every number must be finite"),
        ("fixed:nan", "every number must be finite"),
        ("uniform:1-inf", "every number must be finite"),
        ("normal:nan,1", "every number must be finite"),
        ("normal:10,inf", "every number must be finite"),
        ("uniform:50-10", "LO 50 is above HI 10"),
        ("normal:50,-3", "the spread SD -3 is negative"),
        ("fixed:0", "from 1 to 1000000"),
        ("fixed:-4", "from 1 to 1000000"),
        ("uniform:0-5", "from 1 to 1000000"),
        ("fixed:2000000", "from 1 to 1000000"),
        ("fixed:1.5", "whole number"),
        ("file:x", "the file holds no counts"),
    ],
)
def test_a_length_spec_out_of_range_is_one_line_naming_the_rule(spec, words):
    with pytest.raises(ConfigError, match="--input-tokens") as err:
        parse_lengths("--input-tokens", spec, [] if spec.startswith("file") else None)
    assert words in str(err.value) and spec in str(err.value)


def test_a_lengths_file_names_the_line_it_refuses():
    cases = (("5\n-3\n", "line 2 is -3"), ("5\n0\n", "line 2 is 0"), ("1e3\n", "line 1 is '1e3'"),
             ("9" * 5000 + "\n", "not a whole number"), ("", "holds no counts"),
             ("# only\n\n", "holds no counts"), ("5\n2000000\n", "from 1 to 1000000"))  # fmt: skip
    for text, words in cases:
        with pytest.raises(ConfigError, match=words):
            file_counts("--input-tokens f", text)
    assert file_counts("--x", "3\n# c\n\n4 # four\n") == [3, 4]


@settings(max_examples=examples(80))
@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True))
def test_any_spec_is_refused_in_one_line_or_draws_in_range(a, b):
    for spec in (f"fixed:{a!r}", f"uniform:{a!r}-{b!r}", f"normal:{a!r},{b!r}"):
        try:
            lengths = parse_lengths("--output-tokens", spec)
        except ConfigError as exc:
            assert "\n" not in str(exc)
            continue
        rng = random.Random(1)
        assert all(1 <= lengths.draw(rng) <= MAX_TOKENS for _ in range(50))
        assert 1 <= lengths.largest() <= MAX_TOKENS


def test_a_normal_tail_is_cut_at_the_options_highest():
    lengths = parse_lengths("--input-tokens", "normal:900000,900000")
    rng = random.Random(3)
    assert max(lengths.draw(rng) for _ in range(2000)) == MAX_TOKENS and lengths.largest() == MAX_TOKENS


def test_the_largest_request_a_workload_asks_for():
    plan = LengthPlan(parse_lengths("--i", "uniform:10-300"), parse_lengths("--o", "fixed:20"))
    assert largest_request(128, lengths=plan) == 320
    assert largest_request(128, lengths=LengthPlan(parse_lengths("--i", "normal:100,10"))) == 130 + 128
    assert largest_request(128, lengths=LengthPlan(None, parse_lengths("--o", "fixed:20"))) is None


# -- files a person names -------------------------------------------------------------------------


def test_an_input_file_that_is_no_regular_file_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    for path, words in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                        (tmp_path, "is a directory"), (tmp_path / "none", "No such file")):  # fmt: skip
        with pytest.raises(ConfigError, match=f"--trace: .*{words}"):
            read_text("--trace", str(path), 1 << 20, "a trace")
    big, binary, latin = tmp_path / "big", tmp_path / "bin", tmp_path / "latin"
    big.write_bytes(b"1\n" * 600)
    binary.write_bytes(b"12\n\x00\x01\n")
    latin.write_bytes(b"12\n\xe9\n")
    with pytest.raises(ConfigError, match="holds 1,200 bytes, past the 1,000 bytes read"):
        read_text("--x", str(big), 1000, "counts")
    with pytest.raises(ConfigError, match="is binary"):
        read_text("--x", str(binary), 1000, "counts")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        read_text("--x", str(latin), 1000, "counts")
    assert read_text("--x", str(big), 1200, "counts") == "1\n" * 600
