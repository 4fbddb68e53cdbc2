"""One user alone against one server: the short and the long speed test, each a warm-up and its
repetitions, with prefill read from the difference between them and the server's memory beside them
(``harness measure``, the lab's compare-engines.py)."""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from dataclasses import dataclass, replace
from typing import Callable
from urllib.parse import urlsplit

from harness import bounds
from harness.energy import meter as metering
from harness.measure import server_timings
from harness.records.engine import BothTests, EngineSpeed, SpeedLimit
from harness.records.level import LEVEL
from harness.measure.sample import decode_rate
from harness.errors import ConfigError, TargetError, TargetUnreachable
from harness.engines.models import chat_template
from harness.engines import memory
from harness.records.clock import now_stamp
from harness.engines.versions import server_version
from harness.endpoints.http_client import get_models, stream_chat
from harness.records.notebook import append_record, check_writable, validate
from harness.sizing.arithmetic import speed_limit_part
from harness.sizing.machines import lookup
from harness.endpoints.shim_host import host_name
from harness.engines.memory import host_snapshot

# The energy and cost parts of one test's record: (the meter's summary, output tokens, requests, seconds).
EnergyParts = Callable[[dict | None, int, int, float], dict]

SHORT = "Two sentences, please: what is a KV cache, and why does it grow with the context?"
PARAGRAPH = (
    "Reading a prompt happens in one pass over the weights, so each weight that is fetched serves many "
    "tokens at once and the arithmetic units stay busy. Writing the answer is different: every new token "
    "needs every weight fetched again, so the speed of memory, not of arithmetic, decides the pace. "
    "A single number that mixes the two phases hides the one distinction that explains a machine. "
)
ASK = "Give the gist of the text above in three sentences."


def wait_for(base_url: str, api_key: str | None, seconds: int) -> None:
    """Return once ``/models`` answers 200; TargetUnreachable, with the last answer, after ``seconds``."""
    deadline, last = time.monotonic() + seconds, "no answer"
    while time.monotonic() < deadline:
        left = max(deadline - time.monotonic(), 0.1)
        try:
            resp = get_models(base_url, api_key, bounds.Bounds.of(min(10.0, left)))
            if resp.status == 200:
                return
            last = f"status {resp.status}"
        except TargetError as exc:
            last = str(exc).rsplit(": ", 1)[-1]
        time.sleep(1)
    raise TargetUnreachable(
        f"{base_url}/models did not answer 200 within {seconds} s ({last}); start the server, "
        "or raise --wait-seconds"
    )


@dataclass(frozen=True)
class OneRun:
    """One measured request: its TTFT, decode rate (None with why where no true one exists), token
    counts and where they came from, and the server's own rates where it sent its timings."""

    ttft_s: float
    decode_tokens_per_s: float | None
    decode_note: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    token_source: str
    cached_tokens: int | None
    finish_reason: str | None
    fields: list[str]
    server_prefill: float | None = None
    server_decode: float | None = None


def one(args, key: str | None, prompt: str) -> OneRun:
    """One streamed request's figures, its prompt tagged with a fresh run id unless
    ``--reuse-prompt``; TargetError when it failed."""
    text = prompt if args.reuse_prompt else f"[run {uuid.uuid4().hex[:12]}]\n{prompt}"
    s = stream_chat(
        args.base_url,
        {
            "model": args.model,
            "messages": [{"role": "user", "content": text}],
            "max_tokens": args.max_tokens,
            "temperature": 0,
        },
        api_key=key,
        timeout=args.timeout,
        idle_timeout=args.idle_timeout,
    )
    if not s.ok:
        raise TargetError(
            f"a measured request failed: {s.error}; check --model against /v1/models and the server log"
        )
    if s.ttft is None:  # the client fails a stream with no text (NoText), so an ok one has a first token
        raise TargetError("a measured request ended without a first token; check the server log")
    decode, why = decode_rate(s)
    timings = s.timings or {}
    return OneRun(
        ttft_s=s.ttft,
        decode_tokens_per_s=decode,
        decode_note=why,
        prompt_tokens=s.prompt_tokens,
        completion_tokens=s.output_tokens,
        token_source="usage" if s.token_source == "usage" else "chunks",
        cached_tokens=s.cached_tokens,
        finish_reason=s.finish_reason,
        fields=sorted(s.fields),
        server_prefill=timings.get("prompt_per_second"),
        server_decode=timings.get("predicted_per_second"),
    )


