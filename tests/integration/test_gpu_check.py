"""The GPU check (scripts/gpu-check.sh, scripts/gpu-check.yaml, scripts/tiny_gguf.py) as far as a
machine without a GPU can prove it: the tiny random model loads and answers in the real CPU
llama-server, the script's arguments and its CUDA build discovery (with a stand-in nvcc and cuBLAS),
its dry runs, and its --cpu path end to end (every step of the plan on the CPU llama-server)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from harness.errors import InstallError
from harness.engines.ports import port_open
from harness.engines import llama_cpu
from tests.conftest import FIXTURES, ROOT, free_port

SCRIPT = ROOT / "scripts" / "gpu-check.sh"
TINY = ROOT / "scripts" / "tiny_gguf.py"


def gemma_or_skip() -> Path:
    try:
        return llama_cpu.find_model()
    except InstallError as exc:
        pytest.skip(f"the Gemma 3 270M GGUF (its tokenizer) is not installed: {exc}")


def llama_server_or_skip() -> Path:
    try:
        return llama_cpu.find_llama_server()
    except InstallError as exc:
        pytest.skip(f"llama-server is not installed: {exc}")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    src = gemma_or_skip()
    out = tmp_path_factory.mktemp("tiny") / "tiny-gemma3.gguf"
    done = subprocess.run(
        [sys.executable, str(TINY), str(out), "--tokenizer-from", str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def gpu_check(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


# -- the tiny model ---------------------------------------------------------------------------------
def test_tiny_model_is_small_and_gemma3(tiny_model):
    import gguf

    assert tiny_model.stat().st_size <= 50_000_000
    reader = gguf.GGUFReader(str(tiny_model))
    assert reader.fields["general.architecture"].contents() == "gemma3"
    assert reader.fields["gemma3.block_count"].contents() == 6
    assert reader.fields["gemma3.embedding_length"].contents() == 64
    assert len(reader.fields["tokenizer.ggml.tokens"].contents()) == 262144


def test_tiny_model_without_its_tokenizer_source_says_what_to_do(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(TINY),
            str(tmp_path / "m.gguf"),
            "--tokenizer-from",
            str(tmp_path / "none.gguf"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "not found; run make llama-cpu" in done.stderr
    assert not (tmp_path / "m.gguf").exists()


@pytest.mark.llama
def test_tiny_model_loads_and_answers_in_the_cpu_llama_server(tiny_model, tmp_path):
    server = llama_server_or_skip()
    port = free_port()
    log = tmp_path / "server.log"
    argv = [str(server), "--model", str(tiny_model), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--ctx-size", "2048", "--parallel", "1", "--threads", "1", "--jinja", "--log-file", str(log)]
    with open(tmp_path / "server.out", "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(120):
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None, (tmp_path / "server.out").read_text(errors="replace")[-2000:]
            time.sleep(0.5)
        reply = requests.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8, "temperature": 0},
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["choices"][0]["message"]["content"].strip()  # garbage, but text
        assert 1 <= body["usage"]["completion_tokens"] <= 8
        assert body["usage"]["prompt_tokens"] > 5  # the Gemma 3 tokenizer and chat template were used
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert not port_open("127.0.0.1", port)


# -- the script's arguments -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "unknown option --bogus"),
        (["--requests", "many"], "--requests takes a whole number, not 'many'"),
        (["--port", "80a"], "--port takes a port number"),
        (["--levels", "1,,x"], "--levels takes concurrency levels like 1,2,4"),
        (["--cpu", "--build-only"], "--cpu and --build-only exclude each other"),
        (["--bench-workers", "1,two"], "--bench-workers takes worker counts like 1,2,4,8"),
        (
            ["--src", "/nonexistent/llama.tar.xz", "--build-only"],
            "llama.cpp source /nonexistent/llama.tar.xz not found",
        ),
    ],
)
def test_bad_arguments_get_one_line_saying_what_to_do(args, message, tmp_path):
    done = gpu_check(*args, "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"))
    assert_one_error(done, message)


def assert_one_error(done: subprocess.CompletedProcess, message: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("gpu-check: error:")]
    assert len(errors) == 1 and message in errors[0], done.stderr


def test_an_option_without_its_value_is_named():
    assert_one_error(gpu_check("--out"), "--out needs a value")
    assert_one_error(gpu_check("--levels", "--cpu"), "--levels takes concurrency levels")


def test_a_missing_model_is_named(tmp_path):
    done = gpu_check(
        "--cpu",
        "--llama-bin",
        str(tmp_path),
        "--model",
        str(tmp_path / "no.gguf"),
        "--out",
        str(tmp_path / "o"),
    )
    assert done.returncode == 2
    assert f"model {tmp_path / 'no.gguf'} not found" in done.stderr


def test_help_lists_the_options():
    done = gpu_check("--help")
    assert done.returncode == 0
    for option in (
        "--prepare",
        "--bundle",
        "--src",
        "--cpu",
        "--build-only",
        "--dry-run",
        "--tar-only",
        "CUDA_ARCH",
    ):
        assert option in done.stdout


# -- dry runs: the commands, nothing started --------------------------------------------------------
def test_dry_run_on_a_gpu_checks_cuda0_and_every_layer_offloaded(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    out = tmp_path / "out"
    done = gpu_check(
        "--dry-run", "--llama-bin", str(tmp_path / "bin"), "--model", str(model), "--out", str(out)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verify = next(line for line in done.stdout.splitlines() if line.startswith("control/verify-allocation:"))
    assert "--expect-offload" in verify and "--expect-device CUDA0" in verify and "--slots 1" in verify
    assert "--n-gpu-layers 999 --flash-attn on --parallel 1" in done.stdout
    assert "--backend CUDA" in done.stdout
    assert "--concurrency 1,2,4" in done.stdout and "--requests 12" in done.stdout
    assert (out / "gpu-check.log").read_text().count("control/measure:") == 1
    assert not (out / "gpu-check-run" / "manifest.json").exists()


def test_dry_run_of_the_cpu_path_checks_the_cpu_lines(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    done = gpu_check(
        "--cpu",
        "--dry-run",
        "--llama-bin",
        str(tmp_path),
        "--model",
        str(model),
        "--out",
        str(tmp_path / "o"),
        "--levels",
        "1,3",
        "--requests",
        "5",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verify = next(line for line in done.stdout.splitlines() if line.startswith("control/verify-allocation:"))
    assert "--expect-device CPU" in verify and "--expect-offload" not in verify
    assert (
        "--backend CPU" in done.stdout
        and "--concurrency 1,3" in done.stdout
        and "--requests 5" in done.stdout
    )


def fake_cuda(tmp_path: Path) -> tuple[Path, dict]:
    """A stand-in nvcc on PATH and a pip-style cuBLAS (lib/ and include/ side by side)."""
    bin_dir = tmp_path / "cuda-bin"
    bin_dir.mkdir()
    nvcc = bin_dir / "nvcc"
    nvcc.write_text("#!/bin/sh\necho fake nvcc\n")
    nvcc.chmod(0o755)
    cu = tmp_path / "nvidia" / "cu13"
    (cu / "lib").mkdir(parents=True)
    (cu / "include").mkdir()
    (cu / "lib" / "libcublas.so.13").write_bytes(b"")
    (cu / "lib" / "libcublasLt.so.13").write_bytes(b"")
    (cu / "include" / "cublas_v2.h").write_text("")
    src = tmp_path / "llama.cpp"
    (src / "tools" / "server").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text("")
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CUBLAS_LIB": str(cu / "lib" / "libcublas.so.13"),
        "CUDA_HOME": str(tmp_path / "no-cuda"),  # a toolkit installed here must not be what is found
    }
    return src, env


def test_build_dry_run_names_the_cuda_recipe_and_what_it_found(tmp_path):
    src, env = fake_cuda(tmp_path)
    out = tmp_path / "out"
    done = gpu_check(
        "--build-only",
        "--dry-run",
        "--src",
        str(src),
        "--out",
        str(out),
        "--work",
        str(tmp_path / "w"),
        env={**env, "CUDA_ARCH": "89", "JOBS": "3"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("cmake line:"))
    cu = tmp_path / "nvidia" / "cu13"
    for part in (
        f"-S {src}",
        "-DGGML_CUDA=ON",
        "-DCMAKE_CUDA_ARCHITECTURES=89",
        f"-DCMAKE_CUDA_COMPILER={tmp_path / 'cuda-bin' / 'nvcc'}",
        f"-DCUDA_cublas_LIBRARY={cu / 'lib' / 'libcublas.so.13'}",
        f"-DCUDA_cublasLt_LIBRARY={cu / 'lib' / 'libcublasLt.so.13'}",
        f"-DCMAKE_CUDA_FLAGS=-I{cu / 'include'}",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,",  # llama-server's link needs libcuda.so.1 found
    ):
        assert part in line, part
    assert "-DCUDA_cuda_driver_LIBRARY=" in line
    assert "--target llama-server -j 3" in done.stdout
    assert (out / "build.txt").read_text().startswith("cmake line:")
    assert not (tmp_path / "w" / "build").exists()  # nothing configured in a dry run


def test_build_without_nvcc_says_to_install_it(tmp_path):
    if Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("/usr/local/cuda/bin/nvcc exists here; the script finds it without PATH")
    src, env = fake_cuda(tmp_path)
    (tmp_path / "cuda-bin" / "nvcc").unlink()
    path = ":".join(p for p in os.environ["PATH"].split(":") if not (Path(p) / "nvcc").exists())
    done = gpu_check(
        "--build-only",
        "--dry-run",
        "--src",
        str(src),
        "--out",
        str(tmp_path / "o"),
        "--work",
        str(tmp_path / "w"),
        env={**env, "PATH": path, "CUDA_HOME": str(tmp_path / "no-cuda")},
    )
    assert_one_error(done, "nvcc not found")


# -- the CPU path, every step for real --------------------------------------------------------------
@pytest.mark.llama
@pytest.mark.slow
def test_cpu_path_runs_every_step_of_the_plan(tiny_model, tmp_path):
    llama_server_or_skip()
    out = tmp_path / "out"
    port = free_port()
    done = gpu_check(
        "--cpu",
        "--model",
        str(tiny_model),
        "--out",
        str(out),
        "--work",
        str(tmp_path / "w"),
        "--requests",
        "2",
        "--levels",
        "1,2",
        "--port",
        str(port),
        "--tar-only",
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert (out / "gpu-check-run.tar.gz").stat().st_size > 0
    assert not (out / "gpu-check-run").exists()  # --tar-only
    subprocess.run(["tar", "-C", str(tmp_path), "-xzf", str(out / "gpu-check-run.tar.gz")], check=True)
    run = tmp_path / "gpu-check-run"
    manifest = json.loads((run / "manifest.json").read_text())
    steps = {s["id"]: s["status"] for s in manifest["steps"]}
    assert steps == {
        "control/start": "passed",
        "control/verify-allocation": "passed",
        "control/measure": "passed",
        "control/probe": "passed",
        "control/sweep:control-sweep": "passed",
        "control/stop": "passed",
        "report": "passed",
    }
    records = [json.loads(x) for x in (run / "labbook.md").read_text().splitlines() if x.startswith("{")]
    allocation = next(r for r in records if r.get("record") == "allocation")
    assert [c["layers"] for c in allocation["observed"]["kv_caches"]] == [1, 5]  # Gemma 3's two caches
    assert "match:" in (run / "steps" / "control__verify-allocation.txt").read_text()
    speeds = [r for r in records if r.get("lab", "").startswith("part-08") and "memory" in r]
    assert len(speeds) == 2 and all(r["backend"] == "CPU" and "memory_delta_mb" in r for r in speeds)
    assert any("probe" in r for r in records)
    assert sorted(r["concurrency"] for r in records if "concurrency" in r) == [1, 2]  # one record a level
    assert not port_open("127.0.0.1", port)


# -- the energy during the control block, through the stand-in NVML library --------------------------
@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """The tests' stand-in libnvidia-ml.so.1 (tests/fixtures/telemetry/standin_nvml.c; see
    tests/integration/test_nvml_standin.py), compiled here; skipped without gcc or nvidia-ml-py."""
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: the stand-in NVML library cannot be built")
    path = tmp_path_factory.mktemp("standin-nvml") / "libnvidia-ml.so.1"
    source = FIXTURES / "telemetry" / "standin_nvml.c"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(path), str(source)], check=True, timeout=60)
    return path


def test_dry_run_reads_nvml_in_measure_and_the_sweep(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    args = ("--dry-run", "--llama-bin", str(tmp_path / "bin"), "--model", str(model))
    done = gpu_check(*args, "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for step in ("control/measure:", "control/sweep:control-sweep:"):
        assert "--telemetry nvml" in next(line for line in lines if line.startswith(step)), step
    done = gpu_check(*args, "--out", str(tmp_path / "o2"), "--telemetry", "nvml,rapl")
    assert done.returncode == 0 and "--telemetry nvml,rapl" in done.stdout
    bad = gpu_check(*args, "--out", str(tmp_path / "o3"), "--telemetry", "nvml;rm")
    assert bad.returncode == 2 and "--telemetry takes harness's words" in bad.stderr


def test_energy_reads_the_stand_in_nvml_counter_into_energy_txt(library, practice, tmp_path):
    """The control block's two telemetry steps, measure and a sweep, with ``--telemetry nvml`` as the
    plan has them, against the practice server with the stand-in libnvidia-ml.so.1 on
    LD_LIBRARY_PATH (pynvml's own loader finds it), then the script's --energy: energy.txt has each
    test's and level's J per output token from the device's counter, labelled STAND-IN."""
    server = practice("kit")
    run = tmp_path / "gpu-check-run"
    run.mkdir()
    book = str(run / "labbook.md")
    env = {**os.environ, "LD_LIBRARY_PATH": str(library.parent), "PYTHONPATH": str(ROOT)}
    common = ["--base-url", server.base_url, "--model", "local-chat", "--max-tokens", "16", "--labbook", book]
    steps = [
        ["measure", "--engine", "llama.cpp", "--repetitions", "2", *common, "--telemetry", "nvml"],
        ["sweep", "--label", "control-sweep", "--concurrency", "1,2", "--requests", "4", *common,
         "--telemetry", "nvml", "--idle-seconds", "0.5", "--telemetry-interval", "0.1"],
    ]  # fmt: skip
    for argv in steps:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *argv], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "telemetry: reading nvml 0: NVIDIA card 0 (stand-in)" in done.stdout
    out = tmp_path / "out"
    done = gpu_check("--energy", str(run), "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    text = (out / "energy.txt").read_text()
    assert text in (out / "gpu-check.log").read_text()
    for what in (
        "measure short (llama.cpp, 2 repetitions)",
        "measure long",
        "sweep control-sweep c=1",
        "c=2",
    ):
        assert what in text, what
    assert text.count("J per output token (STAND-IN)") == 4 and text.count("energy [STAND-IN]: ") == 4
    assert text.count("(counter, nvml 0: NVIDIA card 0 (stand-in))") == 4
    records = [json.loads(x) for x in (run / "labbook.md").read_text().splitlines() if x.startswith("{")]
    for rec in (r for r in records if "energy" in r):
        e = rec["energy"]
        assert (e["source"], e["label"], e["method"]) == ("nvml", "stand-in", "counter")
        # the stand-in's counter steps 105 J (0.5 s at 210 W) a read: whole steps, exactly
        assert e["energy_j"] / 105.0 == pytest.approx(round(e["energy_j"] / 105.0)) and e["energy_j"] >= 105.0
        tokens = rec.get("output_tokens") or rec["completion_tokens"] * rec["repetitions"]
        assert e["j_per_output_token"] == pytest.approx(e["energy_j"] / tokens, rel=1e-3)


def test_energy_of_a_run_without_telemetry_says_why(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "labbook.md").write_text("# a notebook with no record\n")
    done = gpu_check("--energy", str(run), "--out", str(tmp_path / "out"))
    assert done.returncode == 1  # asked for the energy alone: none is a failure (a whole run goes on)
    assert "no measure or sweep record" in (tmp_path / "out" / "energy.txt").read_text()
    done = gpu_check("--energy", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o2"))
    assert done.returncode == 2 and "--energy: no labbook.md in" in done.stderr


def test_bench_workers_runs_the_clients_scale_rows_into_its_file(tmp_path):
    """The device's scale check without a GPU: one process and one Locust worker, a row
    of 4 streams each, against the ruler server; the summary says how many each held."""
    out = tmp_path / "out"
    done = gpu_check(
        "--bench-workers",
        "1",
        "--out",
        str(out),
        "--work",
        str(tmp_path / "work"),
        env={"WORKER_STREAMS": "4", "BENCH_SECONDS": "1"},
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = (out / "bench-workers.txt").read_text()
    assert "| 4 (this process)" in text and "| 4 (1 worker)" in text
    summary = text.split("streams held within 1 ms (TTFT and ITL error p99")[1]
    rows = [line for line in summary.splitlines() if line.startswith(("| this process", "| 1 worker"))]
    assert len(rows) == 2, summary
