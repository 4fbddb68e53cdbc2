"""`harness sweep` against the practice server (a separate process) and the lab's own commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.measure.levels import LAB_ID
from harness.records.notebook import read_records
from tests.conftest import ROOT, kit_profile
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow


def sweep(*args, env=None, timeout=180):
    cmd = [sys.executable, "-m", "harness", "sweep", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})}
    )


def levels(book: Path) -> list[dict]:
    result = read_records(book, "level", select=lambda o: o.get("lab") == LAB_ID and "concurrency" in o)
    assert not result.warnings
    return result.records


def linear_server(practice, name: str, seats: int, tokens: int, a: float, b: float, prefill: float):
    """A kit-like practice server whose decode step is exactly a + b x running, with fixed-length answers."""
    return practice(
        kit_profile(
            name=name,
            seats=seats,
            output={"length": {"kind": "fixed", "tokens": tokens}},
            timing={"step_base_s": a, "step_per_seq_s": b, "prefill_tokens_per_s": prefill},
        )
    )


def test_measured_ttft_and_tpot_match_the_servers_truth(practice, tmp_path):
    a, b = 0.010, 0.002
    server = linear_server(practice, "exact", seats=4, tokens=200, a=a, b=b, prefill=20000)
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "1,8",
        "--requests",
        "8",
        "--max-tokens",
        "40",
        "--label",
        "exact",
        "--labbook",
        str(book),
    )
    assert out.returncode == 0, out.stderr
    one, eight = levels(book)
    # c=1: one sequence per step, TPOT = a + b
    assert one["tpot_s"]["p50"] == pytest.approx(a + b, rel=0.1)
    # c=8 on 4 seats: 4 run (TPOT = a + 4b) while 4 wait a whole answer, so TTFT p90 covers the wait
    assert eight["tpot_s"]["p50"] == pytest.approx(a + 4 * b, rel=0.1)
    assert eight["ttft_s"]["p90"] > 39 * (a + 4 * b) * 0.9
    assert one["token_counts"] == "usage" and one["finish_reasons"] == {"length": 8}
    assert eight["server_metrics"]["llamacpp:requests_deferred"]["max"] >= 3
    samples = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    assert len(samples) == 16 and all(len(s["token_times_s"]) == 40 for s in samples)
    # token arrivals timed by the kernel's receive stamps (Linux): every gap as the client measured it
    # matches the gap between the server's own writes
    assert one["arrival_clock"] == eight["arrival_clock"] == "kernel"
    # and how late the client read them: measured, small at this load, so the client was not the limit
    # every token has its wait: measured from its own read's stamp, or, for a token merged with a
    # later one in a read (the kernel keeps only the newer stamp), the most it can have been
    assert all(
        len(s["read_lags_s"]) == 40 and 0 <= s["merged_tokens"] < 40 and min(s["read_lags_s"]) >= 0
        for s in samples
    )
    assert eight["client_read_lag_s"]["p99"] is not None and eight["client_limited"] is False
    errors = []
    for s in samples:
        sent = server.truth(s["request_id"])["sent"]
        got = s["token_times_s"]
        errors += [
            abs((b - a) - (wb - wa)) for a, b, wa, wb in zip(got, got[1:], sent, sent[1:], strict=False)
        ]
    errors.sort()
    assert errors[len(errors) // 2] < 0.0005, errors[len(errors) // 2]


def test_the_labs_printed_command_works_and_records_keep_the_field_names(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    book.write_text("# Part 9\nprose stays\n")
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "1,5",
        "--requests",
        "5",
        "--min-rounds",
        "2",
        "--max-tokens",
        "16",
        "--prompt-set",
        "mixed",
        "--label",
        "llama-baseline",
        "--labbook",
        str(book),
        "--engine",
        "practice",
        "--quant",
        "Q4_K_M",
        "--context-length",
        "4096",
        "--server-slots",
        "8",
    )
    assert out.returncode == 0, out.stderr
    recs = levels(book)
    assert [r["requests"] for r in recs] == [5, 10]  # max(requests, min_rounds x c)
    for field in (
        "lab",
        "label",
        "engine",
        "quant",
        "context_length",
        "server_slots",
        "output_tokens_per_s",
        "goodput_requests_per_s",
        "mean_in_flight",
        "cached_tokens_mean",
        "finish_reasons",
        "first_error",
    ):
        assert field in recs[0]
    assert book.read_text().startswith("# Part 9\nprose stays\n")
    assert "c=  5" in out.stdout and "appended 2 line(s)" in out.stdout


def test_prefix_pair_shared_is_cached_and_control_is_not(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    for prompt_set, label in (("unique-prefix", "control"), ("shared-prefix", "shared")):
        out = sweep(
            "--base-url",
            server.base_url,
            "--model",
            "local-chat",
            "--concurrency",
            "1,4",
            "--requests",
            "8",
            "--max-tokens",
            "8",
            "--prompt-set",
            prompt_set,
            "--label",
            label,
            "--labbook",
            str(book),
        )
        assert out.returncode == 0, out.stderr
    recs = {(r["label"], r["concurrency"]): r for r in levels(book)}
    for c in (1, 4):
        shared, control = recs[("shared", c)], recs[("control", c)]
        assert shared["cached_tokens_mean"] > 0.5 * shared["prompt_tokens_mean"]
        assert control["cached_tokens_mean"] < 0.1 * control["prompt_tokens_mean"]


def test_api_key_is_used_and_never_written(practice, tmp_path):
    key = "sk-never-in-a-record-123"
    server = practice("kit", extra=["--api-key-env", "PK"], env={"PK": key})
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "2",
        "--requests",
        "2",
        "--max-tokens",
        "4",
        "--labbook",
        str(book),
        "--api-key-env",
        "MY_KEY",
        env={"MY_KEY": key},
    )
    assert out.returncode == 0, out.stderr
    assert levels(book)[0]["completed"] == 2
    for text in (book.read_text(), book.with_suffix(".samples.jsonl").read_text(), out.stdout, out.stderr):
        assert key not in text


def test_cut_streams_are_failures_not_successes(practice, tmp_path):
    server = practice(kit_profile(name="cuts", faults={"cut_share": 1.0, "cut_after_tokens": 3}))
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "2",
        "--requests",
        "4",
        "--max-tokens",
        "16",
        "--labbook",
        str(book),
        "--warmup",
        "0",
        "--no-endpoint-check",
    )
    assert out.returncode == 1  # a level that completed nothing
    rec = levels(book)[0]
    assert rec["completed"] == 0 and rec["failed"] == 4 and rec["first_error"]


def test_wrong_model_is_warned_and_counted(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "gpt-4o",
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--max-tokens",
        "4",
        "--labbook",
        str(book),
        "--warmup",
        "0",
        "--no-endpoint-check",
    )
    assert "not 'gpt-4o'" in out.stderr
    rec = levels(book)[0]
    assert rec["failed"] == rec["requests"] == 2 and rec["first_error"].startswith("HTTP 404")


@pytest.mark.parametrize(
    "args,words",
    [
        (["--concurrency", "1,x"], "--concurrency must be comma-separated whole numbers"),
        (["--concurrency", ","], "--concurrency lists no value"),
        (["--concurrency", "0,2"], "--concurrency takes a whole number from 1 to 10000, got 0"),
        (["--base-url", "http://127.0.0.1:9/v1"], "nothing answers at"),
        (["--base-url", "ftp://x/v1"], "--base-url must look like"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, words):
    base = ["--model", "m", "--labbook", str(tmp_path / "b.md")]
    out = sweep(*base, *args)
    assert out.returncode == 2
    assert words in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_headless_locust_thresholds_pass_and_fail(practice, tmp_path):
    server = practice("kit")
    base = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "locustfiles/llm_user.py"),
        "--headless",
        "-u",
        "4",
        "-r",
        "4",
        "-t",
        "3s",
        "--stop-timeout",
        "20",
        "--host",
        server.root,
        "--max-tokens",
        "8",
        "--only-summary",
    ]
    ok = subprocess.run(  # TTFT here about 0.04 s; 10 s passes on any loaded machine
        base + ["--ttft-p95-max", "10", "--fail-ratio-max", "0"],
        capture_output=True,
        text=True,
        timeout=START_S + 3 + 20,  # a hang only: Locust's start, -t 3s, the stop's 20 s
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "harness thresholds passed" in ok.stdout + ok.stderr
    bad = subprocess.run(  # 1 ms: below the server's own prefill and first step, whatever the load
        base + ["--ttft-p95-max", "0.001"], capture_output=True, text=True, timeout=START_S + 23, cwd=tmp_path
    )
    assert bad.returncode == 1
    assert "TTFT p95" in bad.stdout + bad.stderr


def test_fit_and_knee_come_out_as_the_profile_implies(practice, tmp_path):
    a, b = 0.010, 0.002
    server = linear_server(practice, "fit", seats=10, tokens=100, a=a, b=b, prefill=50000)
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "1,4,10",
        "--requests",
        "10",
        "--max-tokens",
        "60",
        "--label",
        "fit",
        "--server-slots",
        "10",
        "--labbook",
        str(book),
    )
    assert out.returncode == 0, out.stderr
    from harness.measure import curves

    recs = levels(book)
    d = curves.curve(curves.by_label(recs)["fit"])
    assert d.fit["a_s"] == pytest.approx(a, abs=0.002) and d.fit["b_s"] == pytest.approx(b, rel=0.2)
    assert d.operating_point == 10  # TPOT at 10 is 30 ms, well inside 0.1 s
    # Batching below the seats, by the server's own gauge: more than one sequence at once at c = 4.
    # (Not the throughput ratio between levels, d.scaling: that measures the shared cores too.)
    (four,) = [r for r in recs if r["concurrency"] == 4]
    assert four["server_metrics"]["llamacpp:requests_processing"]["max"] > 1, four["server_metrics"]


def test_pooled_cache_keeps_its_hits_at_c10_where_per_seat_loses_them(practice, tmp_path):
    shares = {}
    for profile in ("kit", "vllm"):
        server = practice(profile)
        book = tmp_path / f"{profile}.md"
        out = sweep(
            "--base-url",
            server.base_url,
            "--model",
            "local-chat",
            "--concurrency",
            "1,10",
            "--requests",
            "10",
            "--max-tokens",
            "8",
            "--prompt-set",
            "shared-prefix",
            "--label",
            profile,
            "--labbook",
            str(book),
        )
        assert out.returncode == 0, out.stderr
        shares[profile] = {
            r["concurrency"]: r["cached_tokens_mean"] / r["prompt_tokens_mean"] for r in levels(book)
        }
    assert shares["vllm"][10] >= shares["vllm"][1] - 0.1, shares  # blocks are shared across the whole pool
    assert shares["kit"][10] < shares["vllm"][10] - 0.2, shares  # cold seats in the first wave miss


def test_open_loop_keeps_the_offered_rate_whatever_the_server_does(practice, tmp_path):
    server = practice("ruler")  # every request lasts 0.05 + 127 x 0.01 = 1.32 s, no seats
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "ruler",
        "--rate",
        "20",
        "--requests",
        "40",
        "--max-tokens",
        "128",
        "--label",
        "open",
        "--labbook",
        str(book),
        "--warmup",
        "0",
    )
    assert out.returncode == 0, out.stderr
    rec = levels(book)[0]
    assert rec["arrival"] == "fixed-rate" and rec["rate_rps"] == 20 and rec["completed"] == 40
    # The offered rate kept: each departure less its lateness is the schedule, 50 ms apart, whatever
    # the server did (the seeded-schedule check of test_workloads; the departures themselves, and
    # the level's wall time, carry the shared machine's delays).
    rows = [json.loads(x) for x in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    due = sorted(r["departed_monotonic_s"] - r["schedule_lateness_s"] for r in rows)
    assert [t - due[0] for t in due] == pytest.approx([i / 20 for i in range(40)], abs=1e-3)
    # Open, not closed: about 26 in flight at the peak (rate x duration = 26.4). A loop that
    # waited for answers would have 1; a loaded machine's late departures move the peak a few.
    assert rec["concurrency"] >= 10, rec["concurrency"]
    # An open loop on a seatless server never queues: TTFT is the server's 0.05 s plus the
    # client's delays (tenths at most on a loaded machine); waiting behind one answer adds 1.32 s.
    assert rec["ttft_s"]["p99"] < 1.0, rec["ttft_s"]


def test_duration_bounded_level_drains(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "3",
        "--duration",
        "2",
        "--max-tokens",
        "16",
        "--label",
        "timed",
        "--labbook",
        str(book),
        "--warmup",
        "0",
    )
    assert out.returncode == 0, out.stderr
    rec = levels(book)[0]
    assert rec["duration_s"] == 2 and rec["failed"] == 0 and rec["completed"] >= 6
    # It runs its 2 s (a lower bound no load can break), then drains the answers in flight (about
    # 0.3 s each here). The failure, a level that never stops sending, would run to the command's
    # deadline; 12 s leaves a loaded machine's drain ten times the room it needs.
    assert 2.0 <= rec["wall_s"] < 12, rec["wall_s"]
    # A timed level keeps no sample in memory (harness/load/spill.py): each line went to its spool
    # as the request ended and was copied beside the record, every request once, nothing left over.
    rows = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    assert len(rows) == rec["requests"] and {(r["run_id"], r["repeat"]) for r in rows} == {(rec["run_id"], 1)}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("labbook")) == [
        "labbook.md",
        "labbook.samples.jsonl",
    ]


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_interrupt_between_levels_keeps_a_valid_notebook(practice, tmp_path, signame):
    import signal
    import time

    server = practice(kit_profile(name="slow", output={"length": {"kind": "fixed", "tokens": 400}}))
    book = tmp_path / "labbook.md"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "sweep",
            "--base-url",
            server.base_url,
            "--model",
            "local-chat",
            "--concurrency",
            "1,2",
            "--requests",
            "2",
            "--max-tokens",
            "80",
            "--label",
            "cut",
            "--labbook",
            str(book),
            "--warmup",
            "0",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + START_S  # the sweep's start, then a level of 80 tokens
    while time.monotonic() < deadline and not (book.exists() and '"concurrency"' in book.read_text()):
        time.sleep(0.1)
    time.sleep(0.3)  # now inside the second level (about 1.5 s long by the server's own schedule)
    proc.send_signal(getattr(signal, signame))  # Ctrl-C, or a CI timeout's kill
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "1 finished level(s)" in err
    recs = levels(book)
    assert [r["concurrency"] for r in recs] == [1]


def test_web_ui_shows_exact_percentiles(practice, tmp_path):
    import time

    import requests

    from tests.conftest import free_port

    server = practice("kit")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(ROOT / "locustfiles/llm_user.py"),
            "--host",
            server.root,
            "--web-host",
            "127.0.0.1",
            "--web-port",
            str(port),
            "--autostart",
            "-u",
            "2",
            "-r",
            "2",
            "-t",
            "20s",
            "--max-tokens",
            "8",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline, rows = time.monotonic() + START_S, None  # Locust's start on a loaded machine
        while time.monotonic() < deadline:
            try:
                stats = requests.get(f"http://127.0.0.1:{port}/stats/requests", timeout=2).json()
                rows = {r["metric"]: r for r in stats["extended_stats"][0]["data"]}
                names = {s["name"] for s in stats["stats"]}
                if rows["TTFT (s)"]["p50"] != "" and {"TTFT", "TPOT", "chat"} <= names:
                    break
            except (requests.RequestException, KeyError, ValueError):
                pass
            time.sleep(0.5)
        assert rows and isinstance(rows["TTFT (s)"]["p50"], float)
        # kernel-stamped here
        assert isinstance(rows["client read lag (s)"]["p50"], float)
        assert rows["samples (finished requests)"]["value"] > 0 and rows["output tokens/s"]["value"] > 0
        assert {"TTFT", "TPOT", "chat"} <= names
    finally:
        proc.terminate()
        proc.wait(20)


def test_https_endpoint(practice, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    server = practice("kit", extra=["--tls-cert", str(cert), "--tls-key", str(key)], scheme="https")
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "2",
        "--requests",
        "4",
        "--max-tokens",
        "8",
        "--labbook",
        str(book),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rec = levels(book)[0]
    assert rec["completed"] == 4 and rec["base_url"].startswith("https://")
    assert rec["arrival_clock"] == "read"  # no kernel stamps through TLS: timed when read, and it says so
    assert rec["client_read_lag_s"]["p99"] is None  # nor a read lag to measure
    assert rec["server_metrics"]["samples"] >= 2


def test_processes_split_the_load_over_locust_workers(practice, tmp_path):
    server = practice(kit_profile(name="dist", output={"length": {"kind": "fixed", "tokens": 30}}))
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "1,6",
        "--requests",
        "9",
        "--max-tokens",
        "20",
        "--label",
        "dist",
        "--labbook",
        str(book),
        "--processes",
        "2",
        timeout=240,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "load from 2 Locust worker process(es)" in out.stdout
    one, six = levels(book)
    assert (one["requests"], six["requests"]) == (9, 9) and one["failed"] == six["failed"] == 0
    assert six["processes"] == 2 and six["token_counts"] == "usage"
    assert six["tpot_s"]["p50"] > one["tpot_s"]["p50"]  # six sequences share each decode step
    samples = book.with_suffix(".samples.jsonl").read_text().splitlines()
    assert len(samples) == 18


def test_shares_follow_the_users():
    from harness.workloads.schedules import shares

    assert shares(10, {"a": 2, "b": 1, "c": 0}) == {"a": 7, "b": 3, "c": 0}
    assert sum(shares(17, {"a": 3, "b": 3, "c": 1}).values()) == 17
    assert shares(5, {}) == {}


def test_endpoint_is_proved_before_the_first_level(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "1",
        "--requests",
        "1",
        "--max-tokens",
        "8",
        "--labbook",
        str(book),
        "--warmup",
        "0",
    )
    assert out.returncode == 0, out.stderr
    assert (
        "endpoint proved: text in content, finish length, usage yes, context 4096 per sequence" in out.stdout
    )
    (seen,) = read_records(
        book, "endpoint-check", select=lambda o: o.get("record") == "endpoint-check"
    ).records
    assert seen["model_listed"] is True and seen["n_ctx"] == 4096 and seen["warnings"] == []


@pytest.mark.parametrize(
    "profile, extra, words",
    [
        (
            {"name": "cuts", "faults": {"cut_share": 1.0, "cut_after_tokens": 3}},
            [],
            # the server closes mid-response (no last chunk): the proof says so, as the load does
            "the proof request failed (StreamCut: the server closed the connection mid-response)",
        ),
        (
            {"name": "small", "ctx_per_seat": 1024},
            ["--prompt-set", "unique-prefix"],
            "the server's context is 1024 tokens per sequence, and this prompt set needs about",
        ),
        ({}, ["--model", "gpt-4o"], "the proof request failed (HTTP 404"),
    ],
)
def test_a_broken_endpoint_stops_the_sweep_in_one_line(practice, tmp_path, profile, extra, words):
    server = practice(kit_profile(**profile) if profile else "kit")
    book = tmp_path / "labbook.md"
    args = [
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--max-tokens",
        "16",
        "--labbook",
        str(book),
        "--warmup",
        "0",
        *extra,
    ]
    out = sweep(*args)
    assert out.returncode == 2 and words in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) <= 2  # the one line (and at most the model-list warning)
    assert levels(book) == []  # no tidy table of failures
    (seen,) = read_records(
        book, "endpoint-check", select=lambda o: o.get("record") == "endpoint-check"
    ).records
    assert seen["label"] == "run"


def test_a_stream_that_stalls_past_the_timeout_fails_without_hanging(practice, tmp_path):
    # Every request stalls for 10 minutes after its first token. Not timed: the command's start on a
    # loaded machine took 24 s once in CI, near the 30 s stall this used; each request ending at
    # "Timeout: " proves the 2 s bound ended it, and a command held by the stall would run past
    # sweep's deadline (START_S + 30 s), far short of the stall.
    server = practice(kit_profile(name="stalls", faults={"stall_share": 1.0, "stall_s": 600.0}))
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--concurrency",
        "2",
        "--requests",
        "2",
        "--min-rounds",
        "1",
        "--max-tokens",
        "16",
        "--timeout",
        "2",
        "--warmup",
        "0",
        "--no-endpoint-check",
        "--labbook",
        str(book),
        timeout=START_S + 30,
    )
    rec = levels(book)[0]
    assert rec["failed"] == rec["requests"] == 2 and rec["first_error"].startswith(
        "Timeout: "  # the total bound or the idle one, both 2 s here
    )
    assert "Traceback" not in out.stdout + out.stderr


def test_batch_per_decode_is_the_levels_not_the_servers_lifetime(practice, tmp_path):
    """The practice server's n_busy_slots_per_decode is, like llama-server's, an
    average over its whole life. After a level at 4 at once, the level at 1 at once reads a gauge
    above 1 all through; the record's figure for the level is 1."""
    server = linear_server(practice, "batch", seats=4, tokens=20, a=0.004, b=0.001, prefill=50000)
    book = tmp_path / "labbook.md"
    out = sweep(
        *("--base-url", server.base_url, "--model", "local-chat", "--concurrency", "4,1"),
        *("--requests", "8", "--max-tokens", "20", "--label", "batch", "--labbook", str(book)),
        *("--server-slots", "4", "--telemetry", "none"),
    )
    assert out.returncode == 0, out.stderr
    four, one = levels(book)
    gauge = one["server_metrics"]["llamacpp:n_busy_slots_per_decode"]
    assert gauge["mean"] > 1.5 and gauge["level"] == pytest.approx(1.0, abs=0.01), gauge
    assert four["server_metrics"]["llamacpp:n_busy_slots_per_decode"]["level"] > 3.0
    assert "c=1: llama-server batched 1.00 sequences per decode call during the level" in summarise(
        book, "--label", "batch"
    )


