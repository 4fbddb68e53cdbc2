"""One module per power and energy source, each behind ``base.Source``: ``read()`` gives one
``Reading`` of one device, and an absent or refused source raises ``TelemetryUnavailable`` with
its one line (``harness.energy.detect`` chooses which of them read this machine)."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
