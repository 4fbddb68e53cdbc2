"""`harness sweep --telemetry nvml,practice --price-per-kwh` against the practice server: on a
machine without NVML (this one) NVML is one line and the rest is measured, the practice server's
IMITATION power among it; each level record carries its energy (labelled imitation) and its cost
and validates against its schema. One sweep of two short levels: a few seconds."""

from __future__ import annotations

import pytest

from harness.records.notebook import problems
from harness.energy.detect import detect
from tests.conftest import kit_profile
from tests.integration.test_sweep import levels, sweep

pytestmark = pytest.mark.slow


def test_an_absent_nvml_is_one_line_and_the_rest_is_measured(practice, tmp_path):
    server = practice(kit_profile(name="watts", imitation_power={"idle_w": 30, "per_busy_seat_w": 10}))
    book = tmp_path / "labbook.md"
    out = sweep(
        "--base-url", server.base_url, "--model", "local-chat", "--concurrency", "1,4", "--requests", "8",
        "--max-tokens", "16", "--label", "watts", "--labbook", str(book), "--telemetry", "nvml,practice",
        "--idle-seconds", "1", "--telemetry-interval", "0.1", "--price-per-kwh", "0.3",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    nvml_here = bool(detect("nvml").sources)
    if not nvml_here:
        said = [line for line in out.stderr.splitlines() if "nvml" in line]
        assert len(said) == 1 and said[0].startswith("warning: telemetry: nvml: "), out.stderr
        assert said[0].endswith("the levels are measured without it")
    assert "telemetry: reading practice imitation of watts [IMITATION]" in out.stdout
    assert "idle baseline over 1 s: practice imitation of watts 30.0 W" in out.stdout
    assert out.stdout.count("energy [IMITATION]: ") == 2 and out.stdout.count("cost per million output") == 2
    one, four = levels(book)
    for rec in (one, four):
        assert not problems(rec, "level")
        e = rec["energy"]
        assert e["telemetry"] == "nvml,practice" and e["source"] == "practice" and e["label"] == "imitation"
        assert e["method"] == "power-integrated" and e["idle_power_w"] == 30.0 and not e["subtracted_idle"]
        if not nvml_here:
            assert e["absent"].keys() == {"nvml"}
        # the imitation's power lies between idle and every seat busy, and the per-unit figures agree
        assert 30.0 <= e["mean_power_w"] <= 30.0 + 10 * rec["concurrency"] + 1e-6
        assert e["j_per_output_token"] == pytest.approx(e["energy_j"] / rec["output_tokens"], rel=1e-3)
        assert e["j_per_request"] == pytest.approx(e["energy_j"] / rec["completed"], rel=1e-3)
        assert rec["cost"]["basis"] == "per-kwh" and rec["cost"]["per_million_output_tokens"] > 0
    assert four["energy"]["mean_power_w"] > one["energy"]["mean_power_w"]  # more seats busy, more watts
