"""The unit tests' shared setup: the property tests' profile is loaded before any test module."""

import tests.unit.properties  # noqa: F401  (registers and loads the Hypothesis profile)
