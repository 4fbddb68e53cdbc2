"""Shared fixtures (a real practice server, a separate process, on a free port) and the folder markers.

Every test is marked by the folder it lives in: ``unit`` (tests/unit: in-process, no server),
``integration`` (tests/integration: servers, subprocesses, compose files, Locust runs) or ``e2e``
(tests/e2e: whole runs and the installed wheel). ``make test-fast`` runs tests/unit only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import requests
import yaml
from urllib3.exceptions import InsecureRequestWarning

from harness.engines.ports import free_port  # noqa: F401 (the tests take it from here)

# A test run started in the background by a non-interactive shell (`cmd &`) has SIGINT ignored,
# and every command a test starts would inherit that: the interrupt tests would then wait on a
# run that never stops. A handler here is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


FOLDER_MARKERS = ("unit", "integration", "e2e")
# CI sets these after `make vllm-cpu` (`make llama-vulkan`) succeeded: the tests marked `vllm`
# (`vulkan`) then fail, not skip, when that build or its model is missing (elsewhere they skip,
# saying why).
VLLM_REQUIRED = os.environ.get("HARNESS_VLLM_REQUIRED") == "1"
# The same for the tests marked `mlx` after `make mlx-cpu` (mlx_lm.server on MLX's CPU backend).
MLX_REQUIRED = os.environ.get("HARNESS_MLX_REQUIRED") == "1"
# The same for the tests marked `vulkan` after `make llama-vulkan` (llama.cpp's Vulkan build).
VULKAN_REQUIRED = os.environ.get("HARNESS_VULKAN_REQUIRED") == "1"
# The smoke rehearsals CI runs after make test, each checked by scripts/check_rehearsal.py: a test
# marked ci_rehearsed(track) for one of them is skipped, saying so, and runs everywhere else.
CI_REHEARSED = os.environ.get("HARNESS_CI_REHEARSED", "").split()

# Sweeps in the tests read no telemetry unless a test names a source: on a host with power counters
# (RAPL, hwmon, NVML) `auto` would add a 2 s idle reading to every sweep, and the suite's time and
# output would depend on the machine running it. The sources' own tests name them.
os.environ.setdefault("HARNESS_TELEMETRY", "none")

# The CPU engines run one thread each in the tests. vLLM's CPU build binds one OpenMP thread to
# each core and llama.cpp starts one per core, and both spin at their barriers: beside a busy
# process (the other pytest worker's practice servers) they crawl. Measured with one busy process
# beside them (docs/measurements.md#engines-one-thread): the vLLM queueing block's test 242 s with
# vLLM's own binding, 72.6 s unbound on one thread (61 s alone, bound); a llama-server sweep (c=1
# and 4, 8 requests each) 43.4 s on 2 threads, 23.2 s on 1. A user's engines keep their defaults;
# a test that names --threads itself names 1. (nproc obeys OMP_NUM_THREADS: the Makefile's build
# jobs do not read it.)
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("LLAMA_ARG_THREADS", "1")


# `make test` runs the suite on three pytest-xdist workers: the engines' unit on one, the rest on the
# other two (the files outside the engines' unit took 28 min 48 s on one worker with 13 min of CPU,
# 2026-12-03, on loaded cores; the third worker pays since the engines run one thread each, above;
# Makefile). Each
# file runs whole on one worker, in order (its module fixtures start once); the files that run
# real engines (llama-server, vLLM, containers, whole tracks, the shim's engines) form one unit
# of work, run first and one test at a time, as before: no two engines compete for the cores or
# a port, and each one's clean-up checks see only its own servers. (xdist's own `loadgroup`
# cannot do this on pytest 9.2, whose node ids no longer take the group suffix xdist writes.)
SERIAL_MARKERS = ("llama", "vllm", "mlx", "docker", "vulkan")
SERIAL = (
    "tests/e2e/test_track_cpu.py",
    "tests/e2e/test_track_cpu_vllm.py",
    "tests/integration/docker/",
    "tests/integration/vllm/",
    "tests/integration/mlx/",
    # the shim's files that start the real llama-server; its other files start the practice
    # server, or point llama-server at /bin/true, and run beside the rest like any practice test
    "tests/integration/shim/test_shim_host.py",
    "tests/integration/shim/test_shim_launcher.py",
    "tests/integration/test_gpu_check.py",
    "tests/integration/test_compare_llama.py",
    "tests/integration/test_endpoints.py",
    "tests/integration/test_handover.py",
    "tests/integration/test_llama_cpu.py",
    "tests/integration/test_llama_vulkan.py",
    "tests/integration/test_sweep_llama.py",
    "tests/integration/test_workloads_llama.py",
)


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: ``serial`` for the engines' files, else its file."""
    path = nodeid.split("::", 1)[0]
    return "serial" if path.startswith(SERIAL) else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class EnginesTogether(LoadScopeScheduling):
        """xdist's per-scope scheduling with the scopes of ``work_unit``, in collection order
        (tests/e2e first, so the long serial unit starts at once)."""

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return EnginesTogether(config, log)


