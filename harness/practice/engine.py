"""The practice server's engines: real-time schedulers that decide when each token is sent.

``BatchedEngine`` models continuous batching. Requests take a seat (or wait, deferred, in
arrival order); each step prefills up to ``prefill_chunk`` new prompt tokens and advances every
decoding sequence by one token, and lasts ``a + b * active + prefill_tokens / prefill_rate``.
A sequence's first token comes at the end of the step that finishes its prefill. Steps are
scheduled on absolute deadlines so timing does not drift; when the event loop falls more than
0.1 s behind, the schedule is re-anchored to now (``behind_resets`` counts it).

``FixedEngine`` is the ruler: every request's first token is due ``ttft_s`` after it arrived and
each later one ``itl_s`` after the previous deadline; no seats, no batching.

Both talk to the HTTP side through a ``Sink`` (one per request) and never touch sockets.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from harness.practice.prefix import BlockPool, SeatCache
from harness.practice.replies import ReplyPlan, answer_text
from harness.practice.tokenizer import encode
from harness.practice.truth import STEPS_KEEP, Recent

clock = time.monotonic
BEHIND_RESET_S = 0.1
SPIN_S = 0.0015  # wake this early and spin to the deadline: event-loop timers are only ms-precise


class PreciseTimer:
    """Run a callback at an absolute ``clock()`` deadline: never early, typically microseconds late.

    asyncio's timers round to milliseconds (uvloop's can even fire early), so the timer wakes
    ``SPIN_S`` before the deadline and spins the rest of the way.
    """

    spun_s = 0.0  # CPU seconds spent spinning, so a benchmark can report the work apart from the wait

    def __init__(self, loop: asyncio.AbstractEventLoop, spin_s: float = SPIN_S) -> None:
        self.loop = loop
        self.spin_s = spin_s

    def at(self, due: float, fn, *args) -> asyncio.TimerHandle:
        return self.loop.call_later(max(0.0, due - clock() - self.spin_s), self._fire, due, fn, args)

    @staticmethod
    def _fire(due: float, fn, args) -> None:
        start = now = clock()
        while now < due:
            now = clock()
        PreciseTimer.spun_s += now - start
        fn(*args)


class Sink(Protocol):
    closed: bool

    def token(self, seq: "Sequence", index: int, scheduled: float) -> None: ...

    def finish(self, seq: "Sequence") -> None: ...


@dataclass(eq=False)
class Sequence:
    id: str
    prompt: list[int]
    plan: ReplyPlan
    sink: Sink
    arrived: float
    stall_after: int | None = None  # fault: pause after this many tokens
    stall_s: float = 0.0
    state: str = "waiting"
    seat: int | None = None
    cached: int = 0
    to_prefill: int = 0
    emitted: int = 0
    admitted_at: float | None = None
    first_token_at: float | None = None
    prefill_started_at: float | None = None
    prefill_s: float = 0.0
    paused_until: float = 0.0
    preempted: int = 0
    blocks: int = 0
    seq_no: int = 0

    def __post_init__(self) -> None:
        self.length = len(self.plan.pieces)


@dataclass
class Counters:
    """What the engine's /metrics reports; names follow llama-server and vLLM."""

    prompt_tokens: int = 0  # prefilled, excluding cached
    cached_tokens: int = 0
    prompt_seconds: float = 0.0
    generated_tokens: int = 0
    decode_seconds: float = 0.0
    decode_steps: int = 0
    busy_seat_steps: int = 0
    preemptions: int = 0
    prefix_queries: int = 0
    prefix_hits: int = 0
    requests_finished: int = 0
    behind_resets: int = 0


@dataclass
class EngineState:
    running: list[Sequence] = field(default_factory=list)
    waiting: deque = field(default_factory=deque)


class _Engine:
    """What the HTTP side reads from either engine."""

    state: EngineState

    @property
    def running(self) -> list[Sequence]:
        return self.state.running

    @property
    def waiting(self) -> deque:
        return self.state.waiting


