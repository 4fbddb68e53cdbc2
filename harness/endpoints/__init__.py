"""Endpoint kinds: which API route a run loads, how a request's body is built for it and how its
answer is read into a sample. One module per kind; ``KINDS`` lists them, and every option that
names an endpoint (``harness sweep --endpoint``, Locust's ``--endpoint`` and its web form) offers
exactly these. The consumers (the load, the proof, the probes) own this interface and know no
kind by name. Pure: no network, files or clock."""

from __future__ import annotations

from typing import Protocol

from harness.measure.stream import StreamParser
from harness.workloads.request import Request
from harness.endpoints import chat, chat_nostream, completions
from harness.endpoints.base import BodySettings

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

__all__ = [
    "ENDPOINT_HELP",
    "KINDS",
    "BodySettings",
    "EndpointKind",
    "api_path",
    "body_of",
    "kind_named",
    "names",
]


class EndpointKind(Protocol):
    """One kind of endpoint. ``path`` is joined to the API base path (``/v1``); ``streamed``: the
    answer is an event stream (False: one JSON body, timed whole, with no first token)."""

    name: str
    path: str
    streamed: bool

    def body(self, job: Request, settings: BodySettings) -> dict:
        """The request's JSON body."""
        ...

    def parser(self, t_send: float, text_limit: int = ...) -> StreamParser:
        """A parser of one answer: its lines (``feed``) or its whole body (``feed_body``)."""
        ...


KINDS: dict[str, EndpointKind] = {k.name: k for k in (chat.KIND, completions.KIND, chat_nostream.KIND)}
DEFAULT = "chat"
ENDPOINT_HELP = (
    "the kind of request each user sends (default: chat, streamed chat completions); a kind that "
    "does not stream has no TTFT, and its records say why"
)


def names() -> tuple[str, ...]:
    """The kinds' names, for the options' choices."""
    return tuple(KINDS)


def kind_named(name: str | None) -> EndpointKind:
    """The kind of that name (None: the default, streamed chat); ValueError for an unknown one."""
    try:
        return KINDS[name or DEFAULT]
    except KeyError:
        raise ValueError(f"no endpoint kind {name!r}; the kinds are {', '.join(KINDS)}") from None


def api_path(base_path: str, kind: EndpointKind) -> str:
    """The kind's path under an API base path (``/v1`` and chat: ``/v1/chat/completions``)."""
    base = base_path.strip("/")
    return ("/" + base if base else "") + kind.path


SETTINGS = ("model", "max_tokens", "temperature")


def body_of(kind: EndpointKind, fields: dict) -> dict:
    """The kind's body for a chat-shaped one (``messages``, the sampling fields and any others, as
    the proof, the probes and the tests write it): the same request in the kind's own form."""
    extra = {k: v for k, v in fields.items() if k != "messages" and k not in SETTINGS}
    job = Request(list(fields.get("messages") or []), extra=extra)
    return kind.body(job, BodySettings(**{k: fields.get(k) for k in SETTINGS}))
