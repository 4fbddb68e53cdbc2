"""``harness imitate``: the practice server started by another engine's own command line, answering
as that engine does where a client can tell (routes, health, version, key), and naming itself an
imitation everywhere. Each persona is a real server process on a free port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from harness.records.notebook import read_records
from tests.conftest import ROOT, free_port
from tests.integration.deadlines import START_S


def _start(argv: list[str], tmp_path: Path, env: dict | None = None) -> subprocess.Popen:
    out = open(tmp_path / "imitation.out", "w")  # noqa: SIM115 - closed with the process by the fixture
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "imitate", *argv],
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )


def _wait(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> requests.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the imitation exited while starting"
        try:
            return requests.get(url, timeout=2)
        except requests.ConnectionError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {timeout} s")


@pytest.fixture
def running(tmp_path: Path):
    procs: list[subprocess.Popen] = []

    def start(argv: list[str], env: dict | None = None) -> subprocess.Popen:
        procs.append(_start(argv, tmp_path, env))
        return procs[-1]

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


def _chat(base: str, model: str, headers: dict | None = None) -> requests.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    return requests.post(f"{base}/chat/completions", json=body, headers=headers or {}, timeout=30)


def test_trtllm_serve_line(running, tmp_path: Path) -> None:
    port = free_port()
    options = tmp_path / "trtllm-lab.yml"
    options.write_text("guided_decoding_backend: xgrammar\nkv_cache_config:\n  max_tokens: 8192\n")
    argv = ["trtllm-serve", "/models/Qwen/Qwen3-8B", "--host", "127.0.0.1", "--port", str(port),
            "--max_batch_size", "1", "--max_seq_len", "8192", "--tool_parser", "qwen3",
            "--extra_llm_api_options", str(options)]  # fmt: skip
    proc = running(argv)
    root = f"http://127.0.0.1:{port}"
    assert _wait(f"{root}/health", proc).status_code == 200
    assert requests.get(f"{root}/version", timeout=5).json() == {
        "version": "practice imitation of trtllm-serve"
    }
    models = requests.get(f"{root}/v1/models", timeout=5).json()["data"]
    assert [m["id"] for m in models] == ["Qwen3-8B"]  # named by the checkpoint folder, as trtllm-serve does
    assert models[0]["owned_by"] == "practice imitation of tensorrt-llm"
    reply = _chat(f"{root}/v1", "Qwen3-8B").json()
    assert reply["usage"]["completion_tokens"] == 4 and reply["choices"][0]["finish_reason"] == "length"
    first, second = (tmp_path / "imitation.out").read_text().splitlines()[:2]
    assert first.startswith("practice server imitating tensorrt-llm (not the real engine): trtllm-serve ")
    # the options file read as the engine reads it: guided decoding's line, as a real start logs it
    assert second == "[TRT-LLM] [I] Guided decoder initialized with backend: GuidedDecodingBackend.XGRAMMAR"


def _lemonade(*words: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "imitate", "lemonade", *words],
        cwd=ROOT, capture_output=True, text=True, timeout=START_S, env={**os.environ, **env},
    )  # fmt: skip


def test_lemond_and_the_lemonade_cli_run_the_serve_scripts_steps(running) -> None:
    """The service (lemond) with nothing loaded; the CLI's status, backends, unload and load go to
    it over /api/v1, as Track X's serve script calls them; the health says what is loaded."""
    port = free_port()
    env = {"LEMONADE_HOST": "127.0.0.1", "LEMONADE_PORT": str(port)}
    down = _lemonade("status", env=env)
    assert down.returncode == 1 and f"could not reach Lemonade Server at 127.0.0.1:{port}" in down.stdout
    proc = running(["lemond", "--pulled", "user.Qwen3-8B-Q4_K_M", "--ctx-size", "8192"], env)
    health = _wait(f"http://127.0.0.1:{port}/api/v1/health", proc).json()
    assert health["model_loaded"] is None and health["version"] == "practice imitation"
    assert _lemonade("status", env=env).returncode == 0
    installed = _lemonade("backends", "install", "llamacpp:rocm", env=env)
    assert installed.returncode == 0 and "nothing installed" in installed.stdout
    assert "llamacpp:vulkan" in _lemonade("backends", env=env).stdout
    assert _lemonade("unload", env=env).returncode == 0  # nothing loaded: 0 (the script ignores it anyway)
    args = ("--ctx-size", "8192", "--llamacpp", "rocm", "--llamacpp-args", "--flash-attn on --cache-ram 0")
    assert _lemonade("load", "user.Qwen3-8B-Q4_K_M", *args, env=env).returncode == 0
    health = requests.get(f"http://127.0.0.1:{port}/v1/health", timeout=5).json()
    assert health["model_loaded"] == "user.Qwen3-8B-Q4_K_M"
    options = {"ctx_size": 8192, "llamacpp_backend": "rocm", "llamacpp_args": "--flash-attn on --cache-ram 0"}
    assert health["all_models_loaded"] == [{"model_name": "user.Qwen3-8B-Q4_K_M", "recipe_options": options}]
    refused = _lemonade("load", "user.Other-GGUF", env=env)
    assert refused.returncode == 1 and "not pulled here" in refused.stdout
    for base in (f"http://127.0.0.1:{port}/api/v1", f"http://127.0.0.1:{port}/v1"):
        assert requests.get(f"{base}/models", timeout=5).json()["data"][0]["id"] == "user.Qwen3-8B-Q4_K_M"
        assert _chat(base, "user.Qwen3-8B-Q4_K_M").status_code == 200
    assert _lemonade("unload", env=env).returncode == 0
    assert requests.get(f"http://127.0.0.1:{port}/v1/health", timeout=5).json()["model_loaded"] is None


