"""The typed records give exactly the JSON objects the package wrote before they existed: same keys,
same order, same values; and each is valid for its schema."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from harness.records import engine as er, level as lr, base as r
from harness.measure.levels import aggregate, level_record, level_stats
from harness.measure.sample import Sample
from harness.records.notebook import problems
from tests.conftest import FIXTURES

STAMP_FIELDS = ("recorded_at", "measured_on", "taken_at", "checked_at", "fetched_at")


def _samples() -> list[Sample]:
    times = [0.05 + 0.01 * i for i in range(10)]
    ok = Sample(
        t_send=0.0,
        ok=True,
        t_first=times[0],
        t_end=times[-1],
        token_times=times,
        output_tokens=10,
        token_source="usage",
        finish_reason="length",
        clock="kernel",
        read_lags=[0.0001] * 10,
        prompt_tokens=40,
        cached_tokens=0,
    )
    cut = Sample(t_send=0.0, ok=False, t_end=0.2, error="IncompleteStream: no [DONE]")
    return [ok, ok, cut]


def _context(server: lr.ServerInfo | None) -> lr.LevelContext:
    return lr.LevelContext(
        label="base",
        engine="practice",
        model="m",
        base_url="http://h/v1",
        prompt_set="mixed",
        max_tokens=64,
        temperature=0.0,
        objectives=r.Objectives(1.5, 0.05),
        server=server,
    )


def _same(got: dict, want: dict) -> None:
    """Equal as JSON text, so key order counts too."""
    assert json.dumps(got) == json.dumps(want)


def test_sweep_level_record_keeps_the_fields_and_their_order():
    samples = _samples()
    server = lr.ServerInfo("1.2", "box", "Q4_K_M", 4096, None)
    rec = level_record(
        samples,
        4,
        1.0,
        _context(server),
        "2026-01-01T00:00:00+0000",
        lr.Arrival(processes=2),
        client_cpu=0.12345,
        server_metrics={"m": {"max": 1}},
    ).to_dict()
    row = aggregate(samples, 4, 1.0, 1.5, 0.05)
    want = {
        "lab": r.LAB_ID,
        "harness_schema": 1,
        "label": "base",
        "engine": "practice",
        "engine_version": "1.2",
        "host": "box",
        "quant": "Q4_K_M",
        "context_length": 4096,
        "server_slots": None,
        "model": "m",
        "base_url": "http://h/v1",
        "prompt_set": "mixed",
        "max_tokens": 64,
        "temperature": 0.0,
        "slo_ttft_s": 1.5,
        "slo_tpot_s": 0.05,
        "arrival": "closed",
        "processes": 2,
        "recorded_at": "2026-01-01T00:00:00+0000",
        **row,
        "client_cpu": 0.123,
        "client_limited": False,
        "server_metrics": {"m": {"max": 1}},
    }
    _same(rec, want)
    assert not problems(rec, "level")


def test_locust_level_record_has_the_seeds_fields_only():
    context = lr.LevelContext(
        label="locust",
        engine=r.UNKNOWN,
        model="",
        base_url="http://h",
        prompt_set="mixed",
        max_tokens=128,
        temperature=0.0,
    )
    rec = level_record(_samples(), 8, 2.0, context, "t").to_dict()
    want = {
        "lab": r.LAB_ID,
        "harness_schema": 1,
        "label": "locust",
        "engine": "unknown",
        "model": "",
        "base_url": "http://h",
        "prompt_set": "mixed",
        "max_tokens": 128,
        "temperature": 0.0,
        "slo_ttft_s": 2.0,
        "slo_tpot_s": 0.1,
        "recorded_at": "t",
        **aggregate(_samples(), 8, 2.0, 2.0, 0.1),
    }
    _same(rec, want)
    assert not problems(rec, "level")


@pytest.mark.parametrize(
    "arrival, fields",
    [
        (lr.Arrival(), {"arrival": "closed"}),
        (lr.Arrival(duration_s=5.0), {"arrival": "closed", "duration_s": 5.0}),
        (lr.Arrival("poisson", rate_rps=2.5), {"arrival": "poisson", "rate_rps": 2.5}),
    ],
)
def test_arrival_fields(arrival, fields):
    _same(arrival.to_dict(), fields)


def test_level_stats_are_typed_and_aggregate_is_their_dict():
    stats = level_stats(_samples(), 4, 1.0, r.DEFAULT_OBJECTIVES)
    assert isinstance(stats.ttft_s, lr.Distribution) and stats.completed == 2 and stats.incomplete == 1
    _same(stats.to_dict(), aggregate(_samples(), 4, 1.0, 2.0, 0.1))


def test_is_level_picks_level_lines_only():
    assert r.is_level({"lab": r.LAB_ID, "concurrency": 1, "ttft_s": {}})
    assert not r.is_level({"lab": r.LAB_ID, "record": "cross-check", "concurrency": 1, "ours": {}})
    assert not r.is_level({"lab": "someone-else", "concurrency": 1, "ttft_s": {}})
    assert r.is_features({"lab": r.FEATURES_LAB, "probe": "features"})
    assert r.is_engine_speed({"lab": r.FEATURES_LAB, "test": "long"})
    assert not r.is_engine_speed({"lab": r.FEATURES_LAB, "test": "other"})


def test_one_stamp_format_in_utc_from_the_time_the_caller_gives():
    when = datetime.fromtimestamp(1_700_000_000, timezone.utc)
    assert r.stamp(when) == "2023-11-14T22:13:20Z"
    assert r.stamp(when.astimezone(timezone(timedelta(hours=-5)))) == "2023-11-14T22:13:20Z"
    with pytest.raises(ValueError, match="needs a time with its zone"):
        r.stamp(datetime(2023, 11, 14, 22, 13, 20))  # a naive time could be any zone's
    assert lr.run_id_for(when.astimezone(timezone(timedelta(hours=1))), 42) == "20231114T221320Z-42"


@pytest.mark.parametrize(
    "text",
    [
        "2023-11-14T22:13:20Z",  # today's, and the engines lab's since the first
        "2023-11-14T23:13:20+0100",  # the load lab's: local time with its offset
        "2023-11-14T22:13:20+0000",
        "2023-11-14T22:13:20+00:00",  # ISO 8601 with +00:00: cross-checks, fetches
    ],
)
def test_a_stamp_reads_in_todays_format_and_every_older_one(text):
    assert r.read_stamp(text) == datetime.fromtimestamp(1_700_000_000, timezone.utc)
    assert r.stamp(r.read_stamp(text)) == "2023-11-14T22:13:20Z"


def test_every_stamp_in_the_fixture_notebooks_reads():
    seen = []
    for book in sorted((FIXTURES / "notebooks").glob("*.md")):
        for line in book.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.startswith("{") else {}
            seen += [record[k] for k in STAMP_FIELDS if isinstance(record.get(k), str)]
    assert len(seen) > 20 and {"Z", "+0000"} <= {s[19:] for s in seen}  # both older formats are there
    for text in seen:
        assert r.read_stamp(r.stamp(r.read_stamp(text))) == r.read_stamp(text), text


def test_curve_summary_and_endpoint_check():
    first = {"engine": "e", "model": "m", "quant": "q", "concurrency": 1}
    summary = r.CurveSummary(
        "x", r.CurveRun.of(first), [1, 2], [1, 2], 1, 10.0, None, None, None, None, None, "t"
    )
    rec = summary.to_dict()
    _same(
        rec,
        {
            "lab": r.LAB_ID,
            "harness_schema": 1,
            "record": "curve-summary",
            "label": "x",
            "engine": "e",
            "engine_version": None,
            "host": None,
            "quant": "q",
            "model": "m",
            "context_length": None,
            "server_slots": None,
            "levels": [1, 2],
            "knee_between": [1, 2],
            "operating_point": 1,
            "peak_output_tokens_per_s": 10.0,
            "tpot_fit_ms": None,
            "ceiling_tokens_per_s": None,
            "c_at_slo": None,
            "capacity_within_promise": None,
            "promise_s": None,
            "recorded_at": "t",
        },
    )
    assert not problems(rec, "curve-summary")
    seen = {
        "listed_models": ["m"],
        "model_listed": True,
        "ok": True,
        "error": None,
        "finish_reason": "stop",
        "text_fields": ["content"],
        "usage": True,
        "prompt_tokens": 9,
        "output_tokens": 5,
        "ttft_s": 0.1,
        "n_ctx": 4096,
    }
    rec = r.EndpointCheck("x", "http://h/v1", "m", r.ProofSeen.read(seen), 300, "t", ["w"]).to_dict()
    _same(
        rec,
        {
            "harness_schema": 1,
            "record": "endpoint-check",
            "lab": r.LAB_ID,
            "label": "x",
            "base_url": "http://h/v1",
            "model": "m",
            **seen,
            "longest_prompt_tokens_estimate": 300,
            "checked_at": "t",
            "warnings": ["w"],
        },
    )
    assert not problems(rec, "endpoint-check")


def test_cross_check_allocation_features():
    cmp = {
        "output_tokens_per_s_ratio": 1.0,
        "tpot_p50_ratio": 1.0,
        "tolerance": 0.1,
        "verdict": "agree",
        "notes": [],
    }
    ours = {"output_tokens_per_s": 10.0}
    rec = r.CrossCheck("x", 4, "vllm-bench", "cmd", False, 40, 64, ours, ours, r.Comparison.read(cmp), "t")
    rec = rec.to_dict()
    _same(
        rec,
        {
            "harness_schema": 1,
            "record": "cross-check",
            "lab": r.LAB_ID,
            "label": "x",
            "concurrency": 4,
            "tool": "vllm-bench",
            "command": "cmd",
            "from_file": False,
            "prompt_tokens": 40,
            "max_tokens": 64,
            "ours": ours,
            "theirs": ours,
            **cmp,
            "checked_at": "t",
        },
    )
    rec = er.Allocation(
        "x", "llama.cpp", "m", "log", {"slots": 1}, {}, {"log_lines": []}, "match", [], "t"
    ).to_dict()
    _same(
        rec,
        {
            "harness_schema": 1,
            "record": "allocation",
            "label": "x",
            "engine": "llama.cpp",
            "model": "m",
            "log": "log",
            "settings": {"slots": 1},
            "observed": {},
            "predicted": {"log_lines": []},
            "verdict": "match",
            "problems": [],
            "recorded_at": "t",
        },
    )
    verdict = {"status": 200, "supported": True}
    rec = er.Features("e", "1", "h", "m", "u", verdict, verdict, verdict, verdict, "t").to_dict()
    _same(
        rec,
        {
            "lab": r.FEATURES_LAB,
            "harness_schema": 1,
            "probe": "features",
            "engine": "e",
            "engine_version": "1",
            "host": "h",
            "model": "m",
            "base_url": "u",
            "models_endpoint": verdict,
            "tool_calling": verdict,
            "streaming_tool_calling": verdict,
            "structured_output": verdict,
            "measured_on": "t",
        },
    )


def test_engine_speed_memory_and_model_fetch():
    speed = er.EngineSpeed(
        "e",
        "1",
        "CPU",
        "h",
        "m",
        "q",
        2048,
        "short",
        2,
        64,
        0.1,
        20.0,
        30,
        64,
        "usage",
        "length",
        ["content"],
        None,
        True,
        None,
        None,
        "t",
        both=er.BothTests(None),
    )
    got = speed.to_dict()
    assert list(got)[:3] == ["lab", "harness_schema", "engine"] and list(got)[-6:] == [
        "measured_on",
        "prefill_tokens_per_s",
        "memory",
        "memory_delta_mb",
        "process_resident_mb",
        "process_tree",
    ]
    assert er.EngineSpeed.read(got) == speed  # the line reads back as the record
    snap = er.MemorySnapshot("t", "Linux x86_64", "box", 1.0, 0.5, 0.0, {"gpu_used_mb": None}).to_dict()
    assert list(snap) == [
        "taken_at",
        "system",
        "hostname",
        "mem_total_mb",
        "mem_available_mb",
        "swap_free_mb",
        "gpu_used_mb",
    ]
    got = er.FetchResult("m.gguf", "p", 1, 10, None, None, ["size 10 bytes"], True)
    hub = er.ModelFetch("gguf", "T", "hf", "1 file", got, "t", repo="o/r", revision="main").to_dict()
    assert list(hub) == [
        "harness_schema",
        "record",
        "format",
        "title",
        "source",
        "listed",
        *("file", "path", "files", "bytes", "sha256", "sha256_from", "checks", "downloaded"),
        "fetched_at",
        "repo",
        "revision",
    ]
    assert er.ModelFetch.read(hub).result == got and not problems(hub, "model-fetch")
    assert "repo" not in er.ModelFetch("l", "T", "lemonade", "", got, "t").to_dict()
