"""Preflight findings, each with its exact message, and the preflight as a plan's first step."""

from __future__ import annotations

from collections import namedtuple

import yaml

from tests.conftest import free_port

from harness.run import preflight, preflight_checks
from harness.run.plans import load_plan
from harness.run.runner import Runner

Usage = namedtuple("Usage", "total used free")


def test_missing_and_truncated_model(tmp_path):
    f = preflight_checks.model_file(str(tmp_path / "Qwen3-8B-Q4_K_M.gguf"))
    assert (f.level, f.text) == (
        "FAIL",
        f"{tmp_path}/Qwen3-8B-Q4_K_M.gguf not found; download it first (the lab's hf download command)",
    )
    part = tmp_path / "part.gguf"
    part.write_bytes(b"x" * 10)
    f = preflight_checks.model_file(str(part), size=5_027_784_512)
    assert (f.level, f.text) == (
        "FAIL",
        f"{part} is 10 bytes, expected 5,027,784,512; the download is incomplete or "
        "another file; download it again",
    )
    (tmp_path / "hf").mkdir()
    assert (
        preflight_checks.model_file(str(tmp_path / "hf")).text
        == f"{tmp_path}/hf has no config.json; the download is incomplete"
    )


def test_cpu_only_backend_line():
    text = "load_backend: loaded CPU backend\nAvailable devices:\n  (none)\n"
    f = preflight_checks.llama_devices(text)
    assert (f.level, f.text) == (
        "FAIL",
        "llama-server lists no device: a CPU-only build; rebuild llama.cpp with the "
        "track's backend (CUDA, Vulkan, HIP or Metal) before going on",
    )
    assert preflight_checks.llama_devices(text, allow_cpu=True).level == "PASS"
    cuda = "Available devices:\n  CUDA0: NVIDIA GB10 (122502 MiB, 119000 MiB free)\n"
    assert preflight_checks.llama_devices(cuda).text == "CUDA0: NVIDIA GB10 (122502 MiB, 119000 MiB free)"


def test_too_little_disk_from_a_fake_filesystem_reading():
    f = preflight_checks.free_disk("/models", 50, usage=lambda _: Usage(100e9, 88e9, 12e9))
    assert (f.level, f.text) == (
        "FAIL",
        "12.0 GB free under /models, the plan needs 50.0 GB; free space (harness "
        "cleanup lists what the models and environments take)",
    )
    assert preflight_checks.free_disk("/m", 50, usage=lambda _: Usage(100e9, 45e9, 55e9)).level == "WARN"
    assert preflight_checks.free_disk("/m", 50, usage=lambda _: Usage(100e9, 10e9, 90e9)).level == "PASS"


def test_nvidia_memory_in_use_with_no_model():
    busy = preflight_checks.nvidia("NVIDIA GeForce RTX 4090, 24564, 3120, 580.65\n")
    assert busy[0].level == "WARN" and busy[0].text == (
        "NVIDIA GeForce RTX 4090, 24,564 MiB, driver 580.65, "
        "3,120 "
        "MiB in use with no model loaded: close what holds "
        "it, the "
        "lab cannot have that memory"
    )
    spark = preflight_checks.nvidia("NVIDIA GB10, [N/A], [N/A], 580.95\n")
    assert spark[0].level == "PASS" and "not reported (unified memory)" in spark[0].text
    assert (
        preflight_checks.python_version((3, 9, 18)).text
        == "Python 3.9.18 is older than 3.10; install a newer one"
    )