@pytest.hookimpl(trylast=True)  # after the folders' own hooks (the docker folder's marker)
def pytest_collection_modifyitems(config, items):
    """Mark each test with the folder under tests/ that holds it (unit, integration or e2e); a
    test that needs an engine outside the serial files is a usage error saying where to add it."""
    tests = ROOT / "tests"
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(tests).parts
        if parts and parts[0] in FOLDER_MARKERS:
            item.add_marker(parts[0])
        engine = next((m for m in SERIAL_MARKERS if item.get_closest_marker(m)), None)
        if engine and work_unit(item.nodeid) != "serial":
            raise pytest.UsageError(
                f"{item.nodeid} is marked {engine} but its file is not in SERIAL (tests/conftest.py): "
                "add it there, so that it never runs beside another engine"
            )


def pytest_runtest_setup(item):
    """A test marked ``vllm`` needs vLLM's CPU build (``make vllm-cpu``), one marked ``mlx``
    mlx_lm.server on MLX's CPU backend (``make mlx-cpu``), one marked ``vulkan`` llama.cpp's Vulkan
    build (``make llama-vulkan``): skipped with the reason where it is missing, failed instead under
    HARNESS_VLLM_REQUIRED=1, HARNESS_MLX_REQUIRED=1 or HARNESS_VULKAN_REQUIRED=1. Checked before any
    fixture is set up, so a module's server fixture never tries to start an absent engine. One
    marked ``ci_rehearsed(track)`` is skipped where CI's rehearsal of that track stands for it."""
    if item.get_closest_marker("vllm") is not None:
        from harness.engines import vllm_cpu

        _needs("vLLM CPU", vllm_cpu.install_status(), VLLM_REQUIRED, "HARNESS_VLLM_REQUIRED")
    if item.get_closest_marker("mlx") is not None:
        from harness.engines import mlx_cpu

        _needs("MLX CPU", mlx_cpu.install_status(), MLX_REQUIRED, "HARNESS_MLX_REQUIRED")
    if item.get_closest_marker("vulkan") is not None:
        from harness.engines import llama_vulkan

        _needs("Vulkan", llama_vulkan.install_status(), VULKAN_REQUIRED, "HARNESS_VULKAN_REQUIRED")
    rehearsed = item.get_closest_marker("ci_rehearsed")
    if rehearsed is not None and rehearsed.args[0] in CI_REHEARSED:
        pytest.skip(f"CI's smoke rehearsal of {rehearsed.args[0]} runs this path after make test (.ci/run)")


def _needs(what: str, reason: str | None, required: bool, variable: str) -> None:
    if reason and required:
        pytest.fail(f"{what} is required here ({variable}=1), but {reason}", pytrace=False)
    if reason:
        pytest.skip(f"{what}: {reason}")


def assert_nothing_left(runs: Path, models: Path, ports: tuple[int, ...]) -> None:
    """`harness cleanup` over ``runs`` finds no server of ours still running, and no process names
    one of ``ports``, each of which is free."""
    import psutil

    from harness.engines.ports import port_open

    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "cleanup", "--runs", str(runs), "--models", str(models)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,  # a deadline for a hang: the command's start on a loaded machine included
    )
    assert done.returncode == 0 and "servers our runs left running: 0" in done.stdout, done.stdout
    left = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if any(str(port) in " ".join(p.info["cmdline"] or []) for port in ports)
    ]
    assert left == [] and not any(port_open("127.0.0.1", port) for port in ports)


