"""A level's energy and cost as its record carries them: the ``energy`` and ``cost``
parts of a level record, from the sampler's summary of the level, the idle baseline and the
level's own counts. Pure: plain dicts in, plain dicts out.

Which sources make the level's headline figure: the first kind in ``HEADLINE_ORDER`` that has a
device with an energy figure (the accelerator before the CPU; the practice server's imitation
first, since it is only read when asked for by name). Its devices' energies are added up (two
cards are both the level's); RAPL's ``psys`` zone, where present, stands alone, since it includes
``package-0``. Every source's own figures stay in ``sources``, the headline's or not.

Nothing here makes up a figure: a level with no source, or whose headline device gave no energy
or only part of the level's (``partial``: its reads failed at an end of the level), has
``energy_j`` None and ``reason`` saying why, the device's own figures kept in ``sources``;
``label`` is "imitation" or "stand-in" whenever a headline device is not a real one, so no reader
takes it for a measurement.
"""

from __future__ import annotations

from harness.energy import arithmetic as energy
from harness.energy.arithmetic import PRICED, SPAN
from harness.energy.readings import SAMPLED, SOURCE, level_energy
from harness.records.level import LEVEL

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

HEADLINE_ORDER = ("practice", "nvml", "amdsmi", "hwmon", "powermetrics", "rapl")
RAPL_WHOLE = "psys"  # the platform zone of a laptop: it includes package-0


# The level record's ``energy`` and ``cost`` parts, declared once beside their builders; the level
# schema (scripts/schemas.py) takes them from here (``LevelRecord``'s ``declared_in``).
ENERGY_SCHEMA: dict = {
    "type": "object",
    "description": (
        "added: the level's energy from the telemetry sources (docs/telemetry.md); each figure "
        "null where it could not be had, with the reason beside it; label says imitation (the "
        "practice server's made-up figure) or stand-in where the headline devices are no real "
        "device"
    ),
    "required": [
        "telemetry",
        "source",
        "energy_j",
        "mean_power_w",
        "j_per_output_token",
        "output_tokens_per_j",
    ],
    "properties": {
        "telemetry": {"type": "string", "description": "the --telemetry words asked for"},
        "interval_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "source": {
            "type": ["string", "null"],
            "description": (
                "the kind of the headline devices: nvml, amdsmi, hwmon, powermetrics, rapl or practice"
            ),
        },
        "devices": {"type": "array", "items": {"type": "string"}},
        "label": {
            "type": "string",
            "description": "imitation or stand-in: never a measurement of a real device",
        },
        "method": {"enum": ["counter", "power-integrated", "mixed", None]},
        "energy_j": {
            "type": ["number", "null"],
            "minimum": 0,
            "description": (
                "J over the sampler's span: from just before the level's first request to just after its last"
            ),
        },
        "seconds": {"type": ["number", "null"], "minimum": 0},
        "mean_power_w": {
            "type": ["number", "null"],
            "minimum": 0,
            "description": "W: the energy over its span",
        },
        "idle_power_w": {
            "type": ["number", "null"],
            "minimum": 0,
            "description": "W of the same devices read before the first level",
        },
        "subtracted_idle": {"type": "boolean"},
        "net_energy_j": {
            "type": ["number", "null"],
            "description": "energy minus idle W x seconds (--subtract-idle); may be below 0",
        },
        "j_per_output_token": {"type": ["number", "null"], "minimum": 0},
        "j_per_request": {"type": ["number", "null"], "minimum": 0},
        "output_tokens_per_j": {"type": ["number", "null"], "minimum": 0},
        "reason": {"type": "string"},
        "idle_reason": {"type": "string"},
        "absent": {"type": "object", "additionalProperties": {"type": "string"}},
        "sources": {
            "type": "array",
            "items": {"type": "object", "required": ["source", "device"]},
            "description": "each source's own summary (harness.energy.sampler)",
        },
    },
}
COST_SCHEMA: dict = {
    "type": "object",
    "description": (
        "added: the cost of a million output tokens at this level, from --price-per-hour (the "
        "level's wall clock) or --price-per-kwh (the headline devices' measured energy)"
    ),
    "required": ["basis", "price", "per_million_output_tokens"],
    "properties": {
        "basis": {"enum": ["per-hour", "per-kwh"]},
        "price": {"type": "number", "minimum": 0},
        "per_million_output_tokens": {"type": ["number", "null"], "minimum": 0},
        "reason": {"type": "string"},
    },
}


class PartKeys:
    """The keys of a part declared here as a schema, as attributes: ``ENERGY.energy_j`` is the key
    ``"energy_j"``. Readers take the keys from here, so each is spelled once, in its schema, and a
    misspelt one fails where it is used (``harness.schema_facts.FieldNames`` for a dataclass)."""

    def __init__(self, schema: dict) -> None:
        self._names = frozenset(schema["properties"])

    def __getattr__(self, name: str) -> str:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"no part field {name!r}")
        return name


