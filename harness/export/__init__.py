"""Level records in the formats other tools read.

llmd      one level as llm-d-benchmark's Benchmark Report v0.2.1 (its schema vendored)
table     the levels as CSV rows, one header, units in the column names
files     the notebooks named on the command line in, the files out
"""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

__all__ = ["files", "llmd", "table"]