def _median(values: list):
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def measure_test(
    args, key, name: str, prompt: str, meter=None, energy: EnergyParts | None = None
) -> EngineSpeed:
    """One test: a warm-up, then the repetitions, with ``meter``'s sampler around them only."""
    if not args.no_warmup:
        one(args, key, prompt)
    started = time.monotonic()
    if meter is not None:
        meter.start()
    try:
        runs = [one(args, key, prompt) for _ in range(args.repetitions)]
    finally:
        summary = meter.stop() if meter is not None else None
    tokens = sum(int(r.completion_tokens or 0) for r in runs)
    parts = energy(summary, tokens, len(runs), time.monotonic() - started) if energy is not None else {}
    reused = [run.cached_tokens for run in runs if isinstance(run.cached_tokens, int)]
    r2 = lambda v, d: None if v is None else round(v, d)  # noqa: E731
    return EngineSpeed(
        engine=args.engine,
        engine_version=args.engine_version,
        backend=args.backend,
        host=args.host,
        model=args.model,
        quant=args.quant,
        context_length=args.context_length,
        test=name,
        repetitions=args.repetitions,
        max_tokens=args.max_tokens,
        ttft_s=round(statistics.median(r.ttft_s for r in runs), 4),  # --repetitions is at least 1
        # None: no true rate (decode_note)
        decode_tokens_per_s=r2(_median([r.decode_tokens_per_s for r in runs]), 2),
        prompt_tokens=_median([r.prompt_tokens for r in runs]),
        completion_tokens=_median([r.completion_tokens for r in runs]),
        token_source=runs[-1].token_source,
        finish_reason=runs[-1].finish_reason,
        text_fields=runs[-1].fields,
        max_cached_prompt_tokens=max(reused, default=None),
        prompt_tag=not args.reuse_prompt,
        server_prefill_tokens_per_s=_median([r.server_prefill for r in runs]),
        server_decode_tokens_per_s=_median([r.server_decode for r in runs]),
        measured_on=now_stamp(),
        decode_note=_decode_note(runs),
        energy=parts.get(LEVEL.energy),
        cost=parts.get(LEVEL.cost),
    )


def _decode_note(runs: list[OneRun]) -> str | None:
    """Why the record has no decode rate, when no run had one."""
    notes = [r.decode_note for r in runs if r.decode_note]
    return notes[0] if notes and len(notes) == len(runs) else None


def prefill_from_difference(short: EngineSpeed, long: EngineSpeed) -> tuple[float | None, str | None]:
    """(long prompt tokens - short prompt tokens) / (TTFT long - TTFT short): fixed costs cancel.

    Returns the rate, or None with the reason it cannot be read from these two records."""
    if not (short.prompt_tokens and long.prompt_tokens):
        return None, "the server sent no prompt token counts"
    if long.prompt_tokens <= short.prompt_tokens:
        return None, "the long prompt was not longer in tokens than the short one"
    if long.ttft_s <= short.ttft_s:
        return None, (
            f"the long prompt's TTFT ({long.ttft_s:.3f} s) was not above the short one's "
            f"({short.ttft_s:.3f} s), so a run was disturbed; raise --repetitions for medians"
        )
    rate = (long.prompt_tokens - short.prompt_tokens) / (long.ttft_s - short.ttft_s)
    return round(rate, 1), None


def idle_snapshot(args) -> dict:
    """The idle memory snapshot given with --idle-snapshot ({} without one)."""
    idle: dict = {}
    if args.idle_snapshot:
        try:
            with open(args.idle_snapshot, encoding="utf-8") as fh:
                idle = json.load(fh)
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read the idle snapshot {args.idle_snapshot}: {exc}") from exc
        here = host_name()  # the engines' host: the shim's when the harness runs through one
        if idle.get("hostname") not in (None, here):
            raise ConfigError(
                f"{args.idle_snapshot} was taken on {idle.get('hostname')}, not this machine "
                f"({here}); take a new one with --snapshot-only"
            )
    return idle


