"""The sweep's workload options (docs/workloads.md; declared in ``harness.options.workload``):
bursts, trace replay, length distributions, conversations, the agent loop and ShareGPT files,
read into ``SweepPlan`` fields (ConfigError, one line, for what does not fit). ``harness
capacity`` shares them without the level-only ones."""

from __future__ import annotations

from pathlib import Path

from harness.core.workloads import largest_output, largest_request
from harness.core.traces import MAX_TRACE_S, TracePlan, parse_trace, span_words
from harness.errors import ConfigError
from harness.io import input_files
from harness.load import specs


MAX_TRACE_BYTES = 256 << 20  # a trace file read whole (Mooncake's public traces are a few MB)


def _trace(args) -> TracePlan:
    what = "a trace file (Mooncake JSONL or 'SECONDS INPUT OUTPUT' lines)"
    text = input_files.read_text("--trace", args.trace, MAX_TRACE_BYTES, what)
    fmt, rows = parse_trace(text, str(args.trace), args.trace_block_tokens)
    del text
    plan = TracePlan(
        tuple(rows), Path(args.trace).name, fmt, args.trace_block_tokens, args.trace_time_scale, args.seed
    )
    if plan.span_s() > MAX_TRACE_S:
        raise ConfigError(
            f"--trace: {span_words(plan)}, past the week one level may last; "
            "scale it down with --trace-time-scale"
        )
    return plan


def workload_options(args, open_loop: bool) -> dict:
    """The workload options as SweepPlan fields (ConfigError, one line, for what does not fit)."""
    burst = getattr(args, "burstiness", None)
    trace = getattr(args, "trace", None)
    if burst is not None and not open_loop:
        raise ConfigError("--burstiness needs --rate (it shapes the open loop's arrival gaps)")
    if getattr(args, "poisson", False) and burst is not None:
        raise ConfigError("--poisson and --burstiness are one choice: --burstiness 1 is Poisson")
    out: dict = {"burstiness": burst}
    if trace:
        if open_loop or args.workload != "prompts" or args.input_tokens or args.output_tokens:
            raise ConfigError(
                "--trace sets its own times and lengths: leave out --rate, --workload and the lengths"
            )
        out["trace"] = _trace(args)
        return out
    if args.workload in ("conversations", "agent"):
        if open_loop or args.processes or args.input_tokens:
            raise ConfigError(
                f"--workload {args.workload} runs a closed loop of --concurrency users in one process; "
                "leave out --rate, --processes and --input-tokens (use --message-tokens)"
            )
        if args.workload == "agent" and args.sharegpt:
            raise ConfigError("--sharegpt gives conversations their messages; the agent loop has its own")
        out["conversations"] = specs.conversation_plan(
            args.turns,
            args.message_tokens,
            args.think_time,
            args.output_tokens,
            agent=args.workload == "agent",
            sharegpt=args.sharegpt,
        )
        return out
    if args.sharegpt:
        if args.input_tokens or args.prompt_file:
            raise ConfigError("--sharegpt gives the prompts: leave out --input-tokens and --prompt-file")
        out["prompts"] = tuple(c[0] for c in specs.read_conversations(args.sharegpt))
    out["lengths"] = specs.length_plan(args.input_tokens, args.output_tokens)
    if out["lengths"] and args.processes:
        raise ConfigError("--input-tokens and --output-tokens work in one process; leave out --processes")
    return out


def check_context(workload: dict, max_tokens: int, context_length: int | None) -> None:
    """A workload whose requests ask for more tokens than the model's context (``--context-length``,
    where given) is refused in one line before any request is sent."""
    lengths, conversations = workload.get("lengths"), workload.get("conversations")
    need = largest_request(max_tokens, lengths, conversations, workload.get("trace"))
    what = "tokens a request (prompt and output)"
    if need is None:  # the prompt set's prompts: its output alone is already the least it asks
        need = largest_output(max_tokens, lengths, conversations)
        what = "output tokens a request before its prompt"
    if context_length and need > context_length:
        raise ConfigError(
            f"the workload asks up to {need} {what}, past the model's context of {context_length} "
            "tokens (--context-length); shorten its lengths or --max-tokens, or give the server more "
            "context"
        )