def test_lemonade_commands_it_does_not_do_are_refused() -> None:
    done = _lemonade("pull", "x", env={"LEMONADE_PORT": str(free_port())})
    assert done.returncode == 2 and "does not do `lemonade pull`" in done.stdout


def test_tabbyapi_reads_its_config_and_writes_its_key_file(running, tmp_path: Path) -> None:
    port = free_port()
    tabby = tmp_path / "tabbyAPI"
    tabby.mkdir()
    config = {"network": {"host": "127.0.0.1", "port": port, "disable_auth": False},
              "model": {"model_name": "Qwen3-8B-exl3-4.0bpw", "max_seq_len": 8192}}  # fmt: skip
    (tabby / "config.yml").write_text(yaml.safe_dump(config))
    proc = running([str(tabby / "start.sh"), "--gpu-lib", "cu121"])
    health = _wait(f"http://127.0.0.1:{port}/health", proc)
    assert health.json() == {"status": "healthy", "issues": []}  # /health needs no key, as TabbyAPI's
    tokens = tabby / "api_tokens.yml"
    assert tokens.stat().st_mode & 0o777 == 0o600
    key = yaml.safe_load(tokens.read_text())["api_key"]
    base = f"http://127.0.0.1:{port}/v1"
    assert _chat(base, "Qwen3-8B-exl3-4.0bpw").status_code == 401
    ok = _chat(base, "Qwen3-8B-exl3-4.0bpw", {"Authorization": f"Bearer {key}"})
    assert ok.status_code == 200 and key not in (tmp_path / "imitation.out").read_text()


def test_mlx_lm_server_line(running) -> None:
    port = free_port()
    proc = running(
        ["mlx_lm.server", "--model", "/m/Qwen3-8B-4bit", "--port", str(port), "--prompt-cache-size", "10"]
    )
    assert _wait(f"http://127.0.0.1:{port}/health", proc).json() == {"status": "ok"}
    models = requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).json()["data"]
    assert models[0]["id"] == "/m/Qwen3-8B-4bit"  # the --model string, as mlx_lm.server names it


def test_mlx_lm_server_streams_until_the_close_and_the_load_client_reads_it(running, tmp_path: Path) -> None:
    """mlx_lm.server answers on Python's http.server (HTTP/1.0): a stream has no length and no
    chunks, and ends when the server closes the connection. The sweep's client must read it whole."""
    import json
    import socket

    port = free_port()
    proc = running(["mlx_lm.server", "--model", "/m/Qwen3-8B-4bit", "--port", str(port)])
    _wait(f"http://127.0.0.1:{port}/health", proc)
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "stream": True})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
        )
        raw = b""
        while chunk := sock.recv(65536):  # b"": the server closed, which ends the body
            raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    lines = head.decode().lower().splitlines()
    assert lines[0] == "http/1.0 200 ok" and "content-type: text/event-stream" in lines, lines
    assert not any(x.startswith(("transfer-encoding", "content-length")) for x in lines), lines
    events = [x for x in payload.decode().split("\n\n") if x.startswith("data: ")]
    assert events[-1] == "data: [DONE]" and len(events) >= 5 + 2, events  # role, 5 tokens, final, [DONE]
    book = tmp_path / "book.md"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.entry", "sweep", "--base-url", f"http://127.0.0.1:{port}/v1",
         "--model", "/m/Qwen3-8B-4bit", "--concurrency", "1", "--requests", "2", "--max-tokens", "8",
         "--warmup", "0", "--metrics-url", "none", "--label", "mlx-close", "--labbook", str(book)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (level,) = read_records(book, "level", select=lambda o: "record" not in o).records
    assert (level["completed"], level["failed"], level["output_tokens"]) == (2, 0, 16), level


def test_an_engine_without_an_imitation_is_named() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "imitate", "sglang", "--port", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=START_S,
    )  # fmt: skip
    assert done.returncode != 0 and "no imitation of sglang" in done.stderr
