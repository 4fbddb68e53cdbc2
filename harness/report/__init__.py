"""What a person reads: the run report, charts and the single-user engine tables, built from
records only."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
