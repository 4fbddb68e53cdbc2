"""``harness check`` (``make check``): this machine's memory bandwidth and the speed limit it sets for
the model (seed 002: bandwidth / model size), measured single-user speeds as a share of that limit,
and whether the practice server is up."""

from __future__ import annotations

from pathlib import Path

import requests

from harness.core.arithmetic import speed_limit, speed_share
from harness.core.records import is_engine_speed, is_level
from harness.io.machines import identify, lookup, measure_bandwidth
from harness.io.notebook import read_records
from harness.practice.server import DEFAULT_PORT

SEED_MODEL_GB = 4.9  # the course's Llama 3.1 8B at 4 bits (Day 3), when nothing else says


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="print memory bandwidth, the speed limit, and whether the practice server is up"
    )
    p.add_argument(
        "--base-url", default=f"http://127.0.0.1:{DEFAULT_PORT}/v1", help="practice server base URL"
    )
    p.add_argument(
        "--machine",
        help="machine-table key (spark, strix, m4-max, ...): its bandwidth figure (default: recognised "
        "from the CPU or GPU name, else measured)",
    )
    p.add_argument(
        "--model-gb", type=float, help=f"model size in GB (default {SEED_MODEL_GB}, Day 3's model)"
    )
    p.add_argument(
        "--labbook", default="labbook.md", help="notebook whose single-user speeds to set against the limit"
    )
    p.set_defaults(func=run)


def probe_practice(base_url: str) -> dict | None:
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        requests.get(root + "/health", timeout=2).raise_for_status()
    except requests.RequestException:
        return None
    try:
        return requests.get(root + "/practice/profile", timeout=2).json()
    except (requests.RequestException, ValueError):
        return {}


def single_user_speeds(path: str) -> list[tuple[str, float]]:
    """(what, tok/s) one person alone saw on a real server: each curve's crowd of 1 (1 / TPOT p50)
    and each engine's short single-user test; the practice server's made-up timing is left out."""
    if not Path(path).is_file():
        return []
    out: dict[str, float] = {}
    for rec in read_records(path, "level", select=is_level).records:
        tpot = (rec.get("tpot_s") or {}).get("p50")
        if rec.get("concurrency") == 1 and tpot and rec.get("engine") != "practice":
            out[f"{rec['label']} (crowd of 1, 1 / TPOT p50)"] = 1 / tpot
    for rec in read_records(path, "engine-speed", select=is_engine_speed).records:
        if rec.get("test") == "short" and rec.get("decode_tokens_per_s") and rec.get("engine") != "practice":
            out[f"{rec['engine']} (single-user short test)"] = rec["decode_tokens_per_s"]
    return list(out.items())


def _bandwidth(args) -> tuple[float, str, bool]:
    """(GB/s, how it was obtained, whether it is the vendor's figure rather than a lower bound)."""
    key = args.machine or identify()
    measured = measure_bandwidth()
    if key:
        m = lookup(key)
        how = "--machine" if args.machine else "recognised from this machine's CPU/GPU name"
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


def run(args) -> int:
    bandwidth, source, vendor = _bandwidth(args)
    model_gb = args.model_gb or SEED_MODEL_GB
    limit = speed_limit(bandwidth, model_gb)
    bound = "" if vendor else ", at least (from a lower-bound bandwidth)"
    print(f"bandwidth:   ~{bandwidth:.0f} GB/s ({source})")
    print(f"speed limit: ~{limit:.0f} tok/s{bound} for a {model_gb:g} GB model: bandwidth / model size")
    print("             a sane single-user measurement lands at 60-85 % of it")
    for what, rate in single_user_speeds(args.labbook):
        share, reading = speed_share(rate, limit)
        if not vendor:
            reading = "the limit is a lower bound, so the true share is smaller"
        print(f"single user: {what}: {rate:.1f} tok/s = {share:.0%} of the limit; {reading}")
    profile = probe_practice(args.base_url)
    if profile is None:
        print(f"mock:        DOWN (nothing answers at {args.base_url}; start it with `make mock &`)")
        return 1
    seats = profile.get("seats", "?")
    print(
        f"mock:        UP at {args.base_url} (practice server, profile {profile.get('name', '?')}, "
        f"slots={seats}); its timing is made up by its profile, not bound by this machine's limit"
    )
    return 0
