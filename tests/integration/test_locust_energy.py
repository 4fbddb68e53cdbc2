"""Locust's own runs read telemetry as ``harness sweep`` does: ``locust --headless
--telemetry nvml,practice`` against the practice server says NVML's absence in one line (on a
machine without it, this one) and writes a level record whose ``energy`` part is the practice
server's IMITATION power, labelled, with its ``cost``; the web UI writes one record per phase (a
change of user count), each with its own energy. Every record validates against its schema."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import requests

from harness.records.base import is_level
from harness.records.notebook import problems, read_records
from harness.energy.detect import detect
from tests.conftest import ROOT, free_port, kit_profile
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow
IDLE_W, SEAT_W = 30.0, 10.0


def watts_profile() -> dict:
    return kit_profile(name="watts", imitation_power={"idle_w": IDLE_W, "per_busy_seat_w": SEAT_W})


def locust(*args: str) -> list[str]:
    return [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles/llm_user.py"), *args]


def check_energy(rec: dict, users: int, asked: str) -> dict:
    assert not problems(rec, "level"), problems(rec, "level")
    e = rec["energy"]
    assert (e["telemetry"], e["source"], e["label"], e["method"]) == (
        asked,
        "practice",
        "imitation",
        "power-integrated",
    )
    assert e["idle_power_w"] == IDLE_W and not e["subtracted_idle"]
    assert IDLE_W <= e["mean_power_w"] <= IDLE_W + SEAT_W * users + 1e-6
    assert e["j_per_output_token"] == pytest.approx(e["energy_j"] / rec["output_tokens"], rel=1e-3)
    assert e["j_per_request"] == pytest.approx(e["energy_j"] / rec["completed"], rel=1e-3)
    assert e["output_tokens_per_j"] == pytest.approx(rec["output_tokens"] / e["energy_j"], rel=1e-3)
    # the span is the test's (or the phase's) own, within a reading or two
    assert e["seconds"] == pytest.approx(rec["wall_s"], abs=1.0)
    return e


def test_headless_locust_records_the_imitation_energy(practice, tmp_path):
    server = practice(watts_profile())
    book = tmp_path / "labbook.md"
    cmd = locust(
        "--headless", "-u", "3", "-r", "3", "-t", "3s", "--stop-timeout", "20", "--host", server.root,
        "--max-tokens", "8", "--only-summary", "--labbook", str(book), "--label", "headless-watts",
        "--telemetry", "nvml,practice", "--telemetry-interval", "0.1", "--idle-seconds", "0.5",
        "--price-per-kwh", "0.3",
    )  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S + 3 + 30, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    if not detect("nvml").sources:
        said = [line for line in done.stderr.splitlines() if "nvml" in line]
        assert len(said) == 1, done.stderr
        assert said[0].startswith("harness: warning: telemetry: nvml: ")
        assert said[0].endswith("the load is measured without it")
    assert "telemetry: reading practice imitation of watts [IMITATION]" in done.stderr
    assert "idle baseline over 0.5 s: practice imitation of watts 30.0 W" in done.stderr
    assert (
        "harness: energy [IMITATION]: " in done.stdout and "harness: cost per million output" in done.stdout
    )
    result = read_records(book, "level", select=is_level)
    assert not result.warnings and len(result.records) == 1
    [rec] = result.records
    e = check_energy(rec, 3, "nvml,practice")
    assert e["mean_power_w"] > IDLE_W  # seats were busy
    if not detect("nvml").sources:
        assert e["absent"].keys() == {"nvml"}
    assert rec["cost"]["basis"] == "per-kwh" and rec["cost"]["per_million_output_tokens"] > 0


def test_headless_locust_without_telemetry_says_why(practice, tmp_path):
    """``--telemetry none``: the record's energy is a null with its reason, as the sweep's."""
    server = practice("kit")
    book = tmp_path / "labbook.md"
    cmd = locust(
        "--headless", "-u", "1", "-r", "1", "-t", "1s", "--stop-timeout", "20", "--host", server.root,
        "--max-tokens", "8", "--only-summary", "--labbook", str(book), "--telemetry", "none",
    )  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S + 1 + 30, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [rec] = read_records(book, "level", select=is_level).records
    assert not problems(rec, "level") and "cost" not in rec
    assert (
        rec["energy"]["energy_j"] is None and rec["energy"]["reason"] == "telemetry: off (--telemetry none)"
    )


def test_headless_locust_refuses_a_word_that_is_no_source(tmp_path):
    cmd = locust("--headless", "-u", "1", "-t", "1s", "--host", "http://127.0.0.1:9", "--telemetry", "gpu")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S, cwd=tmp_path)
    assert (
        done.returncode == 2 and "--telemetry" in done.stderr and "give auto, none or any of" in done.stderr
    )


def wait_until(check, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"no {what} in {seconds} s"
        time.sleep(0.1)
    return found


def test_the_web_ui_records_each_phase_with_its_own_energy(practice, tmp_path):
    server = practice(watts_profile())
    book = tmp_path / "labbook.md"
    port = free_port()
    cmd = locust(
        "--host", server.root, "--web-host", "127.0.0.1", "--web-port", str(port), "--stop-timeout", "30",
        "--max-tokens", "8", "--labbook", str(book), "--label", "ui-watts", "--telemetry", "practice",
        "--telemetry-interval", "0.1", "--idle-seconds", "0.5", "--price-per-hour", "2",
    )  # fmt: skip
    with open(tmp_path / "locust.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return requests.get(url, timeout=1).status_code == 200
        except requests.RequestException:
            assert proc.poll() is None, (tmp_path / "locust.log").read_text()
            return False

    def finished() -> int:
        rows = requests.get(url + "/harness/exact", timeout=5).json()["rows"]
        counts = [r["value"] for r in rows if r["metric"].endswith("samples (finished requests)")]
        return sum(int(float(n)) for n in counts)  # all phases

    try:
        wait_until(up, START_S, "web UI")
        requests.post(url + "/swarm", data={"user_count": 1, "spawn_rate": 10}, timeout=10)
        wait_until(lambda: finished() >= 6, 60, "6 requests at 1 user")
        requests.post(url + "/swarm", data={"user_count": 4, "spawn_rate": 10}, timeout=10)
        seen = finished()
        wait_until(lambda: finished() >= seen + 12, 60, "12 more requests at 4 users")
        requests.post(url + "/stop", timeout=60)
        one, four = wait_until(
            lambda: book.is_file() and len(r := read_records(book, "level").records) == 2 and r, 30, "records"
        )
    finally:
        proc.terminate()
        proc.wait(15)
    log = (tmp_path / "locust.log").read_text()
    assert "telemetry: reading practice imitation of watts [IMITATION]" in log
    assert (one["concurrency"], four["concurrency"]) == (1, 4)
    low, high = check_energy(one, 1, "practice"), check_energy(four, 4, "practice")
    assert high["mean_power_w"] > low["mean_power_w"]  # more seats busy, more watts
    for rec in (one, four):
        assert rec["cost"]["basis"] == "per-hour" and rec["cost"]["per_million_output_tokens"] > 0
    assert log.count("harness: energy [IMITATION]: ") == 2


def test_headless_locust_refuses_both_prices_before_the_proof(tmp_path):
    cmd = locust(
        "--headless", "-u", "1", "-t", "1s", "--host", "http://127.0.0.1:9",
        "--price-per-hour", "1", "--price-per-kwh", "1",
    )  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S, cwd=tmp_path)
    assert done.returncode == 2
    assert "harness: give --price-per-hour or --price-per-kwh, not both; no load was sent" in done.stderr
