"""The lines ``harness sweep`` and ``harness capacity`` print: the endpoint proof's findings, the plan
before the first level, and each level's lines as it finishes (the figures, the server's own
/metrics peaks, a fall in throughput, a client that may be the limit, the workload's and the
workers' lines, the first error and its remedy). Records and plans in, lines out; the caller prints."""

from __future__ import annotations

from harness.measure import server_metrics, level_checks as troubleshooting
from harness import words
from harness.measure.backlog import BACKLOG
from harness.records.base import EndpointCheck
from harness.records.level import Distribution, LEVEL, LevelRecord, STATS, WORKER
from harness.safe_text import redact
from harness.workloads.level_part import WORKLOAD, TurnRow
from harness.workloads.traces import span_words
from harness.endpoints import api_path, kind_named
from harness.energy.record_part import energy_lines
from harness.report.troubleshooting import load_errors


def endpoint_lines(check: EndpointCheck) -> tuple[list[str], list[str]]:
    """What the endpoint proof saw (for stdout), and its warnings (for stderr)."""
    seen = check.observed
    line = (
        f"    endpoint proved: text in {', '.join(seen.text_fields)}, finish {seen.finish_reason}, "
        "usage "
        f"{'yes' if seen.usage else 'no'}, context {seen.n_ctx or 'not reported'} per sequence"
    )
    return [line], [f"warning: {w}" for w in check.warnings]


def plan_lines(args, plan) -> list[str]:
    """The sweep's plan before its first level: the URL, the prompts, the objective, the workload,
    the open loop's span, the repeats and the per-user bound (``plan`` a ``SweepPlan``)."""
    url = plan.root + api_path(plan.base_path, kind_named(plan.context.endpoint))
    out = [redact(f"==> {args.label}: {args.model} at {url}", anyone=False)]
    out.append(
        f"    prompt set {args.prompt_file or args.prompt_set}, at least {args.requests} request(s) per level"
        f"{f' and {args.min_rounds} per worker' if args.min_rounds else ''}, max_tokens {args.max_tokens}, "
        f"temperature {args.temperature}"
    )
    out.append(
        f"    goodput objective: TTFT <= {args.slo_ttft} s and TPOT <= {args.slo_tpot} s; "
        f"{args.warmup} warm-up request(s)"
    )
    if plan.workload_kind != "prompts" or plan.lengths or plan.burstiness is not None:
        out.append(workload_plan_line(plan))
    if plan.open_loop and not plan.trace:
        out.append(f"    {rate_span_words(plan.requests, plan.levels)}")
    if getattr(args, "repeat", 1) > 1:
        out.append(
            f"    each level run {args.repeat} times in a row (figures then carry the range of the runs)"
        )
    if args.timeout_per_user:
        every = " (with --processes: the largest level's, for every level)" if args.processes else ""
        out.append(
            f"    each request's bound at c users: the larger of {args.timeout:g} s and "
            f"c x {args.timeout_per_user:g} s{every}"
        )
    return out


def workload_plan_line(plan) -> str:
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


def ready_lines(plan) -> list[str]:
    """Where the load comes from, said as the first level starts (none: from this process)."""
    out = []
    if plan.processes:
        out.append(f"    load from {plan.processes} Locust worker process(es)")
    if plan.expect_workers:
        out.append(f"    load from {plan.expect_workers} Locust worker(s) on other hosts")
    return out


def end_lines(swept, plan) -> tuple[list[str], list[str]]:
    """How a sweep ended (``swept`` a ``Swept``): where its levels went (for stdout), and an
    interrupt or a level that completed no request (for stderr)."""
    done = len(swept.written)
    if swept.interrupted:
        return [], [f"\n    interrupted: {done} finished level(s) are in {plan.labbook}"]
    out = [f"    appended {done} line(s) to {plan.labbook}; samples in {plan.samples_path}"]
    err = ["    at least one level completed no request; see its first error above"] if swept.status else []
    return out, err


