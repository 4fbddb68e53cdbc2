"""The fault matrix (docs/failures.md): every command that talks to a server, against small
hostile servers of our own. For each fault: the outcome counted, the reason (the server's own
message where it sent one), no traceback, no hang past the stated bound, and every finished level
on disk and schema-valid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.records.notebook import read_records
from tests.integration.deadlines import START_S
from tests.integration.faults.hostile import MODEL, SERVER_MESSAGE, HostileServer

ROOT = Path(__file__).resolve().parents[3]
HARNESS = [sys.executable, "-m", "harness.cli.entry"]
TOTAL, IDLE = 3.0, 1.5  # the bounds every run below states

# fault -> (requests that finish ok, the words the first error must carry)
MATRIX = {
    "ok": (4, None),
    "no-headers": (0, f"Timeout: no byte from the server for {IDLE:g} s"),
    "trickle": (0, f"Timeout: the request passed its total bound of {TOTAL:g} s"),
    "trickle-headers": (0, f"Timeout: the request passed its total bound of {TOTAL:g} s"),
    "midstream-error": (0, f"StreamError: {SERVER_MESSAGE}"),
    "json-error-200": (0, f"ServerError: {SERVER_MESSAGE}"),
    "not-streamed": (0, "NotStreamed"),
    "http10-stream": (4, None),
    "reset": (0, ("ConnectionError", "RemoteDisconnected", "ConnectionResetError")),
    "garbage": (0, ("BadStatusLine", "Expected HTTP/")),
    "multiline-sse": (4, None),
    "http-500": (0, f"HTTP 500: {SERVER_MESSAGE}"),
    "gzip": (0, "Compressed: the server sent Content-Encoding gzip although asked for identity"),
}


def _says(text: str, words) -> bool:
    """Whether ``text`` carries the words (any of them, for faults each client words its own way)."""
    return any(w in text for w in ((words,) if isinstance(words, str) else words))


def _run(args: list[str], bound: float) -> subprocess.CompletedProcess:
    """Run a harness command whose own bounds end it within ``bound`` seconds. No test times it:
    the record and the first error name the bound that ended each request, which proves the bound
    was kept; the command's start on a loaded machine (tests/integration/deadlines.py) would be
    most of any time measured. A command still running at ``bound`` + START_S is a hang: every
    stalling fault here holds a request for ten minutes (hostile.py), far past that."""
    try:
        return subprocess.run(
            HARNESS + args, capture_output=True, text=True, timeout=bound + START_S, cwd=ROOT
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"harness {args[0]} still running after {exc.timeout:g} s: its bounds end it within "
            f"{bound:g} s and its start is allowed {START_S:g} s (a hang)",
            pytrace=False,
        )


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(MATRIX))
def test_sweep_counts_every_request_with_its_reason(fault, tmp_path):
    ok, words = MATRIX[fault]
    book = tmp_path / "book.md"
    with HostileServer(fault, ttft_s=0.05) as srv:
        args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "2"]
        args += ["--requests", "4", "--timeout", str(TOTAL), "--idle-timeout", str(IDLE), "--warmup", "0"]
        args += ["--labbook", str(book), "--metrics-url", "none", "--no-endpoint-check"]
        proc = _run(args, 2 * TOTAL)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    levels = read_records(book, "level")
    assert not levels.warnings
    (level,) = levels.records
    assert level["requests"] == 4 and level["completed"] == ok and level["failed"] == 4 - ok, level
    if words:
        assert _says(level["first_error"] or "", words), level["first_error"]
        assert proc.returncode == 1
    else:
        assert proc.returncode == 0, out
    samples = [json.loads(x) for x in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault",
    ["no-headers", "trickle", "trickle-headers", "midstream-error", "json-error-200", "garbage", "gzip"],
)
def test_endpoint_proof_fails_in_one_line_within_its_bound(fault, tmp_path):
    ok, words = MATRIX[fault]
    book = tmp_path / "book.md"
    with HostileServer(fault) as srv:
        args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "1"]
        args += ["--requests", "1", "--timeout", str(TOTAL), "--idle-timeout", str(IDLE), "--warmup", "0"]
        args += ["--labbook", str(book), "--metrics-url", "none"]
        proc = _run(args, TOTAL)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "proof request failed" in err[-1] and _says(err[-1], words), err
    (check,) = read_records(book, "endpoint-check").records  # what it saw is on disk either way
    assert check["ok"] is False and _says(check["error"], words)


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault", ["no-headers", "trickle", "trickle-headers", "midstream-error", "json-error-200", "not-streamed"]
)
def test_measure_ends_with_the_reason_within_its_bound(fault, tmp_path):
    _, words = MATRIX[fault]
    with HostileServer(fault) as srv:
        args = ["measure", "--engine", "fake", "--base-url", srv.base_url, "--model", MODEL]
        args += ["--timeout", str(TOTAL), "--idle-timeout", str(IDLE), "--repetitions", "1"]
        args += ["--wait-seconds", "5", "--labbook", str(tmp_path / "b.md")]
        proc = _run(args, TOTAL)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert _says(proc.stderr, words), proc.stderr
    assert not (tmp_path / "b.md").exists() or not (tmp_path / "b.md").read_text().strip()


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault", ["no-headers", "trickle", "trickle-headers", "reset", "garbage", "json-error-200"]
)
def test_probe_records_the_failure_within_its_bound(fault, tmp_path):
    book = tmp_path / "b.md"
    with HostileServer(fault) as srv:
        args = ["probe", "--engine", "fake", "--base-url", srv.base_url, "--model", MODEL]
        args += ["--timeout", str(TOTAL), "--idle-timeout", str(IDLE), "--labbook", str(book)]
        proc = _run(args, 3 * TOTAL)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    (record,) = read_records(book, "features").records
    for probe in ("tool_calling", "streaming_tool_calling", "structured_output"):
        assert record[probe]["supported"] is False and record[probe]["detail"], record[probe]
    if fault == "json-error-200":
        assert SERVER_MESSAGE in record["tool_calling"]["detail"]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["ok", "trickle", "trickle-headers", "midstream-error", "no-headers"])
def test_locust_headless_proves_the_endpoint_then_counts_and_records(fault, tmp_path):
    """A broken endpoint ends at the proof, before any user starts (one line, status 2, no load, no
    record); a healthy one is loaded and its run recorded. The users' own counting of each fault
    is the sweep's test above (the same users, run as a library)."""
    ok, words = MATRIX[fault]
    book = tmp_path / "book.md"
    with HostileServer(fault, ttft_s=0.05) as srv:
        cmd = [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "llm_user.py"), "--headless"]
        cmd += ["-u", "2", "-r", "2", "-t", "4s", "--stop-timeout", "10", "--host", srv.root]
        cmd += ["--model", MODEL, "--request-timeout", str(TOTAL), "--idle-timeout", str(IDLE)]
        cmd += ["--labbook", str(book), "--label", f"fault-{fault}", "--only-summary"]
        # a hang only: the run lasts -t 4s and its stop at most 10 s, after Locust's start
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=4 + 10 + START_S, cwd=ROOT)
        chats = [r for r in srv.requests if r.startswith("POST")]
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    if words:
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 2 and last.startswith("harness: the proof request failed ("), last
        assert _says(last, words) and last.endswith("no load was sent"), last
        assert len(chats) <= 3 and not book.exists()  # the proof's tries only: no load, no record
    else:
        (level,) = read_records(book, "level").records
        assert level["requests"] >= 1 and level["completed"] == level["requests"], level


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode, asked, bound",
    [
        (["--rate", "4", "--requests", "4"], 4, 0.75 + TOTAL),  # the last arrival, then its bound
        (["--concurrency", "2", "--duration", "1"], 2, 1 + TOTAL),  # two sent, none finished in time
    ],
    ids=["open-loop", "timed"],
)
def test_open_and_timed_levels_count_every_request_sent(mode, asked, bound, tmp_path):
    book = tmp_path / "book.md"
    with HostileServer("trickle") as srv:
        args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, *mode, "--timeout", str(TOTAL)]
        args += ["--warmup", "0", "--labbook", str(book), "--metrics-url", "none", "--no-endpoint-check"]
        proc = _run(args, bound)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    (level,) = read_records(book, "level").records
    assert level["requests"] == asked and level["failed"] == asked, level
    assert level["first_error"] == f"Timeout: the request passed its total bound of {TOTAL:g} s"
