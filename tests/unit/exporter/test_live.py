"""The live collector served over HTTP on loopback, in this process: what a scrape reads is the
totals of the samples a level took, the warm-up's are not counted, and a taken port is one line."""

from __future__ import annotations

import socket

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from harness.measure.sample import Sample
from harness.errors import ConfigError
from harness.exporter import figures as f
from harness.exporter.live import Exporter, loopback
from harness.engines.ports import free_port


def _sample(ttft: float) -> Sample:
    return Sample(
        0.0,
        ok=True,
        t_first=ttft,
        t_end=ttft + 0.2,
        token_times=[ttft, ttft + 0.1, ttft + 0.2],
        output_tokens=3,
    )


@pytest.fixture
def served():
    exporter = Exporter()
    port = free_port()
    exporter.serve(port)
    yield exporter, port
    exporter.close()


def _scrape(port: int) -> dict[str, float]:
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        s.name + (f"{{le={s.labels['le']}}}" if "le" in s.labels else ""): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_a_scrape_reads_the_levels_samples_once_each(served):
    exporter, port = served
    warm = _sample(0.5)
    exporter.on_request("POST", "chat", context={"sample": warm})  # before any level: a warm-up
    exporter.start_level(users=4)
    taken = [_sample(0.05), _sample(0.3)]
    for s in taken:
        exporter.on_request("POST", "chat", context={"sample": s})
    cancelled = Sample(0.0, t_end=1.0, error="Cancelled: not sent at the level's bound of 1 s")
    exporter.settle([*taken, cancelled])  # the level's list: only the cancelled one is new
    exporter.in_flight = lambda: 2
    got = _scrape(port)
    assert got[f.COMPLETED + "_total"] == 2 and got[f.FAILED + "_total"] == 1
    assert got[f.OUTPUT_TOKENS + "_total"] == 6 and got[f.IN_FLIGHT] == 2
    assert got[f.TTFT + "_count"] == 2 and got[f.TTFT + "_sum"] == pytest.approx(0.35)
    assert got[f.TTFT + "_bucket{le=0.05}"] == 1 and got[f.TTFT + "_bucket{le=+Inf}"] == 2
    assert got[f.ITL + "_count"] == 4 and got[f.LEVEL_USERS] == 4 and f.LEVEL_RATE not in got


def test_an_open_loop_shows_its_rate_and_no_in_flight_where_it_is_not_known(served):
    exporter, port = served
    exporter.start_level(rate=2.5)
    got = _scrape(port)
    assert got[f.LEVEL_RATE] == 2.5 and f.LEVEL_USERS not in got and f.IN_FLIGHT not in got


def test_a_port_taken_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"--prometheus-port {port} on 127.0.0.1 cannot be served"):
            Exporter().serve(port)


def test_only_loopback_addresses_count_as_this_machine_only():
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost")
    assert not loopback("0.0.0.0") and not loopback("192.168.1.4") and not loopback("example.org")
