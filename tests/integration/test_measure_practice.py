"""`harness measure` against the practice server: prefill from the difference, and --reuse-prompt."""

import pytest

from harness.cli import main
from harness.io.notebook import read_records
from tests.conftest import kit_profile


@pytest.mark.slow
def test_prefill_from_difference_matches_the_profile(practice, tmp_path, capsys):
    rate, a, b = 2500.0, 0.0171, 0.00107
    server = practice(
        kit_profile(name="prefill", timing={"prefill_tokens_per_s": rate, "prefill_chunk": 8192})
    )
    idle = tmp_path / "idle.json"
    assert main(["measure", "--snapshot-only", str(idle)]) == 0
    book = tmp_path / "labbook.md"
    assert (
        main(
            [
                "measure",
                "--engine",
                "practice",
                "--base-url",
                server.base_url,
                "--model",
                "local-chat",
                "--max-tokens",
                "24",
                "--repetitions",
                "2",
                "--idle-snapshot",
                str(idle),
                "--server-pid",
                str(server.proc.pid),
                "--labbook",
                str(book),
            ]
        )
        == 0
    )
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
    assert (
        main(
            [
                "measure",
                "--engine",
                "practice",
                "--base-url",
                server.base_url,
                "--model",
                "local-chat",
                "--max-tokens",
                "8",
                "--repetitions",
                "1",
                "--reuse-prompt",
                "--labbook",
                str(book),
            ]
        )
        == 0
    )
    assert not book.exists()
    assert "nothing recorded" in capsys.readouterr().err
