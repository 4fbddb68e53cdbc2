"""The mistakes a new user makes in the first hour, each against a real server: the URL with or
without /v1, https to a plain-HTTP port, a web server that is not an OpenAI API, a rerun into the
same label, the practice server on a port the system picks, and a plain ``locust -f`` from the
project root (locust.conf: 127.0.0.1 only)."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import psutil
import pytest

from harness.records.base import is_level
from harness.records.notebook import read_records
from tests.conftest import ROOT, free_port
from tests.integration.deadlines import START_S

HARNESS = [sys.executable, "-m", "harness.cli"]
SMALL = ["--concurrency", "1", "--requests", "2", "--max-tokens", "8", "--warmup", "0", "--timeout", "20"]


def harness(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def sweep(base_url: str, book, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    args = ["sweep", "--base-url", base_url, "--model", "local-chat", "--labbook", str(book), *SMALL, *extra]
    return harness(*args, timeout=timeout)


def test_base_url_without_v1_says_the_url_it_used(practice, tmp_path):
    server = practice("kit")
    done = sweep(server.root, tmp_path / "book.md", "--label", "bare")
    assert done.returncode == 0, done.stderr
    assert f"    --base-url {server.root} has no path: using {server.base_url}\n" in done.stdout
    assert f"at {server.root}/v1/chat/completions\n" in done.stdout
    # the same URL form for every command that takes one (each at its smallest: the URL is under test)
    small = {
        "probe": ("--max-tokens", "64"),
        "measure": ("--repetitions", "1", "--max-tokens", "8", "--long-repeats", "1", "--no-warmup"),
    }
    for command in ("probe", "measure"):
        other = harness(
            command,
            *small[command],
            "--engine",
            "practice",
            "--base-url",
            server.root,
            "--model",
            "local-chat",
            "--labbook",
            str(tmp_path / "o.md"),
        )
        assert f"--base-url {server.root} has no path: using {server.base_url}" in other.stdout, other.stderr
        assert other.returncode == 0, other.stdout[-1500:] + other.stderr[-1500:]
    with_v1 = sweep(server.base_url, tmp_path / "book.md", "--label", "v1")
    assert with_v1.returncode == 0 and f"at {server.base_url}/chat/completions\n" in with_v1.stdout


def test_a_rerun_into_a_label_with_levels_warns_and_append_means_it(practice, tmp_path):
    server, book = practice("kit"), tmp_path / "book.md"
    first = sweep(server.base_url, book, "--label", "mine")
    assert first.returncode == 0 and "already has" not in first.stderr
    again = sweep(server.base_url, book, "--label", "mine")
    assert again.returncode == 0
    assert re.search(r"warning: label 'mine' already has 1 level\(s\) in .*book\.md \(c = 1\)", again.stderr)
    assert "pass --append to mean it" in again.stderr
    meant = sweep(server.base_url, book, "--label", "mine", "--append")
    assert meant.returncode == 0 and "already has" not in meant.stderr
    other = sweep(server.base_url, book, "--label", "other")
    assert "already has" not in other.stderr
    levels = read_records(book, "level", select=is_level).records
    assert [r["label"] for r in levels] == ["mine", "mine", "mine", "other"]


def test_https_to_a_plain_http_port_is_said_at_once(practice, tmp_path):
    server = practice("kit")
    url = f"https://127.0.0.1:{server.port}/v1"
    started = time.monotonic()
    done = sweep(url, tmp_path / "book.md", "--timeout", "600", timeout=700)
    took = time.monotonic() - started
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    assert line == (
        f"harness sweep: {url} names TLS, but 127.0.0.1:{server.port} speaks plain HTTP "
        f"(no TLS handshake); use {server.base_url}"
    )
    # Said within the check's own 2 s bounds and the command's start, not at the request's 600 s
    # bound: this command took 23.7 s once in CI, beside the engine tests on 2 cores.
    assert took < 120, took


def test_https_to_a_tls_server_passes_the_check(practice, tmp_path):
    from harness.endpoints.proof import plain_http_behind_https

    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server = practice("kit", ["--tls-cert", str(cert), "--tls-key", str(key)], scheme="https")
    assert plain_http_behind_https(server.base_url) is None
    assert plain_http_behind_https(f"http://127.0.0.1:{server.port}/v1") is None  # not https: not asked


@pytest.fixture
def web_server(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_S  # a Python process's start on a loaded machine
    while time.monotonic() < deadline and not any(
        c.laddr.port == port for c in psutil.Process(proc.pid).net_connections() if c.status == "LISTEN"
    ):
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def test_a_web_server_is_not_an_openai_compatible_server(web_server, tmp_path):
    done = sweep(web_server + "/v1", tmp_path / "book.md")
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("harness sweep: not an OpenAI-compatible server: its chat route answered HTTP 501")
    assert "<" not in line  # no raw HTML in the message


def test_practice_on_port_0_prints_the_port_it_got(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        proc = subprocess.Popen(
            [*HARNESS, "practice", "--port", "0"], cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + START_S  # the practice server's start (gevent) on a loaded machine
        while time.monotonic() < deadline and "listening on" not in out.read_text():
            time.sleep(0.1)
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+) \(base URL", out.read_text())
        assert found, out.read_text()
        port = int(found.group(1))
        assert port != 0
        listening = {c.laddr.port for c in psutil.Process(proc.pid).net_connections() if c.status == "LISTEN"}
        assert listening == {port}
    finally:
        proc.terminate()
        proc.wait(10)


def test_plain_locust_from_the_project_root_listens_on_loopback_only(practice):
    server = practice("kit")
    proc = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", "locustfiles/llm_user.py", "--host", server.root],
        cwd=ROOT,  # where locust.conf is
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline, listening = time.monotonic() + START_S, set()  # Locust's start on a loaded machine
        while time.monotonic() < deadline and not listening:
            listening = {
                (c.laddr.ip, c.laddr.port)
                for c in psutil.Process(proc.pid).net_connections()
                if c.status == "LISTEN"
            }
            time.sleep(0.2)
        assert listening == {("127.0.0.1", 8089)}, listening
    finally:
        proc.terminate()
        proc.wait(15)


def test_headless_locust_host_with_v1_loads_the_same_url(practice, tmp_path):
    server = practice("kit")
    done = subprocess.run(
        [sys.executable, "-m", "locust", "-f", "locustfiles/llm_user.py", "--headless", "-u", "1", "-r", "1",
         "-t", "3s", "--stop-timeout", "10", "--max-tokens", "8", "--host", server.base_url],
        cwd=ROOT, capture_output=True, text=True, timeout=3 + 10 + START_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"harness: endpoint proved; loading {server.base_url}/chat/completions" in done.stderr
    assert "failed      0" in done.stdout.replace(" (0.0%)", "") or re.search(r"failed\s+0\b", done.stdout)
