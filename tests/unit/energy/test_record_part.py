"""A level record's energy and cost parts (harness/energy/record_part.py): hand-computed figures
from a sampler's summary, the headline devices chosen, nulls with their reasons, the imitation's
label carried to the answer line, and a level record with them valid for its schema."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.records import level as lr, base as r
from harness.energy.record_part import cost_part, energy_part, energy_words, headline_sources
from harness.measure.levels import level_record
from harness.measure.sample import Sample
from harness.records.notebook import problems


def _source(kind: str, device: str, joules: float | None, seconds: float = 10.0, **extra) -> dict:
    method = None if joules is None else extra.pop("method", "counter")
    out = {"source": kind, "device": device, "readings": 21, "energy_j": joules, "seconds": seconds}
    out.update(method=method, mean_power_w=None if joules is None else joules / seconds, **extra)
    if joules is None:
        out["reason"] = "fewer than two power readings and no energy counter"
    return out


def _summary(*sources: dict) -> dict:
    return {"interval_s": 0.5, "sources": list(sources)}


def _idle(*pairs: tuple[str, str, float]) -> dict:
    return {"seconds": 2.0, "sources": [{"source": k, "device": d, "mean_power_w": w} for k, d, w in pairs]}


def test_one_card_gives_its_power_energy_per_token_and_tokens_per_joule():
    card = _source("nvml", "0: NVIDIA GB10", 2000.0)
    e = energy_part(_summary(card), _idle(("nvml", "0: NVIDIA GB10", 40.0)), "auto", {}, 4000, 20)
    assert e["source"] == "nvml" and e["devices"] == ["0: NVIDIA GB10"] and e["method"] == "counter"
    assert e["energy_j"] == 2000.0 and e["mean_power_w"] == 200.0 and e["idle_power_w"] == 40.0
    assert e["j_per_output_token"] == 0.5 and e["j_per_request"] == 100.0 and e["output_tokens_per_j"] == 2.0
    assert e["subtracted_idle"] is False and "label" not in e and "reason" not in e


def test_the_idle_power_is_taken_off_only_when_asked():
    card = _source("nvml", "0: card", 2000.0)
    idle = _idle(("nvml", "0: card", 40.0))
    e = energy_part(_summary(card), idle, "auto", {}, 4000, 20, subtract_idle=True)
    assert e["net_energy_j"] == 1600.0  # 2000 J - 40 W x 10 s
    assert e["j_per_output_token"] == 0.4 and e["energy_j"] == 2000.0 and e["subtracted_idle"] is True
    quiet = energy_part(_summary(_source("nvml", "0: card", 300.0)), idle, "auto", {}, 10, 1, True)
    assert quiet["j_per_output_token"] is None and "no more than the idle baseline" in quiet["reason"]


def test_two_cards_add_up_and_the_cpu_stays_beside_them():
    cards = [_source("nvml", "0: a", 1000.0), _source("nvml", "1: b", 500.0, seconds=5.0)]
    cpu = _source("rapl", "package-0", 300.0)
    e = energy_part(_summary(*cards, cpu), None, "auto", {}, 1500, 3)
    assert e["devices"] == ["0: a", "1: b"] and e["energy_j"] == 1500.0
    assert e["mean_power_w"] == 200.0  # 100 W + 100 W, each over its own span
    assert e["idle_power_w"] is None and e["idle_reason"] == "no idle baseline was taken"
    assert [s["source"] for s in e["sources"]] == ["nvml", "nvml", "rapl"]


def test_rapl_psys_stands_alone_as_it_includes_the_package():
    zones = [_source("rapl", "package-0", 300.0), _source("rapl", "psys", 450.0)]
    assert [s["device"] for s in headline_sources(zones)] == ["psys"]
    assert [s["device"] for s in headline_sources(zones[:1])] == ["package-0"]


def test_a_card_without_energy_leaves_the_figure_null_with_its_reason():
    cards = [_source("hwmon", "card0", 900.0, method="power-integrated"), _source("hwmon", "card1", None)]
    e = energy_part(_summary(*cards), None, "hwmon", {}, 100, 2)
    assert e["energy_j"] is None and e["j_per_output_token"] is None and e["method"] is None
    assert e["reason"] == "hwmon card1: fewer than two power readings and no energy counter"


def test_no_source_is_a_null_with_the_lines_that_say_why():
    absent = {"nvml": "nvml: no NVIDIA driver library here (libnvidia-ml.so.1)"}
    e = energy_part(None, None, "nvml", absent, 100, 2)
    assert e["source"] is None and e["energy_j"] is None and e["mean_power_w"] is None
    assert e["reason"] == "no telemetry source here (nvml: no NVIDIA driver library here (libnvidia-ml.so.1))"
    assert e["absent"] == absent and e["sources"] == []
    off = energy_part(None, None, "none", {"none": "telemetry: off (--telemetry none)"}, 100, 2)
    assert off["reason"] == "telemetry: off (--telemetry none)"


def test_the_practice_imitation_is_labelled_and_its_words_say_so():
    fake = _source("practice", "imitation of kit", 650.0, method="power-integrated", label="imitation")
    e = energy_part(_summary(fake, _source("rapl", "package-0", 100.0)), None, "practice", {}, 1300, 10)
    assert e["source"] == "practice" and e["label"] == "imitation"
    assert energy_words(e) == "at 65 W, 0.5 J per output token (IMITATION)"
    real = energy_part(_summary(_source("nvml", "0: a", 2100.0)), None, "auto", {}, 2333, 10)
    assert energy_words(real) == "at 210 W, 0.9 J per output token"
    assert energy_words(None) is None and energy_words(energy_part(None, None, "auto", {}, 1, 1)) is None


def test_cost_per_million_output_tokens_per_hour_and_per_kwh():
    assert cost_part(1000, 10.0, None) is None  # no price, no cost part
    hourly = cost_part(36_000, 3600.0, None, price_per_hour=2.0)
    assert hourly == {"basis": "per-hour", "price": 2.0, "per_million_output_tokens": pytest.approx(55.5556)}
    kwh = cost_part(1_000_000, 100.0, 3.6e6, price_per_kwh=0.25)  # 1 kWh for a million tokens
    assert kwh["per_million_output_tokens"] == 0.25
    unmeasured = cost_part(1000, 10.0, None, price_per_kwh=0.25)
    assert (
        unmeasured["per_million_output_tokens"] is None
        and unmeasured["reason"] == "no energy measured at this level"
    )


def test_a_level_record_with_energy_and_cost_validates_against_its_schema():
    times = [0.05 + 0.01 * i for i in range(10)]
    ok = Sample(t_send=0.0, ok=True, t_first=times[0], t_end=times[-1], token_times=times, output_tokens=10)
    context = lr.LevelContext("base", "practice", "m", "http://h/v1", "mixed", 64, 0.0, r.Objectives())
    rec = level_record([ok, ok], 2, 1.0, context, "2026-01-01T00:00:00+0000")
    fake = _source("practice", "imitation of kit", 65.0, seconds=1.0, method="power-integrated")
    part = energy_part(
        _summary({**fake, "label": "imitation"}),
        _idle(("practice", "imitation of kit", 35.0)),
        "practice",
        {},
        20,
        2,
    )
    line = replace(rec, energy=part, cost=cost_part(20, 1.0, 65.0, price_per_kwh=0.3)).to_dict()
    assert list(line)[-2:] == ["energy", "cost"]
    assert not problems(line, "level"), problems(line, "level")
    assert not problems(replace(rec, energy=energy_part(None, None, "auto", {}, 20, 2)).to_dict(), "level")
    assert problems({**line, "energy": {**part, "energy_j": -1.0}}, "level")  # no negative energy
    assert "energy" not in rec.to_dict()  # an old-style record stays as it was
