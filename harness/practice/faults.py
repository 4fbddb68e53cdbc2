"""Injected faults: the ``X-Practice-Fault`` header, or the profile's shares drawn per request."""

from __future__ import annotations

import random
from dataclasses import dataclass

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


@dataclass
class Faults:
    cut_after: int | None = None
    stall_s: float | None = None
    stall_after: int = 1
    malformed: bool = False
    no_usage: bool = False
    error_500: bool = False

    @property
    def any(self) -> bool:
        return bool(self.cut_after is not None or self.malformed)

    def label(self) -> str | None:
        names = [
            n
            for n, on in (
                ("cut", self.cut_after is not None),
                ("stall", self.stall_s is not None),
                ("malformed", self.malformed),
                ("no-usage", self.no_usage),
                ("error-500", self.error_500),
            )
            if on
        ]
        return ",".join(names) or None


def parse_fault_header(value: str) -> Faults:
    """``X-Practice-Fault``: comma-separated ``error-500``, ``cut:K``, ``stall:S[@K]``,
    ``malformed``, ``no-usage``."""
    faults = Faults()
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, _, arg = item.partition(":")
        if name == "error-500":
            faults.error_500 = True
        elif name == "cut":
            faults.cut_after = int(arg or 0)
        elif name == "stall":
            secs, _, after = arg.partition("@")
            faults.stall_s = float(secs or 30)
            faults.stall_after = int(after or 1)
        elif name == "malformed":
            faults.malformed = True
        elif name == "no-usage":
            faults.no_usage = True
        else:
            raise ValueError(f"unknown fault {item!r}")
    return faults


def draw_faults(shares: dict, rng: random.Random) -> Faults:
    """The profile's ``faults`` shares, one draw each in a fixed order (so a seed replays them)."""
    f, r = shares, rng
    faults = Faults()
    if f["error_500_share"] and r.random() < f["error_500_share"]:
        faults.error_500 = True
    if f["cut_share"] and r.random() < f["cut_share"]:
        faults.cut_after = f["cut_after_tokens"]
    if f["stall_share"] and r.random() < f["stall_share"]:
        faults.stall_s = f["stall_s"]
    if f["malformed_share"] and r.random() < f["malformed_share"]:
        faults.malformed = True
    if f["no_usage_share"] and r.random() < f["no_usage_share"]:
        faults.no_usage = True
    return faults
