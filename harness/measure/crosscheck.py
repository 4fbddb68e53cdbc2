"""The engine's own generator as a cross-check on our client (the serving lab's cross-check).

``vllm bench serve`` at the same concurrency cap, prompt and output lengths and temperature as our
c = 20 row should report the same output throughput and median TPOT within a few per cent (both tools
define TPOT as (end - first token) / (tokens - 1)); a clearly lower figure from us means suspect the
client. On the CPU track, llama.cpp's ``llama-batched-bench`` decodes the same batch in-process,
with no HTTP and no scheduler: it bounds what the server can deliver, so ours should come close
below it, not above. These are pure functions: parsing the tools' printed results and comparing them
with a level record.
"""

from __future__ import annotations

import re

from harness.records.level import DIST, LEVEL, LevelStats, STATS
from harness.errors import TargetError

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_LINE = re.compile(r"^\s*([A-Za-z][^:]*?)\s*:\s*(-?[0-9][0-9.,]*)\s*$")

# vllm bench serve's result labels -> our names. Percentile lines ("P90 TTFT (ms)") are read by pattern.
_VLLM_FIELDS = {
    "successful requests": STATS.completed,
    "failed requests": STATS.failed,
    "maximum request concurrency": "max_concurrency",
    "benchmark duration (s)": "duration_s",
    "total input tokens": "input_tokens",
    "total generated tokens": STATS.output_tokens,
    "request throughput (req/s)": STATS.requests_per_s,
    "request goodput (req/s)": STATS.goodput_requests_per_s,
    "output token throughput (tok/s)": STATS.output_tokens_per_s,
    "peak output token throughput (tok/s)": "peak_output_tokens_per_s",
    "peak concurrent requests": "peak_concurrent_requests",
    "total token throughput (tok/s)": "total_tokens_per_s",
}
_STAT = re.compile(r"^(mean|median|p(\d+(?:\.\d+)?))\s+(ttft|tpot|itl|e2el)\s+\(ms\)$")


def parse_vllm_bench(text: str) -> dict:
    """The numbers of ``vllm bench serve``'s result block; latencies in seconds under ``ttft_s`` etc.

    Raises TargetError when the output holds no result block (the tool failed before it finished)."""
    start = text.find("Serving Benchmark Result")
    if start < 0:
        tail = [x for x in text.strip().splitlines() if x.strip()][-1:] or ["no output"]
        raise TargetError(f"vllm bench serve printed no result block; its last line: {tail[0][:200]}")
    out: dict = {STATS.ttft_s: {}, STATS.tpot_s: {}, STATS.itl_s: {}, "e2el_s": {}}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("=" * 10):
            break
        m = _LINE.match(line)
        if not m:
            continue
        label, value = m[1].strip().lower(), float(m[2].replace(",", ""))
        if label in _VLLM_FIELDS:
            key = _VLLM_FIELDS[label]
            out[key] = (
                int(value)
                if key
                in (
                    STATS.completed,
                    STATS.failed,
                    "max_concurrency",
                    "input_tokens",
                    STATS.output_tokens,
                    "peak_concurrent_requests",
                )
                else value
            )
            continue
        s = _STAT.match(label)
        if s:
            stat = DIST.mean if s[1] == "mean" else DIST.p50 if s[1] == "median" else f"p{s[2]}"
            out[f"{s[3]}_s"][stat] = round(value / 1000.0, 6)
    if STATS.output_tokens_per_s not in out:
        raise TargetError("vllm bench serve's result block has no output token throughput line")
    return out


_ROW = re.compile(r"^\|\s*" + r"\s*\|\s*".join([r"(\d+)"] * 4 + [r"([0-9.]+)"] * 6) + r"\s*\|")


def parse_batched_bench(text: str) -> list[dict]:
    """``llama-batched-bench``'s table, one dict per row (PP, TG, B, N_KV, times in s, speeds in t/s)."""
    rows = []
    for line in text.splitlines():
        m = _ROW.match(line.strip())
        if m:
            pp, tg, b, n_kv = (int(m[i]) for i in range(1, 5))
            t_pp, s_pp, t_tg, s_tg, t, s = (float(m[i]) for i in range(5, 11))
            rows.append(
                {
                    "pp": pp,
                    "tg": tg,
                    "b": b,
                    "n_kv": n_kv,
                    "t_pp_s": t_pp,
                    "s_pp": s_pp,
                    "t_tg_s": t_tg,
                    "s_tg": s_tg,
                    "t_s": t,
                    "s": s,
                }
            )
    if not rows:
        tail = [x for x in text.strip().splitlines() if x.strip()][-1:] or ["no output"]
        raise TargetError(f"llama-batched-bench printed no result table; its last line: {tail[0][:200]}")
    return rows


def batched_as_service(row: dict) -> dict:
    """What one batched-bench row implies for a server running B sequences together: every sequence
    gets TG tokens in the row's whole time (prefill included), and one decode step takes T_TG / TG."""
    return {
        STATS.output_tokens_per_s: round(row["b"] * row["tg"] / row["t_s"], 2),
        STATS.tpot_s: {DIST.p50: round(row["t_tg_s"] / row["tg"], 6)},
        STATS.ttft_s: {DIST.p50: round(row["t_pp_s"], 6)},
        "batch": row["b"],
    }


