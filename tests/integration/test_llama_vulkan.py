"""llama.cpp's real Vulkan llama-server (``make llama-vulkan``) on Mesa's software Vulkan device
(llvmpipe) with Gemma 3 270M: the device it lists, the load log's Vulkan lines, an answer, and
verify-allocation against its Vulkan buffers. Skipped, saying why, where the build is absent
(failed instead under HARNESS_VULKAN_REQUIRED=1, which CI sets where it built it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.engines.logs import accelerator_problems, parse_llama_server
from harness.endpoints.http_client import stream_chat
from harness.engines.ports import port_open
from harness.engines import llama_cpu, llama_vulkan
from harness.engines.launchers.host import HostLauncher
from tests.conftest import free_port

pytestmark = pytest.mark.vulkan

LAYERS = 19  # Gemma 3 270M's 18 blocks and its output layer, as llama.cpp counts them


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("vulkan") / "llama-server.log"
    argv = llama_cpu.server_argv(
        llama_vulkan.find_llama_server(),
        llama_cpu.find_model(),
        port,
        slots=1,
        ctx_per_slot=2048,
        extra=["--n-gpu-layers", "999", "--flash-attn", llama_vulkan.LLVMPIPE_FLASH_ATTN]
        + ["--log-file", str(log)],
    )
    launcher = HostLauncher(
        argv=argv,
        host="127.0.0.1",
        port=port,
        health_url=f"http://127.0.0.1:{port}/health",
        log_path=log.with_suffix(".out"),
        env=dict(llama_vulkan.LLVMPIPE_ENV),
    )
    launcher.start(timeout=180)
    yield launcher, log
    launcher.stop()
    assert not port_open("127.0.0.1", port), "port still open after stop"


def test_it_lists_llvmpipe_as_vulkan0() -> None:
    text, found = llama_vulkan.list_devices()
    assert found, text
    assert found[0]["device"] == "Vulkan0" and "llvmpipe" in found[0]["name"]
    _, hidden = llama_vulkan.list_devices(software=False)
    assert hidden == []  # without GGML_VK_VISIBLE_DEVICES ggml-vulkan leaves the CPU-type device out


def test_the_load_log_names_vulkan0_and_offloads_every_layer(server) -> None:
    _, log = server
    observed = parse_llama_server(log.read_text(errors="replace"))
    assert "Vulkan0" in observed["devices"]
    assert observed["offloaded_layers"] == [LAYERS, LAYERS]
    # the layers' weights in a Vulkan buffer; the input embedding (170 MiB of Gemma's 262,144-token
    # vocabulary) stays in host memory as CPU_Mapped, as on a card
    buffers = observed["model_buffers_mib"]
    assert set(buffers) == {"Vulkan0", "CPU_Mapped"} and buffers["Vulkan0"] > 50
    assert 0.9 * llama_cpu.MODEL_BYTES < sum(buffers.values()) * 2**20 < llama_cpu.MODEL_BYTES
    assert accelerator_problems(observed, offload=True, device="Vulkan0", prompt_cache_off=True) == []
    # what a CPU stand-in's check would say of it: not only the CPU
    assert accelerator_problems(observed, device="CPU")


def test_it_answers_a_streamed_chat(server) -> None:
    launcher, _ = server
    s = stream_chat(
        f"http://127.0.0.1:{launcher.port}/v1",
        {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8},
    )
    assert s.ok, s.error
    assert 1 <= s.output_tokens <= 8 and s.token_source == "usage" and s.prompt_tokens > 0


def test_verify_allocation_checks_the_vulkan_buffers(server, tmp_path) -> None:
    _, log = server
    labbook = tmp_path / "labbook.md"
    argv = [
        sys.executable, "-m", "harness.cli.entry", "verify-allocation", "--log", str(log),
        "--labbook", str(labbook), "--label", "vulkan-control", "--engine", "llama-server",
        "--model", str(llama_cpu.find_model()), "--slots", "1", "--ctx-per-slot", "2048",
        "--expect-prompt-cache-off", "--expect-device", "Vulkan0",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [json.loads(line) for line in labbook.read_text().splitlines() if line.startswith("{")]
    assert record["record"] == "allocation"
    wrong = subprocess.run([*argv[:-1], "ROCm0"], capture_output=True, text=True, timeout=120)
    assert wrong.returncode != 0 and "ROCm0" in wrong.stdout + wrong.stderr