def test_a_failing_preflight_stops_the_run_before_any_server_starts(tmp_path):
    block = {
        "id": "a",
        "engine": "llama-server",
        "steps": ["probe"],
        # a port nothing holds, so the only failures are the two missing files
        "settings": {"model": "/nonexistent/m.gguf", "llama_bin": "/nonexistent", "port": free_port()},
    }
    plan = {
        "schema_version": 1,
        "name": "pf",
        "title": "pf",
        "variables": {"DISK_GB": 1},
        "stages": ["preflight", block],
    }
    path = tmp_path / "pf.yaml"
    path.write_text(yaml.safe_dump(plan))
    lines: list[str] = []
    code = Runner(load_plan(str(path)), tmp_path / "run", out=lines.append).execute(resume=False)
    import json

    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    pre = next(s for s in manifest["steps"] if s["id"] == "preflight")
    assert code == 1 and pre["status"] == "failed"
    assert pre["reason"] == "2 check(s) failed; nothing was started"
    texts = [f["text"] for f in pre["result"]["findings"] if f["level"] == "FAIL"]
    assert texts == [
        "/nonexistent/llama-server not found; install it as the track's install lesson describes",
        "/nonexistent/m.gguf not found; download it first (the lab's hf download command)",
    ]
    assert all(s["status"] == "pending" for s in manifest["steps"] if s["id"].startswith("a/"))
    assert "a" not in manifest["engines"]


def test_containers_reaching_the_gpu():
    calls = []

    def run(text):
        def _run(argv, timeout=30):
            calls.append(argv)
            return text

        return _run

    image = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc13"
    ok = preflight_checks.container_gpu(image, run("NVIDIA GB10\n"))
    assert (ok.level, ok.text) == (
        "PASS",
        f"containers reach the GPU: NVIDIA GB10 (docker run --gpus all {image} nvidia-smi)",
    )
    # never pulls 20 GB here
    assert calls[0][:7] == ["docker", "run", "--rm", "--pull", "never", "--gpus", "all"]
    toolkit = preflight_checks.container_gpu(
        image,
        run(
            "docker: Error response from daemon: could not select device "
            "driver "
            '"" with capabilities: [[gpu]].\n'
        ),
    )
    assert toolkit.level == "FAIL" and "install the NVIDIA Container Toolkit" in toolkit.text
    missing = preflight_checks.container_gpu(
        image, run(f"Error response from daemon: No such image: {image}\n")
    )
    assert missing.level == "WARN" and missing.text.startswith(f"{image} is not pulled yet")


def test_track_s_preflight_runs_the_container_gpu_check_per_image(tmp_path, monkeypatch):
    answers = {
        "info": "27.3.1\n",
        "nvidia-smi": "NVIDIA GB10, [N/A], [N/A], 580.95\n",
        "run": "NVIDIA GB10\n",
    }
    seen = []

    def run(argv, timeout=30):
        seen.append(argv)
        key = "nvidia-smi" if argv[0] == "nvidia-smi" else argv[1] if argv[0] == "docker" else None
        return answers.get(key)

    monkeypatch.setattr(preflight.shutil, "which", lambda name: f"/usr/bin/{name}")
    plan = load_plan("s")
    findings = preflight.plan_findings(
        plan,
        preflight.plan_targets(plan, tmp_path / "run", dry_run=True),
        tmp_path,
        usage=lambda _: Usage(500e9, 10e9, 490e9),
        run=run,
    )
    containers = [f for f in findings if f.check == "containers"]
    images = [a[7] for a in seen if a[:2] == ["docker", "run"]]
    assert images == ["nvcr.io/nvidia/vllm:26.08-py3", "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc13"]
    assert [f.level for f in containers] == ["PASS", "PASS"]


def test_a_finding_shared_by_blocks_is_printed_once(tmp_path):
    """Four llama-server blocks without llama-server: one FAIL line, not four."""
    missing = preflight_checks.Finding("FAIL", "binary", "no llama-server found; run `make llama-cpu`")
    port = preflight_checks.Finding("PASS", "port", "8080 is free")
    other = preflight_checks.Finding("PASS", "port", "8099 is free")
    got = preflight_checks.distinct([other, missing, port, missing, port, missing])
    assert [f.text for f in got] == [other.text, missing.text, port.text]
    assert preflight_checks.summary(got)["counts"] == {"PASS": 2, "WARN": 0, "FAIL": 1}
