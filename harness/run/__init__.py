"""Running a lab: track plans and engine definitions (data), the step calls, the runner and its
manifest, preflight, cleanup, and the engine launchers behind one interface (``launchers/``)."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
