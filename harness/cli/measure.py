"""``harness measure``: single-user prefill, decode and memory for one server, a drop-in for the
lab's compare-engines.py (same options, same record fields), and each test's energy (harness.energy)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import uuid
from dataclasses import replace
from urllib.parse import urlsplit

from harness import options
from harness.options.load import BASE_URL, IDLE_TIMEOUT, MAX_TOKENS, TIMEOUT
from harness.options.record import CONTEXT_LENGTH, ENGINE, ENGINE_VERSION, QUANT
from harness.options.shared import (
    API_KEY,
    API_KEY_ENV,
    LABBOOK,
    MACHINE,
    MACHINE_DESC,
    MODEL,
    MODEL_GB,
    PRINT_ONLY,
)
from harness.options.telemetry import TELEMETRY_SET
from harness.core import bounds, server_timings
from harness.energy import meter as metering, record_part
from harness.core.arithmetic import speed_limit, speed_share
from harness.io import chat_template
from harness.io.machines import lookup
from harness.core.sample import decode_rate
from harness.io import memory
from harness.io.shim_host import host_name, host_snapshot
from harness.io.engine_versions import server_version
from harness.io.http import get_models, stream_chat
from harness.errors import ConfigError, TargetError, TargetUnreachable
from harness.core.engine_records import EngineSpeed
from harness.io.clock import now_stamp
from harness.io.notebook import append_record, check_writable, validate
from harness.options.shared import CHECKPOINT
from harness.options.single_user import (
    MEASURE,
    BACKEND,
    CONTAINER,
    IDLE_SNAPSHOT,
    LONG_REPEATS,
    NO_WARMUP,
    REPETITIONS,
    REUSE_PROMPT,
    SERVER_PID,
    SNAPSHOT_ONLY,
    WAIT_SECONDS,
)

SHORT = "Two sentences, please: what is a KV cache, and why does it grow with the context?"
PARAGRAPH = (
    "Reading a prompt happens in one pass over the weights, so each weight that is fetched serves many "
    "tokens at once and the arithmetic units stay busy. Writing the answer is different: every new token "
    "needs every weight fetched again, so the speed of memory, not of arithmetic, decides the pace. "
    "A single number that mixes the two phases hides the one distinction that explains a machine. "
)
ASK = "Give the gist of the text above in three sentences."


def add_parser(sub) -> None:
    p = sub.add_parser(
        "measure", help="single-user prefill, decode and memory (drop-in for compare-engines.py)"
    )
    options.to_argparse(p, SNAPSHOT_ONLY, command="measure")
    options.to_argparse(p, ENGINE, BASE_URL, MODEL, API_KEY, API_KEY_ENV, ENGINE_VERSION, command="measure")
    options.to_argparse(p, BACKEND, command="measure")
    options.to_argparse(p, MACHINE_DESC, QUANT, CONTEXT_LENGTH, command="measure")
    options.to_argparse(p, CHECKPOINT, command="measure")
    options.to_argparse(p, SERVER_PID, command="measure")
    options.to_argparse(p, CONTAINER, command="measure")
    options.to_argparse(p, IDLE_SNAPSHOT, command="measure")
    options.to_argparse(p, MAX_TOKENS, command="measure")
    options.to_argparse(p, LONG_REPEATS, command="measure")
    options.to_argparse(p, REPETITIONS, command="measure")
    options.to_argparse(p, TIMEOUT, IDLE_TIMEOUT, command="measure")
    options.to_argparse(p, WAIT_SECONDS, command="measure")
    options.to_argparse(p, NO_WARMUP, command="measure")
    options.to_argparse(p, REUSE_PROMPT, command="measure")
    # with --machine: the short test's decode as a share of the speed limit; the power and energy
    # of each test's repetitions (docs/telemetry.md)
    options.to_argparse(p, MACHINE, MODEL_GB, LABBOOK, PRINT_ONLY, TELEMETRY_SET, command="measure")
    p.set_defaults(func=run)


def wait_for(base_url: str, api_key: str | None, seconds: int) -> None:
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


def one(args, key: str | None, prompt: str) -> dict:
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
    decode, why = decode_rate(s)
    timings = s.timings or {}
    return {
        "ttft_s": s.ttft,
        "decode_tokens_per_s": decode,
        "decode_note": why,
        "prompt_tokens": s.prompt_tokens,
        "completion_tokens": s.output_tokens,
        "token_source": "usage" if s.token_source == "usage" else "chunks",
        "cached_tokens": s.cached_tokens,
        "finish_reason": s.finish_reason,
        "fields": sorted(s.fields),
        "server_prefill": timings.get("prompt_per_second"),
        "server_decode": timings.get("predicted_per_second"),
    }


def check_numbers(args) -> None:
    """Every numeric option in its declared range before anything is sent (ConfigError, one line)."""
    options.check(args, MEASURE, MAX_TOKENS, CONTEXT_LENGTH, TIMEOUT, IDLE_TIMEOUT, MODEL_GB)
    args.idle_timeout = args.idle_timeout or None  # 0: no bound of its own (the total one)


def _median(runs: list[dict], key: str):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def measure_test(args, key, name: str, prompt: str, meter=None) -> EngineSpeed:
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
    tokens = sum(int(r["completion_tokens"] or 0) for r in runs)
    energy = metering.record_parts(
        meter, summary, tokens, len(runs), time.monotonic() - started, args.price_per_hour, args.price_per_kwh
    )
    reused = [run["cached_tokens"] for run in runs if isinstance(run["cached_tokens"], int)]
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
        ttft_s=r2(_median(runs, "ttft_s"), 4),
        decode_tokens_per_s=r2(_median(runs, "decode_tokens_per_s"), 2),  # None: no true rate (see extra)
        prompt_tokens=_median(runs, "prompt_tokens"),
        completion_tokens=_median(runs, "completion_tokens"),
        token_source=runs[-1]["token_source"],
        finish_reason=runs[-1]["finish_reason"],
        text_fields=runs[-1]["fields"],
        max_cached_prompt_tokens=max(reused, default=None),
        prompt_tag=not args.reuse_prompt,
        server_prefill_tokens_per_s=_median(runs, "server_prefill"),
        server_decode_tokens_per_s=_median(runs, "server_decode"),
        measured_on=now_stamp(),
        extra={**_decode_note(runs), **energy},
    )


def _decode_note(runs: list[dict]) -> dict:
    """Why the record has no decode rate, when no run had one."""
    notes = [r["decode_note"] for r in runs if r.get("decode_note")]
    return {"decode_note": notes[0]} if notes and len(notes) == len(runs) else {}


def prefill_from_difference(short: dict, long: dict) -> tuple[float | None, str | None]:
    """(long prompt tokens - short prompt tokens) / (TTFT long - TTFT short): fixed costs cancel.

    Returns the rate, or None with the reason it cannot be read from these two records."""
    if not (short["prompt_tokens"] and long["prompt_tokens"]):
        return None, "the server sent no prompt token counts"
    if long["prompt_tokens"] <= short["prompt_tokens"]:
        return None, "the long prompt was not longer in tokens than the short one"
    if long["ttft_s"] <= short["ttft_s"]:
        return None, (
            f"the long prompt's TTFT ({long['ttft_s']:.3f} s) was not above the short one's "
            f"({short['ttft_s']:.3f} s), so a run was disturbed; raise --repetitions for medians"
        )
    rate = (long["prompt_tokens"] - short["prompt_tokens"]) / (long["ttft_s"] - short["ttft_s"])
    return round(rate, 1), None


def _idle_snapshot(args) -> dict:
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


def _rate(rec: dict) -> str:
    value = rec["decode_tokens_per_s"]
    return f"{value:.2f}" if value is not None else f"- ({rec.get('decode_note', 'not measured')})"


def _extras(args, key: str | None, tests: list, idle: dict) -> tuple[dict, dict, dict, object, dict | None]:
    """What both speed records carry: memory, prefill from the difference, version, chat template."""
    loaded = host_snapshot()
    added = memory.delta(idle, loaded) if idle else {}
    tree = (  # a container's own processes, else the server's tree (vLLM is four processes)
        memory.container_memory(args.container) if args.container else memory.process_tree_mb(args.server_pid)
    )
    prefill, prefill_note = prefill_from_difference(*(t.to_dict() for t in tests))
    version_reply = server_version(args.base_url, key)  # TensorRT-LLM's /version, as the lab records it
    template = chat_template.fingerprint(args.checkpoint) if args.checkpoint else None
    extra = {
        "prefill_tokens_per_s": prefill,
        **({"prefill_note": prefill_note} if prefill_note else {}),
        "memory": loaded,
        "memory_delta_mb": added,
        "process_resident_mb": tree.get("rss_mb"),
        "process_tree": tree,
        **({"server_version": version_reply} if version_reply else {}),
        **({"chat_template": template} if template else {}),
    }
    return extra, added, tree, prefill, template


def run(args) -> int:
    if args.snapshot_only:
        write_snapshot(args.snapshot_only)
        return 0
    if not args.engine or not args.model:
        raise ConfigError("--engine and --model are needed (unless --snapshot-only)")
    check_numbers(args)
    if args.machine and not args.model_gb:
        raise ConfigError("--machine needs --model-gb (the model's size in GB) for the speed limit")
    bandwidth = float(lookup(args.machine)["bandwidth_gb_s"]) if args.machine else None
    if not (args.print_only or args.reuse_prompt):
        check_writable(args.labbook)
    idle = _idle_snapshot(args)
    key = (os.environ.get(args.api_key_env) if args.api_key_env else None) or args.api_key or None
    parts = urlsplit(args.base_url)
    telemetry = metering.plan_options(args, f"{parts.scheme}://{parts.netloc}")["telemetry"]
    wait_for(args.base_url, key, args.wait_seconds)
    long_prompt = PARAGRAPH * args.long_repeats + "\n\n" + ASK
    meter = metering.start(telemetry)  # absent sources in one line each; the idle baseline
    try:
        tests = [measure_test(args, key, n, p, meter) for n, p in (("short", SHORT), ("long", long_prompt))]
    finally:
        if meter is not None:
            meter.close()
    extra, added, tree, prefill, template = _extras(args, key, tests, idle)
    recs = [replace(t, extra={**t.extra, **extra}) for t in tests]
    check = server_timings.compare(recs[1].to_dict())  # the server's own timings, where it sent them
    if check:
        recs[1] = replace(recs[1], extra={**recs[1].extra, "server_timings_check": check})
    short, long = (r.to_dict() for r in recs)
    print_results(args.engine, short, long, prefill, added, tree)
    if template:
        said = f"{template['sha256']} ({template['source']})" if template["sha256"] else template["note"]
        print(f"    {args.engine:>14} chat template: {said}")
    if bandwidth and short["decode_tokens_per_s"]:
        short["speed_limit"] = limit_share(args, bandwidth, short["decode_tokens_per_s"])
    if args.reuse_prompt:
        print(
            "    --reuse-prompt: these runs measured the prefix cache, not prefill; nothing recorded",
            file=sys.stderr,
        )
        return 0
    if not args.print_only:
        _record(args.labbook, short, long)
    return 0


def _record(labbook: str, short: dict, long: dict) -> None:
    """Both speed records, each checked against its schema before either is written."""
    for rec in (short, long):
        validate(rec, "engine-speed", where=labbook)
    for rec in (short, long):
        append_record(labbook, rec, "engine-speed")
    print(f"    recorded 2 line(s) in {labbook}")


def limit_share(args, bandwidth: float, rate: float) -> dict:
    """Seed 002's sanity check: the short test's decode over bandwidth / model size, printed and kept."""
    limit = speed_limit(bandwidth, args.model_gb)
    share, reading = speed_share(rate, limit)
    print(
        f"    {args.engine:>14} speed limit {bandwidth:g} GB/s / {args.model_gb:g} GB = {limit:.1f} tok/s; "
        f"short decode {rate:.2f} tok/s is {share:.0%} of it: {reading}"
    )
    return {
        "machine": args.machine,
        "bandwidth_gb_s": bandwidth,
        "model_gb": args.model_gb,
        "tok_s": round(limit, 2),
        "share": round(share, 3),
    }


def write_snapshot(path: str) -> None:
    """The idle memory snapshot (``--snapshot-only``), taken before the server starts."""
    snap = host_snapshot()
    validate(snap, "memory-snapshot", where=path)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(snap, fh, indent=1)
    print(f"    idle snapshot written to {path}")
    print("    " + ", ".join(f"{k} {round(v)}" for k, v in snap.items() if isinstance(v, float)))


def print_results(engine: str, short: dict, long: dict, prefill, added: dict, tree: dict) -> None:
    rss = tree.get("rss_mb")
    for rec in (short, long):
        print(
            f"    {engine:>14} {rec['test']:>5}  prompt {rec['prompt_tokens']} tok  "
            f"ttft {rec['ttft_s']:.3f} s  "
            f"decode {_rate(rec)} tok/s  {rec['completion_tokens']} tok ({rec['finish_reason']}), "
            f"counts from {rec['token_source']}, cached {rec['max_cached_prompt_tokens']}"
        )
    print(
        f"    {engine:>14} prefill from the difference: "
        + (
            f"{prefill:.1f} tok/s over {long['prompt_tokens'] - short['prompt_tokens']:.0f} more prompt "
            "tokens"
            if prefill
            else f"not computable: {long.get('prefill_note')}"
        )
    )
    if long["server_prefill_tokens_per_s"] is not None:
        print(
            f"    {engine:>14} server's own timings (long): prefill "
            f"{long['server_prefill_tokens_per_s']:.1f} "
            f"tok/s, decode {long['server_decode_tokens_per_s']:.2f} tok/s"
        )
    agreement = server_timings.words(long.get("server_timings_check"))
    if agreement:
        print(f"    {engine:>14} {agreement}")
    for rec in (short, long):
        for line in record_part.energy_lines(rec):
            print(f"    {engine:>14} {rec['test']:>5} {line.strip()}")
    mem = ", ".join(f"{k} {v}" for k, v in added.items()) if added else "no idle snapshot given"
    resident = (
        "not read (give --server-pid)"
        if rss is None
        else f"{rss}, PSS {tree.get('pss_mb', '-')} ({tree.get('processes', 0)} process(es) summed)"
    )
    print(
        f"    {engine:>14} memory added since the idle snapshot (MB): {mem}; "
        f"server resident set (MB): {resident}"
    )
