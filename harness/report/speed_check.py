"""What ``harness check`` reports: this machine's memory bandwidth and the speed limit it sets for
a model (bandwidth / model size), each single-user speed in a notebook as a share of the limit of
the model that served it, the notebook's admission recommendations, and the practice server's state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.records.sizing import AdmissionRecommendation
from harness.records.engine import SPEED
from harness.sizing import admission
from harness.sizing.arithmetic import speed_limit, speed_share
from harness.bounds import Bounds
from harness import lab
from harness.sizing.format_compare import format_for_quant
from harness.records.base import is_admission, is_engine_speed, is_level
from harness.records.level import LEVEL, LevelStats
from harness.errors import HarnessError, TargetError
from harness.engines.definitions import Engine, load_engine
from harness.endpoints.http_client import request
from harness.sizing.machines import identify, lookup, measure_bandwidth
from harness.engines.models.info import load_model
from harness.records.notebook import read_records

SEED_MODEL_GB = lab.threshold("day3_model_gb")  # the course's model (Day 3), when nothing else says


def probe_practice(base_url: str) -> dict | None:
    """The practice server's profile at ``base_url`` (None when its /health does not answer 2xx or
    3xx within 2 s; {} when its profile cannot be read)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        if request("GET", root + "/health", Bounds.of(2.0)).status >= 400:
            return None
    except TargetError:
        return None
    try:
        reply = request("GET", root + "/practice/profile", Bounds.of(2.0))
        body = reply.json()
    except (TargetError, ValueError):
        return {}
    return body if reply.status < 400 and isinstance(body, dict) else {}


@dataclass(frozen=True)
class Served:
    """One engine a run started, as its manifest tells: the name requests sent, the engine's record
    label, and the weight formats of the model file it loaded."""

    api_model: str
    engine: str
    formats: dict


def served_models(labbook: str, api_name: Callable[[Engine, dict], str]) -> list[Served]:
    """The engines of the run whose notebook this is (its manifest.json, beside the notebook), each
    with the model it loaded read from the file (a .gguf header, a Hugging Face directory); an engine
    whose model cannot be read is left out (its records then fall back to the seed's model).
    ``api_name`` is the name requests sent to an engine started with these settings."""
    manifest = Path(labbook).parent / "manifest.json"
    if not manifest.is_file():
        return []
    try:
        engines = json.loads(manifest.read_text(encoding="utf-8")).get("engines") or {}
    except (OSError, ValueError):
        return []
    out = []
    for entry in engines.values():
        settings = entry.get("settings") or {}
        if not settings.get("model"):
            continue
        try:
            engine = load_engine(entry["engine"])
            model = load_model(str(settings["model"]))
            name = api_name(engine, settings)
        except (HarnessError, KeyError, OSError, ValueError):
            continue
        out.append(Served(name, engine.get("engine_label", engine.name), model.formats))
    return out


def model_gb(rec: dict, served: list[Served]) -> float | None:
    """The weights in GB of what served this record: the size its measurement recorded, else the
    model file of the engine that answered to its model name (the one with its engine label when two
    did, as on the CPU track, where llama-server and vLLM both answer gemma-3-270m), the format its
    quant names, else the file's only format; None when nothing says."""
    stated = (rec.get(SPEED.speed_limit) or {}).get("model_gb")
    if stated:
        return float(stated)
    found = [s for s in served if s.api_model == rec.get(SPEED.model)]
    found = [s for s in found if s.engine == rec.get(SPEED.engine)] or found
    for s in found:
        fmt = format_for_quant(rec.get(SPEED.quant) or "", s.formats)
        if fmt is None and len(s.formats) == 1:
            fmt = next(iter(s.formats))
        if fmt is not None:
            return int(s.formats[fmt]["tensor_bytes"]) / 1e9
    return None


def single_user_speeds(path: str, served: list[Served]) -> list[tuple[str, float, float | None]]:
    """(what, tok/s, model GB or None) one person alone saw on a real server: each curve's crowd of 1
    (1 / TPOT p50) and each engine's short single-user test, with the size of the model that served
    it; the practice server's made-up timing is left out."""
    if not Path(path).is_file():
        return []
    out: dict[str, tuple[float, float | None]] = {}
    for rec in read_records(path, "level", select=is_level).records:
        st = LevelStats.read(rec)
        tpot = st.tpot_s.p50
        if st.concurrency == 1 and tpot and rec.get(LEVEL.engine) != "practice":
            out[f"{rec[LEVEL.label]} (crowd of 1, 1 / TPOT p50)"] = (1 / tpot, model_gb(rec, served))
    for rec in read_records(path, "engine-speed", select=is_engine_speed).records:
        if (
            rec.get(SPEED.test) == "short"
            and rec.get(SPEED.decode_tokens_per_s)
            and rec.get(SPEED.engine) != "practice"
        ):
            out[f"{rec[SPEED.engine]} (single-user short test)"] = (
                rec[SPEED.decode_tokens_per_s],
                model_gb(rec, served),
            )
    return [(what, rate, size) for what, (rate, size) in out.items()]


def admissions(path: str) -> list[dict]:
    """The latest admission recommendation per admission label in the notebook (the level a gateway
    should admit at, kept for the gateway project)."""
    if not Path(path).is_file():
        return []
    latest = {r["label"]: r for r in read_records(path, "admission", select=is_admission).records}
    return list(latest.values())


def bandwidth(machine: str | None) -> tuple[float, str, bool]:
    """(GB/s, how it was obtained, whether it is the vendor's figure rather than a lower bound)."""
    key = machine or identify()
    measured = measure_bandwidth()
    if key:
        m = lookup(key)
        how = "--machine" if machine else "recognised from this machine's CPU/GPU name"
        return (
            float(m["bandwidth_gb_s"]),
            f"machine table: {m['name']}, {how}; measured here ~{measured.gb_s:.0f} GB/s by a "
            f"{measured.method}, a lower bound",
            True,
        )
    return (
        measured.gb_s,
        f"measured: {measured.method}, best of 3; a lower bound (a copy also reads what it overwrites); "
        "not in the machine table: pass --machine for the vendor's figure",
        False,
    )


def lines(machine: str | None, model_gb_given: float | None, labbook: str, served: list[Served]) -> list[str]:
    """The bandwidth, the speed limit, each single-user speed against it and the admissions, one
    line each (``--machine``, ``--model-gb`` and the notebook as given)."""
    gb_s, source, vendor = bandwidth(machine)
    size_gb = model_gb_given or SEED_MODEL_GB
    limit = speed_limit(gb_s, size_gb)
    bound = "" if vendor else ", at least (from a lower-bound bandwidth)"
    out = [
        f"bandwidth:   ~{gb_s:.0f} GB/s ({source})",
        f"speed limit: ~{limit:.0f} tok/s{bound} for a {size_gb:g} GB model: bandwidth / model size",
        "             a sane single-user measurement lands at 60-85 % of it",
    ]
    for what, rate, size in single_user_speeds(labbook, served):
        size = model_gb_given or size
        own = speed_limit(gb_s, size) if size else limit
        share, reading = speed_share(rate, own)
        if not vendor:
            reading = "the limit is a lower bound, so the true share is smaller"
        against = (
            f"of {own:.0f} tok/s for its {size:.3g} GB model"
            if size
            else f"of the limit for the {SEED_MODEL_GB:g} GB model (its own model's size is not recorded)"
        )
        out.append(f"single user: {what}: {rate:.1f} tok/s = {share:.0%} {against}; {reading}")
    read = AdmissionRecommendation.read
    return out + [f"admission:   {admission.line(read(rec))}" for rec in admissions(labbook)]