class BatchedEngine(_Engine):
    def __init__(self, profile: dict, loop: asyncio.AbstractEventLoop) -> None:
        timing = profile["timing"]
        self.a = float(timing["step_base_s"])
        self.b = float(timing["step_per_seq_s"])
        self.prefill_rate = float(timing["prefill_tokens_per_s"])
        self.chunk = int(timing["prefill_chunk"])
        self.seats = int(profile["seats"])
        self.pooled = profile["prefix_cache"] == "pooled"
        self.block_size = int(profile["block_size"])
        if self.pooled:
            self.capacity_blocks = int(profile["pool_tokens"]) // self.block_size
            self.pool = BlockPool(self.capacity_blocks, self.block_size)
            self.seat_cache = None
        else:
            self.capacity_blocks = 0
            self.pool = None
            self.seat_cache = SeatCache(self.seats, reuse=profile["prefix_cache"] == "per-seat")
        self.loop = loop
        self.timer = PreciseTimer(loop, float(profile["timing"].get("spin_s", SPIN_S)))
        self.state = EngineState()
        self.counters = Counters()
        self._stepping = False
        self._handle: asyncio.TimerHandle | None = None
        self._seq_no = 0
        # Diagnostics: per step, how late the first token was written and how long all took.
        self.step_late = Recent(STEPS_KEEP)
        self.step_spread = Recent(STEPS_KEEP)

    # -- what /metrics and /slots read --------------------------------------------------------

    def used_blocks(self) -> int:
        return sum(s.blocks for s in self.state.running)

    def kv_usage(self) -> float:
        if self.pooled:
            return min(1.0, self.used_blocks() / max(1, self.capacity_blocks))
        return len(self.state.running) / self.seats

    # -- admission ------------------------------------------------------------------------------
    def submit(self, seq: Sequence) -> None:
        self._seq_no += 1
        seq.seq_no = self._seq_no
        self.state.waiting.append(seq)
        self._admit(clock())
        if not self._stepping:
            self._plan_step(clock())

    def _blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def _admit(self, now: float) -> None:
        st = self.state
        while st.waiting and len(st.running) < self.seats:
            seq = st.waiting[0]
            if seq.sink.closed:
                st.waiting.popleft()
                continue
            context = seq.prompt + [0] * seq.emitted  # a preempted sequence recomputes its output
            if self.pooled:
                need = self._blocks_for(len(context) + 1)
                if self.used_blocks() + need > self.capacity_blocks and st.running:
                    break
                cached = self.pool.lookup(seq.prompt)
                seq.blocks = need
            else:
                seq.seat, cached = self.seat_cache.acquire(seq.prompt)
            st.waiting.popleft()
            seq.cached = cached if not seq.preempted else seq.cached
            seq.to_prefill = max(1, len(context) - cached)
            seq.state = "prefill"
            if seq.admitted_at is None:
                seq.admitted_at = now
            st.running.append(seq)
            if not seq.preempted:
                self.counters.cached_tokens += cached

    def _release(self, seq: Sequence, kept: list[int] | None = None) -> None:
        if seq in self.state.running:
            self.state.running.remove(seq)
        if self.seat_cache is not None and seq.seat is not None:
            self.seat_cache.release(seq.seat, kept)
        seq.blocks = 0

    def _keep_answer(self, seq: Sequence) -> None:
        """A finished sequence's prompt and answer stay in the cache (the seat, or the pool's
        blocks), so a conversation's next turn, which sends both back, finds them."""
        kept = seq.prompt + encode(answer_text(seq.plan))
        if self.pool is not None:
            self.pool.insert(kept)
        elif self.seat_cache is not None and seq.seat is not None:
            self.seat_cache.release(seq.seat, kept)

    def _preempt_if_needed(self) -> None:
        if not self.pooled:
            return
        while self.used_blocks() > self.capacity_blocks and len(self.state.running) > 1:
            victim = max(self.state.running, key=lambda s: s.seq_no)
            self._release(victim)
            victim.state = "waiting"
            victim.preempted += 1
            self.counters.preemptions += 1
            self.state.waiting.appendleft(victim)

    # -- the step loop --------------------------------------------------------------------------
    def _plan_step(self, start: float) -> None:
        now = clock()
        decode, prefill_done, budget, prefill_tokens = [], [], self.chunk, 0
        for seq in self.state.running:
            if seq.sink.closed:
                continue
            if seq.state == "decode":
                if seq.paused_until <= start:
                    decode.append(seq)
            elif seq.state == "prefill" and budget > 0:
                take = min(budget, seq.to_prefill)
                if seq.prefill_started_at is None:
                    seq.prefill_started_at = start
                seq.to_prefill -= take
                budget -= take
                prefill_tokens += take
                self.counters.prompt_tokens += take
                if seq.to_prefill == 0:
                    prefill_done.append(seq)
        closed = [s for s in self.state.running if s.sink.closed]
        for seq in closed:
            self._release(seq)
        if closed:
            self._admit(now)
        active = len(decode) + len(prefill_done) + (1 if prefill_tokens and not prefill_done else 0)
        paused = [s for s in self.state.running if s.state == "decode" and s.paused_until > start]
        if active == 0:
            if paused:  # only stalled sequences: wake at the earliest resume time
                resume = min(s.paused_until for s in paused)
                self._stepping = True
                self._handle = self.timer.at(resume, self._plan_step, resume)
            else:
                self._stepping = False
            return
        prefill_s = prefill_tokens / self.prefill_rate
        duration = self.a + self.b * (len(decode) + len(prefill_done)) + prefill_s
        end = start + duration
        self.counters.prompt_seconds += prefill_s
        self._stepping = True
        self._handle = self.timer.at(end, self._end_step, end, decode, prefill_done, start)

    def _end_step(self, end: float, decode: list, prefill_done: list, start: float) -> None:
        now = clock()
        self.step_late.append(now - end)
        c = self.counters
        c.decode_steps += 1
        c.busy_seat_steps += len(self.state.running)
        c.decode_seconds += end - start
        for seq in prefill_done:
            seq.state = "decode"
            seq.prefill_s = end - (seq.prefill_started_at or start)
            if self.pooled and not seq.preempted:
                self.pool.insert(seq.prompt)
        finished = []
        for seq in (*prefill_done, *decode):
            if seq.sink.closed or seq.state != "decode":
                continue
            index = seq.emitted
            seq.emitted += 1
            c.generated_tokens += 1
            if index == 0 or seq.first_token_at is None:
                seq.first_token_at = end
            if self.pooled:
                seq.blocks = self._blocks_for(len(seq.prompt) + seq.emitted + 1)
            seq.sink.token(seq, index, end)
            if seq.emitted >= seq.length:
                finished.append(seq)
            elif seq.stall_after is not None and seq.emitted == seq.stall_after:
                seq.paused_until = end + seq.stall_s
        self.step_spread.append(clock() - now)
        for seq in finished:
            seq.state = "done"
            self._keep_answer(seq)
            self._release(seq)
            c.requests_finished += 1
            seq.sink.finish(seq)
        self._preempt_if_needed()
        self._admit(now)
        if now - end > BEHIND_RESET_S:
            c.behind_resets += 1
            end = now
        self._plan_step(end)


