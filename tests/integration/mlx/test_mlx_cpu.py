"""The real mlx_lm.server (mlx-lm 0.32.2, MLX 0.32.4's Linux CPU backend, Gemma 3 270M in float32,
`make mlx-cpu`): its stream through the harness's client (close-delimited HTTP/1.0, keep-alive
comments, usage in a chunk with no choices), its prompt cache, a short sweep and the probe against
it, its memory; then Track M's rehearsal path starting it as the mlx-lm stand-in (its measure
step; the probe ran above), every record saying it is a rehearsal on MLX's CPU backend. Skipped
with the reason where `make mlx-cpu` has not run (failed under HARNESS_MLX_REQUIRED=1,
tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.endpoints.http_client import stream_chat
from harness.records.notebook import read_records
from harness.engines.ports import port_open
from harness.engines import mlx_cpu
from tests.conftest import ROOT, free_port
from tests.integration.test_sweep import sweep

pytestmark = [pytest.mark.mlx, pytest.mark.slow]

# A prompt of some 600 tokens, so that a second request finds most of it in the prompt cache.
LONG = "Count the birds on the river bank and say how many. " * 50


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    launcher = mlx_cpu.launcher(port, tmp_path_factory.mktemp("mlx") / "mlx.log", prompt_cache_size=4)
    launcher.start(timeout=300)
    yield launcher
    launcher.stop()
    assert not port_open("127.0.0.1", port), "port still open after stop"


def base(server) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def ask(server, content: str, max_tokens: int = 8):
    body = {
        "model": str(mlx_cpu.model_dir()),
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    return stream_chat(base(server), body, timeout=240)


def test_its_stream_and_its_prompt_cache_through_the_harness_client(server):
    first = ask(server, LONG)
    assert first.ok, first.error
    assert first.token_source == "usage" and first.output_tokens == 8  # usage in a chunk with no choices
    assert first.saw_done and first.finish_reason == "length"
    assert first.prompt_tokens > 500
    again = ask(server, LONG)
    assert again.ok, again.error
    # the prompt cache: all of the prompt but what the answer's turn adds is read back
    assert again.cached_tokens is not None and again.cached_tokens > 0.9 * first.prompt_tokens
    assert (first.cached_tokens or 0) < again.cached_tokens
    # the process holds the float32 weights (about 1.1 GB on disk)
    assert server.memory_mb() > 800


def test_a_short_sweep_and_the_probe_against_it(server, tmp_path):
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url", base(server), "--model", str(mlx_cpu.model_dir()), "--engine", "mlx-lm",
        "--concurrency", "1,2", "--requests", "2", "--max-tokens", "8", "--label", "mlx-cpu",
        "--labbook", str(book), timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    levels = read_records(book, "level", select=lambda o: "concurrency" in o).records
    assert [lv["concurrency"] for lv in levels] == [1, 2]
    assert all(lv["completed"] == lv["requests"] == 2 and lv["failed"] == 0 for lv in levels), levels
    probe = subprocess.run(
        [sys.executable, "-m", "harness", "probe", "--engine", "mlx-lm", "--base-url", base(server),
         "--model", str(mlx_cpu.model_dir()), "--max-tokens", "32", "--labbook", str(book)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stdout[-2000:] + probe.stderr[-2000:]
    (features,) = read_records(book, "features").records
    assert features["engine"] == "mlx-lm"


# CI runs Track M's whole smoke rehearsal on this server after make test, and
# `scripts/check_rehearsal.py track-m --real-mlx` asserts what this test does there.
@pytest.mark.ci_rehearsed("track-m")
def test_track_m_rehearsal_starts_it_and_labels_every_record(tmp_path):
    from tests.integration.docker.conftest import trimmed_plan

    plan = trimmed_plan(
        "m", {"mlx-single": ("measure",)}, tmp_path / "track-m.yaml", ("preflight",), rehearsal=True
    )
    run_dir = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "harness", "track", plan, "--rehearse", "--smoke", "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=1200, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "the practice server imitates it" not in out.stdout
    book = run_dir / "labbook.md"
    speeds = read_records(book, "engine-speed", select=lambda o: o.get("engine") == "mlx-lm").records
    assert speeds
    for record in speeds:
        assert record["rehearsal"] is True
        assert mlx_cpu.LABEL in record["stand_in"], record["stand_in"]
        assert record["engine_version"] == f"mlx-lm {mlx_cpu.MLX_LM_VERSION} / mlx {mlx_cpu.MLX_VERSION}"
    assert all(r["backend"] == "CPU" and r["process_resident_mb"] > 800 for r in speeds), speeds
    report = (run_dir / "report.md").read_text()
    banner = report.split("## ")[0]  # the rehearsal banner's table names each engine's stand-in
    assert mlx_cpu.LABEL in banner and "imitating mlx_lm.server" not in banner
