"""A run whose runner died without a word (a SIGKILL) is told by its manifest: the runner it names
is gone and a step still says running. A resume names that step and keeps the cut; a resume while
the runner lives is refused; harness cleanup names the cut run and the command that finishes it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.errors import ConfigError
from harness.records.notebook import validate
from harness.run import cleanup
from harness.run.manifest import CUT_REASON, Manifest, cut_of, runner_alive, runner_mark
from harness.run.plans import load_plan

PLAN = """schema_version: 1
name: cut
title: a plan of one in-process step
machine: null
variables: {ACCELERATOR: cpu, DISK_GB: 1, ALLOW_CPU: true, HOST_DESC: here}
stages:
  - report
"""


def _dead_runner() -> dict:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    mark = {"pid": proc.pid, "since": runner_mark()["since"]}
    proc.wait()
    return mark


@pytest.fixture
def cut_run(tmp_path):
    """A run directory whose runner was killed in its report step."""
    path = tmp_path / "cut.yaml"
    path.write_text(PLAN)
    plan, run_dir = load_plan(str(path)), tmp_path / "runs" / "one"
    run_dir.mkdir(parents=True)
    manifest = Manifest.open(plan, run_dir, resume=False)
    manifest.step("report").update(status="running", started="2026-12-06T11:00:00Z", attempts=1)
    manifest.data["runner"] = _dead_runner()
    manifest.save()
    return plan, run_dir


def test_a_manifest_names_the_step_its_dead_runner_was_cut_in(cut_run):
    plan, run_dir = cut_run
    data = json.loads((run_dir / "manifest.json").read_text())
    assert not runner_alive(data)
    assert cut_of(data)["step"] == "report"
    assert runner_alive({"runner": runner_mark()})  # this process: alive
    assert cut_of({**data, "runner": runner_mark()}) is None  # a live runner's step is running, not cut


def test_the_resume_keeps_the_cut_and_marks_the_step(cut_run):
    plan, run_dir = cut_run
    manifest = Manifest.open(plan, run_dir, resume=True)
    assert manifest.cut["step"] == "report" and manifest.data["cuts"] == [manifest.cut]
    step = manifest.step("report")
    assert step["status"] == "interrupted" and step["reason"] == CUT_REASON
    assert manifest.data["runner"] == runner_mark()
    validate(manifest.data, "run-manifest")


def test_a_resume_while_the_runner_lives_is_refused(cut_run):
    plan, run_dir = cut_run
    data = json.loads((run_dir / "manifest.json").read_text())
    data["runner"] = runner_mark()
    (run_dir / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="is being run now by harness track"):
        Manifest.open(plan, run_dir, resume=True)


def test_cleanup_names_the_cut_run_and_how_to_finish_it(cut_run):
    plan, run_dir = cut_run
    (line,) = cleanup.cut_runs(run_dir.parent)
    assert line.startswith(f"{run_dir}: cut in step report; finish it with harness track ")
    assert line.endswith(f"--run-dir {run_dir} --resume")
