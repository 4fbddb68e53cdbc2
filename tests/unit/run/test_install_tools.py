"""Track N's installs (issue 29 item 6, the preflight part): uv for the vLLM environment and git for
TabbyAPI are checked before anything runs, each missing one named with what it installs."""

from __future__ import annotations

from harness.run.guards import install_tools
from harness.run.plans import load_plan


def test_track_n_names_its_install_tools():
    assert load_plan("track-n").variables["INSTALL_TOOLS"] == "uv git"


def test_missing_tools_warn_with_what_they_install():
    found = install_tools("uv git", which=lambda name: "/usr/bin/git" if name == "git" else None)
    assert [(f.level, f.check) for f in found] == [("WARN", "uv"), ("PASS", "git")]
    assert "uv venv ~/vllm-env --python 3.12 --seed; uv pip install vllm==0.28.0" in found[0].text
    assert install_tools("") == []


def test_the_preflight_runs_them(tmp_path):
    from harness.run import preflight

    plan = load_plan("track-n")
    found = preflight.plan_findings(plan, [], tmp_path, run=lambda argv: None)
    assert {"uv", "git"} <= {f.check for f in found}
