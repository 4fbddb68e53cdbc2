"""LLM-serving benchmark harness.

Importing this package has no side effects: no network, no environment variables read, no
monkey-patching (Locust is only imported by ``locustfiles/`` and the load runner).
"""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

__version__ = "0.1.0"

from harness.errors import HarnessError  # noqa: E402

__all__ = ["HarnessError", "__version__"]
