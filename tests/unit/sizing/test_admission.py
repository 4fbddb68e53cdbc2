"""The admission recommendation (serving lab Task 8), built from hand-made level records: the level
below the unacceptable region, where that region begins, the admission run's verdict, the search's
criterion, and the record valid for its schema."""

from __future__ import annotations

from harness.sizing import admission
from harness.records.notebook import problems
from harness.records.sizing import AdmissionRecommendation, Capacity


def level(c: int, ttft90: float, tpot90: float, failed: int = 0, prompt_set: str = "mixed") -> dict:
    return {
        "label": "x",
        "engine": "llama.cpp",
        "model": "m",
        "server_slots": 8,
        "concurrency": c,
        "prompt_set": prompt_set,
        "completed": 10,
        "failed": failed,
        "output_tokens_per_s": 10.0 * c,
        "slo_ttft_s": 2.0,
        "slo_tpot_s": 0.1,
        "ttft_s": {"p50": ttft90 / 2, "p90": ttft90, "p95": ttft90 * 1.1},
        "tpot_s": {"p50": tpot90 / 2, "p90": tpot90},
    }


SOURCE = {1: level(1, 0.2, 0.03), 5: level(5, 0.9, 0.06), 10: level(10, 2.6, 0.09), 20: level(20, 5.0, 0.2)}


def build(admitted: dict, lv=5, capacity=None, source=SOURCE):
    found = Capacity.read(capacity) if capacity is not None else None  # as the admission step reads it
    rec = admission.recommend("a", "base", source, admitted, lv, "why", "2026-12-02T03:00:00+0000", found)
    out = rec.to_dict()
    assert AdmissionRecommendation.read(out) == rec  # the line reads back as the record
    return out


def test_recommended_below_the_unacceptable_region():
    rec = build({5: level(5, 1.2, 0.07, prompt_set="mixed-long")})
    assert problems(rec, "admission") == []
    assert (rec["level"], rec["unacceptable_from"], rec["verdict"]) == (5, 10, "recommended")
    assert rec["unacceptable_why"] == "TTFT p90 2.6 s > 2 s"
    assert rec["confirmed"]["within_objective"] and rec["confirmed"]["prompt_set"] == "mixed-long"
    assert rec["recommendation"] == (
        "admit at most 5 request(s) at once on the server base measured; the mixed-long workload there "
        "kept the objective"
    )
    assert rec["server_slots"] == 8 and rec["source_levels"] == [1, 5, 10, 20]
    assert "unacceptable from c=10 (TTFT p90 2.6 s > 2 s)" in admission.line(
        AdmissionRecommendation.read(rec)
    )


def test_an_admission_run_that_broke_the_objective_is_not_confirmed():
    rec = build({5: level(5, 1.0, 0.12, failed=1)})
    assert rec["verdict"] == "not confirmed" and rec["confirmed"]["broken"] == "1 failed request(s)"
    assert "choose a lower level" in rec["recommendation"]
    assert admission.rules([rec]) == [("WARN", admission.line(AdmissionRecommendation.read(rec)))]
    tpot = build({5: level(5, 1.0, 0.12)})
    assert tpot["confirmed"]["broken"] == "TPOT p90 0.12 s > 0.1 s"


def test_no_admission_run_and_no_level():
    assert build({})["verdict"] == "unconfirmed"
    none = build({}, lv=None)
    assert problems(none, "admission") == []
    assert (none["level"], none["verdict"], none["unacceptable_from"]) == (None, "none", 10)
    assert none["recommendation"] == "no admission level for base: why"


def test_the_top_level_says_the_limit_may_be_higher():
    source = {1: level(1, 0.2, 0.03), 5: level(5, 0.9, 0.06)}
    rec = build({5: level(5, 1.0, 0.07)}, source=source)
    assert rec["unacceptable_from"] is None and "the limit may be higher" in rec["recommendation"]


def test_a_search_level_is_the_capacity_under_its_own_criterion():
    capacity = {
        "capacity": 10,
        "answer": "10 people at once keep p95 TTFT <= 3 s",
        "criterion": {"metric": "ttft", "percentile": "p95", "limit": 3.0, "text": "p95 TTFT <= 3 s"},
    }
    rec = build({10: level(10, 2.5, 0.09)}, lv=5, capacity=capacity)
    assert problems(rec, "admission") == []
    assert (rec["method"], rec["level"], rec["objective"]["limits"]) == (
        "capacity search",
        10,
        {"ttft_s.p95": 3.0},
    )
    assert rec["unacceptable_from"] == 20 and rec["verdict"] == "recommended"
    assert rec["why"] == "capacity search: 10 people at once keep p95 TTFT <= 3 s"
    goodput = {**capacity, "criterion": {"metric": "goodput", "percentile": "", "limit": 0.9, "text": "g"}}
    assert build({10: level(10, 2.5, 0.09)}, capacity=goodput)["objective"]["limits"] == {}


def test_rules_keep_the_latest_record_per_label():
    old, new = build({}), build({5: level(5, 1.0, 0.07)})
    assert admission.rules([old, new]) == [("PASS", admission.line(AdmissionRecommendation.read(new)))]
