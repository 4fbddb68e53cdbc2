"""Talking to the outside world: the OpenAI-style HTTP helper, kernel receive stamps, the notebook
(record files), /metrics sampling, memory readers, model files (GGUF header, model info, fetching),
the machine table, ports. Imports the core, never the packages above it."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
