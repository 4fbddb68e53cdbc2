"""The sweep's workload options (docs/workloads.md; declared in ``harness.options.workload``):
bursts, trace replay, length distributions, conversations, the agent loop and ShareGPT files,
read into ``SweepPlan`` fields (ConfigError, one line, for what does not fit). ``harness
capacity`` shares them without the level-only ones; ``harness.report.sweep_lines`` says them."""

from __future__ import annotations

from pathlib import Path

from harness.workloads.request import largest_output, largest_request
from harness.workloads.traces import MAX_TRACE_S, TracePlan, parse_trace, span_words
from harness.errors import ConfigError
from harness.workloads import files as input_files
from harness.workloads import specs


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
