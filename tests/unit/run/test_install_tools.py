"""Track N's installs (the preflight part): uv for the vLLM environment and git for
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


# -- the installs themselves ---------------------------------------------------------------------------
def test_the_plan_step_and_the_lab_command_lines(tmp_path):
    """Track N's install step runs `harness setup install` with the plan's lab.env paths, and the commands
    it builds are the engines lab's, word for word (uv's into the plan's environment)."""
    from pathlib import Path

    from harness.engines import installs as ti
    from harness.run.steps import step_calls

    plan = load_plan("track-n")
    step = next(s for s in plan.steps if s.kind == "install")
    [found] = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, None)
    home = str(Path.home())
    assert found.to_argv() == [
        "setup",
        "install",
        "--vllm-venv",
        f"{home}/vllm/.venv",
        "--vllm",
        "vllm==0.28.0",
        "--tabby-dir",
        f"{home}/tabbyAPI",
    ]
    assert [s.kind for s in plan.steps[:3]] == ["models", "install", "preflight"]
    vllm, tabby = ti.installs("~/vllm/.venv", "~/tabbyAPI")
    assert vllm.lines() == [
        f"uv venv {home}/vllm/.venv --python 3.12 --seed",
        f"uv pip install --python {home}/vllm/.venv/bin/python vllm==0.28.0 --torch-backend=auto",
        f"{home}/vllm/.venv/bin/vllm --version",
    ]
    assert tabby.lines() == [
        f"git clone https://github.com/theroyallab/tabbyAPI {home}/tabbyAPI",
        f"git -C {home}/tabbyAPI rev-parse --short HEAD",
    ]
    assert (vllm.host, tabby.host) == ("pypi.org", "github.com")
    assert ti.installs(None, None) == []


def test_each_install_runs_only_where_it_can(tmp_path):
    from harness.engines import installs as ti

    vllm, tabby = ti.installs(str(tmp_path / "venv"), str(tmp_path / "tabby"))
    tools = {"uv": "/usr/bin/uv", "git": "/usr/bin/git"}.get
    online = lambda host: None  # noqa: E731
    assert ti.decide(vllm, tools, online, has_python=lambda: True) == ("run", "; ".join(vllm.lines()))
    assert ti.decide(vllm, lambda name: None, online) == ("skip", "uv is not on the PATH; install uv first")
    assert ti.decide(tabby, tools, lambda host: f"no network to {host}") == (
        "skip",
        "no network to github.com",
    )
    assert ti.decide(vllm, tools, online, rehearsal=True)[0] == "skip"
    # no Python 3.12 here: uv downloads one from GitHub, which must answer too
    pypi_only = lambda host: None if host == "pypi.org" else f"no network to {host}"  # noqa: E731
    assert ti.decide(vllm, tools, pypi_only, has_python=lambda: True)[0] == "run"
    assert ti.decide(vllm, tools, pypi_only, has_python=lambda: False) == (
        "skip",
        "no network to github.com (uv finds no Python 3.12 here and downloads one from there)",
    )
    assert ti.decide(vllm, tools, online, has_python=lambda: False)[0] == "run"  # it can download one
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "vllm").write_text("")
    assert ti.decide(vllm, tools, online, rehearsal=True) == (
        "done",
        f"already installed ({vllm.done_when} is there)",
    )
    (tmp_path / "tabby").mkdir()
    (tmp_path / "tabby" / "notes.txt").write_text("mine")
    verdict, why = ti.decide(tabby, tools, online)
    assert verdict == "fail" and "is not a TabbyAPI checkout" in why and "TABBY_DIR" in why


def test_a_proxy_in_the_environment_is_what_is_reached():
    from harness.engines import installs as ti

    assert ti.proxy_for({"HTTPS_PROXY": "http://proxy.lab:3128"}) == ("proxy.lab", 3128)
    assert ti.proxy_for({"https_proxy": "10.0.0.1:8080"}) == ("10.0.0.1", 8080)
    assert ti.proxy_for({}) is None
