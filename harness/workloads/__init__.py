"""Workloads: what each request of a level carries (prompts, lengths, conversations, traces,
schedules), and the level's workload part of its record."""
