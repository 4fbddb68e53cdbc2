"""The telemetry glue written once (harness.energy.meter): the sweep and Locust say the same facts
in their own voice, every caller gets a record's energy and cost parts from ``record_parts``, and a
Locust run's phases each get their own span. The practice source is read through a stub of
``harness.endpoints.http_client.request`` (no socket)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from harness.energy.detect import Where
from harness.energy import meter as m
from harness.energy.meter import LOCUST, SWEEP, LocustRun, TelemetryPlan, announce, open_meter, record_parts
from harness import options
from harness.errors import ConfigError
from harness.options.telemetry import TELEMETRY_SET
from tests.unit.energy.test_sources_practice import NOWHERE, URL, _serve


def _meter(monkeypatch, spec="practice", idle_s=0.05):
    _serve(monkeypatch, watts=40.0)
    monkeypatch.setattr(m, "Where", lambda: Where(**NOWHERE))
    return open_meter(TelemetryPlan(spec, interval=0.02, idle_s=idle_s, practice_url=URL))


def test_the_sweep_and_locust_say_the_same_lines_each_in_its_own_voice(monkeypatch, capsys):
    announce(_meter(monkeypatch), SWEEP)
    sweep = capsys.readouterr()
    announce(_meter(monkeypatch), LOCUST)
    locust = capsys.readouterr()
    said = sweep.out.splitlines()
    assert sweep.err == "" and locust.out == "" and len(said) == 2
    assert said[0] == "    telemetry: reading practice imitation of kit [IMITATION] every 0.02 s"
    assert said[1].startswith("    telemetry: idle baseline over 0.05 s: practice imitation of kit 40.0 W")
    assert locust.err.splitlines() == ["harness: " + line.strip() for line in said]


def test_a_named_source_absent_is_one_warning_in_each_voice(monkeypatch, capsys):
    announce(_meter(monkeypatch, spec="rapl"), LOCUST)
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("harness: warning: telemetry: rapl: ")
    assert line.endswith("; the load is measured without it")
    announce(_meter(monkeypatch, spec="none"), SWEEP)
    assert capsys.readouterr() == ("", "")


def test_record_parts_give_energy_where_metered_and_cost_where_priced(monkeypatch):
    assert record_parts(None, None, 100, 2, 10.0, None, None) == {}
    [cost] = record_parts(None, None, 1_000_000, 2, 3600.0, 2.0, None).values()
    assert cost["per_million_output_tokens"] == pytest.approx(2.0) and cost["basis"] == "per-hour"
    meter = _meter(monkeypatch, idle_s=0)
    meter.start()
    parts = record_parts(meter, meter.stop(), 100, 2, 1.0, None, 0.3)
    assert parts.keys() == {"energy", "cost"} and parts["energy"]["label"] == "imitation"
    assert parts["cost"]["basis"] == "per-kwh"


@dataclass(frozen=True)
class _Record:
    stats: SimpleNamespace
    energy: dict | None = None
    cost: dict | None = None


def _environment(**options):
    o = dict(telemetry="practice", telemetry_interval=0.02, idle_seconds=0, subtract_idle=False)
    o = {"price_per_hour": None, "price_per_kwh": None, **o, **options}
    return SimpleNamespace(parsed_options=SimpleNamespace(**o), host="http://127.0.0.1:9/v1")


def test_a_locust_run_gives_each_phase_its_span_and_says_when_they_do_not_match(monkeypatch, capsys):
    _serve(monkeypatch, watts=40.0)
    monkeypatch.setattr(m, "Where", lambda: Where(**NOWHERE))
    run, env = LocustRun(), _environment()
    run.test_started(env)
    assert run.meter is not None and run.meter.plan.practice_url == URL
    time.sleep(0.1)  # a few readings in each phase
    run.new_phase()
    time.sleep(0.1)
    run.test_stopped()
    assert len(run.spans) == 2
    record = _Record(SimpleNamespace(output_tokens=10, completed=1, wall_s=1.0))
    first = run.with_energy(env, record, 0, 2)
    assert first.energy["source"] == "practice" and "reason" not in first.energy
    lost = run.with_energy(env, record, 0, 3)
    assert lost.energy["reason"] == "the telemetry's spans (2) do not match the records' (3)"
    run.close()
    assert run.meter is None and run.spans == []
    worker = SimpleNamespace(parsed_options=SimpleNamespace(worker=True, telemetry="auto"), host=env.host)
    assert run.open_for(worker) is None and run.with_energy(worker, record, 0, 1) is record
    capsys.readouterr()


def test_locust_refuses_a_negative_price_before_any_load(capsys):
    with pytest.raises(SystemExit) as stopped:
        LocustRun().check(_environment(price_per_kwh=-1.0))
    assert stopped.value.code == 2
    assert capsys.readouterr().err.endswith("; no load was sent\n")
    with pytest.raises(ConfigError):  # the sweep's and measure's check: the same declarations
        options.check(_environment(price_per_kwh=-1.0).parsed_options, TELEMETRY_SET)