class FixedEngine(_Engine):
    """Fixed timing per request, independent of load: the ruler for client benchmarks.

    One ticker serves every stream: a heap of (deadline, n, sequence) and a single precise timer
    armed for the earliest deadline, so a busy server pays one wake-up per batch of due tokens
    rather than one timer per token.
    """

    def __init__(self, profile: dict, loop: asyncio.AbstractEventLoop) -> None:
        self.ttft = float(profile["timing"]["ttft_s"])
        self.itl = float(profile["timing"]["itl_s"])
        self.loop = loop
        self.timer = PreciseTimer(loop, float(profile["timing"].get("spin_s", SPIN_S)))
        self.state = EngineState()
        self.counters = Counters()
        self.seats = int(profile["seats"])
        self.pooled = False
        self.seat_cache = None
        self._heap: list = []
        self._n = 0
        self._armed: float | None = None

    def kv_usage(self) -> float:
        return 0.0

    def submit(self, seq: Sequence) -> None:
        seq.state = "decode"
        seq.admitted_at = seq.arrived
        self.state.running.append(seq)
        self._push(seq.arrived + self.ttft, seq)
        self._arm()

    def _push(self, due: float, seq: Sequence) -> None:
        self._n += 1
        heapq.heappush(self._heap, (due, self._n, seq))

    def _arm(self) -> None:
        if self._heap and (self._armed is None or self._heap[0][0] < self._armed):
            self._armed = self._heap[0][0]
            self.timer.at(self._armed, self._run)

    def _run(self) -> None:
        self._armed = None
        heap, now = self._heap, clock()
        while heap and heap[0][0] <= now:
            due, _, seq = heapq.heappop(heap)
            self._tick(seq, due)
        self._arm()

    def _tick(self, seq: Sequence, due: float) -> None:
        if seq.sink.closed:
            self._done(seq)
            return
        index = seq.emitted
        seq.emitted += 1
        self.counters.generated_tokens += 1
        if index == 0:
            seq.first_token_at = due
        seq.sink.token(seq, index, due)
        if seq.emitted >= seq.length:
            self._done(seq)
            seq.sink.finish(seq)
            return
        nxt = due + self.itl
        if seq.stall_after is not None and seq.emitted == seq.stall_after:
            nxt += seq.stall_s
        self._push(nxt, seq)

    def _done(self, seq: Sequence) -> None:
        if seq in self.state.running:
            self.state.running.remove(seq)
            self.counters.requests_finished += 1


def make_engine(profile: dict, loop: asyncio.AbstractEventLoop):
    if profile["timing"]["kind"] == "fixed":
        return FixedEngine(profile, loop)
    return BatchedEngine(profile, loop)
