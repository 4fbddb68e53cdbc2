"""The departure stamp never follows the first token (reliability round two, class 4). Against a server that
answers the moment the request arrives, the first token's kernel arrival stamp came before a
departure stamped after ``sendall`` returned (82 and 172 of 600 TTFTs negative, to -2.2 ms); the
departure is now stamped before the write, so no TTFT is negative, and the write's own time (the
bias that remains) is small."""

from __future__ import annotations

import json

import pytest

from harness.records.notebook import read_records
from tests.integration.faults.hostile import MODEL, HostileServer
from tests.integration.faults.test_faults import _run


@pytest.mark.slow
def test_no_ttft_is_negative_against_a_server_that_answers_at_once(tmp_path):
    book = tmp_path / "book.md"
    with HostileServer("ok", ttft_s=0.0) as srv:
        args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "1,8,32"]
        args += ["--requests", "200", "--timeout", "10", "--warmup", "0", "--labbook", str(book)]
        args += ["--metrics-url", "none", "--no-endpoint-check"]
        proc = _run(args, 60)
        received = sorted(srv.received)
    assert proc.returncode == 0, proc.stderr
    levels = read_records(book, "level").records
    assert [lv["completed"] for lv in levels] == [200, 200, 200], levels
    samples = [json.loads(x) for x in book.with_suffix(".samples.jsonl").read_text().splitlines()]
    ttfts = [s["ttft_s"] for s in samples if s["ok"]]
    assert len(ttfts) == 600
    assert min(ttfts) >= 0.0, (
        f"{sum(t < 0 for t in ttfts)} negative TTFTs, the lowest {min(ttfts) * 1000:.3f} ms"
    )
    assert all(lv["ttft_s"]["p50"] >= 0 for lv in levels)
    # The server's own word: no request reached it before it left. Whatever the pairing, the k-th
    # departure comes no later than the k-th arrival (the k first to arrive all left before it).
    # Both are this host's monotonic clock; the records round to 1 us. (The TTFTs' size is not
    # asserted: against this server it measures the shared machine's load, not the stamp.)
    departed = sorted(s["departed_monotonic_s"] for s in samples)
    assert len(received) == len(departed) == 600
    late = [(d, r) for d, r in zip(departed, received, strict=True) if d > r + 1e-6]
    assert not late, f"{len(late)} departures after the server had the request, e.g. {late[0]}"
