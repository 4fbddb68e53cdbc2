"""The telemetry of one measurement, written once for ``harness sweep``, ``harness capacity``,
``harness measure`` and Locust's own runs: the sources ``--telemetry`` found (a source asked for by
name and absent is one line, and the load is measured all the same), an idle baseline read once
before the first level, and one ``TelemetrySampler`` around each level, started before its first
request and stopped after its last (the sampler reads on its own native thread, off the load
loop). What a record carries of it is ``harness.energy.record_part``'s; ``record_parts`` gives both
parts the same way for every caller.

Locust's runs (``locust --headless`` and the web UI) keep one meter per process that runs the users
or collects their samples (local or master; a worker reads nothing), opened after the endpoint
proof where ``--host`` is given, else at the first test's start; each test is one span, and in the
web UI a change of user count starts a new one (``Meter.split``: no device read on the loop), so
each phase's record has its own energy (``LocustRun``). Inside ``harness sweep`` the runner sets
``harness_workload_external`` and the sweep's own meter measures each level."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from harness.energy.arithmetic import SPAN, check_price
from harness.energy import IMITATIONS
from harness.energy.detect import Detection, Where, detect, parse_spec
from harness.energy.readings import SAMPLED, SOURCE
from harness.energy.record_part import ENERGY, cost_part, energy_lines, energy_part
from harness.records.level import LEVEL
from harness.energy.sampler import DEFAULT_INTERVAL, TelemetrySampler, idle_baseline
from harness.energy.sources.practice import ROUTE as PRACTICE_ROUTE
from harness.errors import ConfigError

DEFAULT_IDLE_S = 2.0


@dataclass(frozen=True)
class TelemetryPlan:
    """What a sweep was asked to read: ``spec`` (``--telemetry``), the interval, the idle
    reading's length (0: none) and whether the idle power is taken off (``--subtract-idle``)."""

    spec: str = "auto"
    interval: float = DEFAULT_INTERVAL
    idle_s: float = DEFAULT_IDLE_S
    subtract_idle: bool = False
    practice_url: str | None = None  # where ``practice`` reads the practice server's imitation


class Meter:
    """The sources of one sweep, its idle baseline and the sampler of the level now running."""

    def __init__(self, plan: TelemetryPlan, found: Detection) -> None:
        self.plan, self.found = plan, found
        self.idle: dict | None = None
        self._sampler: TelemetrySampler | None = None

    @property
    def asked(self) -> str:
        return self.plan.spec

    @property
    def absent(self) -> dict[str, str]:
        return dict(self.found.absent)

    def lines(self) -> list[str]:
        """One line per source asked for that is absent (the sweep prints them)."""
        return self.found.lines()

    def baseline(self) -> dict | None:
        """The idle reading, once (before the first level); None without sources or with 0 s."""
        if self.idle is None and self.found.sources and self.plan.idle_s > 0:
            self.idle = idle_baseline(self.found.sources, self.plan.idle_s, self.plan.interval)
        return self.idle

    def start(self) -> None:
        """A new sampler for the level about to start (nothing without sources)."""
        self._sampler = None
        if self.found.sources:
            self._sampler = TelemetrySampler(self.found.sources, self.plan.interval)
            self._sampler.start()

    def stop(self) -> dict | None:
        """The level's summary (None when no sampler ran)."""
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return None
        sampler.stop()
        return sampler.summary()

    def split(self) -> dict | None:
        """The running level's summary so far, its sampler going on as a new span (the web UI's
        phases: ``TelemetrySampler.split``); None when no sampler runs."""
        return None if self._sampler is None else self._sampler.split()

    def close(self) -> None:
        self.found.close()


def open_meter(plan: TelemetryPlan, where: Where | None = None) -> Meter:
    """The sources ``plan.spec`` asks for, opened (ConfigError for a spec that is no word); one
    asked for by name and absent is no error here: its line is in ``Meter.lines``."""
    where = where or Where()
    if plan.practice_url and where.practice_url is None:
        where = replace(where, practice_url=plan.practice_url)
    return Meter(plan, detect(plan.spec, where))


def idle_text(idle: dict, telemetry: TelemetryPlan) -> str:
    """The idle baseline in one line."""
    parts = []
    for s in idle.get(SAMPLED.sources, []):
        watts = s.get(SPAN.mean_power_w)
        parts.append(f"{s[SOURCE.source]} {s[SOURCE.device]} {'-' if watts is None else f'{watts:.1f} W'}")
    taken = (
        "taken off each level (--subtract-idle)" if telemetry.subtract_idle else "shown beside, not taken off"
    )
    return f"idle baseline over {idle.get(SAMPLED.seconds, 0):g} s: {', '.join(parts)}; {taken}"


