"""Curves against bandwidth: speed alone against the speed limit, the peak against Task 1's ceiling.
The levels are the recorded practice-server sweep, relabelled as a llama.cpp Q4_K_M curve."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.records.base import is_level
from harness.engines.models.info import from_table
from harness.records.notebook import append_record, read_records
from harness.report import limits, measured

BOOK = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "practice-run.md"
MODEL = from_table("qwen3-8b")


def curve(engine="llama.cpp") -> dict[int, dict]:
    recs = read_records(BOOK, "level", select=is_level).records
    return {
        r["concurrency"]: {**r, "engine": engine, "quant": "Q4_K_M", "server_slots": 8}
        for r in recs
        if r["label"] == "practice-baseline"
    }


def test_peak_against_the_aggregate_ceiling():
    got = limits.peak_vs_ceiling(curve(), MODEL, 273)
    # peak 275.77 tok/s at c=16; batch capped at 8 slots; context 35.6 + 32/2 = 51 tokens
    assert (got["c"], got["batch"], got["context"], got["format"]) == (16, 8, 51, "GGUF Q4_K_M")
    expected = 8 * 273e9 / (4_671_766_528 + 8 * 51 * 147_456)
    assert got["ceiling_tok_s"] == pytest.approx(expected)
    assert got["share"] == pytest.approx(275.77 / expected)
    assert limits.peak_lines({"llama": curve()}, MODEL, 273) == [
        "- llama: peak 275.8 tok/s at c=16 = 0.60 of the GGUF Q4_K_M ceiling 462 tok/s (batch 8, context 51 "
        "tokens, 273 GB/s)"
    ]


def test_speed_alone_against_the_limit_and_practice_left_out():
    lines = limits.speed_alone_lines({"llama": curve(), "practice": curve("practice")}, 546, 4.9)
    assert lines == [
        "- llama: 55.0 tok/s alone (1 / TPOT p50 at a crowd of 1) = 49% of the speed limit 546 GB/s / 4.9 GB "
        "= 111.4 tok/s; below the 60-85 % band: something else slows it (offload, CPU path, load)"
    ]


def test_speed_limit_from_the_served_formats_size_without_model_gb():
    lines = limits.speed_alone_lines({"llama": curve()}, 273, None, MODEL)
    assert "speed limit 273 GB/s / 5.02 GB = 54.4 tok/s" in lines[0]  # Q4_K_M's 5,021,827,072 bytes
    unknown = {c: {**r, "quant": "made-up"} for c, r in curve().items()}
    assert limits.speed_alone_lines({"x": unknown}, 273, None, MODEL) == [
        "- x: no model size (no MODEL_GB, and its quant names no known format)"
    ]


def test_unknown_format_has_no_ceiling():
    levels = {c: {**r, "quant": "made-up"} for c, r in curve().items()}
    assert limits.peak_vs_ceiling(levels, MODEL, 273) is None
    assert limits.peak_lines({"x": levels}, MODEL, 273) == [
        "- x: no ceiling: its quant names no format of Qwen3-8B"
    ]


def test_report_section_from_a_plan_with_a_machine_variable(tmp_path):
    book = tmp_path / "labbook.md"
    for rec in curve().values():
        append_record(book, {**rec, "label": "real-crowd"}, "level")
    plan = SimpleNamespace(machine=None, steps=[], variables={"MACHINE": "m4-max", "MODEL_GB": 4.9})
    text = "\n".join(measured.section(book, plan))
    assert "- real-crowd: 55.0 tok/s alone" in text and "= 49% of the speed limit" in text
    assert "- real-crowd: peak 275.8 tok/s at c=16" in text
    no_machine = SimpleNamespace(machine=None, steps=[], variables={})
    assert "the plan names no machine" in "\n".join(measured.section(book, no_machine))


def test_a_missing_model_file_still_gives_the_speed_limit(tmp_path):
    """Day 3's model is Day 2's file: where it is not on this machine, the speed limit (which needs only
    MODEL_GB) is still stated and the ceiling says why it is absent."""
    book = tmp_path / "labbook.md"
    for rec in curve().values():
        append_record(book, {**rec, "label": "day3-real"}, "level")
    plan = SimpleNamespace(
        machine=None,
        steps=[SimpleNamespace(kind="predict", options={"model": str(tmp_path / "absent.gguf")})],
        variables={"MACHINE": "m4-pro", "MODEL_GB": 4.9},
    )
    text = "\n".join(measured.section(book, plan))
    assert "- day3-real: 55.0 tok/s alone" in text and "273 GB/s / 4.9 GB = 55.7 tok/s" in text
    assert "- no model to predict with: " in text


def test_a_rehearsal_sets_its_curves_against_this_machines_bandwidth_not_the_tracks(tmp_path):
    """A rehearsal's stand-ins ran here: the M4 Pro's 273 GB/s would make a share of a machine the
    curve never ran on. The section uses this machine's measured figure and names the track's."""
    from harness.sizing.machines import Bandwidth

    book = tmp_path / "labbook.md"
    for rec in curve().values():
        append_record(book, {**rec, "label": "day3-real"}, "level")
    plan = SimpleNamespace(
        machine=None,
        steps=[],
        variables={"MACHINE": "m4-pro", "MODEL_GB": 4.9},
        rehearsal=SimpleNamespace(models={}),  # Day 3's model is the stand-in's own file
    )
    here = Bandwidth(10.04, 2, "2-thread copy of 128 MiB each, read + written")
    text = "\n".join(measured.section(book, plan, measure=lambda: here))
    assert "this machine's memory bandwidth, 10 GB/s measured" in text
    assert "not against Apple M4 Pro's 273 GB/s, which the hardware run uses" in text
    # 55.0 tok/s alone against 10 GB/s / 4.9 GB = 2.0 tok/s: the figure is this machine's arithmetic
    assert "speed limit 10 GB/s / 4.9 GB = 2.0 tok/s" in text and "273 GB/s / 4.9" not in text
    assert "- day3-real: peak 275.8 tok/s at c=16" in text and "10 GB/s)" in text
    # a real run is untouched: the track machine's figure, nothing measured
    real = SimpleNamespace(machine=None, steps=[], variables={"MACHINE": "m4-pro", "MODEL_GB": 4.9})
    assert "273 GB/s / 4.9 GB" in "\n".join(measured.section(book, real, measure=lambda: 1 / 0))


def test_a_rehearsal_predicting_for_the_tracks_model_has_no_such_section_and_says_why(tmp_path):
    """Track S's plan predicts for Qwen3-8B while its stand-ins serve Gemma 3 270M: a share of
    Qwen3-8B's ceiling would be a figure about nothing. The overlay's own mapping says so."""
    from harness.run.plans import load_plan

    rehearsal = load_plan("track-s", rehearse_it=True).rehearsal
    assert set(rehearsal.models) == {"qwen3-8b"}
    book = tmp_path / "labbook.md"
    for rec in curve().values():
        append_record(book, {**rec, "label": "llama-baseline"}, "level")
    plan = SimpleNamespace(
        machine="spark",
        steps=[SimpleNamespace(kind="predict", options={"model": "qwen3-8b"})],
        variables={},
        rehearsal=rehearsal,
    )
    text = "\n".join(measured.section(book, plan, measure=lambda: 1 / 0))  # nothing measured
    assert (
        "Not computed in a rehearsal: this section's arithmetic is for the track's model (qwen3-8b) on spark"
        in text
    )
    assert "tok/s alone" not in text and "ceiling" not in text.split("On the hardware")[0]