def prompt_set_name(args) -> str:
    """What the record's ``prompt_set`` says was sent."""
    if getattr(args, "sharegpt", None) and args.workload == "prompts":
        return "sharegpt:" + Path(args.sharegpt).name
    return "file:" + Path(args.prompt_file).name if args.prompt_file else args.prompt_set


def plan_line(plan) -> str:
    """The sweep's plan: its workload and parameters."""
    shown = ", ".join(f"{k} {v}" for k, v in plan.workload_params().items())
    burst = "" if plan.burstiness is None else f"; gamma arrivals, burstiness {plan.burstiness:g}"
    line = f"    workload {plan.workload_kind}{': ' + shown if shown else ''}{burst}"
    return line + (f"\n    {span_words(plan.trace)}" if plan.trace else "")


def rate_span_words(requests: int, rates: list[float]) -> str:
    """How long the open loop's schedules run (``requests`` at each rate, the slowest the longest),
    so a rate far below the requests (0.001/s for 1,000 requests: 11.6 days) is seen before it starts."""
    slowest = min(rates)
    span = (requests - 1) / slowest if requests > 1 else 0.0
    shown = f"{span:,.1f}" if span >= 1 else f"{span:.3g}"
    out = f"each level's schedule spans up to {shown} s ({requests} requests at {slowest:g}/s)"
    if span >= 3600:
        out += f": {span / 3600:,.1f} h; fewer --requests or a higher --rate shortens it"
    return out


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def backlog_lines(r: dict) -> list[str]:
    """An open loop's arrivals against the server's finishes, and the server-limited warning (or,
    where the client was the limit too, the note that its verdict wins)."""
    found = r.get("backlog")
    if not isinstance(found, dict):
        return []
    if found.get("judged"):
        line = (
            f"         arrivals {found['offered_rps']:.3g}/s, finished {found['finished_rps']:.3g}/s "
            f"over the last {found['window_s']:.3g} s of the schedule, in flight "
            f"{found['in_flight_rise']:+d} (peak {found['peak_in_flight']})"
        )
    else:
        line = f"         whether the server kept up: not judged, {found.get('reason')}"
    out = [line]
    if r.get("server_note"):
        out.append(f"         {'warning' if r.get('server_limited') else 'note'}: {r['server_note']}")
    return out


def level_lines(r: dict) -> list[str]:
    """Under a level's figures: the open loop's schedule error and spread, the agent's note, and
    one line per turn of a conversation workload."""
    out = []
    late = r.get("schedule_lateness_s")
    if late and late.get("p99") is not None:
        cv = r.get("departure_gap_cv")
        out.append(
            f"         schedule lateness p50 {late['p50'] * 1000:.2f} ms p99 {late['p99'] * 1000:.2f} ms"
            f"{'' if cv is None else f', departure gaps CV {cv:.2f}'}"
        )
    if r.get("schedule_note"):
        out.append(f"         warning: {r['schedule_note']}")
    out += backlog_lines(r)
    for name in ("workload_note", "cached_note"):
        if r.get(name):
            out.append(f"         note: {r[name]}")
    for row in r.get("per_turn") or []:
        share = row["cached_share"]
        out.append(
            f"         turn {row['turn']}: {row['completed']}/{row['requests']} ok, TTFT p50 "
            f"{_fmt(row['ttft_s']['p50'], '.3f')} s, TPOT p50 {_fmt(row['tpot_s']['p50'], '.4f')} s, prompt "
            f"{_fmt(row['prompt_tokens_mean'], '')} tok, cached {'-' if share is None else f'{share:.0%}'}"
        )
    return out