def plan_options(args, root: str) -> dict:
    """The SweepPlan fields of the telemetry options (``--telemetry``, its interval, the idle
    baseline, ``--subtract-idle``, the prices); ``root`` is the server whose practice imitation
    ``practice`` reads. The caller has checked their ranges (``options.check`` with TELEMETRY_SET)."""
    parse_spec(args.telemetry)  # a word that is none of them: one line before anything starts
    plan = TelemetryPlan(
        spec=args.telemetry,
        interval=args.telemetry_interval,
        idle_s=args.idle_seconds,
        subtract_idle=args.subtract_idle,
        practice_url=root + PRACTICE_ROUTE,
    )
    return {"telemetry": plan, "price_per_hour": args.price_per_hour, "price_per_kwh": args.price_per_kwh}


@dataclass(frozen=True)
class Voice:
    """How a meter's opening lines are said: ``lead`` before each, ``warn`` before the line of a
    source asked for by name and absent (on stderr, ending with ``without``), the others on stderr
    or stdout, and whether "no source here" is said (``say_none``)."""

    lead: str
    warn: str
    to_stderr: bool
    without: str
    say_none: bool


SWEEP = Voice("    ", "warning: ", False, "the levels are measured without it", True)  # capacity, measure too
LOCUST = Voice("harness: ", "harness: warning: ", True, "the load is measured without it", False)


def announce(meter: Meter, voice: Voice = SWEEP) -> None:
    """The sources found and one line for each absent one, then the idle baseline (read here,
    before the first level): nothing for ``--telemetry none``."""
    if meter.asked.strip().lower() == "none":
        return
    named = meter.found.by_name
    out = sys.stderr if voice.to_stderr else sys.stdout
    for line in meter.lines():
        if named:
            print(f"{voice.warn}telemetry: {line}; {voice.without}", file=sys.stderr)
        else:
            print(f"{voice.lead}telemetry: {line}", file=out)
    found = meter.found.sources
    if not found:
        if voice.say_none and not named:  # asked by name: its one line above says it all
            why = "the levels carry no energy figure (a null with its reason)"
            print(f"{voice.lead}telemetry: no source here; {why}")
        return
    names = ", ".join(
        f"{s.kind} {s.device}" + (" [IMITATION]" if s.kind in IMITATIONS else "") for s in found
    )
    print(f"{voice.lead}telemetry: reading {names} every {meter.plan.interval:g} s", file=out, flush=True)
    idle = meter.baseline()
    if idle is not None:
        print(f"{voice.lead}telemetry: {idle_text(idle, meter.plan)}", file=out, flush=True)


def start(telemetry: TelemetryPlan | None, voice: Voice = SWEEP) -> Meter | None:
    """A meter opened and announced (``announce``); None without a plan."""
    if telemetry is None:
        return None
    meter = open_meter(telemetry)
    announce(meter, voice)
    return meter


def record_parts(
    meter: Meter | None,
    summary: dict | None,
    output_tokens: int | None,
    requests: int | None,
    wall_s: float | None,
    price_per_hour: float | None,
    price_per_kwh: float | None,
) -> dict:
    """The ``energy`` part (where a meter was open) and the ``cost`` part (where a price was given)
    of one level, speed test or Locust phase, from the sampler's ``summary`` of it: ``{}`` for
    neither."""
    out: dict = {}
    part = None
    if meter is not None:
        asked, idle, absent, net = meter.asked, meter.idle, meter.absent, meter.plan.subtract_idle
        part = out[LEVEL.energy] = energy_part(summary, idle, asked, absent, output_tokens, requests, net)
    joules = None if part is None else part[ENERGY.energy_j]
    cost = cost_part(output_tokens, wall_s, joules, price_per_hour, price_per_kwh)
    if cost is not None:
        out[LEVEL.cost] = cost
    return out


def with_parts(record, meter: Meter | None, summary: dict | None, price_per_hour, price_per_kwh):
    """A level record with the parts ``record_parts`` gives for its counts and wall clock."""
    s = record.stats
    parts = record_parts(
        meter, summary, s.output_tokens, s.completed, s.wall_s, price_per_hour, price_per_kwh
    )
    return replace(record, **parts) if parts else record


