"""Where the Locust users send: ``--host`` joined with ``--api-base-path`` once, whether the host
was given with its base path or without it, then the endpoint kind's own path (pure; no Locust
import)."""

from __future__ import annotations

from urllib.parse import urlsplit

from harness.endpoints import kind_named

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def chat_path(host: str, api_base_path: str, endpoint: str | None = None) -> str:
    """The endpoint kind's path (None: chat) under ``--host``, which may name the server with or
    without its API base path: ``http://h:8000`` and ``http://h:8000/v1`` both load
    ``http://h:8000/v1/chat/completions``."""
    base = "/" + api_base_path.strip("/") if api_base_path.strip("/") else ""
    host_path = urlsplit(host or "").path.rstrip("/")
    return ("" if base and host_path.endswith(base) else base) + kind_named(endpoint).path


def chat_url(host: str, api_base_path: str, endpoint: str | None = None) -> str:
    """The whole URL the users send to (``--host`` and ``--api-base-path`` joined once)."""
    return (host or "").rstrip("/") + chat_path(host, api_base_path, endpoint)
