"""The fault matrix, round two's third sweep: the cases a third hostile sweep found."""

from __future__ import annotations

import pytest

from harness.records.notebook import read_records
from tests.integration.deadlines import START_S
from tests.integration.faults.hostile import MODEL, HostileServer
from tests.integration.faults.test_faults import TOTAL, _run


def _sweep(srv, book, *extra: str):
    args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "1", "--requests", "2"]
    args += ["--timeout", str(TOTAL), "--warmup", "0", "--labbook", str(book), "--metrics-url", "none"]
    return _run([*args, "--no-endpoint-check", *extra], 2 * TOTAL)


@pytest.mark.slow
def test_a_sweep_level_of_flooded_streams_is_flagged_not_silent(tmp_path):
    """1,500 deltas in about 10 ms (a rate far past any engine's decode for one stream) was flagged
    by measure but became a sweep level's TPOT and throughput silently. The level record now says
    so in decode_note, and the sweep prints it as a warning."""
    book = tmp_path / "b.md"
    with HostileServer("burst-flood") as srv:
        proc = _sweep(srv, book)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (level,) = read_records(book, "level").records
    assert level["completed"] == 2 and level["output_tokens"] == 3000
    assert level["decode_note"].startswith("implausible: 2 of 2 completed streams"), level
    assert "warning: implausible: 2 of 2 completed streams" in proc.stdout, proc.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["odd-metrics", "huge-metrics-value"])
def test_a_metrics_answer_the_parser_refuses_or_absurd_values_never_lose_the_level(fault, tmp_path):
    """A /metrics with a type the parser refuses printed a traceback from the hub's pool; a value
    of 40 digits (1e40) was recorded as the level's server_metrics, and the notebook's reader then
    skipped the whole level (a number past 1e15). Now the first is a sampler error and the second
    is skipped as NaN is: the level is on disk, readable, and nothing is printed but its lines."""
    book = tmp_path / "b.md"
    with HostileServer(fault) as srv:
        proc = _sweep(srv, book, "--metrics-url", srv.root + "/metrics")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out and "failed with" not in out, out[-3000:]
    result = read_records(book, "level")
    assert not result.warnings, result.warnings
    assert [r["completed"] for r in result.records] == [2]
    metrics = result.records[-1].get("server_metrics") or {}
    assert "1e+39" not in out and all(
        v.get("max", 0) < 1e15 for k, v in metrics.items() if isinstance(v, dict)
    ), metrics
    if fault == "huge-metrics-value":
        assert metrics["llamacpp:requests_deferred"]["max"] == 1.0  # the true gauge beside it is kept


def _measure(srv, book):
    args = ["measure", "--engine", "fake", "--base-url", srv.base_url, "--model", MODEL, "--timeout", "3"]
    args += ["--idle-timeout", "2", "--repetitions", "1", "--wait-seconds", "3", "--labbook", str(book)]
    return _run(args, TOTAL)


@pytest.mark.slow
def test_an_error_body_nested_past_any_parser_is_the_servers_status_not_a_recursion_error(tmp_path):
    """A 500 whose JSON is nested 100,000 deep: measure ended with a RecursionError traceback, and
    the sweep's first error was "RecursionError: ...", the status lost. Both now say HTTP 500."""
    with HostileServer("deep-error") as srv:
        sweep = _sweep(srv, tmp_path / "s.md")
        measure = _measure(srv, tmp_path / "m.md")
    assert "Traceback" not in sweep.stderr + measure.stderr, (sweep.stderr + measure.stderr)[-3000:]
    (level,) = read_records(tmp_path / "s.md", "level").records
    assert level["failed"] == 2 and level["first_error"].startswith('HTTP 500: {"error": [[['), level
    assert measure.returncode == 2 and "HTTP 500" in measure.stderr.strip().splitlines()[-1], measure.stderr


@pytest.mark.slow
def test_more_cached_tokens_than_the_prompt_is_no_count(tmp_path):
    """usage said 9,000 cached tokens of a 5-token prompt: the level recorded a cached mean of
    9,000 (a cached share of 1,800). A cached count past the prompt is now no count, and the
    record's cached_note says how many requests said so."""
    book = tmp_path / "b.md"
    with HostileServer("cached-over-prompt") as srv:
        proc = _sweep(srv, book)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (level,) = read_records(book, "level").records
    assert level["completed"] == 2 and level["prompt_tokens_mean"] == 5.0
    assert level["cached_tokens_mean"] is None, level
    assert level["cached_note"].startswith("2 of 2 request(s) had no cached count taken"), level
    assert "9000 cached tokens of a 5-token prompt" in level["cached_note"]