ENERGY = PartKeys(ENERGY_SCHEMA)  # a level's (or speed test's) energy part
COST = PartKeys(COST_SCHEMA)  # its cost part


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def headline_sources(sources: list[dict]) -> list[dict]:
    """The sources whose energies are the level's headline figure (see the module docstring)."""
    for kind in HEADLINE_ORDER:
        of_kind = [s for s in sources if s.get(SOURCE.source) == kind]
        if not any(s.get(SPAN.energy_j) is not None for s in of_kind):
            continue
        if kind == "rapl":
            whole = [
                s for s in of_kind if s.get(SOURCE.device) == RAPL_WHOLE and s.get(SPAN.energy_j) is not None
            ]
            return whole or of_kind
        return of_kind
    return []


def _idle_of(idle: dict | None, chosen: list[dict]) -> tuple[float | None, str | None]:
    """The idle power (W) of the headline devices, added up; None and why where one has none."""
    if idle is None:
        return None, "no idle baseline was taken"
    by_device = {(s.get(SOURCE.source), s.get(SOURCE.device)): s for s in idle.get(SAMPLED.sources, [])}
    total = 0.0
    for s in chosen:
        base = by_device.get((s.get(SOURCE.source), s.get(SOURCE.device)))
        if base is None or base.get(SPAN.mean_power_w) is None:
            why = (base or {}).get(SPAN.reason) or "not read before the first level"
            return None, f"{s.get(SOURCE.source)} {s.get(SOURCE.device)}: no idle power ({why})"
        total += base[SPAN.mean_power_w]
    return total, None


def _no_energy(chosen: list[dict], sources: list[dict], absent: dict[str, str]) -> str:
    """Why a level has no energy figure, in one line."""
    if not sources:
        lines = [line for word, line in absent.items() if word != "none"]
        if "none" in absent:
            return absent["none"]
        return "no telemetry source here" + (f" ({'; '.join(lines)})" if lines else "")
    reasons = [_said(s) for s in sources]
    return "no source gave energy: " + "; ".join(reasons)


def energy_part(
    telemetry: dict | None,
    idle: dict | None,
    asked: str,
    absent: dict[str, str],
    output_tokens: int | None,
    requests: int | None,
    subtract_idle: bool = False,
) -> dict:
    """The level record's ``energy`` object. ``telemetry``: the sampler's summary of the level
    (``{"interval_s", "sources": [...]}``, None when no sampler ran); ``idle``: the baseline's
    summary; ``asked``: the ``--telemetry`` words; ``absent``: word -> why that source is not read;
    ``output_tokens`` and ``requests``: the level's completed output tokens and requests."""
    sources = list((telemetry or {}).get(SAMPLED.sources, []))
    chosen = headline_sources(sources)
    out: dict = {ENERGY.telemetry: asked}
    if telemetry is not None:
        out[ENERGY.interval_s] = telemetry.get(SAMPLED.interval_s)
    out[ENERGY.source] = chosen[0][SOURCE.source] if chosen else None
    out[ENERGY.devices] = [str(s.get(SOURCE.device)) for s in chosen]
    labels = sorted({s[SOURCE.label] for s in chosen if s.get(SOURCE.label)})
    if labels:
        out[ENERGY.label] = ", ".join(labels)
    gaps = [s for s in chosen if s.get(SPAN.energy_j) is None or s.get(SOURCE.partial)]
    joules = None if not chosen or gaps else sum(s[SPAN.energy_j] for s in chosen)
    seconds = max((s[SPAN.seconds] for s in chosen if s.get(SPAN.seconds) is not None), default=None)
    methods = sorted({s[SPAN.method] for s in chosen if s.get(SPAN.method)})
    out[ENERGY.method] = None if joules is None else methods[0] if len(methods) == 1 else "mixed"
    idle_w, idle_why = _idle_of(idle, chosen) if chosen else (None, None)
    figures = level_energy(joules, seconds, output_tokens, requests, idle_w, subtract_idle)
    if joules is not None and len(chosen) > 1:  # each device's own span: its power, added up
        powers = [energy.mean_power(s[SPAN.energy_j], s.get(SPAN.seconds)) for s in chosen]
        figures[SPAN.mean_power_w] = None if None in powers else sum(p for p in powers if p is not None)
    figures.setdefault("idle_power_w", None)
    out.update(
        energy_j=_round(figures[SPAN.energy_j], 3),
        seconds=_round(figures[SPAN.seconds], 3),
        mean_power_w=_round(figures[SPAN.mean_power_w], 3),
        idle_power_w=_round(figures["idle_power_w"], 3),
        subtracted_idle=figures["subtracted_idle"],
    )
    if "net_energy_j" in figures:
        out["net_energy_j"] = _round(figures["net_energy_j"], 3)
    out.update(
        j_per_output_token=_round(figures["j_per_output_token"], 6),
        j_per_request=_round(figures["j_per_request"], 4),
        output_tokens_per_j=_round(figures["output_tokens_per_j"], 5),
    )
    reason = figures.get(SPAN.reason)
    if joules is None:
        reason = _no_energy(chosen, sources, absent) if not chosen else "; ".join(_said(s) for s in gaps)
    elif out["j_per_output_token"] is None and reason is None:
        reason = "no output tokens at this level"
    if reason:
        out[ENERGY.reason] = reason
    if idle_why and chosen:
        out["idle_reason"] = idle_why
    if absent:
        out["absent"] = dict(absent)
    out[ENERGY.sources] = [_tidy(s) for s in sources]
    return out