class RunningServer:
    def __init__(self, proc: subprocess.Popen, port: int, log: Path, out: Path, scheme: str = "http") -> None:
        self.proc, self.port, self.log, self.out = proc, port, log, out
        self.root = f"{scheme}://127.0.0.1:{port}"
        self.base_url = self.root + "/v1"

    def truth(self, rid: str) -> dict:
        return requests.get(f"{self.root}/practice/truth/{rid}", timeout=5).json()

    def metrics(self) -> str:
        return requests.get(f"{self.root}/metrics", timeout=5).text

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def start_practice(
    tmp_path: Path,
    profile: str | dict = "kit",
    extra: list[str] | None = None,
    env: dict | None = None,
    scheme: str = "http",
) -> RunningServer:
    if isinstance(profile, dict):
        path = tmp_path / f"profile-{profile['name']}.yaml"
        path.write_text(yaml.safe_dump(profile))
        profile = str(path)
    port = free_port()
    log, out = tmp_path / f"practice-{port}.log", tmp_path / f"practice-{port}.out"
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "practice",
        "--profile",
        profile,
        "--port",
        str(port),
        "--log-file",
        str(log),
        *(extra or []),
    ]
    with open(out, "w") as fh:
        proc = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, **(env or {})}
        )
    server = RunningServer(proc, port, log, out, scheme)
    # A deadline, not a measurement: it catches a server that never answers, and allows a loaded
    # CI machine's start (Python, gevent's patching: 23.7 s once) five times over.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"practice server exited: {out.read_text()}")
        try:
            with warnings.catch_warnings():  # HTTPS servers here use a self-signed certificate, unverified
                warnings.simplefilter("ignore", InsecureRequestWarning)
                healthy = requests.get(server.root + "/health", timeout=0.5, verify=False).status_code == 200
            if healthy:
                return server
        except requests.RequestException:
            time.sleep(0.05)
        time.sleep(0.01)
    server.stop()
    raise RuntimeError("practice server did not become healthy in 120 s")


@pytest.fixture
def practice(tmp_path):
    """Call with a profile name or dict (and extra CLI args); every server is stopped afterwards."""
    started: list[RunningServer] = []

    def _start(profile="kit", extra=None, env=None, scheme="http") -> RunningServer:
        server = start_practice(tmp_path, profile, extra, env, scheme)
        started.append(server)
        return server

    yield _start
    for server in started:
        server.stop()


def kit_profile(**changes) -> dict:
    """The shipped kit profile as a dict, with changes (used to make timing exact for tests)."""
    data = yaml.safe_load((ROOT / "harness/practice/profiles/kit.yaml").read_text())
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def install_fake(tmp_path: Path, monkeypatch, name: str, script: str) -> None:
    """Put an executable ``name`` first on PATH, running ``script`` with this interpreter."""
    root = str(Path(__file__).resolve().parents[1])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / name
    fake.write_text(script.format(python=sys.executable, root=root))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("TMPDIR_FOR_FAKE", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", root)


def fake_measurement(monkeypatch, **extra) -> None:
    """``harness measure`` without a server: every request answers as a server of 54.2 tok/s
    whose long prompt (over 500 characters) takes 1.0 s to its first token and the short 0.4 s,
    with ``extra`` added to each answer (the server's own timings, for instance)."""
    from harness.engines import single_user as measure

    def one(args, key, prompt):
        long = len(prompt) > 500
        return measure.OneRun(
            **{
                "ttft_s": 1.0 if long else 0.4,
                "decode_tokens_per_s": 54.2,
                "decode_note": None,
                "prompt_tokens": 1504 if long else 100,
                "completion_tokens": 128,
                "token_source": "usage",
                "cached_tokens": 4,
                "finish_reason": "length",
                "fields": ["content"],
                **extra,
            }
        )

    monkeypatch.setattr(measure, "one", one)
    monkeypatch.setattr(measure, "wait_for", lambda *a, **k: None)
    monkeypatch.setattr(measure, "server_version", lambda *a, **k: None)
