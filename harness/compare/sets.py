"""Which runs may be compared, and what differs between them. A run is one label's level records.

Runs are comparable when they sent the same requests under the same objectives: the gate's
conditions (model, workload and lengths, prompt set, answer limit, arrival, objectives) hold one
value in all of them. Comparable runs form a set, the first run named in it its reference. What
may differ inside a set is the server under test (``IDENTITY``: engine, version, quantisation,
machine, settings), and that is what a comparison names and colours by. Pure: records in, sets out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness.machine.part import accelerator_names
from harness.measure import curves
from harness.sizing import gate
from harness.report.curve_tables import said
from harness.records.level import LEVEL, STATS

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

# What a comparison names when it differs: record field -> the word for it. The first that
# differs colours the charts. ``hardware`` is read from the record's machine part (its stable
# facts only: the CPU's model and each accelerator's name, never free memory).
IDENTITY = {
    LEVEL.engine: "engine",
    LEVEL.engine_version: "version",
    LEVEL.quant: "quantisation",
    LEVEL.host: "machine",
    "hardware": "hardware",
    LEVEL.server_slots: "slots",
    LEVEL.context_length: "context",
    LEVEL.endpoint: "endpoint",
}
_DEFAULTS = {LEVEL.endpoint: "chat"}  # what a record without the field ran with


@dataclass(frozen=True)
class Run:
    """One label's level records from one notebook, as a comparison names it."""

    name: str
    source: str
    records: tuple[dict, ...]

    def by_level(self) -> dict[float, list[dict]]:
        """Every run of each offered level (the gate's grouping: crowd, or rate for an open loop)."""
        return gate.by_level(list(self.records))

    def levels(self) -> dict[int, dict]:
        """Each crowd size's runs merged: medians, with the range of the runs as ``spread``."""
        runs: dict[int, list[dict]] = {}
        for rec in self.records:
            runs.setdefault(int(rec[STATS.concurrency]), []).append(rec)
        return {c: curves.merge_runs(rs) for c, rs in sorted(runs.items())}


# The practice server serves no weights: its model is the name it was given, so a practice run
# and an engine's run of the same requests are comparable whatever that name is.
PRACTICE = "practice"


def hardware(record: dict) -> str | None:
    """The machine part's stable facts in words (``AMD EPYC ... + NVIDIA GB10``), None without one."""
    part = record.get(LEVEL.machine)
    if not isinstance(part, dict):
        return None
    names = [(part.get("cpu") or {}).get("model"), *accelerator_names(part)]
    shown = [str(n) for n in names if n]
    return " + ".join(shown) or None


def _field(record: dict, name: str) -> object:
    return hardware(record) if name == "hardware" else record.get(name, _DEFAULTS.get(name))


def identity(run: Run) -> dict[str, str]:
    """The run's value of each ``IDENTITY`` field in words ("a or b" where its records differ)."""
    out = {}
    for name in IDENTITY:
        seen = dict.fromkeys(said(_field(r, name)) for r in run.records)
        out[name] = " or ".join(seen)
    return out


def differing(runs: list[Run]) -> list[str]:
    """The ``IDENTITY`` fields whose value is not the same in every run, in ``IDENTITY``'s order."""
    ids = [identity(r) for r in runs]
    return [name for name in IDENTITY if len({i[name] for i in ids}) > 1]


def change_words(reference: Run, run: Run) -> str:
    """What differs from the reference in words: ``engine practice -> llama.cpp, slots 8 -> 4``."""
    a, b = identity(reference), identity(run)
    found = [f"{IDENTITY[n]} {a[n]} -> {b[n]}" for n in IDENTITY if a[n] != b[n]]
    return ", ".join(found) or "nothing recorded differs"


@dataclass(frozen=True)
class RunSet:
    """Runs comparable with each other, the reference first; ``apart`` says why this set is not
    compared with the first one (None for the first set)."""

    runs: list[Run]
    apart: str | None = None

    @property
    def reference(self) -> Run:
        return self.runs[0]


def mixed(run: Run) -> str | None:
    """Why a run cannot be compared at all (its own records ran under different conditions), or None."""
    return gate.unlike(list(run.records), list(run.records), (run.name, run.name))


def sets(runs: list[Run]) -> list[RunSet]:
    """The runs in comparable sets, in the order named: each run joins the first set whose
    reference ran alike, or starts a set of its own with the reason it stands apart (against the
    first set's reference: another condition; or conditions mixed within its own records)."""
    found: list[RunSet] = []
    for run in runs:
        own = mixed(run)
        home = None if own else next((s for s in found if _alike(s.reference, run)), None)
        if home is not None:
            home.runs.append(run)
            continue
        first = next((s.reference for s in found if not mixed(s.reference)), None)
        why = own or (None if first is None else gate.unlike(*_as_sent(first, run), (first.name, run.name)))
        found.append(RunSet([run], why))
    return found


def _alike(a: Run, b: Run) -> bool:
    return gate.unlike(*_as_sent(a, b)) is None


def _as_sent(a: Run, b: Run) -> tuple[list[dict], list[dict]]:
    """Both runs' records, a practice run's model named as the other run's (``PRACTICE``)."""
    ra, rb = list(a.records), list(b.records)
    if _practice(a) and not _practice(b) and rb:
        ra = [{**r, LEVEL.model: rb[0].get(LEVEL.model)} for r in ra]
    elif _practice(b) and not _practice(a) and ra:
        rb = [{**r, LEVEL.model: ra[0].get(LEVEL.model)} for r in rb]
    return ra, rb


def _practice(run: Run) -> bool:
    return bool(run.records) and all(r.get(LEVEL.engine) == PRACTICE for r in run.records)


def conditions_text(run: Run) -> str:
    """The conditions a set shares, from its reference's first record, in words."""
    rec = run.records[0]
    parts = []
    for name, words in gate.CONDITIONS.items():
        value = rec.get(name, gate.ABSENT.get(name))
        if value is None:
            continue
        text = json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)
        parts.append(f"{words} {text}")
    return ", ".join(parts)
