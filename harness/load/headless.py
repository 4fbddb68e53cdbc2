"""Headless Locust runs of the harness's users: the endpoint proof before any load, and the exact
summary and thresholds at the end, as a table a person reads.

``locust --headless`` against a dead or wrong endpoint would otherwise fire thousands of failing
requests a second until its run time ends; here the proof (the model list, one short request,
the server's context against the prompts) runs once when Locust starts, and a failure ends the
run in one line with exit status 2 before a single load request is sent. Workers do not prove
(their master did), and the web UI proves nothing at start (the host is chosen in its form).

``summary_table`` and ``threshold_problems`` are pure: exact samples in, text out."""

from __future__ import annotations

import sys
import time
from collections import Counter

from tabulate import tabulate

from harness.measure.levels import distribution
from harness.measure.sample import Sample
from harness.errors import ConfigError, TargetError, TargetUnreachable
from harness.endpoints.urls import chat_url
from harness.records.level import DIST

PERCENTILES = (DIST.p50, DIST.p90, DIST.p95, DIST.p99)
NO_SUCCESS = "no successful request"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def summary_table(samples: list[Sample], wall_s: float, users: int) -> str:
    """The run's exact numbers: counts and rates, then TTFT and TPOT percentiles (or why there
    are none), then the failures by reason."""
    ok = [s for s in samples if s.ok]
    failed = len(samples) - len(ok)
    tokens = sum(s.output_tokens or 0 for s in ok)
    wall = max(wall_s, 1e-9)
    share = f" ({failed / len(samples):.1%})" if samples else ""
    counts = [
        ["requests", len(samples)],
        ["succeeded", len(ok)],
        ["failed", f"{failed}{share}"],
        ["output tokens", tokens],
        ["output tokens/s", f"{tokens / wall:.1f}"],
        ["requests/s", f"{len(samples) / wall:.2f}"],
        ["wall clock s", f"{wall_s:.1f}"],
        ["users", users],
    ]
    counted = (
        f"{len(samples)} request{'' if len(samples) == 1 else 's'}, {users} user{'' if users == 1 else 's'}"
    )
    lines = [f"==> harness: exact numbers of this run ({counted})"]
    lines.append(tabulate(counts, tablefmt="simple", disable_numparse=True))
    lines.append("")
    if ok:
        ttft = distribution([s.ttft for s in ok], 4)
        tpot = distribution([s.tpot for s in ok if s.tpot is not None], 5)
        rows = [
            ["TTFT s", *(_seconds(ttft[p]) for p in PERCENTILES)],
            ["TPOT s", *(_seconds(tpot[p]) for p in PERCENTILES)],
        ]
        lines.append(tabulate(rows, headers=["", *PERCENTILES], tablefmt="simple", disable_numparse=True))
    else:
        lines.append(f"TTFT and TPOT: {NO_SUCCESS}, so no percentiles")
    reasons = Counter((s.error or "unknown error").splitlines()[0][:160] for s in samples if not s.ok)
    if reasons:
        lines += ["", "failures by reason:"]
        lines.append(
            tabulate(
                [[n, why] for why, n in reasons.most_common(5)],
                headers=["count", "reason"],
                tablefmt="simple",
                disable_numparse=True,
            )
        )
    return "\n".join(lines)


def threshold_problems(samples: list[Sample], ttft_p95_max: float, fail_ratio_max: float) -> list[str]:
    """The headless thresholds that failed, each in words (none set: nothing fails)."""
    problems = []
    ok = [s for s in samples if s.ok]
    if samples and fail_ratio_max >= 0:
        ratio = 1 - len(ok) / len(samples)
        if ratio > fail_ratio_max:
            problems.append(f"failure ratio {ratio:.3f} > {fail_ratio_max}")
    if ttft_p95_max > 0:
        p95 = distribution([s.ttft for s in ok], 4)[DIST.p95] if ok else None
        if p95 is None:
            problems.append(f"TTFT p95: {NO_SUCCESS} (threshold {ttft_p95_max} s)")
        elif p95 > ttft_p95_max:
            problems.append(f"TTFT p95 {p95:.4f} s > {ttft_p95_max} s")
    return problems


def prove(host: str, base_path: str, model: str, api_key: str | None, o) -> list[str]:
    """The endpoint proof of ``harness sweep`` for a headless run: warnings to print; TargetError
    (one line) when the endpoint cannot carry the load."""
    from harness.bounds import Bounds
    from harness.workloads.prompts import make_prompts
    from harness.endpoints import proof as endpoint_proof, http_client as http

    base_url = chat_url(host, base_path).removesuffix("/chat/completions")  # --host with or without /v1
    bound = min(o.timeout, 30.0)
    mismatch = endpoint_proof.plain_http_behind_https(base_url)  # said at once, not at the bound
    if mismatch:
        raise TargetError(mismatch)
    listed = http.model_ids(http.get_models(base_url, api_key, Bounds.of(min(bound, 10.0)), verify=False))
    seen = endpoint_proof.observe(  # under the run's two bounds, as the sweep's proof is
        base_url,
        model or (listed[0] if listed else ""),
        listed,
        api_key,
        timeout=bound,
        idle_timeout=o.idle_timeout or None,
        endpoint=getattr(o, "endpoint", None),
    )
    longest = max(endpoint_proof.estimate_tokens(p) for p in make_prompts(o.prompt_set, 64))
    return endpoint_proof.verdict(seen, longest, o.max_tokens)


def _prove_when_up(host: str, api_key: str | None, o) -> list[str]:
    """The proof; an endpoint that refuses connections is tried again each second for up to
    ``--proof-wait`` seconds (an engine started beside the load, as compose does, may not be up)."""
    deadline = time.monotonic() + max(getattr(o, "proof_wait", 0.0) or 0.0, 0.0)
    while True:
        try:
            return prove(host, o.api_base_path, o.model, api_key, o)
        except TargetUnreachable:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1.0)


def prove_or_exit(environment, api_key: str | None) -> None:
    """For ``locust --headless`` (local or master): prove the endpoint before the users start;
    on failure, one line on stderr and exit status 2, no load sent."""
    o = getattr(environment, "parsed_options", None)
    if o is None or not getattr(o, "headless", False) or getattr(o, "worker", False):
        return
    if not environment.host:
        print(
            "harness: no --host given; name the server to load, e.g. --host http://127.0.0.1:8000",
            file=sys.stderr,
        )
        raise SystemExit(2)
    from harness.endpoints import http_client as http

    try:
        http.check_base_url(environment.host, "--host")
    except ConfigError as exc:
        print(f"harness: {exc}; no load was sent", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        warnings = _prove_when_up(environment.host, api_key, o)
    except TargetUnreachable:
        print(
            f"harness: nothing answers at {environment.host}; start the server or fix --host; "
            "no load was sent",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    except (TargetError, ConfigError) as exc:  # the server's answer, or a key no header carries
        print(f"harness: {exc}; no load was sent", file=sys.stderr)
        raise SystemExit(2) from None
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr)
    url = chat_url(environment.host, o.api_base_path, getattr(o, "endpoint", None))
    print(f"harness: endpoint proved; loading {url}", file=sys.stderr)
