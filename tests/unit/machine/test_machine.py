"""The machine part: its readers on the corpus's real tool outputs (tests/corpus/tools, sources in
its INDEX.md), its assembly with a reason for every null, and the probe on this machine for real."""

from __future__ import annotations

import json
import os
import platform
import re

import pytest

from harness.errors import ConfigError
from harness.records.notebook import problems, read_records, record_line
from harness.machine import part, probe, readers
from tests.corpus_samples import CORPUS, samples, split


def _ids(group):
    return [s.id for s in group]


def _na(value):
    return None if value == "na" else value


TABLES = [s for s in samples("nvidia-smi") if (s.expect.get("command") or "").strip() == "nvidia-smi"]


@pytest.mark.parametrize("sample", TABLES, ids=_ids(TABLES))
def test_nvidia_table_reads_driver_cuda_names_and_memory(sample):
    got = readers.nvidia_table(sample.body)
    want = sample.expect["gpus"]
    assert got["driver"] == want[0]["driver"] and got["cuda"] == want[0]["cuda"], sample.id
    assert [g["name"] for g in got["gpus"]] == [g["name"] for g in want], sample.id
    totals = [None if _na(g["memory_total_mib"]) is None else g["memory_total_mib"] * 2**20 for g in want]
    assert [g["memory_bytes"] for g in got["gpus"]] == totals, sample.id


QUERIES = [s for s in samples("nvidia-smi") if "memory.total" in (s.expect.get("command") or "")]


@pytest.mark.parametrize("sample", QUERIES, ids=_ids(QUERIES))
def test_nvidia_query_reads_na_as_none_with_or_without_a_header(sample):
    got = readers.nvidia_query(sample.body)
    assert len(got) == len(sample.expect["gpus"])
    for gpu, want in zip(got, sample.expect["gpus"], strict=True):
        total = _na(want["memory_total_mib"])
        assert gpu["memory_bytes"] == (None if total is None else total * 2**20), sample.id


JSONS = [s for s in samples("rocm-smi") if s.body.lstrip().startswith("{")]


@pytest.mark.parametrize("sample", JSONS, ids=_ids(JSONS))
def test_rocm_json_reads_names_vram_and_driver(sample):
    got = readers.rocm_json(sample.body)
    cards = sample.expect["cards"]
    cards = list(cards.values()) if isinstance(cards, dict) else cards
    assert [g["memory_bytes"] for g in got["gpus"]] == [c["vram_total_bytes"] for c in cards], sample.id
    for gpu, card in zip(got["gpus"], cards, strict=True):
        if "name" in card:
            assert gpu["name"] == card["name"], sample.id
    if "driver" in sample.expect:
        assert got["driver"] == str(sample.expect["driver"]), sample.id


def test_rocm_text_output_is_refused_in_one_line():
    (table,) = [s for s in samples("rocm-smi") if not s.body.lstrip().startswith("{")][:1]
    with pytest.raises(ValueError, match="gave no JSON"):
        readers.rocm_json(table.body)


@pytest.mark.parametrize(
    "name, devices",
    [
        ("llama-b4476-vulkan-tesla-t4-ci-kv-cache-init.log", [("Vulkan0", "Tesla T4")]),
        ("llama-b4801-metal-m4-ci-llama-init-from-model.log", [("Metal", "Apple M4")]),
        (
            "llama-b7342-cuda-a100-docker-unified-4of1-new-slot-65536.log",
            [("CUDA0", "NVIDIA A100-PCIE-40GB")],
        ),
        (
            "llama-gh6122-cuda-rtx4070ti-rtx3090ti-kv-self-size.log",
            [("CUDA0", "NVIDIA GeForce RTX 4070 Ti"), ("CUDA1", "NVIDIA GeForce RTX 3090 Ti")],
        ),
    ],
)
def test_engine_log_devices_from_real_llama_logs(name, devices):
    _, body = split((CORPUS / "llama" / name).read_text(encoding="utf-8"))
    assert readers.engine_log_devices(body) == [{"device": d, "name": n} for d, n in devices]


def _corpus(folder: str, name: str) -> str:
    return split((CORPUS / folder / name).read_text(encoding="utf-8"))[1]


LINUX = {"system": "Linux", "arch": "aarch64", "kernel": "6.11.0-1016-nvidia", "logical_cpus": 20}


