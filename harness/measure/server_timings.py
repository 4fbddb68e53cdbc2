"""The server's own timings against the client's (the engines lab's four timing checks): llama-server
sends a ``timings`` block with its prefill and decode rates; the client's prefill (from the
short/long difference) and the long test's decode should agree with them "to within a few per
cent", and a large disagreement means the client is timing something other than generation.

Pure: the long test's record (with the prefill from the difference) in, the comparison out."""

from __future__ import annotations

from typing import Any, Mapping

from harness.measure.level_checks import VARY
from harness.records.engine import SPEED, EngineSpeed, TimingsCheck

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

AGREE = VARY  # "to within a few per cent"
DISAGREE = (
    "the client is timing something other than generation (the HTTP round trip, queueing, a "
    "thinking phase the stream did not show); check the prompt tags and that nothing else ran"
)


def _gap(client: float | None, server: float | None) -> float | None:
    """The client's rate against the server's, as a signed share of the server's; None when either is
    missing or the server's is not positive."""
    if client is None or server is None or server <= 0:
        return None
    return client / server - 1


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def compare(rec: EngineSpeed) -> TimingsCheck | None:
    """The long test's client rates against its server's own timings; None when the server sent none
    (every engine but llama-server and its wrappers)."""
    client_prefill = rec.both.prefill_tokens_per_s if rec.both is not None else None
    pairs = (
        ("prefill", client_prefill, rec.server_prefill_tokens_per_s),
        ("decode", rec.decode_tokens_per_s, rec.server_decode_tokens_per_s),
    )
    prefill, decode = (_gap(client, server) for _, client, server in pairs)
    if prefill is None and decode is None:
        return None
    off = [
        f"{name} {client:.1f} tok/s against the server's {server:.1f} ({gap:+.1%})"
        for (name, client, server), gap in zip(pairs, (prefill, decode), strict=True)
        if gap is not None and abs(gap) > AGREE
    ]
    finding = f"client and server timings disagree: {'; '.join(off)}: {DISAGREE}" if off else None
    return TimingsCheck(_round(prefill), _round(decode), AGREE, not off, finding)


def of(rec: Mapping[str, Any]) -> TimingsCheck | None:
    """The long test's comparison as recorded, else worked out from the record (a notebook written
    before ``harness measure`` recorded it)."""
    said = rec.get(SPEED.server_timings_check)
    return TimingsCheck.read(said) if said else compare(EngineSpeed.read(rec))


def words(check: TimingsCheck | None) -> str | None:
    """One line: the two gaps and whether they agree within a few per cent."""
    if not check:
        return None
    gaps = ", ".join(
        f"{name} {gap:+.1%}"
        for name, gap in (("prefill", check.prefill_gap), ("decode", check.decode_gap))
        if gap is not None
    )
    if check.agree:
        return f"client against the server's own timings: {gaps}, within {check.within:.0%}: they agree"
    return str(check.finding)
