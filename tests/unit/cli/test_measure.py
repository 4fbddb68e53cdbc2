"""`harness measure`: single-user prefill from the difference, decode, memory snapshots."""

import json

import pytest

from harness.cli import main
from harness.io.notebook import read_records
from tests.conftest import kit_profile


@pytest.mark.slow
def test_prefill_from_difference_matches_the_profile(practice, tmp_path, capsys):
    rate, a, b = 2500.0, 0.0171, 0.00107
    server = practice(kit_profile(name="prefill", timing={"prefill_tokens_per_s": rate, "prefill_chunk": 8192}))
    idle = tmp_path / "idle.json"
    assert main(["measure", "--snapshot-only", str(idle)]) == 0
    book = tmp_path / "labbook.md"
    assert main(["measure", "--engine", "practice", "--base-url", server.base_url, "--model", "local-chat",
                 "--max-tokens", "24", "--repetitions", "2", "--idle-snapshot", str(idle), "--server-pid",
                 str(server.proc.pid), "--labbook", str(book)]) == 0
    short, long = read_records(book, "engine-speed").records
    assert long["prefill_tokens_per_s"] == pytest.approx(rate, rel=0.1)
    assert short["decode_tokens_per_s"] == pytest.approx(1 / (a + b), rel=0.1)
    assert long["prompt_tokens"] - short["prompt_tokens"] > 1000
    assert short["max_cached_prompt_tokens"] < 16  # the run tag defeats the prefix cache
    assert short["process_resident_mb"] > 10 and "mem_available_mb" in short["memory_delta_mb"]


@pytest.mark.slow
def test_reuse_prompt_is_a_demonstration_that_records_nothing(practice, tmp_path, capsys):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    assert main(["measure", "--engine", "practice", "--base-url", server.base_url, "--model", "local-chat",
                 "--max-tokens", "8", "--repetitions", "1", "--reuse-prompt", "--labbook", str(book)]) == 0
    assert not book.exists()
    assert "nothing recorded" in capsys.readouterr().err


def test_snapshot_from_another_machine_is_refused(tmp_path, capsys):
    snap = tmp_path / "idle.json"
    assert main(["measure", "--snapshot-only", str(snap)]) == 0
    data = json.loads(snap.read_text())
    assert data["mem_total_mb"] > 0 and data["mem_available_mb"] > 0
    data["hostname"] = "some-other-box"
    snap.write_text(json.dumps(data))
    assert main(["measure", "--engine", "x", "--model", "m", "--idle-snapshot", str(snap),
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "was taken on some-other-box" in capsys.readouterr().err


def test_server_down_is_one_line(capsys):
    assert main(["measure", "--engine", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                 "--wait-seconds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "did not answer 200 within 1 s" in err and "\n" not in err


def test_mac_pages_and_deltas():
    from harness.io.memory import delta, mac_pages

    vmstat = ("Mach Virtual Memory Statistics: (page size of 16384 bytes)\nPages free: 1000.\nPages active: 2000.\n"
              "Pages wired down: 500.\nPages occupied by compressor: 100.\n")
    pages = mac_pages(vmstat)
    assert pages["mac_used_mb"] == pytest.approx(2600 * 16384 / 1e6)
    assert pages["mac_free_mb"] == pytest.approx(1000 * 16384 / 1e6)
    idle = {"mem_available_mb": 20000.0, "gpu_total_mb": 24000, "gpu_used_mb": 500.0}
    loaded = {"mem_available_mb": 19000.0, "gpu_total_mb": 24000, "gpu_used_mb": 6500.0, "gpu_process_mb": 5800.0}
    assert delta(idle, loaded) == {"mem_available_mb": 1000, "gpu_used_mb": 6000, "gpu_process_mb": 5800}