def waiting_line(plan) -> str:
    """What to start on each worker host, said before the master waits for them."""
    host = plan.master_host if plan.master_host not in ("0.0.0.0", "::") else "THIS-HOST"
    url = plan.worker_url or plan.root
    line = (
        f"    waiting up to {plan.worker_wait_s:g} s for {plan.expect_workers} Locust worker(s) at "
        f"{plan.master_host}:{plan.master_port}; on each worker host run: harness worker --master-host "
        f"{host} --master-port {plan.master_port} (they load {url}; the key, if any, from "
        f"{plan.api_key_env} there)"
    )
    if plan.master_host not in ("127.0.0.1", "::1", "localhost"):
        line += (
            f"\n    warning: the master's port {plan.master_port} has no authentication: let only the "
            "worker hosts reach it (firewall)"
        )
    return line


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _client_warning(level: LevelRecord, lag: str) -> list[str]:
    """The client-limit verdict's lines: the signs in brief, then the record's words (by how much)."""
    st, client = level.stats, level.client
    gap = st.itl_s.p50
    out = [
        f"         warning: the client may be the limit (CPU {_fmt(client and client.client_cpu, '.0%')}, "
        f"in flight {_fmt(st.mean_in_flight, '.1f')} of {st.concurrency}"
        f"{'' if gap is None else f', token gap p50 {gap * 1000:.1f} ms'}{lag}); "
        "run the load from another machine or with more processes"
    ]
    if client and client.limit_note:
        out.append(f"         the client's limit: {client.limit_note}")
    return out


def _server_lines(r: dict, previous: dict | None) -> list[str]:
    """The server's /metrics peaks, and a fall (or a hold) in throughput from the smaller level before."""
    out = []
    server = server_metrics.peaks_words(r)
    if server:
        out.append(f"         server /metrics: {server}")
    climbed = previous and (previous.get(STATS.concurrency) or 0) < r[STATS.concurrency]
    fell = climbed and server_metrics.drop_text(r, previous)
    if fell:
        out.append(f"         warning: throughput fell: {fell}")
    held = climbed and server_metrics.noise_text(r, previous)
    if held:
        out.append(f"         note: throughput held: {held}")
    return out


def level_lines(r: dict, previous: dict | None = None) -> list[str]:
    """A finished level's lines (``previous``: the level before it, for a fall in throughput)."""
    level = LevelRecord.read(r)
    st, arrival, run, client = level.stats, level.arrival, level.run, level.client
    t, p, slo = st.ttft_s, st.tpot_s, level.context.objectives
    worst, late = st.client_read_lag_s.p99, st.client_late_share
    lag = "" if worst is None else f", read lag p99 {worst * 1000:.1f} ms"
    if late:
        lag += f", {late:.1%} of tokens read a token gap late"
    out = []
    if arrival and arrival.rate_rps:
        out.append(f"  rate {arrival.rate_rps:g}/s ({arrival.kind}), peak in flight {st.concurrency}")
    if run and run.repeats > 1:
        out.append(f"  run {run.repeat} of {run.repeats}")
    out.append(
        f"  c={st.concurrency:>3}  ok {st.completed:>3}/{st.requests:<3} fail {st.failed:<3} "
        f"wall {st.wall_s:>7.2f}s  out/s {st.output_tokens_per_s:>8.2f}  "
        f"req/s {_fmt(st.requests_per_s, '>6.3f')}  "
        f"TTFT p50 {_fmt(t.p50, '.3f')} p90 {_fmt(t.p90, '.3f')} p95 {_fmt(t.p95, '.3f')}  "
        f"TPOT p50 {_fmt(p.p50, '.4f')} p90 {_fmt(p.p90, '.4f')}"
    )
    out.append(
        f"         goodput {_fmt(st.goodput_requests_per_s, '.3f')} req/s ({st.within_slo}/{st.completed} "
        f"within the goodput objective TTFT <= {slo.ttft_s:g} s, TPOT <= {slo.tpot_s:g} s)  "
        f"in flight {_fmt(st.mean_in_flight, '.1f')}  prompt {_fmt(st.prompt_tokens_mean, '')} tok, cached "
        f"{_fmt(st.cached_tokens_mean, '')}  tokens from {st.token_counts}  "
        f"finish {words.finish_text(st.finish_reasons)}  "
        f"client CPU {_fmt(client and client.client_cpu, '.0%')}{lag}"
    )
    out += _server_lines(r, previous)
    if client and client.client_limited:
        out += _client_warning(level, lag)
    if st.decode_note:
        out.append(f"         warning: {st.decode_note}")
    out += [*workload_level_lines(r), *energy_lines(r)]
    if st.first_error:
        out.append(f"         first error: {st.first_error}")
        row = troubleshooting.error_remedy(
            st.first_error, list(load_errors()), troubleshooting.workload_kind(r)
        )
        if row:
            out.append(f"         {row['cause']}: {row['remedy']}")
    return out


