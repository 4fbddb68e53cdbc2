"""The practice server: an OpenAI-compatible stand-in with seats, batching, caches and faults."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
