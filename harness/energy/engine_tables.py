"""The engine comparison's energy: per engine, the power and energy of its single-user
speed tests (``harness measure``'s short and long tests, each over its repetitions), beside the
speed and memory tables of ``harness engines`` and the run report. Pure: the engine-speed records
(newest per engine and test, ``engine_tables.latest_per_engine``) in, cells and lines out; ``-``
where a figure is absent, and every figure from an imitation (the practice server's) or a
stand-in says so in its row and in the section's first line."""

from __future__ import annotations

from typing import Callable

from harness.energy.record_part import ENERGY
from harness.energy.tables import cost_text
from harness.records.engine import SPEED

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

ENERGY_HEAD = [
    "Engine",
    "Mean W short",
    "Mean W long",
    "Idle W",
    "J per output token short",
    "J per output token long",
    "Output tokens per J long",
    "J per request long",
    "Cost per M output tokens long",
    "Source",
]
TITLE = "Energy (single user, over each test's repetitions)"


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _pair(speed: dict, engine: str) -> tuple[dict, dict]:
    pair = speed.get(engine) or {}
    return pair.get("short") or {}, pair.get("long") or {}


def _energy(rec: dict) -> dict:
    return rec.get(SPEED.energy) or {}


def measured(order: list[str], speed: dict) -> bool:
    """Whether any engine's test has an energy figure or a cost."""
    return any(
        _energy(rec).get(ENERGY.energy_j) is not None or rec.get(SPEED.cost)
        for engine in order
        for rec in _pair(speed, engine)
    )


def labels(order: list[str], speed: dict) -> list[str]:
    """The labels (imitation, stand-in) of the figures shown: none for a real device."""
    return sorted({str(x) for e in order for rec in _pair(speed, e) if (x := _energy(rec).get("label"))})


def _source(short: dict, long: dict) -> str:
    e = _energy(long) if _energy(long).get("source") else _energy(short)
    if not e.get("source"):
        return "none"
    text = f"{e[ENERGY.source]} {', '.join(e.get(ENERGY.devices, []))}"
    return f"{text} ({e['label'].upper()})" if e.get("label") else text


def energy_rows(order: list[str], speed: dict) -> list[list[str]]:
    """One row per engine with a speed record, in the order of ``ENERGY_HEAD``."""
    rows = []
    for engine in order:
        short, long = _pair(speed, engine)
        if not (short or long):
            continue
        es, el = _energy(short), _energy(long)
        net = " net" if el.get("subtracted_idle") or es.get("subtracted_idle") else ""
        rows.append(
            [
                engine,
                _f(es.get(ENERGY.mean_power_w), ".1f"),
                _f(el.get(ENERGY.mean_power_w), ".1f"),
                _f(el.get("idle_power_w", es.get("idle_power_w")), ".1f"),
                _f(es.get("j_per_output_token"), ".4g") + (net if es.get("j_per_output_token") else ""),
                _f(el.get("j_per_output_token"), ".4g") + (net if el.get("j_per_output_token") else ""),
                _f(el.get("output_tokens_per_j"), ".4g"),
                _f(el.get("j_per_request"), ".4g"),
                cost_text(long),
                _source(short, long),
            ]
        )
    return rows


def why_none(order: list[str], speed: dict) -> str:
    """Why no engine has an energy figure, from the records' own reasons."""
    for engine in order:
        for rec in _pair(speed, engine):
            if _energy(rec).get(ENERGY.reason):
                return str(_energy(rec)[ENERGY.reason])
    return "the speed tests read no telemetry (recorded before --telemetry, or with a harness without it)"


def first_line(order: list[str], speed: dict) -> str:
    """The section's first line: what the figures are, and IMITATION or STAND-IN where they are."""
    said = labels(order, speed)
    if said:
        what = " and ".join(x.upper() for x in said)
        return (
            f"{what}: these figures are not a measurement of a real device (docs/telemetry.md); "
            "they show the table's shape only."
        )
    return "Each engine's headline devices over its test's repetitions, the warm-up left out."


def section(order: list[str], speed: dict, table: Callable[[list[str], list[list[str]]], str]) -> list[str]:
    """The energy section's lines (``table(head, rows)`` renders the table): the first line and
    the table, or one line saying why there is none."""
    if not measured(order, speed):
        return [f"{TITLE}: none ({why_none(order, speed)}).", ""]
    return [f"{TITLE}:", "", first_line(order, speed), "", table(ENERGY_HEAD, energy_rows(order, speed)), ""]