def _early_stop_note(ours: dict) -> list[str]:
    """When our replies ended at EOS well before max_tokens, the tool (which ignores EOS) decoded more."""
    asked, done, out = ours.get(LEVEL.max_tokens), ours.get(STATS.completed), ours.get(STATS.output_tokens)
    if not (asked and done and out) or out / done >= 0.95 * asked:
        return []
    return [
        f"our row averaged {out / done:.0f} output tokens of the {asked} asked (replies ended at EOS); "
        f"the tool ignores EOS and generates {asked}, so the two did not decode the same amount"
    ]


def _one_round_note(ours: dict) -> list[str]:
    """A row of one round (no more requests than users) is one burst and one drain: noisy."""
    c, done = ours.get(STATS.concurrency), ours.get(STATS.completed)
    if not (c and done) or done > c:
        return []
    return [
        f"our row is a single round ({done} requests at c={c}): one burst of prefills and one drain, so its "
        "wall clock moves by several per cent between runs; compare rows of at least two rounds"
    ]


def cpu_share(samples: list[tuple[float, float]], duration_s: float | None) -> float | None:
    """CPU seconds per wall second of a tool over the last ``duration_s`` seconds it ran (its
    benchmark, after its start-up), from (monotonic time, CPU seconds so far) samples; None when the
    samples do not reach back that far."""
    if not samples or not duration_s or duration_s <= 0:
        return None
    end_t, end_cpu = samples[-1]
    start = [(t, c) for t, c in samples if t <= end_t - duration_s]
    if not start:
        return None
    t0, c0 = start[-1]
    return round((end_cpu - c0) / (end_t - t0), 3) if end_t > t0 else None


def _input_note(ours: dict, theirs: dict) -> list[str]:
    """The tool's prompts, after its own chat template, may not be the length ours were."""
    mean, tokens, done = (
        ours.get(STATS.prompt_tokens_mean),
        theirs.get("input_tokens"),
        theirs.get(STATS.completed),
    )
    if not (mean and tokens and done) or abs(tokens / done / mean - 1) <= 0.1:
        return []
    return [f"the tool's prompts averaged {tokens / done:.0f} tokens against our row's {mean:.0f}"]


def _client_cpu_note(ours: dict, theirs: dict, cores: int | None) -> list[str]:
    """A tool whose client used clearly more CPU than ours, on the server's own cores, took that CPU
    from a CPU-bound server: its figures are lower for it, and ours higher is the expected sign."""
    o, t = ours.get(LEVEL.client_cpu), theirs.get(LEVEL.client_cpu)
    if o is None or t is None or not cores or t - o < 0.1:
        return []
    return [
        f"the tool's client used {t:.0%} of a core while it measured, ours {o:.0%}: "
        f"{(t - o) / cores:.0%} more of this {cores}-core machine, which a server on the same cores "
        "loses (on the CPU track the server is CPU-bound)"
    ]


def compare(
    ours: dict, theirs: dict, tolerance: float, bound: bool = False, cores: int | None = None
) -> dict:
    """Our level record against the tool's figures: ratios ours / theirs and a verdict.

    ``bound`` marks the tool's figures as an upper bound (in-process, no HTTP): then being lower by
    more than the tolerance is expected overhead, and only being clearly above it is suspicious."""
    # the tool's figures are kept in the level record's names, so one typed reader reads both
    our_tput, their_tput = (
        LevelStats.read(ours).output_tokens_per_s,
        LevelStats.read(theirs).output_tokens_per_s,
    )
    tput = our_tput / their_tput if their_tput else None
    o_tpot, t_tpot = (
        (ours.get(STATS.tpot_s) or {}).get(DIST.p50),
        (theirs.get(STATS.tpot_s) or {}).get(DIST.p50),
    )
    tpot = o_tpot / t_tpot if o_tpot and t_tpot else None
    notes = []
    if tput is None:
        verdict = "no figure"
        notes.append("the tool reported no output throughput")
    elif not bound:
        ok = abs(tput - 1) <= tolerance and (tpot is None or abs(tpot - 1) <= tolerance)
        verdict = "agree" if ok else "client suspect" if tput < 1 - tolerance else "differ"
        if verdict == "client suspect":
            notes.append(
                "our throughput is clearly lower than the engine's own generator: suspect the client "
                "(in flight below c, a Python process at a full core)"
            )
        elif verdict == "differ":
            notes.append(
                "the figures differ beyond the tolerance: check both ran the same cap, prompt and "
                "output lengths (the tool ignores EOS; our row may stop early)"
            )
        notes += _early_stop_note(ours)
        failed = theirs.get(STATS.failed)
        if failed:
            notes.append(
                f"{failed} of the tool's {failed + (theirs.get(STATS.completed) or 0)} "
                "requests failed, so it did not measure the same load: read its output"
            )
        if verdict != "agree":
            notes += _input_note(ours, theirs)
        if verdict == "differ" and tput > 1:
            notes += _client_cpu_note(ours, theirs, cores)
        if verdict != "agree":
            notes += _one_round_note(ours)
    else:
        verdict = "above bound" if tput > 1 + tolerance else "within bound"
        notes.append(
            f"the in-process figure bounds the server's; ours is {(1 - tput) * 100:.0f} % below it"
            if tput <= 1
            else f"ours is {(tput - 1) * 100:.0f} % above the in-process figure"
        )
    return {
        "output_tokens_per_s_ratio": None if tput is None else round(tput, 4),
        "tpot_p50_ratio": None if tpot is None else round(tpot, 4),
        "tolerance": tolerance,
        "verdict": verdict,
        "notes": notes,
    }
