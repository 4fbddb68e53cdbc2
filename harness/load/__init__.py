"""Load generation: the only package that imports Locust (it monkey-patches the standard library
on import, so it is imported only when load runs). The users, the level runner and the sweep."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
