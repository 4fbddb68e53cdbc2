"""The soak's verdict (scripts/soak.py) on made-up RSS series: what it reads as warm and as the
load's end, and which failure it names. The real run is `make soak` (CI: 2 minutes)."""

from __future__ import annotations

import importlib.util
import sys
from argparse import Namespace
from array import array

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("soak", ROOT / "scripts" / "soak.py")
soak = importlib.util.module_from_spec(_spec)
sys.modules["soak"] = soak  # its dataclasses look their module up
_spec.loader.exec_module(soak)

RECORD = {
    "run_id": "r",
    "requests": 4,
    "completed": 3,
    "failed": 1,
    "cancelled": 0,
    "requests_per_s": 50.0,  # the server's truth store (10,000 requests) full after 200 s
    "ttft_s": {"p50": 0.2, "p90": 0.3, "p99": 0.3},
    "e2e_s": {"p50": 1.0, "p90": 1.5, "p99": 1.5},
}


def run(client_mb: list[float], server_mb: list[float], lines: int = 4) -> soak.Run:
    """A 10-minute run read every minute, its load from 0 to 600 s, then 60 s of figuring."""
    r = soak.Run("soak", 600.0, record=dict(RECORD), window=(0.0, 600.0), lines=lines)
    r.rss = [(60.0 * i, c, s) for i, (c, s) in enumerate(zip(client_mb, server_mb, strict=True))]
    r.ttft, r.e2e = array("d", [0.1, 0.2, 0.3]), array("d", [0.5, 1.0, 1.5])
    return r


def verdict(r: soak.Run, capsys) -> tuple[int, str]:
    status = soak.report(r, None, (None, None, "not pinned"), Namespace(streams=256))
    return status, capsys.readouterr().out


def test_flat_memory_and_every_request_accounted_pass(capsys):
    flat = [100.0] * 5 + [101.0] * 6 + [300.0]  # 300 MB after the load's end: figuring, not judged
    status, out = verdict(run(flat, flat), capsys)
    assert status == 0 and "soak: PASS" in out
    assert "RSS at 300 s (warm; the server's at 300 s), MB" in out
    assert "RSS at 600 s (the load's end), MB" in out


def test_growth_after_warming_up_fails_naming_the_process(capsys):
    client = [100.0] * 5 + [100.0 + 5 * i for i in range(7)]  # 100 at 5 min, 125 at 10 min
    status, out = verdict(run(client, [100.0] * 12), capsys)
    assert status == 1 and "the client grew +25.0% after warming up (limit 10%)" in out
    assert "the server grew" not in out


def test_a_missing_sample_line_fails(capsys):
    flat = [100.0] * 12
    status, out = verdict(run(flat, flat, lines=3), capsys)
    assert status == 1 and "requests not accounted: 4 sent, 4 ok or failed, 3 in the samples file" in out


def test_the_server_is_warm_once_its_truth_store_is_full(capsys):
    server = [50.0] * 8 + [60.0, 70.0, 80.0, 80.0]  # grows after its store is full: a leak
    slow = run([100.0] * 12, server)
    slow.record["requests_per_s"] = 10_000 / 420  # full at 7 min: its 50 MB there, 80 at the end
    status, out = verdict(slow, capsys)
    assert status == 1 and "the server grew +60.0% after warming up (limit 10%)" in out
    assert "RSS at 300 s (warm; the server's at 420 s), MB" in out


def test_a_run_too_short_to_fill_the_servers_truth_store_judges_the_client_alone(capsys):
    short = run([100.0] * 12, [50.0 + 5 * i for i in range(12)])  # the store filling all along
    short.record["requests_per_s"] = 10.0  # 6,000 requests in the 10 minutes: never full
    status, out = verdict(short, capsys)
    assert status == 0 and "soak: PASS" in out and "the server grew" not in out
    assert "its last 10,000 requests, a store still filling at the load's end" in out
    assert "not judged" in out