@pytest.mark.slow
def test_an_empty_error_answer_says_so(tmp_path):
    """A 204 with no body was reported as "HTTP 204:" and nothing after it."""
    book = tmp_path / "b.md"
    with HostileServer("empty-204") as srv:
        _sweep(srv, book)
    (level,) = read_records(book, "level").records
    assert level["first_error"] == "HTTP 204: (empty body)", level


BAD_KEYS = {"line break": "sk-abc\r\nX-Injected: 1", "past ASCII": "sk-ключ-1234567", "tab": "sk-a\tb"}


@pytest.mark.slow
@pytest.mark.parametrize("key", list(BAD_KEYS), ids=list(BAD_KEYS))
@pytest.mark.parametrize("command", ["sweep", "probe", "measure", "locust"])
def test_a_key_no_header_can_carry_is_refused_in_one_line(command, key, tmp_path):
    """A key with a line break or a character past ASCII: the sweep said "nothing answers" (it was
    its own header that failed), probe and measure "the response's chunked framing is broken", and
    headless Locust printed a traceback. Each now refuses it in one line, before any request."""
    import os
    import subprocess
    import sys

    from tests.integration.faults.test_faults import ROOT

    book = tmp_path / "b.md"
    os.environ["THIRD_SWEEP_BAD_KEY"] = BAD_KEYS[key]
    try:
        with HostileServer("ok") as srv:
            if command == "locust":
                cmd = [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "llm_user.py")]
                cmd += ["--headless", "-u", "1", "-r", "1", "-t", "2s", "--host", srv.root, "--model", MODEL]
                cmd += ["--labbook", str(book), "--only-summary", "--api-key-env", "THIRD_SWEEP_BAD_KEY"]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S, cwd=ROOT)
            else:
                args = [command, "--base-url", srv.base_url, "--model", MODEL, "--timeout", "3"]
                args += ["--labbook", str(book), "--api-key-env", "THIRD_SWEEP_BAD_KEY"]
                args += ["--engine", "fake"] if command != "sweep" else ["--no-endpoint-check"]
                proc = _run(args, TOTAL)
            chats = [r for r in srv.requests if r.startswith("POST")]
    finally:
        del os.environ["THIRD_SWEEP_BAD_KEY"]
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert "the API key holds a control character, a line break or a character past ASCII" in last, last
    assert not chats and "ключ" not in out and "Injected" not in out


@pytest.mark.slow
def test_a_key_in_the_base_urls_path_is_not_printed(tmp_path):
    """A proxy that takes its key in the path: the record's base_url had it redacted, but the
    sweep's first line printed it whole."""
    import os

    key = "sk-in-the-path-5e6f7a8b9c"
    book = tmp_path / "b.md"
    os.environ["THIRD_SWEEP_KEY"] = key
    try:
        with HostileServer("key-in-path") as srv:
            srv.base_url = f"{srv.root}/{key}/v1"
            proc = _sweep(srv, book, "--api-key-env", "THIRD_SWEEP_KEY")
    finally:
        del os.environ["THIRD_SWEEP_KEY"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert key not in proc.stdout + proc.stderr and key not in book.read_text()
    assert "[redacted]/v1/chat/completions" in proc.stdout


def test_recovery_reads_a_metrics_answer_the_parser_refuses_as_no_metrics():
    """In-process: the health-recovery step parsed /metrics without a guard, so a type the parser
    refuses ended the step with a ValueError traceback."""
    from harness.run.recovery import _busy_after_load

    with HostileServer("odd-metrics") as srv:
        assert _busy_after_load(srv.root + "/metrics", 2.0) is None
    with HostileServer("huge-metrics-value") as srv:  # the absurd gauge skipped, the true one read
        assert _busy_after_load(srv.root + "/metrics", 0.3) == 1.0


WEB_UI_START = """
import sys
from types import SimpleNamespace
from harness.load.web_ui import start_problem  # imports Locust, which patches the process
opts = SimpleNamespace(model="fake-model", max_tokens=8, temperature=0.0, prompt_set="mixed",
    api_base_path="/v1", timeout=3.0, idle_timeout=3.0, api_key_env="THIRD_SWEEP_BAD_KEY")
print(start_problem(SimpleNamespace(runner=None, host=sys.argv[1], parsed_options=opts), {}))
"""


@pytest.mark.slow
def test_the_web_uis_start_names_a_key_no_header_can_carry_in_its_one_line():
    """The web UI's START met the same ConfigError as headless Locust (a traceback in the request
    handler); it is now the form's one line, and no request reaches the server."""
    import os
    import subprocess
    import sys

    from tests.integration.faults.test_faults import ROOT

    env = {**os.environ, "THIRD_SWEEP_BAD_KEY": BAD_KEYS["line break"]}
    with HostileServer("ok") as srv:
        cmd = [sys.executable, "-c", WEB_UI_START, srv.root]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S, cwd=ROOT, env=env)
        assert not srv.requests
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("the API key holds a control character") and line.endswith("(no load was sent)")
