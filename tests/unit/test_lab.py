"""The lab profile (harness/data/lab.yaml): it validates, its course ids are the ones the seeds'
checkers read, every task names a module that exists, a broken profile is refused, and the checks
that quote the course read it from here."""

from __future__ import annotations

import re

import pytest
import yaml

from harness.sizing import arithmetic, memory_fraction as fraction_fit, criterion as sizing
from harness.measure import curves, server_metrics, level_checks as troubleshooting
from harness import lab
from harness.records import base as records
from harness.engines import logs as engine_logs
from harness.errors import SchemaError
from harness.report import engine_tables, engine_verdicts
from tests.conftest import ROOT
from tests.seeds import SEEDS, seeds_summarise_engines, seeds_summarise_load

TEXT = (ROOT / "harness" / "data" / "lab.yaml").read_text(encoding="utf-8")


def test_the_records_carry_the_profiles_ids():
    assert records.LAB_ID == lab.SERVING_LAB_ID == "part-09/lab-serve-twenty-concurrent-users"
    assert records.FEATURES_LAB == lab.ENGINES_LAB_ID == "part-08/lab-same-model-every-engine"


@pytest.mark.parametrize(
    "cut, lab_id", [(seeds_summarise_load, lab.SERVING_LAB_ID), (seeds_summarise_engines, lab.ENGINES_LAB_ID)]
)
def test_the_seeds_checkers_read_the_profiles_ids(cut, lab_id):
    script = cut(SEEDS)
    if script is None:
        pytest.skip(f"no seed pages under {SEEDS}")
    assert lab_id in script


PACKAGES = sorted(p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").exists())


def test_every_task_names_modules_that_exist():
    named = [
        (t["lab"], t["task"], m)
        for t in lab.PROFILE["tasks"]
        for m in re.findall(rf"\b(?:{'|'.join(PACKAGES)})/[a-z_]+", t["answered_by"])
    ]
    assert len(named) >= len(lab.PROFILE["tasks"])
    missing = [n for n in named if not (ROOT / "harness" / f"{n[2]}.py").exists()]
    assert missing == []


def test_a_task_is_quoted_by_the_check_that_answers_it():
    assert lab.task_answered_by("report/engine_verdicts") == "Task 9: Explain the differences"
    assert engine_verdicts.TITLE == "Task 9: Explain the differences"
    assert lab.tasks_answered_by("measure/level_checks") == [
        "Task 4: Check four things",
        "Task 5: Read the curve's shape",
    ]
    with pytest.raises(KeyError, match="2 tasks"):
        lab.task_answered_by("measure/level_checks")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["thresholds"]["repeats_vary"].pop("value"), "thresholds/repeats_vary"),
        (lambda d: d["labs"]["serving"].update(id="serving"), "labs/serving/id"),
        (lambda d: d["tasks"][0].update(lab="nowhere"), "tasks name labs it does not declare: nowhere"),
        (lambda d: d.update(extra=1), "Additional properties"),
        (lambda d: d["thresholds"]["baseline_levels"].update(value=1), "thresholds/baseline_levels"),
    ],
)
def test_a_broken_profile_is_refused(edit, message):
    data = yaml.safe_load(TEXT)
    edit(data)
    with pytest.raises(SchemaError, match=re.escape(message)):
        lab.parse(yaml.safe_dump(data))


def test_the_checks_read_the_thresholds_and_remedies_from_the_profile():
    assert curves.BASELINE_LEVELS == (1, 5, 10, 20)
    assert fraction_fit.RAISE == lab.threshold("fraction_raise") == 0.2
    assert arithmetic.SANE_BAND == lab.band("sane_speed_share") == (0.60, 0.85)
    assert troubleshooting.VARY == lab.threshold("repeats_vary") == 0.05
    assert (records.DEFAULT_SLO_TTFT_S, records.DEFAULT_SLO_TPOT_S) == (2.0, 0.1)
    assert lab.remedy("stop_before_budget") == troubleshooting.STOP_REMEDY
    assert server_metrics.DEFERRED.endswith(lab.remedy("queued_before_prefill"))
    assert engine_tables.SPEED_SHEET[1][0] == "engine and quant"
    assert "memory MB" in engine_tables.SPEED_SHEET[1]


def test_a_curves_shape_is_named_by_the_profiles_thresholds(monkeypatch):
    """Throughput at 0.85 of linear with TPOT flat is below the knee by the profile's 0.8; with the
    bar raised past it, the same curve names no shape."""
    levels = {
        c: {"completed": 10, "output_tokens_per_s": tok, "tpot_s": {"p50": 0.05, "p90": 0.06}}
        for c, tok in ((1, 20.0), (10, 170.0))
    }
    found = troubleshooting.shape_rules("x", levels)
    assert found == [
        (
            "PASS",
            f"x: throughput rises with TPOT p50 nearly flat (scaling 0.85 at c=10): "
            f"{lab.remedy('below_knee')}",
        )
    ]
    monkeypatch.setattr(troubleshooting, "BELOW_KNEE", (0.9, 1.2))
    assert troubleshooting.shape_rules("x", levels) == []


def test_day3s_sentences_name_the_worksheets_figures():
    levels = {1: {"output_tokens_per_s": 50.0, "tpot_s": {"p50": 0.02}}}
    levels[8] = {"output_tokens_per_s": 250.0, "tpot_s": {"p50": 0.025}}
    lines = sizing.alone_against_capacity(levels, 8)
    figures = lab.worksheet("day3_alone_against_capacity")[1]
    assert [line.split(":")[0] for line in lines] == figures


def test_no_message_names_a_lab_task_by_its_number():
    """The messages the checks print quote no task number; the one place one appears is a task's
    title, read from the profile."""
    texts = [troubleshooting.VARY_REMEDY, troubleshooting.STOP_REMEDY, troubleshooting.VLLM_CACHED]
    texts += [server_metrics.DEFERRED, engine_logs.__doc__ or ""]
    assert not [t for t in texts if re.search(r"\bTask [0-9]+|\bPart [0-9]+", t)]
