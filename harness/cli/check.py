"""``harness check`` (``make check``): bandwidth, the speed limit for the model, practice server UP/DOWN."""

from __future__ import annotations

import requests

from harness.core.arithmetic import speed_limit
from harness.io.machines import lookup, measure_copy_bandwidth
from harness.practice.server import DEFAULT_PORT

SEED_MODEL_GB = 4.9  # the course's Llama 3.1 8B at 4 bits, when nothing else says


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="print memory bandwidth, the speed limit, and whether the practice server is up"
    )
    p.add_argument(
        "--base-url", default=f"http://127.0.0.1:{DEFAULT_PORT}/v1", help="practice server base URL"
    )
    p.add_argument(
        "--machine",
        help="take bandwidth from the machine table (e.g. spark, strix, m4-max) instead of measuring",
    )
    p.add_argument(
        "--model-gb", type=float, help="model size in GB (default: the practice server's model, else 4.9)"
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


def run(args) -> int:
    if args.machine:
        m = lookup(args.machine)
        bandwidth, source = float(m["bandwidth_gb_s"]), f"machine table: {m['name']}"
    else:
        bandwidth, source = measure_copy_bandwidth(), "measured: one-thread copy, a lower bound"
    profile = probe_practice(args.base_url)
    model_gb, model_source = args.model_gb, "--model-gb"
    if model_gb is None and profile:
        model_gb, model_source = profile.get("model", {}).get("size_gb"), "practice server's model"
    if model_gb is None:
        model_gb, model_source = SEED_MODEL_GB, "course default"
    limit = speed_limit(bandwidth, model_gb)
    print(f"bandwidth:   ~{bandwidth:.0f} GB/s ({source})")
    print(
        f"speed limit: ~{limit:.0f} tok/s for a {model_gb:g} GB model ({model_source}): bandwidth / model "
        "size"
    )
    print("             a sane single-user measurement lands at 60-85 % of it")
    if profile is None:
        print(f"mock:        DOWN (nothing answers at {args.base_url}; start it with `make mock &`)")
        return 1
    seats = profile.get("seats", "?")
    print(f"mock:        UP at {args.base_url} (profile {profile.get('name', '?')}, slots={seats})")
    return 0
