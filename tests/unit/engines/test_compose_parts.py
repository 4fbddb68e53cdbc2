"""The compose launcher's pieces that need no Docker engine: which Compose CLI it uses (v2's plugin,
else v1's docker-compose), the project name, the worker containers it offers the sweep, the
container's memory as docker stats reads it, and the compose engines' sweep calls."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.errors import EngineError
from harness.run import plans
from harness.run.context import block_context
from harness.engines.launchers import compose, compose_command
from harness.engines.launchers.compose import ComposeLauncher
from harness.engines.launchers.compose_command import compose_cli, project
from harness.run.steps import step_calls


def make(tmp_path: Path, **kw) -> ComposeLauncher:
    return ComposeLauncher(
        service="llama-cpu",
        profile="llama-cpu",
        variables={"PORT": 18080},
        env_file=tmp_path / "cpu.env",
        host="127.0.0.1",
        port=18080,
        health_url="http://127.0.0.1:18080/health",
        log_path=tmp_path / "llama.out",
        **kw,
    )


def test_the_compose_cli_is_v2_where_it_answers_else_v1(monkeypatch):
    compose_cli.cache_clear()
    monkeypatch.setenv("HARNESS_COMPOSE_CLI", "docker-compose")
    assert compose_cli() == ("docker-compose",)
    compose_cli.cache_clear()
    monkeypatch.delenv("HARNESS_COMPOSE_CLI")
    monkeypatch.setattr(compose_command.shutil, "which", lambda name: None)
    assert compose_cli() == ("docker", "compose")  # nothing installed: the spelling the error names
    compose_cli.cache_clear()


def test_the_project_is_per_run_when_asked(monkeypatch, tmp_path):
    assert project() == "llm-harness"
    monkeypatch.setenv("HARNESS_COMPOSE_PROJECT", "run-42")
    lau = make(tmp_path, cli=("docker-compose",))
    assert lau.argv("ps")[:3] == ["docker-compose", "-p", "run-42"]


def test_worker_containers_for_the_sweep(tmp_path):
    lau = make(
        tmp_path, cli=("docker-compose",), workers={"service": "locust-worker", "count": 2, "port": 8080}
    )
    w = lau.load_workers()
    assert w["processes"] == 2 and w["worker_url"] == "http://llama-cpu:8080"
    assert w["master_host"].startswith("<")  # known once the engine's network exists
    assert w["worker_command"].startswith("docker-compose -p llm-harness ")
    assert (
        "--profile locust run --rm --no-deps -T -e HARNESS_SWEEP_WORKER=1 locust-worker locust -f"
        in (w["worker_command"])
    )
    assert make(tmp_path).load_workers() is None


def test_memory_is_the_containers_less_its_inactive_file_cache(tmp_path):
    class Container:
        def stats(self, stream):
            return {"memory_stats": {"usage": 300_000_000, "stats": {"inactive_file": 100_000_000}}}

    lau = make(tmp_path, container=Container())
    assert lau.memory_mb() == 200.0
    assert make(tmp_path).memory_mb() is None


def test_compose_sweeps_name_their_worker_containers(tmp_path):
    plan = plans.load_plan("cpu-compose")
    step = next(s for s in plan.steps if s.id == "llama/sweep:llama-baseline")
    ctx = block_context(plan, step.block, tmp_path, dry_run=True)
    argv = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, ctx)[0].to_argv()
    assert argv[argv.index("--processes") + 1] == "2"
    assert argv[argv.index("--worker-url") + 1] == "http://llama-cpu:8080"
    assert "locust-worker locust -f locustfiles/llm_user.py" in argv[argv.index("--worker-command") + 1]
    host = next(s for s in plan.steps if s.id == "llama-host/sweep:llama-host")
    hctx = block_context(plan, host.block, tmp_path, dry_run=True)
    hargv = step_calls(plan, tmp_path, tmp_path / "labbook.md", host, hctx)[0].to_argv()
    assert "--worker-command" not in hargv and hargv[hargv.index("--processes") + 1] == "2"


def test_measure_reads_the_compose_engines_container_once_it_is_known(tmp_path):
    plan = plans.load_plan("cpu-compose")
    step = next(s for s in plan.steps if s.id.startswith("llama/measure"))
    ctx = block_context(plan, step.block, tmp_path, dry_run=True)
    argv = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, ctx)[0].to_argv()
    assert argv[argv.index("--container") + 1] == "<compose container of llama-cpu>"  # the dry run
    ctx.state.version, ctx.state.container = "llama.cpp b1", "llm-harness_llama-cpu_1"
    argv = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, ctx)[0].to_argv()
    assert argv[argv.index("--container") + 1] == "llm-harness_llama-cpu_1" and "--server-pid" not in argv
    ctx.state.container = None  # started, and no container name read: no placeholder in a real run
    argv = step_calls(plan, tmp_path, tmp_path / "labbook.md", step, ctx)[0].to_argv()
    assert "--container" not in argv


def test_an_engine_gone_while_stopping_is_one_line(tmp_path):
    class Gone:
        def list(self, **_):
            raise ConnectionError("docker.sock")

    client = type("Client", (), {"containers": Gone()})()
    lau = make(tmp_path, cli=("docker-compose",), client=client)
    lau.run = lambda argv, env: None
    with pytest.raises(EngineError, match="the Docker engine stopped answering while llama-cpu was stopped"):
        lau.stop()


class HealthSequence:
    """A container whose Docker health goes through the given statuses, one per reload."""

    name = "llm-harness_vllm-cpu_1"

    def __init__(self, *statuses):
        self.statuses = list(statuses)
        self.attrs: dict = {}
        self.reload()

    def reload(self):
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        health = None if status is None else {"Status": status, "Log": [{"Output": "503 loading\n"}]}
        self.attrs = {"State": {"Status": "running", **({"Health": health} if health else {})}}


def test_a_container_with_a_healthcheck_is_started_only_once_docker_says_healthy(tmp_path):
    container = HealthSequence("starting", "starting", "healthy")
    lau = make(tmp_path, container=container)
    lau._wait_container_healthy(time.monotonic() + 5, interval=0.01)
    assert container.attrs["State"]["Health"]["Status"] == "healthy"
    assert lau.container_name == "llm-harness_vllm-cpu_1"
    make(tmp_path, container=HealthSequence(None))._wait_container_healthy(time.monotonic())  # no check


def test_an_unhealthy_container_is_one_line_with_the_checks_output(tmp_path, monkeypatch):
    lau = make(tmp_path, container=HealthSequence("starting", "unhealthy"))
    stopped = []
    monkeypatch.setattr(lau, "stop", lambda timeout=60.0: stopped.append(True))
    with pytest.raises(EngineError, match=r"healthcheck unhealthy \(503 loading\)"):
        lau._wait_container_healthy(time.monotonic() + 5, interval=0.01)
    assert stopped == [True]
    with pytest.raises(compose.NotHealthy, match="container health 'starting'"):
        make(tmp_path, container=HealthSequence("starting"))._wait_container_healthy(time.monotonic())


def test_the_start_line_spells_the_compose_cli_that_runs(tmp_path, monkeypatch):
    compose_cli.cache_clear()
    monkeypatch.setenv("HARNESS_COMPOSE_CLI", "docker-compose")
    try:  # v1 here: the command shown before start is the one start runs, not v2's spelling
        assert " docker-compose -p llm-harness -f " in f" {make(tmp_path).command()}"
        assert make(tmp_path).stopped_note().startswith("stopped and removed (docker-compose)")
    finally:
        compose_cli.cache_clear()
