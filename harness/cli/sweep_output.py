"""What ``harness sweep`` prints: the endpoint proof's findings, the plan before the first level,
and each level's lines as it finishes (the figures, the server's own /metrics peaks, a fall in
throughput, a client that may be the limit, the workload's lines, the first error and its remedy).
Pure rendering of records and plans; ``harness.cli.sweep`` runs the sweep."""

from __future__ import annotations

import sys

from harness.cli import sweep_workloads
from harness.energy.record_part import energy_lines
from harness.core import server_metrics, troubleshooting, words
from harness.core.records import EndpointCheck
from harness.core.server_text import keep_secret, redact
from harness.endpoints import api_path, kind_named
from harness.load.sweep import SweepPlan
from harness.report.troubleshooting import load_errors


def print_endpoint(check: EndpointCheck) -> None:
    """What the endpoint proof saw, and its warnings on stderr."""
    seen = check.observed
    print(
        f"    endpoint proved: text in {', '.join(seen['text_fields'])}, finish {seen['finish_reason']}, "
        "usage "
        f"{'yes' if seen['usage'] else 'no'}, context {seen['n_ctx'] or 'not reported'} per sequence"
    )
    for w in check.warnings:
        print(f"warning: {w}", file=sys.stderr)


def print_plan(args, plan: SweepPlan) -> None:
    keep_secret(plan.api_key)  # a key in the URL's path is not printed either
    url = plan.root + api_path(plan.base_path, kind_named(plan.context.endpoint))
    print(redact(f"==> {args.label}: {args.model} at {url}", anyone=False))
    print(
        f"    prompt set {args.prompt_file or args.prompt_set}, at least {args.requests} request(s) per level"
        f"{f' and {args.min_rounds} per worker' if args.min_rounds else ''}, max_tokens {args.max_tokens}, "
        f"temperature {args.temperature}"
    )
    print(
        f"    goodput objective: TTFT <= {args.slo_ttft} s and TPOT <= {args.slo_tpot} s; "
        f"{args.warmup} warm-up request(s)",
        flush=True,
    )
    if plan.workload_kind != "prompts" or plan.lengths or plan.burstiness is not None:
        print(sweep_workloads.plan_line(plan), flush=True)
    if plan.open_loop and not plan.trace:
        print(f"    {sweep_workloads.rate_span_words(plan.requests, plan.levels)}", flush=True)
    if getattr(args, "repeat", 1) > 1:
        print(f"    each level run {args.repeat} times in a row (figures then carry the range of the runs)")
    if args.timeout_per_user:
        every = " (with --processes: the largest level's, for every level)" if args.processes else ""
        print(
            f"    each request's bound at c users: the larger of {args.timeout:g} s and "
            f"c x {args.timeout_per_user:g} s{every}"
        )


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _client_warning(r: dict, lag: str) -> None:
    """The client-limit verdict's lines: the signs in brief, then the record's words (by how much)."""
    gap = r["itl_s"]["p50"]
    print(
        f"         warning: the client may be the limit (CPU {r['client_cpu']:.0%}, in flight "
        f"{r['mean_in_flight']:.1f} of {r['concurrency']}"
        f"{'' if gap is None else f', token gap p50 {gap * 1000:.1f} ms'}{lag}); "
        "run the load from another machine or with more processes",
        flush=True,
    )
    if r.get("client_limit_note"):
        print(f"         the client's limit: {r['client_limit_note']}", flush=True)


def print_level(r: dict, previous: dict | None = None) -> None:
    t, p = r["ttft_s"], r["tpot_s"]
    worst, late = (r.get("client_read_lag_s") or {}).get("p99"), r.get("client_late_share")
    lag = "" if worst is None else f", read lag p99 {worst * 1000:.1f} ms"
    if late:
        lag += f", {late:.1%} of tokens read a token gap late"
    if r.get("rate_rps"):
        print(f"  rate {r['rate_rps']:g}/s ({r['arrival']}), peak in flight {r['concurrency']}")
    if r.get("repeats", 1) > 1:
        print(f"  run {r['repeat']} of {r['repeats']}")
    print(
        f"  c={r['concurrency']:>3}  ok {r['completed']:>3}/{r['requests']:<3} fail {r['failed']:<3} "
        f"wall {r['wall_s']:>7.2f}s  out/s {r['output_tokens_per_s']:>8.2f}  "
        f"req/s {_fmt(r.get('requests_per_s'), '>6.3f')}  "
        f"TTFT p50 {_fmt(t['p50'], '.3f')} p90 {_fmt(t['p90'], '.3f')} p95 {_fmt(t['p95'], '.3f')}  "
        f"TPOT p50 {_fmt(p['p50'], '.4f')} p90 {_fmt(p['p90'], '.4f')}",
        flush=True,
    )
    print(
        f"         goodput {r['goodput_requests_per_s']:.3f} req/s ({r['within_slo']}/{r['completed']} "
        f"within the goodput objective TTFT <= {r['slo_ttft_s']:g} s, TPOT <= {r['slo_tpot_s']:g} s)  "
        f"in flight {r['mean_in_flight']:.1f}  prompt {_fmt(r['prompt_tokens_mean'], '')} tok, cached "
        f"{_fmt(r['cached_tokens_mean'], '')}  tokens from {r['token_counts']}  "
        f"finish {words.finish_text(r.get('finish_reasons'))}  "
        f"client CPU {_fmt(r.get('client_cpu'), '.0%')}{lag}",
        flush=True,
    )
    server = server_metrics.peaks_words(r)
    if server:
        print(f"         server /metrics: {server}", flush=True)
    climbed = previous and (previous.get("concurrency") or 0) < r["concurrency"]
    fell = climbed and server_metrics.drop_text(r, previous)
    if fell:
        print(f"         warning: throughput fell: {fell}", flush=True)
    held = climbed and server_metrics.noise_text(r, previous)
    if held:
        print(f"         note: throughput held: {held}", flush=True)
    if r.get("client_limited"):
        _client_warning(r, lag)
    if r.get("decode_note"):
        print(f"         warning: {r['decode_note']}", flush=True)
    for line in [*sweep_workloads.level_lines(r), *energy_lines(r)]:
        print(line, flush=True)
    if r["first_error"]:
        print(f"         first error: {r['first_error']}", flush=True)
        row = troubleshooting.error_remedy(
            r["first_error"], list(load_errors()), troubleshooting.workload_kind(r)
        )
        if row:
            print(f"         {row['cause']}: {row['remedy']}", flush=True)
