"""Engines: what the harness does with one engine's server or tools (its single-user speeds, its
own benchmarks, the allocation its log reports)."""
