"""Length distributions, pure: token counts (and turns) drawn from a spec a person writes.

A spec is ``fixed:N`` (or just ``N``), ``uniform:LO-HI`` (whole numbers, both ends included),
``normal:MEAN,SD`` (rounded, from 1 to the option's highest) or ``file:PATH`` (one whole number
per line, drawn with replacement; the caller reads the file, bounded, and passes its ``values``).
Every number is finite and in range before anything is sent: a count from 1 to the option's
highest (``MAX_TOKENS`` for token counts), LO at most HI, SD zero or more, a file of at most
``MAX_FILE_COUNTS`` counts; a refusal is one ConfigError line saying which rule the spec broke.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from harness.bounds import MAX_TOKENS
from harness.errors import ConfigError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

MAX_FILE_COUNTS = 1_000_000  # counts in one lengths file
NORMAL_REACH = 3.0  # a normal spec's largest for the context check: MEAN + 3 SD (99.87 % of draws)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: ``kind`` fixed, uniform, normal or file, and its numbers."""

    kind: str
    a: float = 0.0  # fixed: the count; uniform: the lowest; normal: the mean
    b: float = 0.0  # uniform: the highest; normal: the standard deviation
    values: tuple[int, ...] = ()  # file: the counts to draw from
    source: str = ""  # file: the path as given, for the record
    high: int = MAX_TOKENS  # no draw is above this (a normal's tail is cut here)

    def draw(self, rng: random.Random) -> int:
        """One count, from 1 to ``high``."""
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return rng.randint(int(self.a), int(self.b))
        if self.kind == "normal":
            return min(self.high, max(1, round(rng.gauss(self.a, self.b))))
        return rng.choice(self.values)

    def largest(self) -> int:
        """The most one draw gives (a normal's: MEAN + 3 SD, at most ``high``)."""
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return int(self.b)
        if self.kind == "normal":
            return min(self.high, max(1, round(self.a + NORMAL_REACH * self.b)))
        return max(self.values)

    def describe(self) -> str:
        """The spec as written, the form the record keeps."""
        if self.kind == "fixed":
            return f"fixed:{int(self.a)}"
        if self.kind == "uniform":
            return f"uniform:{int(self.a)}-{int(self.b)}"
        if self.kind == "normal":
            return f"normal:{self.a:g},{self.b:g}"
        return f"file:{self.source} ({len(self.values)} values)"


def _numbers(flag: str, spec: str, text: str, sep: str, count: int) -> list[float]:
    parts = text.split(sep)
    try:
        if len(parts) != count:
            raise ValueError
        values = [float(p) for p in parts]
    except ValueError:
        raise ConfigError(f"{flag} {spec!r}: write {sep.join(['N'] * count)} with numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{flag} {spec!r}: every number must be finite (no nan, no inf)")
    return values


def _count(value: float, high: int) -> bool:
    return value == int(value) and 1 <= value <= high


def _problem(kind: str, a: float, b: float, values: tuple[int, ...], high: int) -> str | None:
    """Which rule a spec's numbers break, or None (every number is finite here)."""
    every = f"every count must be a whole number from 1 to {high}"
    if kind == "fixed":
        return None if _count(a, high) else every
    if kind == "uniform":
        if not (_count(a, high) and _count(b, high)):
            return every
        return None if a <= b else f"LO {a:g} is above HI {b:g} (write uniform:LO-HI)"
    if kind == "normal":
        if b < 0:
            return f"the spread SD {b:g} is negative (write normal:MEAN,SD with SD 0 or more)"
        return None if 1 <= a <= high and b <= high else f"MEAN must be from 1 to {high}, SD at most {high}"
    if not values:
        return "the file holds no counts"
    bad = next((v for v in values if not 1 <= v <= high), None)
    return None if bad is None else f"{every}, and the file holds {bad}"


def parse_lengths(
    flag: str, text: str, file_values: list[int] | None = None, high: int = MAX_TOKENS
) -> Lengths:
    """A length distribution from its spec (module docstring); ConfigError, one line, otherwise.
    ``file:PATH`` needs ``file_values``, the whole numbers the caller read from PATH."""
    kind, _, rest = text.partition(":")
    if not rest and kind.strip().isdigit():
        kind, rest = "fixed", kind
    kind = kind.strip()
    a = b = 0.0
    values: tuple[int, ...] = ()
    if kind == "fixed":
        (a,) = _numbers(flag, text, rest, ",", 1)
    elif kind == "uniform":
        a, b = _numbers(flag, text, rest, "-", 2)
    elif kind == "normal":
        a, b = _numbers(flag, text, rest, ",", 2)
    elif kind == "file":
        values = tuple(file_values or ())
    else:
        raise ConfigError(
            f"{flag} {text!r}: write fixed:N, uniform:LO-HI, normal:MEAN,SD or file:PATH (one count a line)"
        )
    problem = _problem(kind, a, b, values, high)
    if problem:
        raise ConfigError(f"{flag} {text!r}: {problem}")
    return Lengths(kind, a, b, values, rest if kind == "file" else "", high)


def file_counts(flag: str, text: str, high: int = MAX_TOKENS) -> list[int]:
    """The whole numbers of a lengths file's text, one a line (blank lines and # comments
    skipped), each from 1 to ``high``; ConfigError naming the line otherwise."""
    out: list[int] = []
    for i, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            value = int(line) if len(line) <= 20 else None
        except ValueError:
            value = None
        if value is None:
            raise ConfigError(f"{flag}: line {i} is {line[:40]!r}, not a whole number of tokens")
        if not 1 <= value <= high:
            raise ConfigError(f"{flag}: line {i} is {value}; every count must be from 1 to {high}")
        if len(out) >= MAX_FILE_COUNTS:
            raise ConfigError(f"{flag}: the file holds more than {MAX_FILE_COUNTS:,} counts")
        out.append(value)
    if not out:
        raise ConfigError(f"{flag}: the file holds no counts (one whole number a line)")
    return out
