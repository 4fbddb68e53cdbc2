"""Telemetry around Locust's own runs: ``locust --headless`` and the web UI read the
sources ``harness sweep`` reads, with the same options (``--telemetry``, ``--telemetry-interval``,
``--idle-seconds``, ``--subtract-idle``, the prices; ``harness.load.options``), and each level
record they write carries the same ``energy`` and ``cost`` parts (``core.energy_records``).

* The meter is opened once per Locust process that runs the users or collects their samples
  (local or master; a worker reads nothing): at init, after the endpoint proof, where ``--host``
  is given, else at the first test's start (the web UI's host is chosen in its form). A source
  named and absent is one line on stderr; the load runs all the same. The idle baseline is read
  then, before any user starts.
* A sampler runs from each test's start to its stop, on its own native thread (off the gevent
  loop that stamps the tokens; ``io.telemetry.sampler``). In the web UI a change of user count
  starts a new phase, and so a new span (``Meter.split``: no device read on the loop), so each
  phase's record has its own energy.
* Nothing here runs inside ``harness sweep`` (its runner sets ``harness_workload_external`` and
  its own meter measures each level)."""

from __future__ import annotations

import sys
from dataclasses import replace
from urllib.parse import urlsplit

from harness.core.energy import check_price
from harness.core.energy_records import cost_part, energy_lines, energy_part
from harness.errors import ConfigError
from harness.io.telemetry.detect import IMITATIONS
from harness.io.telemetry.meter import Meter, TelemetryPlan, idle_text, open_meter
from harness.io.telemetry.practice import ROUTE as PRACTICE_ROUTE

# this process's meter and the host it was opened for; "spans": the finished phases' summaries
STATE: dict = {"meter": None, "root": None, "spans": []}


def _options(environment):
    """The parsed options where this process measures (standalone, not a worker), else None."""
    o = getattr(environment, "parsed_options", None)
    if o is None or getattr(environment, "harness_workload_external", False) or getattr(o, "worker", False):
        return None
    return o if hasattr(o, "telemetry") else None


def _root(host: str | None) -> str:
    parts = urlsplit(host or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def check(environment) -> None:
    """At Locust's init, before the endpoint proof: the prices (both, or a negative one: one line
    and exit status 2, no load sent)."""
    o = _options(environment)
    if o is None:
        return
    try:
        check_price(o.price_per_hour, o.price_per_kwh)
    except ConfigError as exc:
        print(f"harness: {exc}; no load was sent", file=sys.stderr)
        raise SystemExit(2) from None


def open_for(environment) -> Meter | None:
    """This process's meter for ``environment.host`` (opened, its lines said and its idle baseline
    read the first time; opened again when the host changes and the practice imitation is read,
    since that source reads the host). None where this process measures nothing or has no host."""
    o = _options(environment)
    root = _root(environment.host)
    if o is None or not root:
        return None
    meter = STATE["meter"]
    if meter is not None and (STATE["root"] == root or not set(IMITATIONS) & _words(o.telemetry)):
        return meter
    if meter is not None:
        meter.close()
    plan = TelemetryPlan(
        o.telemetry, o.telemetry_interval, o.idle_seconds, o.subtract_idle, root + PRACTICE_ROUTE
    )
    meter = open_meter(plan)
    STATE.update(meter=meter, root=root, spans=[])
    _say(meter)
    return meter


def _words(spec: str) -> set[str]:
    return {w.strip().lower() for w in (spec or "").split(",")}


def _say(meter: Meter) -> None:
    """The sources found and one line for each absent one, then the idle baseline (read here)."""
    if meter.asked.strip().lower() == "none":
        return
    named = meter.found.by_name
    for line in meter.lines():
        tail = "; the load is measured without it" if named else ""
        print(f"harness: {'warning: ' if named else ''}telemetry: {line}{tail}", file=sys.stderr)
    found = meter.found.sources
    if not found:
        return
    names = ", ".join(
        f"{s.kind} {s.device}" + (" [IMITATION]" if s.kind in IMITATIONS else "") for s in found
    )
    print(f"harness: telemetry: reading {names} every {meter.plan.interval:g} s", file=sys.stderr)
    idle = meter.baseline()
    if idle is not None:
        print(f"harness: telemetry: {idle_text(idle, meter.plan)}", file=sys.stderr)


def test_started(environment) -> None:
    """A test starts: a new sampler (the meter opened first where it was not yet)."""
    meter = open_for(environment)
    STATE["spans"] = []
    if meter is not None:
        meter.stop()  # a sampler a test left running (a stop that never came) ends unread
        meter.start()


def new_phase() -> None:
    """The web UI's user count changed: the phase so far is one span, the next starts now."""
    meter = STATE["meter"]
    if meter is not None:
        STATE["spans"].append(meter.split())


def reset() -> None:
    """Locust's statistics were reset during a test: the spans so far are forgotten, as the samples are."""
    meter = STATE["meter"]
    if meter is not None:
        meter.split()
        STATE["spans"] = []


def test_stopped() -> None:
    """The test stopped: the last span's summary (its sampler stopped, with a last reading)."""
    meter = STATE["meter"]
    if meter is not None:
        summary = meter.stop()
        if summary is not None:
            STATE["spans"].append(summary)


def with_energy(environment, record, index: int, count: int):
    """The level record of span ``index`` of ``count`` (the web UI's phases; headless: 0 of 1) with
    its ``energy`` part where a meter was open and its ``cost`` part where a price was given."""
    o = _options(environment)
    if o is None:
        return record
    meter, spans = STATE["meter"], STATE["spans"]
    stats, part = record.stats, None
    if meter is not None:
        telemetry = spans[index] if len(spans) == count else None
        part = energy_part(
            telemetry,
            meter.idle,
            meter.asked,
            meter.absent,
            stats.output_tokens,
            stats.completed,
            meter.plan.subtract_idle,
        )
        if telemetry is None and meter.found.sources:
            part["reason"] = f"the telemetry's spans ({len(spans)}) do not match the records' ({count})"
    joules = None if part is None else part["energy_j"]
    cost = cost_part(stats.output_tokens, stats.wall_s, joules, o.price_per_hour, o.price_per_kwh)
    return replace(record, energy=part, cost=cost) if part is not None or cost is not None else record


def lines(record) -> list[str]:
    """The record's energy and cost lines, as ``harness sweep`` prints them under a level."""
    return [line.strip() for line in energy_lines(record.to_dict())]


def run_lines(environment, samples, wall_s: float) -> list[str]:
    """A headless run without ``--labbook`` (so no record): its energy and cost lines all the same."""
    o, meter, spans = _options(environment), STATE["meter"], STATE["spans"]
    if o is None:
        return []
    ok = [s for s in samples if s.ok]
    tokens = sum(s.output_tokens or 0 for s in ok)
    part = None
    if meter is not None:
        summary = spans[-1] if spans else None
        part = energy_part(
            summary, meter.idle, meter.asked, meter.absent, tokens, len(ok), meter.plan.subtract_idle
        )
    joules = None if part is None else part["energy_j"]
    cost = cost_part(tokens, wall_s, joules, o.price_per_hour, o.price_per_kwh)
    return [line.strip() for line in energy_lines({"energy": part, "cost": cost})]


def close() -> None:
    meter = STATE["meter"]
    if meter is not None:
        meter.stop()
        meter.close()
    STATE.update(meter=None, root=None, spans=[])