class LocustRun:
    """One Locust process's meter, the host it was opened for and the finished spans' summaries;
    Locust's event listeners (harness.load.users, harness.load.web_ui) call it."""

    def __init__(self) -> None:
        self.meter: Meter | None = None
        self.root: str | None = None
        self.spans: list = []

    @staticmethod
    def options(environment):
        """The parsed options where this process measures (standalone, not a worker), else None."""
        o = getattr(environment, "parsed_options", None)
        if (
            o is None
            or getattr(environment, "harness_workload_external", False)
            or getattr(o, "worker", False)
        ):
            return None
        return o if hasattr(o, "telemetry") else None

    def check(self, environment) -> None:
        """At Locust's init, before the endpoint proof: the prices (both, or a negative one: one
        line and exit status 2, no load sent)."""
        o = self.options(environment)
        if o is None:
            return
        try:
            check_price(o.price_per_hour, o.price_per_kwh)
        except ConfigError as exc:
            print(f"harness: {exc}; no load was sent", file=sys.stderr)
            raise SystemExit(2) from None

    def open_for(self, environment) -> Meter | None:
        """The meter for ``environment.host`` (opened, announced and its idle baseline read the
        first time; opened again when the host changes and the practice imitation is read, since
        that source reads the host). None where this process measures nothing or has no host."""
        o = self.options(environment)
        parts = urlsplit(environment.host or "")
        root = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
        if o is None or not root:
            return None
        words = {w.strip().lower() for w in (o.telemetry or "").split(",")}
        if self.meter is not None and (self.root == root or not set(IMITATIONS) & words):
            return self.meter
        if self.meter is not None:
            self.meter.close()
        plan = TelemetryPlan(
            o.telemetry, o.telemetry_interval, o.idle_seconds, o.subtract_idle, root + PRACTICE_ROUTE
        )
        self.meter, self.root, self.spans = open_meter(plan), root, []
        announce(self.meter, LOCUST)
        return self.meter

    def test_started(self, environment) -> None:
        """A test starts: a new sampler (the meter opened first where it was not yet)."""
        meter = self.open_for(environment)
        self.spans = []
        if meter is not None:
            meter.stop()  # a sampler a test left running (a stop that never came) ends unread
            meter.start()

    def new_phase(self) -> None:
        """The web UI's user count changed: the phase so far is one span, the next starts now."""
        if self.meter is not None:
            self.spans.append(self.meter.split())

    def reset(self) -> None:
        """Locust's statistics were reset during a test: the spans so far are forgotten, as the
        samples are."""
        if self.meter is not None:
            self.meter.split()
            self.spans = []

    def test_stopped(self) -> None:
        """The test stopped: the last span's summary (its sampler stopped, with a last reading)."""
        if self.meter is not None:
            summary = self.meter.stop()
            if summary is not None:
                self.spans.append(summary)

    def with_energy(self, environment, record, index: int, count: int):
        """The level record of span ``index`` of ``count`` (the web UI's phases; headless: 0 of 1)
        with its ``energy`` and ``cost`` parts (``with_parts``)."""
        o = self.options(environment)
        if o is None:
            return record
        summary = self.spans[index] if len(self.spans) == count else None
        record = with_parts(record, self.meter, summary, o.price_per_hour, o.price_per_kwh)
        if summary is None and self.meter is not None and self.meter.found.sources:
            why = f"the telemetry's spans ({len(self.spans)}) do not match the records' ({count})"
            record.energy[ENERGY.reason] = why
        return record

    @staticmethod
    def lines(record) -> list[str]:
        """The record's energy and cost lines, as ``harness sweep`` prints them under a level."""
        return [line.strip() for line in energy_lines(record.to_dict())]

    def run_lines(self, environment, samples, wall_s: float) -> list[str]:
        """A headless run without ``--labbook`` (so no record): its energy and cost lines all the same."""
        o = self.options(environment)
        if o is None:
            return []
        ok = [s for s in samples if s.ok]
        tokens = sum(s.output_tokens or 0 for s in ok)
        summary = self.spans[-1] if self.spans else None
        parts = record_parts(self.meter, summary, tokens, len(ok), wall_s, o.price_per_hour, o.price_per_kwh)
        return [line.strip() for line in energy_lines(parts)]

    def close(self) -> None:
        if self.meter is not None:
            self.meter.stop()
            self.meter.close()
        self.meter, self.root, self.spans = None, None, []


LOCUST_RUN = LocustRun()  # this process's: Locust's listeners are module-level
