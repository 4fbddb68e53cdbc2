"""The vLLM CPU image (images/vllm-cpu, `make image-vllm-cpu`) and the `vllm-cpu` compose profile, for
real: the profile runs the host recipe's command and environment (harness/engines/vllm_cpu.py), the
compose launcher starts it, the container turns healthy only after a real completion, one streamed
chat completion through endpoints.http_client comes back with tokens, and after the stop nothing of ours
is left. Skipped, saying why, without a Docker engine, the image or the converted model."""

from __future__ import annotations

import json
import os
import time

import pytest
import requests

from harness.errors import EngineError
from harness.endpoints.http_client import stream_chat
from harness.engines import vllm_cpu, vllm_serve
from harness.engines.launchers.compose import ComposeLauncher, docker_client
from tests.conftest import ROOT, assert_nothing_left, free_port
from tests.integration.docker.conftest import compose_project, docker

IMAGE = f"llm-harness/vllm-cpu:{vllm_cpu.VLLM_VERSION}"
ENV_FILE = ROOT / "compose/env/cpu.env"


def need_model():
    folder = vllm_cpu.model_dir()  # HARNESS_MODELS names another library
    if not (folder / vllm_cpu.MANIFEST).is_file():
        pytest.skip(f"{folder} is missing: run `make vllm-cpu` (it converts the GGUF)")
    return folder


def need_vllm_image() -> None:
    # Not part of `make images` (a 3.4 GB environment), so absent even where CI requires the others.
    if docker("image", "inspect", IMAGE).returncode != 0:
        pytest.skip(f"image {IMAGE} is not built: run `make image-vllm-cpu`")


@pytest.fixture
def launcher(tmp_path, monkeypatch):
    """A compose launcher for the vllm-cpu profile in a project of its own, on a free port."""
    monkeypatch.setenv("HARNESS_COMPOSE_PROJECT", compose_project())
    port = free_port()
    made = ComposeLauncher(
        service="vllm-cpu",
        profile="vllm-cpu",
        variables={"MODELS_DIR": str(vllm_cpu.model_dir().parent), "PORT": str(port)},
        env_file=ENV_FILE,
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=tmp_path / "runs" / "engines" / "vllm-cpu.log",
        version_command=["vllm", "--version"],
    )
    yield made
    project = os.environ["HARNESS_COMPOSE_PROJECT"]
    left = docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}").stdout.split()
    if left:
        docker("rm", "-f", *left, timeout=60)
    docker("network", "rm", f"{project}_default")


def test_the_profile_runs_the_host_recipe(launcher):
    """Command, environment, user and bindings are the host recipe's: change one side and this fails."""
    need_vllm_image()
    spec = launcher.service_spec()
    model = f"/models/{vllm_cpu.MODEL_DIR}"
    host_argv = vllm_serve.server_argv("vllm", model, 8000, host="0.0.0.0")
    assert ["vllm", "serve", *spec["command"]] == host_argv
    assert spec["image"] == IMAGE and spec["pull_policy"] == "never" and spec["init"] is True
    assert spec["ports"] == [f"127.0.0.1:{launcher.port}:8000"]
    assert spec["volumes"] == [f"{vllm_cpu.model_dir()}:{model}:ro"]
    config = docker("image", "inspect", IMAGE, "--format", "{{json .Config}}").stdout
    image = json.loads(config)
    assert image["Entrypoint"] == ["vllm", "serve"] and image["User"] == "vllm"
    env = dict(item.split("=", 1) for item in image["Env"])
    for key, value in vllm_cpu.server_env().items():
        assert env.get(key) == value, key


def test_a_missing_model_is_refused_in_one_line(launcher, tmp_path):
    need_vllm_image()
    launcher.variables["MODELS_DIR"] = str(tmp_path)
    launcher.client = docker_client()
    with pytest.raises(EngineError) as err:
        launcher.preflight(launcher.service_spec())
    assert "\n" not in str(err.value) and str(tmp_path / vllm_cpu.MODEL_DIR) in str(err.value)


def test_a_missing_image_names_its_make_target_and_is_never_pulled(launcher):
    missing = "llm-harness/vllm-cpu:never-built"
    before = docker("images", "-q").stdout
    launcher.variables["VLLM_CPU_IMAGE"] = missing
    with pytest.raises(EngineError) as err:
        launcher.start(timeout=30)
    message = str(err.value)
    assert "\n" not in message and missing in message and "make image-vllm-cpu" in message, message
    assert docker("images", "-q").stdout == before  # nothing was pulled
    assert launcher.container is None  # refused before `compose up`


def wait_docker_healthy(name: str, timeout: float) -> None:
    """The image's own healthcheck: healthy only after a real completion returned tokens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = docker("inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", name).stdout.split()
        if state[:1] != ["running"]:
            pytest.fail(f"{name} is {state}: {docker('logs', '--tail', '30', name).stderr}")
        if state[1:] == ["healthy"]:
            return
        time.sleep(1)
    pytest.fail(f"{name} not healthy in {timeout:.0f} s")


def served(port: int) -> float:
    """Requests vLLM has finished, from its /metrics."""
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return sum(float(x.split()[-1]) for x in text.splitlines() if x.startswith("vllm:request_success_total"))


def test_the_profile_serves_a_streamed_completion_and_leaves_nothing(launcher, tmp_path):
    need_vllm_image()
    models = need_model()
    t0 = time.monotonic()
    launcher.start(timeout=600)  # compose up, then /health
    at_health = time.monotonic() - t0
    name = launcher.container.name
    try:
        wait_docker_healthy(name, 600)
        at_healthy = time.monotonic() - t0
        health = docker("inspect", "-f", "{{json .State.Health.Log}}", name).stdout
        assert "a completion returned" in health, health
        assert docker("exec", name, "id", "-u").stdout.strip() == "10001"
        before = served(launcher.port)
        assert before >= 1  # the healthcheck's own completion
        sample = stream_chat(
            f"http://127.0.0.1:{launcher.port}/v1",
            {
                "model": vllm_cpu.SERVED_NAME,
                "messages": [{"role": "user", "content": "Name a colour."}],
                "max_tokens": 16,
                "temperature": 0,
                "ignore_eos": True,
            },
            timeout=120,
        )
        assert sample.ok, sample.error
        assert sample.output_tokens == 16 and sample.token_source == "usage" and sample.token_times
        # Once healthy, the healthcheck asks /health only: two more checks add no request to the load.
        time.sleep(11)
        assert served(launcher.port) == before + 1
        assert vllm_cpu.VLLM_VERSION in launcher.version()
        print(
            f"\nvllm-cpu container: /health after {at_health:.1f} s, healthy (a real completion) after "
            f"{at_healthy:.1f} s; TTFT {sample.t_first - sample.t_send:.2f} s, "
            f"{sample.output_tokens} tokens in {sample.t_end - sample.t_send:.2f} s; "
            f"memory {launcher.memory_mb():.0f} MB"
        )
    finally:
        launcher.stop()
    project = os.environ["HARNESS_COMPOSE_PROJECT"]
    assert docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}").stdout.split() == []
    assert docker("network", "inspect", f"{project}_default").returncode != 0
    assert_nothing_left(tmp_path / "runs", models.parent, (launcher.port,))
