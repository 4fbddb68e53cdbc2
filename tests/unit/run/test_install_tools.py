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


def test_environment_sizes_and_the_space_beside_them(tmp_path, monkeypatch):
    """Engines lab Task 7 on Track N: du -sh of both environments and df -h ~ (what is left)."""
    from collections import namedtuple

    from harness.run.guards import environment_sizes, tree_bytes

    venv = tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "lib" / "torch.so").write_bytes(b"x" * 1500)
    assert tree_bytes(venv) == 1500
    monkeypatch.setenv("TABBY", str(tmp_path))
    usage = namedtuple("usage", "total used free")(0, 0, 200e9)
    found = environment_sizes("${TABBY}/venv ~/no-such-env", usage=lambda path: usage, size=lambda p: 7.25e9)
    assert [f.text for f in found] == [
        f"{venv}: 7.2 GB",
        f"{tmp_path.home() / 'no-such-env'}: not there yet (its install or first start makes it)",
        f"200 GB free beside them ({tmp_path.home()})",
    ]
    assert "ENV_DIRS" in load_plan("track-n").variables
