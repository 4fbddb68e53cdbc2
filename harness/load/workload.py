"""What a level (or a headless or web-UI test) sends: the requests of its workload, the two bounds
of each, its budget, and the bodies on the wire. Shared by every user class of
``harness.load.users``; no Locust import."""

from __future__ import annotations

import itertools
import json
import random
import secrets

from harness.workloads.conversations import Conversation, ConversationPlan
from harness.measure.stream import MAX_KEPT_TEXT
from harness.workloads.request import LengthPlan, Request
from harness.endpoints import BodySettings, kind_named
from harness.endpoints.http_client import chat_headers


class Workload:
    """What each request sends; a ``budget`` (requests left) ends a closed-loop level. ``path`` is
    the endpoint kind's path under the API base (``harness.endpoints.api_path``)."""

    def __init__(
        self,
        path: str,
        model: str | None,
        prompts,
        max_tokens: int,
        temperature: float = 0.0,
        api_key: str | None = None,
        timeout: float = 300.0,
        budget: int | None = None,
        idle_timeout: float | None = None,
        lengths: LengthPlan | None = None,
        conversations: ConversationPlan | None = None,
        seed: int = 1,
        endpoint: str | None = None,
    ) -> None:
        self.path, self.model, self.max_tokens = path, model, max_tokens
        self.kind = kind_named(endpoint)  # how each body is built and each answer read
        self.temperature, self.api_key, self.timeout = temperature, api_key, timeout
        # the two bounds of every request: ``timeout`` the whole of it, ``idle_timeout`` each gap
        self.idle_timeout = min(idle_timeout or timeout, timeout)
        self._prompts = itertools.cycle(prompts)
        self.budget = budget
        self.issued = 0
        self.arrivals: list[float] | None = None  # open loop: send offsets in seconds from the start
        self.start_spacing_s = 0.0  # closed loop: user k waits k x this before its first request
        self._starts = 0
        # workloads beyond the prompt sets (harness.workloads.request): drawn lengths, conversations
        self.lengths, self.conversations = lengths, conversations
        # the answer's text is kept only where a history needs it (conversations), and bounded
        self.text_limit = MAX_KEPT_TEXT if conversations is not None else 0
        # lengths are drawn from the seed (the same draws every run); the words of synthesised
        # text are new every level, so no level finds another's prompts in the server's cache
        self.rng = random.Random(seed)
        self.words = random.Random(secrets.randbits(64))
        self._conversations = itertools.count(1)
        self.trace = None  # trace replay: the requests in order (a list, or TraceJobs building each)

    def start_delay(self) -> float:
        """How long the next user to start waits first (users spread over a ramp, not in lockstep)."""
        delay = self._starts * self.start_spacing_s
        self._starts += 1
        return delay

    def spend(self) -> bool:
        """Take one request from the level's budget: False when it is spent (atomic under gevent)."""
        if self.budget is not None:
            if self.budget <= 0:
                return False
            self.budget -= 1
        self.issued += 1
        return True

    def take(self) -> Request | None:
        """The next request of a single-request workload (a prompt of the set, or one of drawn
        lengths, or the trace's next), or None when the level's budget is spent."""
        if not self.spend():
            return None
        if self.trace is not None:
            return self.trace[(self.issued - 1) % len(self.trace)]
        prompt = next(self._prompts)
        if self.lengths is not None:
            return self.lengths.request(prompt, self.rng, self.words)
        return Request([{"role": "user", "content": prompt}])

    def new_conversation(self) -> Conversation:
        """A conversation of its own number and generator (so a level's conversations differ)."""
        assert self.conversations is not None
        number = next(self._conversations)
        seed = self.rng.random() + number
        return self.conversations.start(
            number, random.Random(seed), random.Random(self.words.random() + number)
        )

    def body(self, job: Request | str) -> bytes:
        if isinstance(job, str):
            job = Request([{"role": "user", "content": job}])
        settings = BodySettings(self.model, self.max_tokens, self.temperature)
        return json.dumps(self.kind.body(job, settings)).encode()

    def headers(self) -> dict:
        return chat_headers(self.api_key)  # the endpoint proof's headers too
