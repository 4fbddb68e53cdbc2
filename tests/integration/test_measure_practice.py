"""`harness measure` against the practice server: prefill from the difference, and --reuse-prompt."""

import pytest

from harness.cli import main
from harness.records.notebook import read_records
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


@pytest.mark.slow
def test_each_test_carries_the_imitation_energy_of_its_repetitions(practice, tmp_path, capsys):
    """`--telemetry nvml,practice`: NVML absent here is one line; each speed record's energy is the
    practice server's IMITATION power over its repetitions (one seat busy), with its cost, valid."""
    from harness.records.notebook import problems
    from harness.energy.detect import detect

    server = practice(kit_profile(name="watts", imitation_power={"idle_w": 30, "per_busy_seat_w": 10}))
    book = tmp_path / "labbook.md"
    argv = [
        "measure", "--engine", "practice", "--base-url", server.base_url, "--model", "local-chat",
        "--max-tokens", "16", "--repetitions", "2", "--labbook", str(book), "--telemetry", "nvml,practice",
        "--telemetry-interval", "0.1", "--idle-seconds", "0.5", "--price-per-kwh", "0.3",
    ]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr()
    if not detect("nvml").sources:
        assert [x for x in out.err.splitlines() if "nvml" in x][0].startswith("warning: telemetry: nvml: ")
    assert "telemetry: reading practice imitation of watts [IMITATION]" in out.out
    assert out.out.count("energy [IMITATION]: ") == 2
    for rec in read_records(book, "engine-speed").records:
        assert not problems(rec, "engine-speed")
        e = rec["energy"]
        assert (e["source"], e["label"], e["method"], e["idle_power_w"]) == (
            "practice",
            "imitation",
            "power-integrated",
            30.0,
        )
        assert 30.0 <= e["mean_power_w"] <= 40.0 + 1e-6  # one seat at most
        tokens = rec["completion_tokens"] * rec["repetitions"]  # the median: every answer is 16 here
        assert e["j_per_output_token"] == pytest.approx(e["energy_j"] / tokens, rel=1e-3)
        assert e["j_per_request"] == pytest.approx(e["energy_j"] / 2, rel=1e-3)
        assert rec["cost"]["basis"] == "per-kwh" and rec["cost"]["per_million_output_tokens"] > 0
