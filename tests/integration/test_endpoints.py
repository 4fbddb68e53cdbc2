"""The endpoint kinds end to end: ``harness sweep --endpoint completions`` and ``--endpoint
chat-nostream`` for two short levels against the practice server and the real CPU llama-server,
every record read back through its JSON Schema; Locust's web form offers every kind and a test
started from it loads the kind chosen."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import requests

from harness.endpoints import KINDS
from harness.endpoints.chat_nostream import NOT_STREAMED
from harness.records.notebook import read_records
from harness.engines import llama_cpu
from tests.conftest import ROOT, free_port
from tests.integration.deadlines import START_S
from tests.integration.test_sweep import sweep

pytestmark = pytest.mark.slow


def run_sweep(base_url: str, model: str, endpoint: str, book, tokens: int = 8, timeout: float = 180):
    out = sweep(
        "--base-url",
        base_url,
        "--model",
        model,
        "--endpoint",
        endpoint,
        "--concurrency",
        "1,2",
        "--requests",
        "2",
        "--max-tokens",
        str(tokens),
        "--label",
        endpoint,
        "--labbook",
        str(book),
        timeout=timeout,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    levels = read_records(book, "level", select=lambda o: "concurrency" in o)  # validated, each line
    checks = read_records(book, "endpoint-check", select=lambda o: o.get("record") == "endpoint-check")
    assert not levels.warnings and not checks.warnings
    samples = [json.loads(line) for line in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    (check,) = checks.records
    return levels.records, samples, check, out.stdout


def assert_completions(levels, samples, check, stdout) -> None:
    assert [r["concurrency"] for r in levels] == [1, 2] and all(
        r["endpoint"] == "completions" for r in levels
    )
    assert all(r["completed"] == r["requests"] and r["ttft_s"]["p50"] > 0 for r in levels)
    assert "ttft_absent" not in levels[0] and levels[0]["e2e_s"]["p50"] >= levels[0]["ttft_s"]["p50"]
    assert check["text_fields"] == ["text"] and check["ok"]  # the proof asked for the same kind
    assert samples and all(s["fields"] == ["text"] and s["ttft_s"] is not None for s in samples)
    assert "/v1/completions" in stdout


def assert_not_streamed(levels, samples, check) -> None:
    assert [r["concurrency"] for r in levels] == [1, 2] and all(
        r["endpoint"] == "chat-nostream" for r in levels
    )
    for r in levels:
        assert r["completed"] == r["requests"] and r["ttft_absent"] == NOT_STREAMED
        assert r["ttft_s"]["p50"] is None and r["tpot_s"]["p50"] is None and r["itl_s"]["p50"] is None
        assert r["e2e_s"]["p50"] > 0 and r["output_tokens_per_s"] > 0 and r["token_counts"] == "usage"
    assert check["ok"] and check["ttft_s"] is None
    assert samples and all(s["ttft_s"] is None and s["ttft_absent"] == NOT_STREAMED for s in samples)


def test_completions_and_chat_nostream_against_the_practice_server(practice, tmp_path):
    server = practice("kit")
    assert_completions(*run_sweep(server.base_url, "local-chat", "completions", tmp_path / "c.md"))
    levels, samples, check, _ = run_sweep(server.base_url, "local-chat", "chat-nostream", tmp_path / "n.md")
    assert_not_streamed(levels, samples, check)
    # every answer ran to its 8 tokens (the kit's answers are far longer), counted from the usage
    assert all(r["output_tokens"] == 8 * r["completed"] for r in levels)


def test_the_web_form_offers_every_kind_and_loads_the_one_chosen(practice, tmp_path):
    server = practice("kit")
    port = free_port()
    cmd = [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "llm_user.py")]
    cmd += ["--host", server.root, "--web-host", "127.0.0.1", "--web-port", str(port)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S  # a hang only: Locust's start on a loaded machine
        while True:
            try:
                page = requests.get(url, timeout=2).text
                break
            except requests.RequestException:
                assert time.monotonic() < deadline, "Locust's web UI did not start"
                time.sleep(0.3)
        args = json.loads(page.split("window.templateArgs = ", 1)[1].split("\n", 1)[0].rstrip(";"))
        option = args["extra_options"]["endpoint"]
        assert option["choices"] == list(KINDS) and option["default_value"] == "chat"
        form = {"user_count": "1", "spawn_rate": "1", "host": server.root, "model": "local-chat"}
        started = requests.post(
            url + "/swarm", data={**form, "max_tokens": "4", "endpoint": "completions"}, timeout=60
        )
        assert started.json()["success"] is True, started.text
        deadline = time.monotonic() + 60
        while True:  # until the first request of the kind chosen is counted, under its own name
            stats = requests.get(url + "/stats/requests", timeout=5).json()["stats"]
            if any(row["name"] == "completions" and row["num_requests"] for row in stats):
                break
            assert time.monotonic() < deadline, stats
            time.sleep(0.3)
        assert not any(row["name"] == "chat" for row in stats), stats
        requests.post(url + "/stop", timeout=10)
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("llama-endpoints") / "llama-server.log"
    launcher = llama_cpu.launcher(port, log, slots=2, ctx_per_slot=2048)
    launcher.start(timeout=120)
    yield f"http://127.0.0.1:{port}/v1"
    launcher.stop()


@pytest.mark.llama
def test_completions_against_the_cpu_llama_server(llama, tmp_path):
    found = run_sweep(llama, llama_cpu.MODEL_ALIAS, "completions", tmp_path / "c.md", tokens=4, timeout=600)
    assert_completions(*found)
    levels, samples = found[0], found[1]
    assert all(r["token_counts"] == "usage" for r in levels) and all(
        s["cached_tokens"] is not None for s in samples
    )


@pytest.mark.llama
def test_chat_nostream_against_the_cpu_llama_server(llama, tmp_path):
    levels, samples, check, _ = run_sweep(
        llama, llama_cpu.MODEL_ALIAS, "chat-nostream", tmp_path / "n.md", tokens=4, timeout=600
    )
    assert_not_streamed(levels, samples, check)
