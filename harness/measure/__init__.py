"""Measurement, pure: a stream read into samples, samples into a level's figures, levels into
curves, the knee and the operating point, and the checks on them."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
