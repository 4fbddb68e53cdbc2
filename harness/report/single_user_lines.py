"""What ``harness measure`` shows of one server's single-user tests, as lines: each test's figures,
prefill from the difference, the server's own timings, energy, memory, the chat template, and the
short test's decode against the machine's speed limit."""

from __future__ import annotations

from harness.measure import server_timings
from harness.sizing.arithmetic import speed_limit, speed_share
from harness.energy.record_part import energy_lines
from harness.records.engine import BothTests, EngineSpeed, SpeedLimit


def _rate(rec: EngineSpeed) -> str:
    value = rec.decode_tokens_per_s
    return f"{value:.2f}" if value is not None else f"- ({rec.decode_note or 'not measured'})"


def limit_line(engine: str, part: SpeedLimit, rate: float) -> str:
    """The short test's decode ``rate`` over bandwidth / model size (``part``: the record's
    ``speed_limit``), and what the lab's band makes of it."""
    bandwidth, model_gb = part.bandwidth_gb_s, part.model_gb
    limit = speed_limit(bandwidth, model_gb)
    share, reading = speed_share(rate, limit)
    return (
        f"    {engine:>14} speed limit {bandwidth:g} GB/s / {model_gb:g} GB = {limit:.1f} tok/s; "
        f"short decode {rate:.2f} tok/s is {share:.0%} of it: {reading}"
    )


def result_lines(engine: str, short: EngineSpeed, long: EngineSpeed) -> list[str]:
    """Each test's figures, prefill from the difference, the server's own timings and whether they
    agree, the energy of each test, the memory added and the chat template, one line each."""
    out: list[str] = []
    both = long.both or BothTests(None)
    for rec in (short, long):
        out.append(
            f"    {engine:>14} {rec.test:>5}  prompt {rec.prompt_tokens} tok  "
            f"ttft {rec.ttft_s:.3f} s  "
            f"decode {_rate(rec)} tok/s  {rec.completion_tokens} tok ({rec.finish_reason}), "
            f"counts from {rec.token_source}, cached {rec.max_cached_prompt_tokens}"
        )
    prefill = both.prefill_tokens_per_s
    out.append(
        f"    {engine:>14} prefill from the difference: "
        + (
            f"{prefill:.1f} tok/s over {(long.prompt_tokens or 0) - (short.prompt_tokens or 0):.0f} more "
            "prompt tokens"
            if prefill
            else f"not computable: {both.prefill_note}"
        )
    )
    if long.server_prefill_tokens_per_s is not None:
        out.append(
            f"    {engine:>14} server's own timings (long): prefill "
            f"{long.server_prefill_tokens_per_s:.1f} "
            f"tok/s, decode {long.server_decode_tokens_per_s:.2f} tok/s"
        )
    agreement = server_timings.words(long.server_timings_check)
    if agreement:
        out.append(f"    {engine:>14} {agreement}")
    for rec in (short, long):
        for line in energy_lines(rec.to_dict()):
            out.append(f"    {engine:>14} {rec.test:>5} {line.strip()}")
    added, tree = both.memory_delta_mb, both.process_tree
    mem = ", ".join(f"{k} {v}" for k, v in added.items()) if added else "no idle snapshot given"
    rss = tree.get("rss_mb")
    resident = (
        "not read (give --server-pid)"
        if rss is None
        else f"{rss}, PSS {tree.get('pss_mb', '-')} ({tree.get('processes', 0)} process(es) summed)"
    )
    out.append(
        f"    {engine:>14} memory added since the idle snapshot (MB): {mem}; "
        f"server resident set (MB): {resident}"
    )
    template = both.chat_template
    if template:
        said = f"{template.sha256} ({template.source})" if template.sha256 else template.note
        out.append(f"    {engine:>14} chat template: {said}")
    return out
