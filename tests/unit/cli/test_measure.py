"""`harness measure`: single-user prefill from the difference, decode, memory snapshots."""

import json

import pytest

from harness.cli import main


def test_snapshot_from_another_machine_is_refused(tmp_path, capsys):
    snap = tmp_path / "idle.json"
    assert main(["measure", "--snapshot-only", str(snap)]) == 0
    data = json.loads(snap.read_text())
    assert data["mem_total_mb"] > 0 and data["mem_available_mb"] > 0
    data["hostname"] = "some-other-box"
    snap.write_text(json.dumps(data))
    assert (
        main(
            [
                "measure",
                "--engine",
                "x",
                "--model",
                "m",
                "--idle-snapshot",
                str(snap),
                "--base-url",
                "http://127.0.0.1:9/v1",
            ]
        )
        == 2
    )
    assert "was taken on some-other-box" in capsys.readouterr().err


def test_server_down_is_one_line(capsys):
    assert (
        main(
            [
                "measure",
                "--engine",
                "x",
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--wait-seconds",
                "1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "did not answer 200 within 1 s" in err and "\n" not in err


def test_mac_pages_and_deltas():
    from harness.engines.memory import delta, mac_pages

    vmstat = (
        "Mach Virtual Memory Statistics: (page size of 16384 bytes)\nPages free: 1000.\nPages active: "
        "2000.\n"
        "Pages wired down: 500.\nPages occupied by compressor: 100.\n"
    )
    pages = mac_pages(vmstat)
    assert pages["mac_used_mb"] == pytest.approx(2600 * 16384 / 1e6)
    assert pages["mac_free_mb"] == pytest.approx(1000 * 16384 / 1e6)
    idle = {"mem_available_mb": 20000.0, "gpu_total_mb": 24000, "gpu_used_mb": 500.0}
    loaded = {
        "mem_available_mb": 19000.0,
        "gpu_total_mb": 24000,
        "gpu_used_mb": 6500.0,
        "gpu_process_mb": 5800.0,
    }
    assert delta(idle, loaded) == {"mem_available_mb": 1000, "gpu_used_mb": 6000, "gpu_process_mb": 5800}


def test_check_sets_single_user_speeds_against_the_limit(tmp_path, capsys):
    """make check: the table figure for a known machine, each real engine's speed alone as a share of
    the limit, the practice server's made-up speed left out, and the mock line when it is down."""
    from harness.cli import main
    from harness.endpoints.probes import FEATURES_LAB
    from harness.records.notebook import append_record

    book = tmp_path / "labbook.md"
    rec = {
        "lab": FEATURES_LAB,
        "engine": "llama.cpp",
        "model": "m",
        "test": "short",
        "repetitions": 3,
        "ttft_s": 0.1,
        "decode_tokens_per_s": 86.0,
        "token_source": "usage",
    }
    append_record(book, rec, "engine-speed")
    append_record(book, {**rec, "engine": "practice", "decode_tokens_per_s": 55.0}, "engine-speed")
    code = main(
        ["check", "--machine", "m4-max", "--labbook", str(book), "--base-url", "http://127.0.0.1:9/v1"]
    )
    out = capsys.readouterr().out
    assert code == 1  # the practice server is down
    assert "bandwidth:   ~546 GB/s (machine table: Apple M4 Max, --machine; measured here ~" in out
    assert "speed limit: ~111 tok/s for a 4.9 GB model" in out
    assert (
        "llama.cpp (single-user short test): 86.0 tok/s = 77% of the limit for the 4.9 GB model (its own "
        "model's size is not recorded); within the lab's 60-85 % band" in out
    )
    assert "practice (single" not in out
    assert "mock:        DOWN" in out


def test_prefill_from_the_difference_or_the_reason_it_has_none():
    from harness.engines import single_user
    from harness.records.engine import EngineSpeed

    def prefill_from_difference(short: dict, long: dict):  # the figures as the two lines hold them
        return single_user.prefill_from_difference(EngineSpeed.read(short), EngineSpeed.read(long))

    short = {"prompt_tokens": 59, "ttft_s": 0.20}
    # 443 more tokens in 0.75 s more
    assert prefill_from_difference(short, {"prompt_tokens": 502, "ttft_s": 0.95}) == (590.7, None)
    # a disturbed short run (CI saw 3.764 s against 0.858 s): no rate, and what to do
    rate, why = prefill_from_difference({**short, "ttft_s": 3.764}, {"prompt_tokens": 502, "ttft_s": 0.858})
    assert rate is None and "0.858 s" in why and "3.764 s" in why and "--repetitions" in why
    long = {"prompt_tokens": 502, "ttft_s": 0.9}
    rate, why = prefill_from_difference({**short, "prompt_tokens": None}, long)
    assert rate is None and "no prompt token counts" in why
    rate, why = prefill_from_difference(short, {"prompt_tokens": 59, "ttft_s": 0.9})
    assert rate is None and "not longer" in why


def test_the_speed_limit_part_and_its_line_from_the_machine_table_figure():
    """M4 Max's 546 GB/s over a 4.9 GB model is 111.4 tok/s; a short decode of 86 tok/s is 77 % of it."""
    from harness.report.single_user_lines import limit_line
    from harness.schema_facts import line
    from harness.sizing.arithmetic import speed_limit_part

    part = speed_limit_part("m4-max", 546.0, 4.9, 86.0)
    assert line(part) == {
        "machine": "m4-max",
        "bandwidth_gb_s": 546.0,
        "model_gb": 4.9,
        "tok_s": 111.43,
        "share": 0.772,
    }
    assert limit_line("llama.cpp", part, 86.0) == (
        "         llama.cpp speed limit 546 GB/s / 4.9 GB = 111.4 tok/s; short decode 86.00 tok/s is 77% of "
        "it: within the lab's 60-85 % band: the measurement makes sense"
    )


def test_a_machine_without_the_model_size_is_refused_before_anything_is_sent(tmp_path, capsys):
    code = main(
        [
            "measure",
            "--engine",
            "x",
            "--model",
            "m",
            "--machine",
            "m4-max",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "--machine needs --model-gb (the model's size in GB) for the speed limit" in err
    assert "did not answer" not in err  # refused before the server was waited for
