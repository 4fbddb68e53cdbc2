"""One vLLM CPU server (Gemma 3 270M, 4 sequences) for every test in this folder: a start costs
40-80 s on 2 cores, so the install check, the client, the busy port and the workloads share it.
Its stop is checked when the last of them is done: the port free and no child process left."""

from __future__ import annotations

import psutil
import pytest

from harness.engines.ports import port_open
from harness.engines import vllm_serve
from tests.conftest import free_port


@pytest.fixture(scope="package")  # torn down after the folder's last test
def vllm(tmp_path_factory):
    port = free_port()
    launcher = vllm_serve.launcher(port, tmp_path_factory.mktemp("vllm") / "vllm.log", max_num_seqs=4)
    launcher.start(timeout=400)
    yield launcher
    children = launcher.child_pids()
    launcher.stop()
    assert not port_open("127.0.0.1", port), "port still open after stop"
    left = [
        pid
        for pid in children
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert not left, f"child processes left after stop: {left}"


@pytest.fixture
def base_url(vllm) -> str:
    return f"http://127.0.0.1:{vllm.port}/v1"
