"""The practice server: an OpenAI-compatible stand-in with seats, batching, caches and faults."""