def both_tests(args, key: str | None, tests: list[EngineSpeed], idle: dict) -> BothTests:
    """What both speed records carry: memory, prefill from the difference, version, chat template."""
    loaded = host_snapshot()
    tree = (  # a container's own processes, else the server's tree (vLLM is four processes)
        memory.container_memory(args.container) if args.container else memory.process_tree_mb(args.server_pid)
    )
    prefill, prefill_note = prefill_from_difference(*tests)
    return BothTests(
        prefill_tokens_per_s=prefill,
        prefill_note=prefill_note,
        memory=loaded,
        memory_delta_mb=memory.delta(idle, loaded) if idle else {},
        process_resident_mb=tree.get("rss_mb"),
        process_tree=tree,
        server_version=server_version(args.base_url, key)
        or None,  # TensorRT-LLM's /version, as the lab records it
        chat_template=chat_template.fingerprint(args.checkpoint) if args.checkpoint else None,
    )


@dataclass(frozen=True)
class Speeds:
    """Both speed records (short, long): each as its notebook line, and what is printed beside
    them (the memory added since the idle snapshot, the server's process tree, prefill from the
    difference, its template, the short test's speed limit) from the typed records."""

    records: tuple[EngineSpeed, EngineSpeed]

    @property
    def short(self) -> dict:
        return self.records[0].to_dict()

    @property
    def long(self) -> dict:
        return self.records[1].to_dict()

    @property
    def limit(self) -> SpeedLimit | None:
        return self.records[0].speed_limit


def measure(args, key: str | None, idle: dict, meter=None, energy: EnergyParts | None = None) -> Speeds:
    """The short and the long test against a server that answers (``wait_for`` first), with
    ``meter``'s sampler around each test's repetitions and ``energy`` turning what it read into
    the records' parts."""
    long_prompt = PARAGRAPH * args.long_repeats + "\n\n" + ASK
    tests = [
        measure_test(args, key, n, p, meter, energy) for n, p in (("short", SHORT), ("long", long_prompt))
    ]
    both = both_tests(args, key, tests, idle)
    short, long = (replace(t, both=both) for t in tests)
    long = replace(long, server_timings_check=server_timings.compare(long))  # where the server sent its own
    return Speeds((short, long))


def measure_metered(args, key: str | None, idle: dict, telemetry) -> Speeds:
    """Wait for the server, then both tests with the telemetry plan's meter around them (its
    absent sources said in one line each, its idle baseline read first) and each test's energy
    and cost parts in its records; the meter closed whatever happens."""
    wait_for(args.base_url, key, args.wait_seconds)
    meter = metering.start(telemetry)

    def energy(summary, tokens: int, requests: int, wall_s: float) -> dict:
        price_h, price_kwh = args.price_per_hour, args.price_per_kwh
        return metering.record_parts(meter, summary, tokens, requests, wall_s, price_h, price_kwh)

    try:
        return measure(args, key, idle, meter, energy)
    finally:
        if meter is not None:
            meter.close()


def run(args) -> Speeds:
    """``harness measure`` once its options are in range: the machine's bandwidth (``--machine``,
    refused before anything is sent without ``--model-gb``), the notebook writable, the idle
    snapshot, the key, both tests under the telemetry meter, and the short test's ``speed_limit``
    part where the machine is known and the decode was measured."""
    args.idle_timeout = args.idle_timeout or None  # 0: no bound of its own (the total one)
    if args.machine and not args.model_gb:
        raise ConfigError("--machine needs --model-gb (the model's size in GB) for the speed limit")
    bandwidth = float(lookup(args.machine)["bandwidth_gb_s"]) if args.machine else None
    if not (args.print_only or args.reuse_prompt):
        check_writable(args.labbook)
    idle = idle_snapshot(args)
    key = (os.environ.get(args.api_key_env) if args.api_key_env else None) or args.api_key or None
    parts = urlsplit(args.base_url)
    telemetry = metering.plan_options(args, f"{parts.scheme}://{parts.netloc}")["telemetry"]
    got = measure_metered(args, key, idle, telemetry)
    short, long = got.records
    if bandwidth and short.decode_tokens_per_s:
        limit = speed_limit_part(args.machine, bandwidth, args.model_gb, short.decode_tokens_per_s)
        got = Speeds((replace(short, speed_limit=limit), long))
    return got


def append_speeds(labbook: str, short: dict, long: dict) -> None:
    """Both speed records, each checked against its schema before either is written."""
    for rec in (short, long):
        validate(rec, "engine-speed", where=labbook)
    for rec in (short, long):
        append_record(labbook, rec, "engine-speed")


def write_snapshot(path: str) -> dict:
    """The idle memory snapshot (``--snapshot-only``), taken before the server starts and written
    to ``path``."""
    snap = host_snapshot()
    validate(snap, "memory-snapshot", where=path)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(snap, fh, indent=1)
    return snap