def backlog_lines(r: dict) -> list[str]:
    """An open loop's arrivals against the server's finishes, and the server-limited warning (or,
    where the client was the limit too, the note that its verdict wins)."""
    found = r.get(WORKLOAD.backlog)
    if not isinstance(found, dict):
        return []
    if found.get(BACKLOG.judged):
        offered, finished = found[BACKLOG.offered_rps], found[BACKLOG.finished_rps]
        line = (
            f"         arrivals {offered:.3g}/s, finished {finished:.3g}/s "
            f"over the last {found[BACKLOG.window_s]:.3g} s of the schedule, in flight "
            f"{found[BACKLOG.in_flight_rise]:+d} (peak {found[BACKLOG.peak_in_flight]})"
        )
    else:
        line = f"         whether the server kept up: not judged, {found.get(BACKLOG.reason)}"
    out = [line]
    if r.get(WORKLOAD.server_note):
        verdict = "warning" if r.get(WORKLOAD.server_limited) else "note"
        out.append(f"         {verdict}: {r[WORKLOAD.server_note]}")
    return out


def workload_level_lines(r: dict) -> list[str]:
    """Under a level's figures: the open loop's schedule error and spread, the agent's note, and
    one line per turn of a conversation workload."""
    out = []
    late = Distribution.read(r.get(WORKLOAD.schedule_lateness_s))
    if late.p99 is not None and late.p50 is not None:
        cv = r.get(WORKLOAD.departure_gap_cv)
        out.append(
            f"         schedule lateness p50 {late.p50 * 1000:.2f} ms p99 {late.p99 * 1000:.2f} ms"
            f"{'' if cv is None else f', departure gaps CV {cv:.2f}'}"
        )
    if r.get(WORKLOAD.schedule_note):
        out.append(f"         warning: {r[WORKLOAD.schedule_note]}")
    out += backlog_lines(r)
    for name in (WORKLOAD.workload_note, WORKLOAD.cached_note):
        if r.get(name):
            out.append(f"         note: {r[name]}")
    for row in map(TurnRow.read, r.get(WORKLOAD.per_turn) or []):
        share = row.cached_share
        out.append(
            f"         turn {row.turn}: {row.completed}/{row.requests} ok, TTFT p50 "
            f"{_fmt(row.ttft_s.p50, '.3f')} s, TPOT p50 {_fmt(row.tpot_s.p50, '.4f')} s, prompt "
            f"{_fmt(row.prompt_tokens_mean, '')} tok, cached {'-' if share is None else f'{share:.0%}'}"
        )
    return out


def worker_lines(record: dict) -> list[str]:
    """Each worker's part of a distributed level: its requests, what came back, its CPU and late
    reads, and the words for one that could not keep up or was lost."""
    lines = []
    for w in record.get(LEVEL.workers) or []:
        cpu, late = w[WORKER.cpu_percent], w[WORKER.late_share]
        cpu = "?" if cpu is None else f"{cpu:.1f} %"
        late = "?" if late is None else f"{100 * late:.2f} %"
        text = (
            f"      worker {w[WORKER.worker]}: {w[WORKER.users]} user(s), {w[WORKER.returned]} of "
            f"{w[WORKER.requests]} requests back ({w[WORKER.completed]} ok), CPU {cpu}, "
            f"tokens read late {late}"
        )
        if w.get(WORKER.lost):
            text += f"; LOST: {w[WORKER.lost]}"
        elif w[WORKER.limited]:
            text += "; this worker could not keep up (CPU or late reads): add a worker host"
        lines.append(text)
    return lines
