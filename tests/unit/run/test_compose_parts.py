"""The compose launcher's pieces that need no Docker engine: which Compose CLI it uses (v2's plugin,
else v1's docker-compose), the project name, the worker containers it offers the sweep, the
container's memory as docker stats reads it, and the compose engines' sweep calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import EngineError
from harness.run import plans
from harness.run.context import block_context
from harness.run.launchers import compose
from harness.run.launchers.compose import ComposeLauncher, compose_cli, project
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
    monkeypatch.setattr(compose.shutil, "which", lambda name: None)
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


def test_an_engine_gone_while_stopping_is_one_line(tmp_path):
    class Gone:
        def list(self, **_):
            raise ConnectionError("docker.sock")

    client = type("Client", (), {"containers": Gone()})()
    lau = make(tmp_path, cli=("docker-compose",), client=client)
    lau.run = lambda argv, env: None
    with pytest.raises(EngineError, match="the Docker engine stopped answering while llama-cpu was stopped"):
        lau.stop()
