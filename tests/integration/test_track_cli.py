"""`harness track` in its own process: every track's dry run in order, and a bad plan in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.run.plans import load_plan
from tests.conftest import ROOT
from tests.integration.deadlines import START_S

HOME = "/home/you"


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch):
    monkeypatch.setenv("HOME", HOME)


@pytest.mark.parametrize("track", ["s", "n", "x", "m"])
def test_dry_run_prints_every_command_in_order(track, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "track", track, "--dry-run", "--run-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=START_S,  # a hang only: a harness command's start on a loaded machine
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    plan = load_plan(track)
    starts = [x for x in lines if x.startswith("start: ")]
    assert len(starts) == len(plan.blocks)
    order = [
        line.split(":")[0] for line in lines if line.split(":")[0] in {s.id.split(":")[0] for s in plan.steps}
    ]
    # Track N installs its vLLM environment and TabbyAPI (as its lab does) before the preflight checks them.
    first = ["models", "install", "preflight"] if track == "n" else ["models", "preflight"]
    assert order[: len(first)] == first and order[len(first)].startswith("predict") and order[-1] == "report"
    models = next(x for x in lines if x.startswith("models: "))
    assert f"harness setup models --track {track} --library " in models  # the formats this track needs, first
    assert not (tmp_path / "manifest.json").exists()  # a dry run starts and writes nothing


def test_a_bad_plan_is_one_line_and_exit_2(tmp_path):
    """The command-line half of the unit test test_bad_plans_say_what_to_fix."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: bad\ntitle: t\nvariables: {}\nstages:\n  - bogus: {}\n")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "track", str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=START_S,  # a hang only: a harness command's start on a loaded machine
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