def summarise(book: Path, *args: str) -> str:
    """What ``harness summarise --labbook BOOK ARGS`` prints."""
    run = [sys.executable, "-m", "harness", "summarise", "--labbook", str(book), *args]
    return subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=ROOT).stdout


def _open_level(server, book: Path, rate: str, requests: str) -> tuple[dict, str]:
    out = sweep(
        *("--base-url", server.base_url, "--model", "local-chat", "--rate", rate, "--requests", requests),
        *("--max-tokens", "20", "--label", f"open-{rate}", "--labbook", str(book), "--warmup", "0"),
        *("--telemetry", "none", "--metrics-url", "none"),
    )
    assert out.returncode == 0, out.stderr
    return levels(book)[-1], out.stdout


def test_an_arrival_rate_the_server_cannot_serve_is_server_limited(practice, tmp_path):
    """Server-limited open loop: 2 seats of 20 tokens at 20 ms a step serve 5 requests/s at most (each
    0.4 s); 20/s offered for 40 requests piles them up in flight while the client keeps its
    schedule. The record says server-limited, with the rates and the peak; the sweep prints it and
    summarise --check names it."""
    server = linear_server(practice, "two-seats", seats=2, tokens=20, a=0.02, b=0.0, prefill=100000)
    book = tmp_path / "labbook.md"
    rec, out = _open_level(server, book, "20", "40")
    assert rec["server_limited"] is True and rec["client_limited"] is False, rec.get("backlog")
    found = rec["backlog"]
    assert found["judged"] and found["finished_rps"] < 0.5 * found["offered_rps"], found
    assert found["peak_in_flight"] >= 15 and found["in_flight_rise"] >= 8, found
    assert rec["server_note"].startswith("server-limited: the server did not keep up with the arrivals")
    assert "warning: server-limited" in out and "in flight +" in out
    check = summarise(book, "--check")
    assert "open-20: the server did not keep up with the arrivals at 20/s" in check
    table = summarise(book, "--label", "open-20")
    assert "server (" in table and "open-20 at 20/s: server-limited" in table


def test_an_easy_arrival_rate_is_not_server_limited(practice, tmp_path):
    """The same server at 2 requests/s (two fifths of what it serves): it keeps up."""
    server = linear_server(practice, "two-seats", seats=2, tokens=20, a=0.02, b=0.0, prefill=100000)
    rec, out = _open_level(server, tmp_path / "labbook.md", "2", "12")
    assert rec["backlog"]["judged"] is True, rec["backlog"]
    assert rec["server_limited"] is False and "server_note" not in rec, rec["backlog"]
    assert "server-limited" not in out
