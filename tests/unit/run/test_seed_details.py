"""The seven details an audit of the seeds found wrong, each against the seed's own
words: mlx_lm.server's version from the interpreter on its script's first line and serve-mlx.sh's
guards; TensorRT-LLM recorded by its image tag; vLLM's weights counted as AWQ; the pool-did-not-fit
remedy only naming a tier where the track has one; Track X's Vulkan Lemonade row optional; the EXL3
quant string, nvidia-smi's "few hundred MiB" and req/s in the per-level line."""

from __future__ import annotations

import os
import re
import pytest
import yaml

from harness import paths
from harness.engines import versions as ev
from harness.run import guards, preflight, preflight_checks
from harness.run.context import block_context
from harness.run.plans import load_plan
from harness.run.steps import engine_record


def test_mlx_version_from_the_interpreter_on_the_scripts_first_line(tmp_path):
    script = tmp_path / "mlx_lm.server"
    script.write_text("#!/Users/you/mlx/.venv/bin/python3\nimport sys\n")
    asked = []

    def run(argv):
        asked.append(argv)
        return "mlx-lm 0.31.3 / mlx 0.30.0"

    assert ev.mlx_version(which=lambda name: str(script), run=run) == "mlx-lm 0.31.3 / mlx 0.30.0"
    assert asked[0][:2] == ["/Users/you/mlx/.venv/bin/python3", "-c"] and "import mlx_lm" in asked[0][2]
    assert ev.shebang_interpreter("#!/usr/bin/env python3") == ["/usr/bin/env", "python3"]
    with pytest.raises(Exception, match="not on the PATH"):
        ev.mlx_version(which=lambda name: None, run=run)
    with pytest.raises(Exception, match="cannot import mlx_lm"):
        ev.mlx_version(which=lambda name: str(script), run=lambda argv: None)
    # a rehearsal names the script by its path (.venv-mlx/bin/mlx_lm.server): that one is asked
    looked = []
    ev.mlx_version(which=lambda name: looked.append(name) or str(script), run=run, server="/x/mlx_lm.server")
    assert looked == ["/x/mlx_lm.server"]


def test_mlx_engine_asks_the_lab_interpreter_and_carries_the_guards():
    spec = yaml.safe_load((paths.engines_dir() / "mlx-lm.yaml").read_text())
    assert spec["version_command"][1:] == ["-m", "harness.engines.versions", "mlx", "{server}"]
    assert spec["binary"] == "{server}" and spec["settings"]["server"] == "mlx_lm.server"
    assert spec["guards"] == ["darwin", "absolute-model", "quantization-block"]


def test_serve_mlx_guards(tmp_path):
    model = tmp_path / "Qwen3-8B-4bit"
    model.mkdir()
    (model / "config.json").write_text('{"quantization": {"group_size": 64, "bits": 4}}')
    every = ["darwin", "absolute-model", "quantization-block"]
    assert guards.engine_guards(every, str(model), system="Darwin") == []
    linux = guards.engine_guards(every, str(model), system="Linux")
    assert [(f.level, f.text) for f in linux] == [
        ("FAIL", "mlx-lm runs on Apple silicon; this machine reports Linux")
    ]
    relative = guards.engine_guards(every, "models/Qwen3-8B-4bit", system="Darwin")
    assert relative[0].level == "FAIL" and "not an absolute path" in relative[0].text
    (model / "config.json").write_text('{"model_type": "qwen3"}')
    plain = guards.engine_guards(every, str(model), system="Darwin")
    assert [f.level for f in plain] == ["WARN"] and "no quantization block" in plain[0].text


def test_track_m_preflight_runs_the_guards_off_a_mac(tmp_path):
    plan = load_plan("track-m")
    targets = [t for t in preflight.plan_targets(plan, tmp_path, dry_run=True) if t.block.id == "mlx"]
    found = preflight.plan_findings(plan, targets, tmp_path, run=lambda argv: None)
    if os.uname().sysname != "Darwin":
        assert any(f.check == "platform" and f.level == "FAIL" for f in found)


