"""Rehearsals: the overlay changes only what it names, keeps the track's own values beside the
stand-in's, stamps every record, and merges Compose files the way the stand-ins need (a null
removes a key, which Compose v1 cannot do from a later file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.errors import ConfigError
from harness.records import notebook
from harness.engines import compose_files
from harness.run import rehearsal
from harness.run.plans import load_plan

PLANS = ("track-s", "track-n", "track-x", "track-m")


def fake_place(kind: str) -> str:
    return f"/stand-in/{kind}"


@pytest.mark.parametrize("name", PLANS)
def test_every_gpu_track_has_an_overlay_that_validates(name: str) -> None:
    raw, path, sha = rehearsal.read_overlay(name)
    assert raw["track"] == name and len(sha) == 64 and path.is_file()


def test_overlay_changes_only_what_it_names() -> None:
    raw = yaml.safe_load((rehearsal.REHEARSAL_DIR.parent / "tracks" / "track-s.yaml").read_text())
    overlay, _, _ = rehearsal.read_overlay("track-s")
    out, notes = rehearsal.apply(raw, overlay, quick=False, resolver=fake_place)
    assert out["variables"]["GGUF"] == "/stand-in/llama-cpu-model"
    assert out["variables"]["SLOTS"] == raw["variables"]["SLOTS"] == 20  # the track's own flags stay
    assert out["variables"]["VLLM_KV_DTYPE"] == raw["variables"]["VLLM_KV_DTYPE"]
    track_gguf = "${HOME}/models/unsloth/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf"
    assert f"variable GGUF: {track_gguf} -> /stand-in/llama-cpu-model" in notes
    # the sweeps keep their sizes at full size
    llama = next(s for s in out["stages"] if isinstance(s, dict) and s.get("id") == "llama")
    assert {"sweep": {"label": "llama-baseline", "concurrency": "1,5,10,20", "prompt_set": "mixed"}} in llama[
        "steps"
    ]
    assert raw == yaml.safe_load((rehearsal.REHEARSAL_DIR.parent / "tracks" / "track-s.yaml").read_text())


def test_quick_keeps_the_tracks_levels_and_shrinks_the_rest() -> None:
    raw = yaml.safe_load((rehearsal.REHEARSAL_DIR.parent / "tracks" / "track-s.yaml").read_text())
    overlay, _, _ = rehearsal.read_overlay("track-s")
    out, _ = rehearsal.apply(raw, overlay, quick=True, resolver=fake_place)
    slots8 = next(s for s in out["stages"] if isinstance(s, dict) and s.get("id") == "llama-slots8")
    sweep = slots8["steps"][1]["sweep"]
    assert sweep["concurrency"] == "20" and sweep["requests"] == 8 and sweep["min_rounds"] == 1
    assert out["sweep"]["max_tokens"] == 16


def steps_of(plan: dict, block: str) -> dict:
    stage = next(s for s in plan["stages"] if isinstance(s, dict) and s.get("id") == block)
    return {
        kind: opts
        for step in stage["steps"]
        for kind, opts in ([(step, {})] if isinstance(step, str) else step.items())
    }


def test_smoke_shrinks_below_quick_and_keeps_the_prefix_pairs_own_count() -> None:
    # Track M's rehearsal: it keeps the llama-server block that N and S leave to it
    raw = yaml.safe_load((rehearsal.REHEARSAL_DIR.parent / "tracks" / "track-m.yaml").read_text())
    overlay, _, _ = rehearsal.read_overlay("track-m")
    out, _ = rehearsal.apply(raw, overlay, quick="smoke", resolver=fake_place)
    llama = steps_of(out, "llama")
    assert llama["sweep"]["concurrency"] == "1,5,10,20" and out["sweep"]["requests"] == 2
    assert out["sweep"]["max_tokens"] == 8 and out["sweep"]["min_rounds"] == 1
    # the level's 2 requests never cap the pair's 3 (the lab's check wants over half cached: 2 of 3)
    pair = llama["prefix-pair"]
    assert (pair["concurrency"], pair["requests"]) == ("1", 3)
    control = steps_of(out, "control")
    assert control["measure"]["max_tokens"] == 32 and control["measure"]["long_repeats"] == 4


def test_smoke_without_smoke_sizes_is_refused() -> None:
    overlay, _, _ = rehearsal.read_overlay("track-s")
    overlay = {k: v for k, v in overlay.items() if k != "smoke"}
    with pytest.raises(ConfigError, match="no smoke sizes"):
        rehearsal.apply({"variables": {}, "stages": []}, overlay, quick="smoke", resolver=fake_place)


def test_a_prediction_for_the_tracks_model_is_kept_and_followed_by_the_stand_ins() -> None:
    raw = yaml.safe_load((rehearsal.REHEARSAL_DIR.parent / "tracks" / "track-s.yaml").read_text())
    overlay, _, _ = rehearsal.read_overlay("track-s")
    out, _ = rehearsal.apply(raw, overlay, quick=False, resolver=fake_place)
    predicts = [s["predict"] for s in out["stages"] if isinstance(s, dict) and "predict" in s]
    models = [p.get("model") for p in predicts]
    i = models.index("qwen3-8b")
    assert predicts[i]["machine"] == "spark"  # the track's own, unchanged
    assert models[i + 1] == "/stand-in/llama-cpu-model" and "machine" not in predicts[i + 1]


def test_the_stand_in_steps_and_the_check_are_said() -> None:
    plan = load_plan("s", rehearse_it=True, quick=True)
    r = plan.rehearsal
    assert r is not None and r.quick
    assert plan.blocks["control"].stand_in["real"].endswith("(its log names CUDA0)")
    assert r.step_notes("control/verify-allocation") == [
        "expect_offload <the engine definition's> -> False (the track's -> the stand-in's)",
        "expect_device CUDA0 -> CPU (the track's -> the stand-in's)",
    ]
    assert r.step_notes("predict-2") == [
        "this is the track's own prediction (qwen3-8b on spark), printed for comparison"
    ]
    assert "check: --machine spark -> left out (the stand-ins run on this machine)" in r.notes
    assert r.skips["models"].startswith("it would download")
    assert plan.blocks["vllm"].launcher == "compose"
    lemonade = load_plan("x", rehearse_it=True).blocks["lemonade-rocm"]
    assert lemonade.launcher == "service" and lemonade.stand_in["daemon"][0] == "lemond"  # the track's own
    assert load_plan("x", rehearse_it=True).blocks["vllm"].launcher == "vllm-cpu"


def test_a_rehearsal_ignores_this_machines_memory_for_the_tier() -> None:
    # the 16 GB tier of Track M would follow from this machine's memory; a rehearsal takes the default
    plan = load_plan("m", rehearse_it=True)
    assert plan.tier == "32gb"
    assert load_plan("m", tier="16gb", rehearse_it=True).variables["SLOTS"] == 10


def test_quick_without_rehearse_is_refused() -> None:
    with pytest.raises(ConfigError, match="--quick sizes a rehearsal"):
        load_plan("s", quick=True)


def test_a_plan_without_an_overlay_says_which_have_one() -> None:
    with pytest.raises(ConfigError, match="has no rehearsal overlay.*track-s"):
        load_plan("cpu", rehearse_it=True)


def test_records_written_in_a_rehearsal_say_so(monkeypatch) -> None:
    record = {"record": "endpoint-check", "schema_version": 1}
    assert notebook.rehearsal_stamp(record) == record
    monkeypatch.setenv(
        rehearsal.REHEARSAL_ENV, json.dumps({"track": "track-s", "stand_in": "vLLM's CPU build"})
    )
    stamped = notebook.rehearsal_stamp(record)
    assert stamped["rehearsal"] is True and stamped["stand_in"] == "vLLM's CPU build"
    assert stamped["rehearsal_track"] == "track-s"


def test_a_null_in_a_later_compose_file_removes_the_key(tmp_path: Path) -> None:
    base = tmp_path / "compose.yaml"
    base.write_text(
        "x-gpu: &gpu\n  deploy: {resources: {reservations: {devices: [{driver: nvidia}]}}}\n"
        "services:\n  vllm:\n    <<: *gpu\n    image: ${IMG:-x}\n    command: [vllm, serve]\n"
        "    build: {context: ../images/x}\n"
    )
    over = tmp_path / "over.yaml"
    over.write_text("services:\n  vllm:\n    deploy: null\n    entrypoint: [/usr/bin/env]\n")
    doc = compose_files.load(base, {"IMG": "cpu-image"}, (over,))
    svc = doc["services"]["vllm"]
    assert "deploy" not in svc and svc["entrypoint"] == ["/usr/bin/env"] and svc["image"] == "cpu-image"
    target = compose_files.write_merged(base, (over,), tmp_path / "run" / "compose" / "vllm.yaml")
    written = yaml.safe_load(target.read_text())["services"]["vllm"]
    assert written["image"] == "${IMG:-x}"  # Compose fills the variables itself
    assert written["build"]["context"] == str((tmp_path / ".." / "images" / "x").resolve())
    assert "deploy" not in written


def test_a_failed_compose_up_names_its_error_line() -> None:
    import subprocess

    from harness.engines.launchers.compose_command import compose_error

    v1 = (
        "Creating llm-harness_trtllm_1 ... error\n\n"
        "ERROR: for trtllm  Cannot start service trtllm: error setting rlimit type 8: not permitted\n"
        "Encountered errors while bringing up the project.\n"
    )
    done = subprocess.CompletedProcess([], 1, "", v1)
    assert compose_error(done).startswith(
        "ERROR: for trtllm  Cannot start service trtllm: error setting rlimit"
    )
    assert compose_error(subprocess.CompletedProcess([], 1, "", "")) == "no output"


def test_charts_of_a_rehearsal_say_so_and_a_real_runs_do_not() -> None:
    from harness.report.charts import REHEARSAL_MARK, conditions, rehearsal_mark

    real = {1: {"prompt_tokens_mean": 40, "max_tokens": 16}}
    rehearsed = {1: {**real[1], "rehearsal": True}}
    assert rehearsal_mark(real.values()) == "" and REHEARSAL_MARK not in conditions({"a": real}, 2.0)
    assert conditions({"a": rehearsed}, 2.0).startswith(REHEARSAL_MARK + "\n")


def test_a_stage_with_a_list_of_options_passes_the_overlay_unchanged() -> None:
    compare = {"compare": [["llama-baseline", "vllm-baseline"]]}
    out, _ = rehearsal.apply({"variables": {}, "stages": [compare, "report"]}, {"engines": {}}, quick=True)
    assert out["stages"] == [compare, "report"]
    assert rehearsal._join(*rehearsal._split(compare)) == compare
