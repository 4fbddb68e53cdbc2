"""A rehearsal's known findings: a lab rule that fails for a reason of the stand-in, not of the
plan, is reported as a WARN with that reason (``summarise --check --known-failure LABEL=WHY``).
The overlay states each one beside the stand-in it belongs to; nothing else changes a verdict. Pure."""

from __future__ import annotations

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

Finding = tuple[str, str]


def parse(items: list[str]) -> dict[str, str]:
    """``LABEL=WHY`` strings as a mapping; a string without ``=`` or an empty side is a ValueError."""
    out = {}
    for item in items:
        label, sep, why = item.partition("=")
        if not (sep and label.strip() and why.strip()):
            raise ValueError(f"--known-failure {item!r}: give LABEL=WHY (the curve's label, then the reason)")
        out[label.strip()] = why.strip()
    return out


def apply(results: list[Finding], known: dict[str, str]) -> list[Finding]:
    """Each FAIL about a known label (its text starts with the label and a space) as a WARN that
    says why; every other finding as it was."""
    out = []
    for verdict, text in results:
        label = next((k for k in known if text.startswith(k + " ")), None)
        if verdict == "FAIL" and label is not None:
            out.append(("WARN", f"{text} (known for this stand-in: {known[label]})"))
        else:
            out.append((verdict, text))
    return out
