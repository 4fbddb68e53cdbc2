"""How the property tests (Hypothesis) run: no per-example deadline, and how many examples.

No deadline: Hypothesis fails an example that takes over 200 ms by default, a bet on a shared
CI machine's load that says nothing about the property. The count: each test's own under
``make test`` (the ``unit`` profile); a fifth of it, at least 10, under ``make test-fast``
(``HYPOTHESIS_PROFILE=fast``), so the quick loop stays under 30 s on 2 cores. A failing example
is kept in .hypothesis/ and tried first by the next run of either."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("unit", deadline=None)
settings.register_profile("fast", deadline=None, max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "unit"))


def examples(n: int) -> int:
    """A test's own count ``n`` of examples, scaled to the loaded profile (100 is Hypothesis's)."""
    return max(10, n * settings.default.max_examples // 100)