def test_a_gb10_part_says_why_its_gpu_memory_is_null():
    outputs = {
        "nvidia-smi-table": _corpus("tools", "nvidia-smi-580.95.05-gb10-dgx-spark-table.txt"),
        "nvidia-smi": part.Missing("nvidia-smi failed (exit 2): test"),
        "lscpu": part.Missing("lscpu is not on PATH"),
        "rocm-smi": part.Missing("rocm-smi is not on PATH"),
        "amd-smi": part.Missing("amd-smi is not on PATH"),
    }
    got = part.build(outputs, {**LINUX, "endpoint_here": True, "port": 8000})
    assert not problems(got, "machine"), problems(got, "machine")
    (gpu,) = got["accelerators"]
    assert (gpu["name"], gpu["driver"], gpu["runtime"], gpu["memory_bytes"]) == (
        "NVIDIA GB10",
        "580.95.05",
        "CUDA 13.0",
        None,
    )
    assert "unified memory" in got["absent"]["accelerators.0.memory_bytes"]
    assert got["absent"]["cpu.model"] == "lscpu is not on PATH"
    assert got["absent"]["memory_bytes"] and got["memory_bytes"] is None
    for path, value in (("cpu.cores", got["cpu"]["cores"]), ("os.name", got["os"]["name"])):
        assert value is None and got["absent"][path]


def test_an_amd_part_from_rocm_smi_and_a_mac_part_from_sysctl():
    rocm = _corpus("tools", "rocm-smi-json-6.0.2-4x-mi100-meminfo-all-gtt.txt")
    got = part.build({"rocm-smi": rocm, "rocm-version": "6.0.2\n"}, {**LINUX, "arch": "x86_64"})
    assert [a["name"] for a in got["accelerators"]] == ["Arcturus GL-XL [Instinct MI100]"] * 4
    assert {a["runtime"] for a in got["accelerators"]} == {"ROCm 6.0.2"}
    assert not problems(got, "machine")
    mac = part.build(
        {"sysctl": _corpus("tools", "sysctl-machdep-cpu-apple-m1.txt"), "sw_vers": part.Missing("none")},
        {"system": "Darwin", "arch": "arm64", "kernel": "23.5.0"},
    )
    assert mac["cpu"]["model"] == "Apple M1" and mac["accelerators"][0]["vendor"] == "apple"
    assert mac["absent"]["os.name"] == "none" and not problems(mac, "machine")


def test_an_engine_log_adds_the_device_no_tool_saw_and_no_host_name_unless_asked():
    log = _corpus("llama", "llama-b4476-vulkan-tesla-t4-ci-kv-cache-init.log")
    got = part.build({"engine-log": log}, {**LINUX, "endpoint_here": False})
    assert [(a["name"], a["runtime"], a["source"]) for a in got["accelerators"]] == [
        ("Tesla T4", "Vulkan0", "engine log")
    ]
    assert "load generator's machine only" in got["absent"]["server"]
    assert "host_name" not in got
    assert part.build({}, {**LINUX, "host_name": "box"})["host_name"] == "box"


# -- this machine, for real ---------------------------------------------------------------------------


def test_the_probe_reads_this_machine():
    got = probe.part_for({"base_url": "http://127.0.0.1:8000/v1"})
    assert not problems(got, "machine"), problems(got, "machine")
    assert got["os"]["system"] == platform.system() and got["os"]["kernel"] == platform.release()
    assert got["cpu"]["logical_cpus"] == os.cpu_count()
    assert got["endpoint_here"] is True
    if platform.system() == "Linux":
        with open("/proc/meminfo", encoding="utf-8") as fh:
            total = int(re.search(r"MemTotal:\s*(\d+)", fh.read())[1]) * 1024
        assert got["memory_bytes"] == total
    for key, value in got["cpu"].items():  # a null always has its reason
        assert value is not None or got["absent"][f"cpu.{key}"]
    if not got["accelerators"]:
        assert got["absent"]["accelerators"].startswith("none found: ")
    assert probe.part_for({"base_url": "http://192.0.2.1:8000/v1"})["endpoint_here"] is False  # TEST-NET
    assert probe.part_for({})["absent"]["endpoint_here"] == "the record names no endpoint"


def test_every_notebook_record_gets_the_part_and_old_records_still_read(tmp_path):
    old = json.dumps(
        {
            "lab": "x",
            "label": "old",
            "concurrency": 1,
            "requests": 1,
            "completed": 1,
            "failed": 0,
            "wall_s": 1.0,
            "output_tokens": 1,
            "output_tokens_per_s": 1.0,
            "ttft_s": {"p50": 0.1, "p90": 0.1},
            "tpot_s": {"p50": 0.1, "p90": 0.1},
        }
    )
    notebook = tmp_path / "labbook.md"
    notebook.write_text(old + "\n" + record_line(json.loads(old), "level") + "\n", encoding="utf-8")
    got = read_records(notebook, "level")
    assert not got.warnings and len(got.records) == 2
    assert "machine" not in got.records[0] and got.records[1]["machine"]["os"]["system"] == platform.system()


def test_the_host_name_is_written_only_when_asked_and_a_missing_log_is_one_line(tmp_path):
    try:
        probe.configure(host_name=True)
        assert probe.part_for({})["host_name"]
    finally:
        probe.configure()
    assert "host_name" not in probe.part_for({})
    with pytest.raises(ConfigError, match="no such file"):
        probe.configure(engine_log=str(tmp_path / "absent.log"))