def test_trtllm_recorded_by_its_image_tag_as_the_lab_does(tmp_path):
    plan = load_plan("track-s")
    ctx = block_context(plan, plan.blocks["trtllm"], tmp_path, dry_run=True)
    ctx.state.version = 'tensorrt-llm {"version":"1.3.0rc13"}'  # what its version command read
    assert engine_record(plan, ctx)["engine_version"] == "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc13"
    control = block_context(plan, plan.blocks["control"], tmp_path, dry_run=True)
    control.state.version = "version: 7000 (abc)"
    assert engine_record(plan, control)["engine_version"] == "version: 7000 (abc)"


def test_rehearsal_imitation_keeps_its_own_version(tmp_path):
    plan = load_plan("track-s", rehearse_it=True, quick=True)
    ctx = block_context(plan, plan.blocks["trtllm"], tmp_path, dry_run=True)
    ctx.state.version = "practice imitation of trtllm"
    assert engine_record(plan, ctx)["engine_version"] == "practice imitation of trtllm"


def test_predict_vllm_counts_awq_weights(capsys):
    from harness.cli import main

    assert main(["predict", "--engine", "vllm", "--machine", "rtx-4090"]) == 0
    assert "weights (AWQ 4-bit g128) + pool = 16.93 GiB" in capsys.readouterr().out
    assert main(["predict", "--engine", "vllm", "--cache-type", "fp8"]) == 0
    assert "weights (AWQ 4-bit g128) + pool = 11.30 GiB" in capsys.readouterr().out
    assert main(["predict", "--format", "awq"]) == 0
    assert "weights (AWQ 4-bit g128) + pool = 16.93 GiB" in capsys.readouterr().out
    assert main(["predict"]) == 0
    assert "weights (GGUF Q4_K_M) + pool = 15.93 GiB" in capsys.readouterr().out
    assert main(["predict", "--format", "gptq"]) == 2
    assert "--format 'gptq' names no format of Qwen3-8B; use one of: GGUF Q4_K_M" in capsys.readouterr().err


def test_pool_did_not_fit_names_a_tier_only_where_the_track_has_it():
    rules = yaml.safe_load((paths.data_file("diagnoses.yaml")).read_text())["rules"]
    remedy = next(r["remedy"] for r in rules if r["id"] == "llama-pool-did-not-fit")
    tracks = paths.data_file("tracks")
    tiers = {
        t: set(yaml.safe_load((tracks / f"track-{t}.yaml").read_text()).get("tiers") or {}) for t in "snxm"
    }
    for tier in re.findall(r"--tier (\w+)", remedy):
        named = set(re.findall(r"Tracks? ([SNXM])(?: and ([SNXM]))?", remedy)[0]) - {""}
        assert named == {t.upper() for t, have in tiers.items() if tier in have}, remedy


def test_track_x_lemonade_vulkan_is_optional():
    plan = load_plan("track-x")
    assert plan.blocks["lemonade-vulkan"].optional and not plan.blocks["lemonade-rocm"].optional


def test_exl3_quant_string_and_busy_threshold():
    plan = load_plan("track-n")
    assert plan.blocks["exllamav3"].record["quant"] == "EXL3 4.0 bpw, head 6 bpw"
    # the seed: memory.used above a few hundred MiB with no model loaded is memory the lab cannot have
    assert preflight_checks.nvidia("NVIDIA GeForce RTX 4090, 24564, 600, 580.65\n")[0].level == "WARN"
    assert preflight_checks.nvidia("NVIDIA GeForce RTX 4090, 24564, 250, 580.65\n")[0].level == "PASS"


def test_per_level_line_prints_requests_per_second(capsys):
    from harness.cli.sweep import print_level

    stats = {"p50": 0.5, "p90": 0.6, "p95": 0.7}
    r = {
        "concurrency": 5,
        "completed": 10,
        "requests": 10,
        "failed": 0,
        "wall_s": 12.5,
        "output_tokens_per_s": 51.8,
        "requests_per_s": 0.8,
        "ttft_s": stats,
        "tpot_s": stats,
        "goodput_requests_per_s": 0.8,
        "within_slo": 10,
        "slo_ttft_s": 2.0,
        "slo_tpot_s": 0.1,
        "mean_in_flight": 4.9,
        "prompt_tokens_mean": 40,
        "cached_tokens_mean": 0,
        "token_counts": "usage",
        "finish_reasons": {"length": 10},
        "client_cpu": 0.1,
        "first_error": None,
        "itl_s": stats,
    }
    print_level(r)
    assert "out/s    51.80  req/s  0.800" in capsys.readouterr().out
