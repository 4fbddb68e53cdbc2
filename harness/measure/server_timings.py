"""The server's own timings against the client's (the engines lab's four timing checks): llama-server
sends a ``timings`` block with its prefill and decode rates; the client's prefill (from the
short/long difference) and the long test's decode should agree with them "to within a few per
cent", and a large disagreement means the client is timing something other than generation.

Pure: the long test's record (with the prefill from the difference) in, the comparison out."""

from __future__ import annotations

from harness.measure.level_checks import VARY

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


def compare(rec: dict) -> dict | None:
    """``{"prefill_gap", "decode_gap", "within", "agree", "finding"}`` for a long-test record whose
    server sent its timings; None when it sent none (every engine but llama-server and its wrappers)."""
    prefill = _gap(rec.get("prefill_tokens_per_s"), rec.get("server_prefill_tokens_per_s"))
    decode = _gap(rec.get("decode_tokens_per_s"), rec.get("server_decode_tokens_per_s"))
    if prefill is None and decode is None:
        return None
    off = [
        f"{name} {client:.1f} tok/s against the server's {server:.1f} ({gap:+.1%})"
        for name, gap, client, server in (
            ("prefill", prefill, rec.get("prefill_tokens_per_s"), rec.get("server_prefill_tokens_per_s")),
            ("decode", decode, rec.get("decode_tokens_per_s"), rec.get("server_decode_tokens_per_s")),
        )
        if gap is not None and abs(gap) > AGREE
    ]
    return {
        "prefill_gap": _round(prefill),
        "decode_gap": _round(decode),
        "within": AGREE,
        "agree": not off,
        "finding": f"client and server timings disagree: {'; '.join(off)}: {DISAGREE}" if off else None,
    }


def of(rec: dict) -> dict | None:
    """The long test's comparison as recorded, else worked out from the record (a notebook written
    before ``harness measure`` recorded it)."""
    return rec.get("server_timings_check") or compare(rec)


def words(check: dict | None) -> str | None:
    """One line: the two gaps and whether they agree within a few per cent."""
    if not check:
        return None
    gaps = ", ".join(
        f"{name} {check[key]:+.1%}"
        for name, key in (("prefill", "prefill_gap"), ("decode", "decode_gap"))
        if check.get(key) is not None
    )
    if check["agree"]:
        return f"client against the server's own timings: {gaps}, within {check['within']:.0%}: they agree"
    return str(check["finding"])
