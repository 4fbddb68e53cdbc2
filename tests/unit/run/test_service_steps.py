"""The measure step through a service launcher (Lemonade): the dry run names
where the pid will come from; a real run passes the pid found on the port, or none at all, never
a placeholder that `harness measure` would reject; the steps follow the API base the service
answered at."""

from __future__ import annotations

from harness.run.context import block_context
from harness.run.launcher_table import make_launcher
from harness.run.plans import load_plan
from harness.run.steps import step_calls


def measure_argv(tmp_path, block_id: str, pid=None, version=None, base_url=None) -> list[str]:
    plan = load_plan("track-x")
    block = plan.blocks[block_id]
    ctx = block_context(plan, block, tmp_path, dry_run=True)
    ctx.state.pid, ctx.state.version, ctx.state.base_url = pid, version, base_url
    step = next(s for s in plan.steps if s.block is block and s.kind == "measure")
    (call,) = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, ctx)
    return call.to_argv()


def test_the_dry_run_says_the_pid_is_the_one_listening_on_the_port(tmp_path):
    argv = measure_argv(tmp_path, "lemonade-rocm")
    assert argv[argv.index("--server-pid") + 1] == "<pid listening on port 13305>"
    control = measure_argv(tmp_path, "control")
    assert control[control.index("--server-pid") + 1] == "<server pid>"


def test_a_started_service_passes_its_pid_or_none_never_a_placeholder(tmp_path):
    argv = measure_argv(tmp_path, "lemonade-rocm", pid=4242, version="10.2.0")
    assert argv[argv.index("--server-pid") + 1] == "4242"
    argv = measure_argv(tmp_path, "lemonade-rocm", pid=None, version="10.2.0")
    assert "--server-pid" not in argv and not any(a.startswith("<") for a in argv)


def test_the_steps_follow_the_api_base_the_service_answered_at(tmp_path):
    argv = measure_argv(tmp_path, "lemonade-rocm", 1, "10.2.0", "http://127.0.0.1:13305/api/v1")
    assert argv[argv.index("--base-url") + 1] == "http://127.0.0.1:13305/api/v1"


def test_the_lemonade_launcher_runs_the_serve_scripts_steps_before_the_load(tmp_path):
    plan = load_plan("track-x")
    launcher = make_launcher(block_context(plan, plan.blocks["lemonade-vulkan"], tmp_path, dry_run=True))
    assert [(b.argv, b.check) for b in launcher.before] == [
        (["lemonade", "status"], True),
        (["lemonade", "backends", "install", "llamacpp:vulkan"], True),
        (["lemonade", "backends"], False),
        (["lemonade", "unload"], False),
    ]
    assert launcher.fallback_path == "/api/v1" and launcher.keeps_port
