"""`harness verify-allocation` on the load logs that running practice servers write."""

import pytest

from harness.cli import main


def practice_log(practice, profile):
    server = practice(profile)
    return server.log


@pytest.mark.slow
def test_verify_allocation_on_a_vllm_style_log(practice, tmp_path, capsys):
    log = practice_log(practice, "vllm")  # the practice server's vLLM profile: Qwen3-8B shape, 81,920 tokens
    book = tmp_path / "labbook.md"
    args = [
        "verify-allocation",
        "--log",
        str(log),
        "--model",
        "qwen3-8b",
        "--slots",
        "20",
        "--ctx-per-slot",
        "4096",
        "--labbook",
        str(book),
    ]
    assert main(args) == 0
    assert main(args[:-2] + ["--kv-bytes", str(147_456 * 40_000)]) == 1
    assert "log says 81,920 tokens but the prediction is 40,000 tokens" in capsys.readouterr().out
    assert '"verdict": "match"' in book.read_text()


@pytest.mark.slow
def test_equal_pool_is_refused_when_pools_differ(practice, capsys):
    kit, vllm = practice_log(practice, "kit"), practice_log(practice, "vllm")
    assert main(["verify-allocation", "--equal-pool", str(kit), str(vllm)]) == 1
    assert "not an equal pool: llama-server" in capsys.readouterr().out  # 8 x 4,096 = 32,768 against 81,920
    assert main(["verify-allocation", "--equal-pool", str(vllm), str(vllm)]) == 0


@pytest.mark.slow
def test_log_from_the_other_engine_is_refused(practice, capsys):
    log = practice_log(practice, "kit")  # a llama-server-style log
    assert main(["verify-allocation", "--log", str(log), "--engine", "vllm"]) == 2
    assert "looks like a llama-server log, not vllm" in capsys.readouterr().err
