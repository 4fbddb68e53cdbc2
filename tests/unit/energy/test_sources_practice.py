"""The practice server's IMITATION power: the profile's figure at
``/practice/power``, the ``practice`` source reading it labelled imitation, ``auto`` never reading
it, the sweep's meter around a level, and what the sweep prints of it: a named source that is
absent is one line and the levels are measured without it. The server's route is read through a
stub of ``endpoints.http_client.request`` (no socket: the practice track's test reads the real one)."""

from __future__ import annotations

import asyncio
import json

import pytest

from harness.energy.arithmetic import INTEGRATED
from harness.energy.record_part import energy_lines, energy_part
from harness.errors import TelemetryUnavailable
from harness.endpoints.http_client import Reply
from harness.energy.detect import Where, detect
from harness.energy.sources import practice
from harness.energy.meter import TelemetryPlan, open_meter, start
from harness.practice.app import PracticeApp
from harness.practice.profile import load_profile
from tests.conftest import ROOT

NOWHERE = dict(drm_root=ROOT / "absent", powercap_root=ROOT / "absent")
URL = "http://127.0.0.1:9/practice/power"


def _serve(monkeypatch, watts=50.0, status=200, calls=None):
    def request(method, url, bounds, **kw):
        if calls is not None:
            calls.append(url)
        body = {"label": "imitation", "profile": "kit", "busy_seats": 1, "power_w": watts}
        return Reply(status, {}, json.dumps(body if status == 200 else {"error": "no"}).encode())

    monkeypatch.setattr(practice.http, "request", request)


def test_the_kit_profile_publishes_idle_watts_plus_watts_per_busy_seat():
    loop = asyncio.new_event_loop()
    try:
        app = PracticeApp(load_profile("kit"), loop)
        assert app.imitation_power() == {
            "label": "imitation",
            "profile": "kit",
            "busy_seats": 0,
            "power_w": 35,
        }
        app.engine.state.running.extend([object(), object()])  # two seats busy
        assert app.imitation_power()["power_w"] == 35 + 2 * 15
        plain = PracticeApp(load_profile("llama"), loop)
        assert plain.imitation_power() is None  # a profile without imitation_power: the route is a 404
    finally:
        loop.close()


def test_the_practice_source_reads_power_labelled_imitation(monkeypatch):
    _serve(monkeypatch, watts=65.0)
    [source], why = practice.open_sources(URL, clock=lambda: 3.0)
    r = source.read()
    assert why is None and source.device == "imitation of kit" and r.label == "imitation"
    assert r.source == "practice" and r.power_w == 65.0 and r.energy_j is None
    assert "no energy counter" in r.missing["energy_j"]


def test_a_server_without_the_figure_or_none_at_all_is_one_line(monkeypatch):
    _serve(monkeypatch, status=404)
    assert practice.open_sources(URL) == (
        [],
        f"practice: {URL} answers 404: its profile publishes no imitation power (imitation_power:)",
    )
    assert practice.open_sources(None)[1].startswith("practice: no server to read")
    with pytest.raises(TelemetryUnavailable, match="answers 404"):
        practice.fetch(URL)


def test_auto_never_reads_the_imitation_only_its_name_does(monkeypatch):
    calls: list[str] = []
    _serve(monkeypatch, calls=calls)
    found = detect("auto", Where(**NOWHERE, practice_url=URL))
    assert not calls and all(s.kind != "practice" for s in found.sources) and "practice" not in found.absent
    named = detect("practice", Where(**NOWHERE, practice_url=URL))
    assert calls == [URL] and [s.kind for s in named.sources] == ["practice"]


def test_the_meter_reads_the_idle_baseline_then_each_level(monkeypatch):
    _serve(monkeypatch, watts=35.0)
    plan = TelemetryPlan("practice", interval=0.02, idle_s=0.05, practice_url=URL)
    meter = open_meter(plan, Where(**NOWHERE))
    idle = meter.baseline()
    assert idle["sources"][0]["mean_power_w"] == pytest.approx(35.0) and meter.baseline() is idle
    _serve(monkeypatch, watts=95.0)
    meter.start()
    level = meter.stop()
    assert meter.stop() is None  # one summary per level
    e = energy_part(level, idle, meter.asked, meter.absent, 190, 2)
    assert e["label"] == "imitation" and e["method"] == INTEGRATED and e["idle_power_w"] == 35.0
    assert e["mean_power_w"] == pytest.approx(95.0)
    meter.close()


def test_a_named_source_absent_here_is_one_line_and_the_sweep_goes_on(capsys, monkeypatch):
    monkeypatch.setattr("harness.energy.meter.Where", lambda: Where(**NOWHERE))
    meter = start(TelemetryPlan("rapl", idle_s=0))
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("warning: telemetry: rapl: ") and err.rstrip().endswith(
        "the levels are measured without it"
    )
    assert meter is not None and meter.found.sources == [] and meter.absent.keys() == {"rapl"}


def test_each_level_prints_its_energy_and_cost_and_says_imitation():
    e = {
        "energy_j": 650.0, "mean_power_w": 65.0, "method": INTEGRATED, "source": "practice",
        "devices": ["imitation of kit"], "label": "imitation", "j_per_output_token": 0.5,
        "j_per_request": 65.0, "output_tokens_per_j": 2.0, "idle_power_w": 35.0, "sources": [{}],
    }  # fmt: skip
    cost = {"basis": "per-kwh", "price": 0.3, "per_million_output_tokens": 0.0417}
    energy, priced = energy_lines({"energy": e, "cost": cost})
    assert energy.strip().startswith("energy [IMITATION]: 65.0 W mean, 650.0 J (power-integrated, practice")
    assert "0.5000 J per output token" in energy and "2.000 output tokens per J; idle 35.0 W" in energy
    assert priced.strip() == "cost per million output tokens: 0.0417 (at 0.3 per kWh)"
    unread = {**e, "energy_j": None, "reason": "no source gave energy: x"}
    assert energy_lines({"energy": unread}) == ["         energy: none (no source gave energy: x)"]
    assert energy_lines({"energy": {**unread, "sources": []}}) == []  # said once, before the levels
