"""The images built here (`make images`), run for real on the Docker engine: the local base, the
harness image serving the practice server and running a Locust worker against a master on the
host, the CPU llama-server image answering a completion on Gemma 3 270M from the mounted model
library, and a missing image refused in one line without any pull."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import requests

from harness.errors import EngineError
from harness.engines.launchers.compose import ComposeLauncher, docker_client
from tests.conftest import ROOT, free_port
from tests.integration.docker.conftest import (
    BASE_IMAGE,
    HARNESS_IMAGE,
    LLAMA_CPU_IMAGE,
    bridge_gateway,
    docker,
    logs,
    need_image,
    wait_healthy,
)

MODEL = ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"


def test_the_base_image_is_local_and_labelled_with_its_inputs():
    need_image(BASE_IMAGE)
    label = docker(
        "image", "inspect", BASE_IMAGE, "--format", '{{index .Config.Labels "org.llm-harness.base.inputs"}}'
    ).stdout.strip()
    assert len(label) == 64, label  # the inputs hash that lets scripts/docker-engine.sh skip debootstrap
    # The host's package sources travelled into it, so builds reach the mirror as the host does.
    listing = docker(
        "run",
        "--rm",
        "--pull",
        "never",
        BASE_IMAGE,
        "sh",
        "-c",
        "ls /etc/apt/sources.list.d "
        "/etc/apt/sources.list 2>/dev/null; test -s /etc/ssl/certs/ca-certificates.crt && echo ca",
    )
    assert listing.returncode == 0 and "ca" in listing.stdout.split(), listing.stderr


def test_the_harness_image_serves_the_practice_server_as_an_unprivileged_user(containers):
    need_image(HARNESS_IMAGE)
    port = free_port()
    name = containers(
        HARNESS_IMAGE,
        "harness",
        "practice",
        "--profile",
        "kit",
        "--host",
        "0.0.0.0",
        "--port",
        "8099",
        options=["-p", f"127.0.0.1:{port}:8099"],
    )
    wait_healthy(f"http://127.0.0.1:{port}/health", name, 60)
    assert docker("exec", name, "id", "-u").stdout.strip() != "0"
    reply = requests.post(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        timeout=30,
        json={"model": "local-chat", "max_tokens": 8, "messages": [{"role": "user", "content": "hello"}]},
    )
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"]
    # The installed wheel finds its own schemas, engines and tracks (harness/paths.py), not a checkout's.
    probe = docker(
        "exec",
        name,
        "python3",
        "-c",
        "from harness import paths; print(paths.checkout(), "
        "paths.schemas_dir().is_dir(), paths.engines_dir().is_dir(), paths.tracks_dir().is_dir())",
    )
    assert probe.stdout.split() == ["None", "True", "True", "True"], probe.stderr
    # The image's harness is this checkout's (a stale in-tree build once made it say "harness 0").
    from harness import __version__

    assert docker("exec", name, "harness", "--version").stdout.strip() == f"harness {__version__}"


def test_a_locust_worker_in_the_harness_image_works_for_a_master_on_the_host(containers, tmp_path):
    need_image(HARNESS_IMAGE)
    gateway = bridge_gateway()
    target_port, master_port, web_port = free_port(), free_port(), free_port()
    # The practice server and the master listen on the bridge's address only, where the worker finds them.
    out = open(tmp_path / "practice.txt", "w")  # noqa: SIM115 (the server writes to it for the whole test)
    practice = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "practice",
            "--profile",
            "kit",
            "--host",
            gateway,
            "--port",
            str(target_port),
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    master_out = tmp_path / "master.txt"
    master = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"http://{gateway}:{target_port}/health", timeout=1).raise_for_status()
                break
            except requests.RequestException:
                assert time.monotonic() < deadline and practice.poll() is None, (
                    tmp_path / "practice.txt"
                ).read_text()
                time.sleep(0.2)
        master = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "locust",
                "-f",
                "locustfiles/llm_user.py",
                "--master",
                "--headless",
                "--master-bind-host",
                gateway,
                "--master-bind-port",
                str(master_port),
                "--web-port",
                str(web_port),
                "--expect-workers",
                "1",
                "--expect-workers-max-wait",
                "60",
                "-u",
                "2",
                "-r",
                "2",
                "-t",
                "4s",
                "--host",
                f"http://{gateway}:{target_port}",
                "--stop-timeout",
                "30",
            ],
            cwd=ROOT,
            stdout=open(master_out, "w"),  # noqa: SIM115 (the master writes to it until it exits)
            stderr=subprocess.STDOUT,
            env={
                **__import__("os").environ,
                "LOCUST_MAX_TOKENS": "8",
                "LOCUST_LABBOOK": str(tmp_path / "labbook.md"),
            },
        )
        name = containers(
            HARNESS_IMAGE,
            "locust",
            "-f",
            "/app/locustfiles/llm_user.py",
            "--worker",
            "--master-host",
            gateway,
            "--master-port",
            str(master_port),
        )
        try:
            assert master.wait(120) == 0, master_out.read_text()[-3000:] + logs(name)
        except subprocess.TimeoutExpired:
            pytest.fail("the master did not finish in 120 s:\n" + master_out.read_text()[-3000:] + logs(name))
        text = master_out.read_text()
        assert "1 workers connected" in text or "workers connected" in text.lower(), text[-3000:]
        # The worker in the container did the requests: the practice server served them.
        served = requests.get(f"http://{gateway}:{target_port}/metrics", timeout=5).text
        line = next(x for x in served.splitlines() if x.startswith("llamacpp:tokens_predicted_total"))
        assert float(line.split()[-1]) > 0, text[-3000:]
        # A master that has finished lets its worker go: the worker exits cleanly.
        deadline = time.monotonic() + 30
        while docker("inspect", "-f", "{{.State.Running}}", name).stdout.strip() == "true":
            assert time.monotonic() < deadline, logs(name)
            time.sleep(0.5)
        assert docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout.strip() == "0", logs(name)
    finally:
        for proc in (master, practice):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(20)


def test_the_llama_cpu_image_serves_a_completion_on_the_model_library(containers):
    need_image(LLAMA_CPU_IMAGE)
    if not MODEL.is_file():
        pytest.skip(f"{MODEL} is missing: run `make llama-cpu`")
    port = free_port()
    name = containers(
        LLAMA_CPU_IMAGE,
        "--model",
        f"/models/{MODEL.name}",
        "--alias",
        "gemma-3-270m",
        "--host",
        "0.0.0.0",
        "--port",
        "8080",
        "--ctx-size",
        "2048",
        "--parallel",
        "1",
        "--threads",
        "2",
        options=["-p", f"127.0.0.1:{port}:8080", "-v", f"{MODEL.parent}:/models:ro"],
    )
    wait_healthy(f"http://127.0.0.1:{port}/health", name, 180)
    reply = requests.post(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        timeout=120,
        json={
            "model": "gemma-3-270m",
            "max_tokens": 16,
            "temperature": 0,
            "messages": [{"role": "user", "content": "Name a colour."}],
        },
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["usage"]["completion_tokens"] > 0 and body["choices"][0]["message"]["content"].strip()
    assert body["model"] == "gemma-3-270m"


def test_a_missing_image_is_refused_in_one_line_and_never_pulled(tmp_path):
    missing = "llm-harness/missing:never-built"
    before = docker("images", "-q").stdout
    # docker itself, with pulls forbidden:
    done = docker("run", "--rm", "--pull", "never", missing, timeout=120)
    assert done.returncode != 0 and "No such image" in done.stderr  # refused, not pulled (below)
    # compose v1 through the llama-cpu profile (pull_policy: never; --no-build as a run does):
    env = {
        **__import__("os").environ,
        "LLAMA_CPU_IMAGE": missing,
        "MODELS_DIR": str(tmp_path),
        "LOG_DIR": str(tmp_path),
    }
    project = [
        "-p",
        "llmh-test-missing",
        "-f",
        str(ROOT / "compose/compose.yaml"),
        "--env-file",
        str(ROOT / "compose/env/cpu.env"),
        "--profile",
        "llama-cpu",
    ]
    try:
        up = subprocess.run(
            ["docker-compose", *project, "up", "-d", "--no-build", "llama-cpu"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert up.returncode != 0 and "Pulling" not in up.stderr + up.stdout, up.stderr
        assert "needs to be built" in up.stderr or "No such image" in up.stderr, up.stderr
    finally:
        subprocess.run(
            ["docker-compose", *project, "down", "-t", "1"], env=env, capture_output=True, timeout=60
        )
    # the harness's compose launcher says it in one line before starting anything:
    launcher = ComposeLauncher(
        service="llama-cpu",
        profile="llama-cpu",
        variables={"LLAMA_CPU_IMAGE": missing},
        env_file=ROOT / "compose/env/cpu.env",
        host="127.0.0.1",
        port=free_port(),
        health_url="http://127.0.0.1:1/health",
        log_path=tmp_path / "llama.log",
    )
    launcher.client = docker_client()
    with pytest.raises(EngineError) as err:
        launcher.preflight(launcher.service_spec())
    message = str(err.value)
    assert "\n" not in message and missing in message and "not present" in message
    assert docker("images", "-q").stdout == before  # nothing was pulled
