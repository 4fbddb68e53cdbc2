"""The CPU track's vLLM block: the engine definition starts exactly what `harness vllm-cpu
serve` starts, and an optional block whose engine is not installed is skipped with its reason (the
run still passes), together with the global steps that need it. No server, no subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.engines import vllm_cpu, vllm_serve
from harness.run.context import block_context
from harness.engines.definitions import load_engine
from harness.engines.command_line import engine_env, launch_argv, resolve_settings
from harness.run.plans import load_plan
from harness.run.preflight import Target, _Seen, _target_findings
from harness.run.runner import Runner
from harness.run.steps import step_calls


@pytest.mark.parametrize("parser", [None, "pythonic"])
def test_the_engine_definition_starts_what_vllm_cpu_serve_starts(parser):
    engine = load_engine("vllm-cpu")
    settings = {**resolve_settings(engine), "vllm_bin": "/v/bin/vllm", "model": "/m/gemma", "port": 8123}
    settings["tool_call_parser"] = parser or ""
    expected = vllm_serve.server_argv(Path("/v/bin/vllm"), Path("/m/gemma"), 8123, tool_call_parser=parser)
    assert launch_argv(engine, settings) == expected
    assert engine_env(engine, settings) == vllm_cpu.server_env()


def test_the_cpu_track_has_an_optional_vllm_block_and_what_needs_it():
    plan = load_plan("cpu")
    assert plan.blocks["vllm"].optional and plan.blocks["vllm-queue"].optional  # a variant inherits it
    assert not plan.blocks["llama"].optional
    needing = [s.id for s in plan.steps if s.needs == "vllm"]
    assert needing == ["predict-2", "summarise-2", "compare-2"]
    queue = plan.blocks["vllm-queue"].settings
    assert queue["max_seqs"] == 2 and queue["kv_bytes"] < plan.blocks["vllm"].settings["kv_bytes"]


def test_the_vllm_steps_take_the_cpu_pool_and_the_local_tokeniser(tmp_path):
    plan = load_plan("cpu")
    block = plan.blocks["vllm"]
    ctx = block_context(plan, block, tmp_path, dry_run=True)
    by_kind = {s.kind: s for s in plan.steps if s.block is block}
    (alloc,) = step_calls(plan, tmp_path, tmp_path / "labbook.md", by_kind["verify-allocation"], ctx)
    argv = alloc.to_argv()
    assert (
        argv[argv.index("--block-size") + 1] == "128" and argv[argv.index("--kv-bytes") + 1] == "1073741824"
    )
    (check,) = step_calls(plan, tmp_path, tmp_path / "labbook.md", by_kind["cross-check"], ctx)
    argv = check.to_argv()
    assert argv[argv.index("--tool") + 1] == "vllm-bench"
    assert argv[argv.index("--checkpoint") + 1] == ctx.settings["model"]
    assert "HF_HUB_OFFLINE=1" in argv[argv.index("--exec") + 1]


PLAN = """
schema_version: 1
name: opt
title: an optional block
variables: {}
stages:
  - id: vllm
    engine: vllm-cpu
    optional: true
    steps:
      - verify-allocation: {block_size: 128}
      - sweep: {label: vllm-baseline, concurrency: "1"}
      - recovery
  - summarise: {labels: [vllm-baseline], needs: vllm}
  - report
"""


def test_a_missing_engine_skips_its_block_and_what_needs_it(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "no-venv"))
    path = tmp_path / "opt.yaml"
    path.write_text(PLAN)
    lines: list[str] = []
    runner = Runner(load_plan(str(path)), tmp_path / "run", out=lines.append)
    assert runner.execute(resume=False) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "passed"
    statuses = {s["id"]: (s["status"], s["reason"]) for s in manifest["steps"]}
    assert {st for sid, (st, _) in statuses.items() if sid != "report"} == {"skipped"}
    assert "make vllm-cpu" in statuses["vllm/sweep:vllm-baseline"][1]
    assert statuses["summarise"][1].startswith("optional block vllm was skipped")
    assert any("SKIP  optional block" in line for line in lines)
    assert statuses["report"][0] == "passed"
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Blocks skipped on this machine:" in report and "`vllm`: optional block vllm skipped" in report


def test_needs_must_name_an_optional_block(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(PLAN.replace("    optional: true\n", ""))
    with pytest.raises(ConfigError, match="needs 'vllm', which is not an optional block"):
        load_plan(str(path))


def test_preflight_warns_instead_of_failing_for_an_optional_block(tmp_path):
    plan = load_plan("cpu")
    block = plan.blocks["vllm"]
    ctx = block_context(plan, block, tmp_path, dry_run=True)
    found = _target_findings(
        Target(block, ctx, "<missing>", "vLLM is not installed"), True, lambda a: None, _Seen()
    )
    assert found[0].level == "WARN" and "optional block vllm will be skipped" in found[0].text


def test_preflight_warns_for_a_missing_vllm_binary_and_model_on_track_x(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/vllm/.venv, no ~/models here
    plan = load_plan("track-x")
    found = []
    seen = _Seen()
    for block_id in ("llama", "vllm"):
        block = plan.blocks[block_id]
        ctx = block_context(plan, block, tmp_path, dry_run=True)
        argv0 = (
            str(tmp_path / "vllm" / ".venv" / "bin" / "vllm") if block_id == "vllm" else "/nonexistent/llama"
        )
        found.append(_target_findings(Target(block, ctx, argv0), False, lambda a: None, seen))
    llama, vllm = found
    assert {f.level for f in llama if f.check in ("binary", "model")} == {"FAIL"}  # not optional
    own = [f for f in vllm if f.check in ("binary", "model")]
    assert own and {f.level for f in own} == {"WARN"}
    assert all(f.text.startswith("optional block vllm will be skipped: ") for f in own)
    assert any("bin/vllm not found" in f.text for f in own)
