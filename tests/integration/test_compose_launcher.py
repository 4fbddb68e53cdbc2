"""The compose launcher against its two seams: the compose command line (here a fake that starts a
real practice server where the container would be) and a Docker SDK client (a small fake with
the same methods). The Docker-engine-unreachable case uses the real SDK against a closed port."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.errors import EngineError, PortBusy
from harness.engines.launchers.compose import ComposeLauncher, docker_client
from tests.conftest import ROOT, free_port


class ImageNotFound(Exception):
    """Named as the SDK's, which is what the launcher recognises."""


class FakeImage:
    attrs = {"RepoDigests": ["llm-harness/harness@sha256:0123abcd"], "Id": "sha256:0123abcd"}


class FakeContainer:
    def __init__(self, proc: subprocess.Popen, out: Path):
        self.proc, self.out, self.attrs = proc, out, {}

    def reload(self) -> None:
        running = self.proc.poll() is None
        self.attrs = {
            "State": {"Status": "running" if running else "exited", "ExitCode": self.proc.returncode}
        }

    def logs(self, stream: bool, follow: bool):
        import time

        sent = 0
        while True:
            data = self.out.read_bytes()
            if len(data) > sent:
                yield data[sent:]
                sent = len(data)
            elif self.proc.poll() is not None:
                return
            time.sleep(0.05)

    def exec_run(self, cmd):
        return 0, b"harness 0.1.0\n"

    def stats(self, stream: bool):
        return {"memory_stats": {"usage": psutil.Process(self.proc.pid).memory_info().rss}}


class FakeDocker:
    """The compose CLI and the SDK client of a machine with the given images and runtimes."""

    def __init__(
        self, tmp_path: Path, images=("llm-harness/harness:local",), runtimes=("runc",), crash=False
    ):
        self.tmp, self.images_present, self.runtimes, self.crash = tmp_path, set(images), runtimes, crash
        self.calls: list[list[str]] = []
        self.container: FakeContainer | None = None
        self.images = self
        self.containers = self

    # docker compose ...
    def run(self, argv: list[str], env: dict) -> subprocess.CompletedProcess:
        self.calls.append(argv)
        action = argv[argv.index("--profile") + 2]
        if action == "up":
            out = self.tmp / "container.out"
            code = "import sys; print('engine failed to load the model'); sys.exit(3)" if self.crash else None
            cmd = (
                [sys.executable, "-c", code]
                if code
                else [
                    sys.executable,
                    "-m",
                    "harness.cli",
                    "practice",
                    "--profile",
                    "kit",
                    "--port",
                    str(env["PRACTICE_PORT"]),
                ]
            )
            with open(out, "wb") as log:  # the child keeps its own copy of the descriptor
                proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            self.container = FakeContainer(proc, out)
        elif action == "stop" and self.container and self.container.proc.poll() is None:
            self.container.proc.terminate()
            self.container.proc.wait(10)
        return subprocess.CompletedProcess(argv, 0, "", "")

    # client.images / client.containers / client.info
    def get(self, name: str):
        if name not in self.images_present:
            raise ImageNotFound(name)
        return FakeImage()

    def list(self, all: bool, filters: dict):
        assert "com.docker.compose.service=practice" in filters["label"] or self.container
        return [self.container] if self.container else []

    def info(self) -> dict:
        return {"Runtimes": {r: {} for r in self.runtimes}}


def launcher(
    tmp_path: Path, fake: FakeDocker, service="practice", env_file="cpu.env", **variables
) -> ComposeLauncher:
    port = variables.pop("port", None) or free_port()
    variables = {"PRACTICE_PORT": port, **variables}
    return ComposeLauncher(
        service=service,
        profile=service,
        variables=variables,
        env_file=ROOT / "compose" / "env" / env_file,
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=tmp_path / "engine.log",
        run=fake.run,
        client_factory=lambda: fake,
        cli=("docker", "compose"),
    )


def test_start_health_logs_version_memory_stop(tmp_path):
    fake = FakeDocker(tmp_path)
    lau = launcher(tmp_path, fake)
    assert lau.command().startswith("PRACTICE_PORT=")
    assert "docker compose -p llm-harness -f" in lau.command() and lau.command().endswith(
        "up -d --no-deps --no-build practice"
    )
    lau.start(timeout=30)
    assert lau.version(["harness", "--version"]) == "llm-harness/harness@sha256:0123abcd; harness 0.1.0"
    assert lau.memory_mb() > 5
    lau.stop()
    assert [c[c.index("--profile") + 2] for c in fake.calls] == ["up", "stop", "rm"]
    assert fake.container.proc.poll() is not None
    # the container's log, followed into the run directory
    assert "practice server" in lau.log_path.read_text()


def test_image_missing(tmp_path):
    fake = FakeDocker(tmp_path, images=())
    with pytest.raises(EngineError, match="image llm-harness/harness:local is not present; build it"):
        launcher(tmp_path, fake).start()
    assert fake.calls == []  # nothing was started


def test_nvidia_runtime_missing(tmp_path):
    fake = FakeDocker(tmp_path, images=("nvcr.io/nvidia/vllm:26.08-py3",))
    lau = launcher(tmp_path, fake, service="vllm", env_file="track-s.env", MODELS_DIR=str(tmp_path))
    with pytest.raises(EngineError, match="NVIDIA container runtime is not installed"):
        lau.start()


def test_model_library_missing(tmp_path):
    fake = FakeDocker(tmp_path, images=("nvcr.io/nvidia/vllm:26.08-py3",), runtimes=("runc", "nvidia"))
    lau = launcher(
        tmp_path, fake, service="vllm", env_file="track-s.env", MODELS_DIR=str(tmp_path / "nowhere")
    )
    with pytest.raises(EngineError, match="model library .*nowhere not found"):
        lau.start()


def test_rocm_devices_missing(tmp_path):
    if Path("/dev/kfd").exists():
        pytest.skip("this machine has a ROCm device")
    fake = FakeDocker(tmp_path, images=("llm-harness/llama-rocm:local",))
    with pytest.raises(EngineError, match="/dev/kfd does not exist here"):
        launcher(
            tmp_path, fake, service="llama-rocm", env_file="track-x.env", MODELS_DIR=str(tmp_path)
        ).start()


def test_busy_port_refused(tmp_path, practice):
    server = practice("kit")
    fake = FakeDocker(tmp_path)
    with pytest.raises(PortBusy, match=f"port {server.port} is already in use"):
        launcher(tmp_path, fake, port=server.port).start()
    assert fake.calls == []


def test_engine_exiting_while_starting(tmp_path):
    fake = FakeDocker(tmp_path, crash=True)
    with pytest.raises(
        EngineError, match="exited with status 3 while starting; .*engine failed to load the model"
    ):
        launcher(tmp_path, fake).start(timeout=30)


def test_docker_engine_unreachable(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{free_port()}")
    with pytest.raises(EngineError, match="the Docker engine is not reachable"):
        docker_client()
