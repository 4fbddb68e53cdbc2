"""Pure computation: stream parsing, statistics, level aggregation, curves, serving arithmetic,
predictions, probe verdicts, engine-log parsing, load schedules, prompt sets. No network, no
clocks, no Locust: plain data in, plain data out, so every caller (sweep, web UI, reports) shares it."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
