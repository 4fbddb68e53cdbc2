"""The lines the sweep prints under each level, read from the level line through its typed record:
every part a level can carry comes out in words, and the lab's own (old) line still prints."""

from __future__ import annotations

from harness.records import base as r
from harness.report.sweep_lines import level_lines, workload_level_lines
from tests.unit.records.test_level_model import _fixture_levels, _full_record


def test_a_whole_level_prints_each_of_its_parts():
    line = {k: v for k, v in _full_record().items() if k not in ("energy", "cost")}  # energy_lines' own tests
    line["first_error"] = "HTTP 503: busy"
    text = "\n".join(level_lines(line))
    assert "  rate 2/s (poisson), peak in flight 4" in text
    assert "  run 1 of 2" in text
    assert "c=  4  ok   2/3   fail 1 " in text and "out/s    20.00" in text
    assert "within the goodput objective TTFT <= 1.5 s, TPOT <= 0.05 s" in text
    assert "warning: the client may be the limit (CPU 50%, in flight 0.3 of 4, token gap p50 10.0 ms" in text
    assert "the client's limit: late" in text and "warning: flood" in text
    assert "schedule lateness p50 100.00 ms p99 400.00 ms, departure gaps CV 1.00" in text
    assert "arrivals 10/s, finished 4/s over the last 1 s of the schedule, in flight +6 (peak 5)" in text
    assert "turn 1: 2/2 ok, TTFT p50 0.100 s, TPOT p50 0.1000 s, prompt 10.0 tok, cached 50%" in text
    assert "         first error: HTTP 503: busy" in text.splitlines()


def test_an_unjudged_backlog_and_a_lateness_without_figures_say_so_or_nothing():
    line = _full_record()
    line["backlog"] = {"judged": False, "peak_in_flight": 3, "reason": "too short to tell"}
    line["schedule_lateness_s"] = {"p50": None, "p90": None, "p99": None}
    text = "\n".join(workload_level_lines(line))
    assert "whether the server kept up: not judged, too short to tell" in text
    assert "schedule lateness" not in text


def test_every_fixture_level_prints_and_the_labs_own_line_too():
    for level in _fixture_levels():
        assert level_lines(level)[0].lstrip().startswith(("c=", "rate", "run"))
    old = {"lab": r.LAB_ID, "label": "a", "concurrency": 2, "requests": 4, "completed": 4, "failed": 0}
    old |= {"wall_s": 2.0, "output_tokens": 40, "output_tokens_per_s": 20.0, "first_error": None}
    old |= {"ttft_s": {"p50": 0.1, "p90": 0.2}, "tpot_s": {"p50": 0.01, "p90": 0.02}}
    (figures, goodput) = level_lines(old)[:2]
    assert "c=  2  ok   4/4   fail 0 " in figures and "TTFT p50 0.100 p90 0.200 p95 -" in figures
    assert goodput.startswith("         goodput - req/s")
