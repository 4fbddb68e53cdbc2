"""Track X's rule: if vLLM is missing or does not start, skip its blocks, record why,
and go on. A plan shaped like Track X (a server before, vLLM with a variant, a server after, a
summarise that needs vLLM, the report) runs against the practice server with vLLM missing, and
with a fake vLLM that dies the way the lab's troubleshooting table describes. Last, a failed step's
own output is matched against the same table (TabbyAPI's 401)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.run.plans import load_plan
from harness.run.runner import Runner
from tests.conftest import free_port

INSTALL = "install it as the track's install lesson describes"
FAKE_VLLM = """#!/bin/sh
echo "INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.28.0"
echo "ValueError: Free memory on device (10.2/15.6 GiB) on startup is less than desired GPU memory \
utilization (0.9, 14.0 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
exit 1
"""


def plan(tmp_path: Path, vllm_bin: str) -> Path:
    model = tmp_path / "Qwen3-8B"
    model.mkdir(exist_ok=True)
    practice = {"engine": "practice", "settings": {"port": free_port()}, "steps": ["probe"]}
    spec = {
        "schema_version": 1,
        "name": "x-like",
        "title": "Track X's shape, vLLM optional",
        "variables": {},
        "stages": [
            {"id": "before", **practice},
            {
                "id": "vllm",
                "engine": "vllm",
                "optional": True,
                "start_timeout_s": 20,
                "settings": {"vllm_bin": vllm_bin, "model": str(model), "port": free_port()},
                "steps": [
                    {"verify-allocation": {"model": "qwen3-8b"}},
                    {"sweep": {"label": "vllm-baseline", "concurrency": "1"}},
                ],
            },
            {
                "id": "vllm-seqs8",
                "engine": "vllm",
                "base": "vllm",
                "settings": {"max_seqs": 8},
                "steps": [{"verify-allocation": {"model": "qwen3-8b"}}],
            },
            {"id": "after", **practice},
            {"summarise": {"labels": ["vllm-baseline"], "needs": "vllm"}},
            "report",
        ],
    }
    path = tmp_path / "x-like.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run(tmp_path: Path, vllm_bin: str) -> tuple[int, dict, list[str], str]:
    lines: list[str] = []
    code = Runner(load_plan(str(plan(tmp_path, vllm_bin))), tmp_path / "run", out=lines.append).execute(
        resume=False
    )
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    return code, manifest, lines, (tmp_path / "run" / "report.md").read_text()


def statuses(manifest: dict) -> dict[str, tuple[str, str | None]]:
    return {s["id"]: (s["status"], s["reason"]) for s in manifest["steps"]}


def assert_other_blocks_ran(code: int, manifest: dict) -> dict:
    got = statuses(manifest)
    assert code == 0 and manifest["status"] == "passed", got
    for block in ("before", "after"):
        assert all(got[f"{block}/{s}"][0] == "passed" for s in ("start", "probe", "stop")), got
    assert {got[s][0] for s in got if s.startswith("vllm")} == {"skipped"}
    assert got["summarise"] == ("skipped", "optional block vllm was skipped")
    assert got["report"][0] == "passed"
    return got


def test_a_missing_vllm_is_skipped_and_every_other_block_completes(tmp_path):
    missing = str(tmp_path / "no-venv" / "bin" / "vllm")
    code, manifest, lines, report = run(tmp_path, missing)
    got = assert_other_blocks_ran(code, manifest)
    why = got["vllm/start"][1]
    assert why == f"optional block vllm skipped: {missing} not found; " + INSTALL
    assert got["vllm-seqs8/start"][1] == f"optional block vllm-seqs8 skipped: {missing} not found; " + INSTALL
    assert sum("    SKIP  optional block: " in line for line in lines) == 2  # vllm and its variant
    assert "Blocks skipped on this machine:" in report and "`vllm`: optional block vllm skipped" in report


@pytest.mark.parametrize("reader", ["manifest", "report"])
def test_a_vllm_that_dies_at_start_is_skipped_with_the_labs_remedy(tmp_path, reader):
    fake = tmp_path / "vllm"
    fake.write_text(FAKE_VLLM)
    fake.chmod(0o755)
    code, manifest, lines, report = run(tmp_path, str(fake))
    got = assert_other_blocks_ran(code, manifest)
    why = got["vllm/start"][1] if reader == "manifest" else report
    assert "exited with status 1 while starting" in why
    assert "lower the block's mem_fraction" in why  # the serving lab's troubleshooting row
    assert got["vllm-seqs8/start"][1] == "optional block vllm-seqs8 skipped: its base block vllm was skipped"
    (start,) = [s for s in manifest["steps"] if s["id"] == "vllm/start"]
    assert start["result"]["diagnosis"]["id"] == "vllm-fraction-too-high"
    assert "less than desired GPU memory utilization" in start["result"]["diagnosis"]["line"]
    (why_line,) = [x for x in lines if x.startswith("    WHY   ")]
    assert "Free memory on device (10.2/15.6 GiB)" in why_line


def test_track_x_marks_vllm_optional_with_the_labs_ten_minutes():
    x = load_plan("track-x")
    vllm_blocks = [b for b in x.blocks.values() if b.engine.name == "vllm"]
    assert len(vllm_blocks) == 4 and all(b.optional and b.start_timeout_s == 600 for b in vllm_blocks)
    # and the engines lab's optional fourth row, Lemonade with its Vulkan backend
    assert [b.id for b in x.blocks.values() if b.optional and b.engine.name != "vllm"] == ["lemonade-vulkan"]
    needing = {s.id for s in x.steps if s.needs == "vllm"}
    assert needing == {"summarise-2", "compare-2"}
    for s in x.steps:  # nothing that reads vLLM's labels runs unless vLLM did
        labels = json.dumps(s.options)
        if s.block is None and "vllm-" in labels:
            assert s.needs == "vllm", s.id


def test_a_step_that_fails_on_a_401_gets_tabbyapis_remedy(tmp_path, monkeypatch):
    """TabbyAPI's row "status 401: no or wrong API key", read from the failed step's own output: a
    server that wants a key the steps do not have (the practice server, named as a TabbyAPI)."""
    monkeypatch.setenv("PRACTICE_KEY_FOR_TEST", "the-servers-key")
    engine = {
        "schema_version": 1,
        "name": "tabbyapi-practice",
        "title": "the practice server, wanting an API key as TabbyAPI does",
        "launcher": "host",
        "binary": "{python}",
        "resolve": {"python": "python"},
        "settings": {"python": "auto", "port": free_port()},
        "args": [
            ["-m", "harness.cli", "practice", "--port", "{port}", "--api-key-env", "PRACTICE_KEY_FOR_TEST"]
        ],
        "port": "{port}",
        "health": "/health",
        "api_model": "local-chat",
        "log": "stdout",
    }
    (tmp_path / "tabbyapi-practice.yaml").write_text(yaml.safe_dump(engine))
    spec = {
        "schema_version": 1,
        "name": "tabby-401",
        "title": "a 401",
        "variables": {},
        "stages": [
            {
                "id": "exl3",
                "engine": str(tmp_path / "tabbyapi-practice.yaml"),
                "steps": [{"measure": {"wait_seconds": 2, "max_tokens": 4}}],
            }
        ],
    }
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(spec))
    lines: list[str] = []
    code = Runner(load_plan(str(tmp_path / "plan.yaml")), tmp_path / "run", out=lines.append).execute(
        resume=False
    )
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    step = next(s for s in manifest["steps"] if s["id"] == "exl3/measure")
    assert code == 1 and step["status"] == "failed", step
    assert step["result"]["diagnosis"]["id"] == "tabbyapi-wrong-key"
    assert "api_tokens.yml" in step["reason"] and "401" in step["result"]["diagnosis"]["line"]
    assert sum(x.startswith("    WHY   ") for x in lines) == 1