def _said(source: dict) -> str:
    """A source and why it gave no energy, as a reason names it."""
    return (
        f"{source.get(SOURCE.source)} {source.get(SOURCE.device)}: {source.get(SPAN.reason) or 'no energy'}"
    )


def _tidy(value):
    """A source's summary with its floats to 6 significant places (a record is read by people)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _tidy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tidy(v) for v in value]
    return value


def cost_part(
    output_tokens: int | None,
    wall_s: float | None,
    joules: float | None,
    price_per_hour: float | None = None,
    price_per_kwh: float | None = None,
) -> dict | None:
    """The level record's ``cost`` object (None when no price was given): the cost of a million
    output tokens from the level's wall clock (a price per hour of the machine) or from its
    measured energy (a price per kWh; the headline devices' energy only, not the whole machine's)."""
    found = energy.cost_per_million_tokens(output_tokens, wall_s, joules, price_per_hour, price_per_kwh)
    if found is None:
        return None
    out = {
        COST.basis: found[PRICED.basis],
        COST.price: found[PRICED.price],
        COST.per_million_output_tokens: _round(found[PRICED.cost], 6),
    }
    if found.get(PRICED.reason):
        out[COST.reason] = found[PRICED.reason]
    return out


def energy_words(e: dict | None) -> str | None:
    """A level's power and energy per token for an answer line ("at 210 W, 0.9 J per output
    token"; "(IMITATION)" after it where the figure is made up), or None without both figures."""
    if not e or e.get(ENERGY.mean_power_w) is None or e.get(ENERGY.j_per_output_token) is None:
        return None
    net = " net of idle" if e.get(ENERGY.subtracted_idle) else ""
    label = f" ({e[ENERGY.label].upper()})" if e.get(ENERGY.label) else ""
    watts, joules = e[ENERGY.mean_power_w], e[ENERGY.j_per_output_token]
    return f"at {watts:.0f} W, {joules:.3g} J per output token{net}{label}"


def _n(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def energy_lines(r: dict) -> list[str]:
    """A level's energy and cost lines as the sweep prints them under each level (none for a level
    without either, or with telemetry off); ``r`` is the level record as a dict."""
    lines = []
    e, cost = r.get(LEVEL.energy), r.get(LEVEL.cost)
    if e and e.get(ENERGY.energy_j) is not None:
        label = f" [{e[ENERGY.label].upper()}]" if e.get(ENERGY.label) else ""
        idle = "" if e.get(ENERGY.idle_power_w) is None else f"; idle {e[ENERGY.idle_power_w]:.1f} W"
        net = " (net of idle)" if e.get(ENERGY.subtracted_idle) else ""
        where = f"{e[ENERGY.source]} {', '.join(e[ENERGY.devices])}"
        lines.append(
            f"         energy{label}: {_n(e[ENERGY.mean_power_w], '.1f')} W mean, {e[ENERGY.energy_j]:.1f} J "
            f"({e[ENERGY.method]}, {where}); {_n(e[ENERGY.j_per_output_token], '.4f')} J "
            f"per output token{net}, {_n(e[ENERGY.j_per_request], '.2f')} J per request, "
            f"{_n(e[ENERGY.output_tokens_per_j], '.3f')} output tokens per J{idle}"
        )
        if e.get(ENERGY.reason):
            lines.append(f"         energy: {e[ENERGY.reason]}")
    elif e and e.get(ENERGY.sources):  # sources read, but no energy: why
        lines.append(f"         energy: none ({e.get(ENERGY.reason)})")
    if cost:
        figure = cost.get(COST.per_million_output_tokens)
        basis = "per hour" if cost[COST.basis] == "per-hour" else "per kWh"
        said = f"{figure:.4f}" if figure is not None else f"none ({cost.get(COST.reason)})"
        lines.append(f"         cost per million output tokens: {said} (at {cost[COST.price]:g} {basis})")
    return lines
