"""The two styles of prefix caching, as pure data structures (no clocks, no I/O).

Per-seat (llama-server): each seat remembers the prompt it last served and the answer it gave. A
new request goes to the free seat whose remembered prompt shares the longest prefix with it (more
than a tenth of it, as llama-server's --slot-prompt-similarity 0.10), else to the free seat used
longest ago; the shared prefix is not prefilled again.

Pooled (vLLM): prompts are cut into blocks of ``block_size`` tokens; a block's key is a hash of
its tokens and of everything before it, so a block is reused only after the same prefix. Blocks
from any earlier request (its prompt, then its answer once finished) can be reused until the pool
evicts them, least recently used first.
At least one prompt token is always computed, so a prompt that is entirely cached gives back its
last block.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Seat:
    index: int
    tokens: list[int] = field(default_factory=list)
    busy: bool = False
    last_used: int = 0


class SeatCache:
    """Seats that each keep their last prompt. ``reuse=False`` models a server with no cache."""

    def __init__(self, seats: int, reuse: bool = True, similarity: float = 0.1) -> None:
        self.seats = [Seat(i) for i in range(seats)]
        self.reuse = reuse
        # llama-server's --slot-prompt-similarity (0.10 by default): a seat is chosen for its
        # prefix only when that prefix is more than this share of the new prompt, so a prompt
        # sharing a few template tokens with every seat takes the seat used longest ago (and
        # leaves a conversation's seat to that conversation)
        self.similarity = similarity
        self._clock = 0

    def free_count(self) -> int:
        return sum(1 for s in self.seats if not s.busy)

    def acquire(self, prompt: list[int]) -> tuple[int, int]:
        """Take a free seat for ``prompt``; return (seat index, cached tokens). Needs a free seat."""
        free = [s for s in self.seats if not s.busy]
        if not free:
            raise RuntimeError("no free seat")
        best, best_len = None, 0
        if self.reuse:
            for seat in free:
                n = common_prefix(seat.tokens, prompt)
                if n > best_len and n > self.similarity * len(prompt):
                    best, best_len = seat, n
        if best is None:
            best = min(free, key=lambda s: (s.last_used, s.index))
            best_len = common_prefix(best.tokens, prompt) if self.reuse else 0
        self._clock += 1
        best.busy, best.last_used = True, self._clock
        cached = min(best_len, len(prompt) - 1) if self.reuse else 0
        best.tokens = list(prompt)
        return best.index, max(cached, 0)

    def release(self, index: int, kept: list[int] | None = None) -> None:
        """Free a seat; ``kept``: what it now holds (the prompt and the answer, as llama-server's
        slot keeps both, so the next turn of a conversation reuses the whole history)."""
        seat = self.seats[index]
        seat.busy = False
        if kept is not None and self.reuse:
            seat.tokens = list(kept)


class BlockPool:
    """A vLLM-style pool of hashed prompt blocks with LRU eviction."""

    def __init__(self, capacity_blocks: int, block_size: int = 16) -> None:
        self.capacity = capacity_blocks
        self.block_size = block_size
        self._blocks: OrderedDict[int, None] = OrderedDict()
        self.queries = 0
        self.hits = 0

    def block_keys(self, prompt: list[int]) -> list[int]:
        keys, parent = [], 0
        full = len(prompt) // self.block_size
        for i in range(full):
            chunk = tuple(prompt[i * self.block_size : (i + 1) * self.block_size])
            parent = hash((parent, chunk))
            keys.append(parent)
        return keys

    def lookup(self, prompt: list[int]) -> int:
        """Cached prompt tokens for ``prompt`` (whole blocks), counting the query and hits."""
        cached = 0
        for key in self.block_keys(prompt):
            if key not in self._blocks:
                break
            self._blocks.move_to_end(key)
            cached += self.block_size
        if cached >= len(prompt):
            cached = max(0, cached - self.block_size)
        self.queries += len(prompt)
        self.hits += cached
        return cached

    def insert(self, prompt: list[int]) -> None:
        for key in self.block_keys(prompt):
            self._blocks[key] = None
            self._blocks.move_to_end(key)
        while len(self._blocks) > self.capacity:
            self._blocks.popitem(last=False)

    def __len__(self) -> int:
        return len(self._blocks)
