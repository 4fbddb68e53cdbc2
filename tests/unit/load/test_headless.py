"""The headless run's end: the exact summary as a table, and the thresholds in words (pure)."""

from __future__ import annotations

import re

from harness.measure.sample import Sample
import pytest

from harness.load import headless


def ok(ttft: float, tokens: int = 11, tpot: float = 0.02) -> Sample:
    return Sample(t_send=0.0, ok=True, t_first=ttft, t_end=ttft + tpot * (tokens - 1), output_tokens=tokens)


def refused() -> Sample:
    return Sample(t_send=0.0, ok=False, error="ConnectionError: [Errno 111] Connection refused")


def test_summary_table_states_counts_rates_and_percentiles():
    samples = [ok(0.1 * (i + 1)) for i in range(10)] + [refused(), refused()]
    text = headless.summary_table(samples, wall_s=4.0, users=3)
    lines = text.splitlines()
    assert lines[0] == "==> harness: exact numbers of this run (12 requests, 3 users)"
    cells = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in lines[2:10])
    assert cells["requests"] == "12" and cells["succeeded"] == "10" and cells["failed"] == "2 (16.7%)"
    assert cells["output tokens"] == "110" and cells["output tokens/s"] == f"{110 / 4.0:.1f}"
    assert cells["requests/s"] == "3.00" and cells["users"] == "3"
    # nearest rank over 0.1 .. 1.0: p50 0.5, p90 0.9, p95 1.0, p99 1.0
    assert next(x for x in lines if x.startswith("TTFT s")).split()[2:] == [
        "0.5000",
        "0.9000",
        "1.0000",
        "1.0000",
    ]
    assert next(x for x in lines if x.startswith("TPOT s")).split()[2:] == ["0.0200"] * 4
    assert re.search(r"^2\s+ConnectionError: \[Errno 111\] Connection refused$", text, flags=re.M)
    assert "None" not in text and "{" not in text


def test_no_successful_request_is_said_not_printed_as_none():
    text = headless.summary_table([refused()] * 3, wall_s=1.0, users=1)
    assert "TTFT and TPOT: no successful request, so no percentiles" in text
    assert "None" not in text and "null" not in text
    assert headless.threshold_problems([refused()] * 3, 1.0, -1) == [
        "TTFT p95: no successful request (threshold 1.0 s)"
    ]
    assert headless.summary_table([], 0.0, 1).splitlines()[0].endswith("(0 requests, 1 user)")


def test_thresholds_fail_only_when_crossed():
    samples = [ok(0.2)] * 19 + [refused()]
    assert headless.threshold_problems(samples, 0.0, -1) == []  # none set
    assert headless.threshold_problems(samples, 0.3, 0.1) == []
    assert headless.threshold_problems(samples, 0.1, 0.01) == [
        "failure ratio 0.050 > 0.01",
        "TTFT p95 0.2000 s > 0.1 s",
    ]


@pytest.mark.parametrize(
    "host, base, url",
    [
        ("http://h:8000", "/v1", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/", "/v1", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1", "/v1", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/", "v1/", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/api/v1", "/v1", "http://h:8000/api/v1/chat/completions"),
        ("http://h:8000/api", "/v1", "http://h:8000/api/v1/chat/completions"),
        ("http://h:8000", "", "http://h:8000/chat/completions"),
    ],
)
def test_locust_host_takes_the_server_with_or_without_its_base_path(host, base, url):
    from harness.endpoints.urls import chat_url

    assert chat_url(host, base) == url
