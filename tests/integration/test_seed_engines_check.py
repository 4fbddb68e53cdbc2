"""The engines lab's own checker, summarise-engines.py --check (cut from the seed page), reads the
lines ``harness measure`` and ``harness probe`` write, with the fields the harness adds (the server's
own timings set against the client's; the process tree; notes), and the engines
fixture notebook: every engine a PASS and 0 failures. Skipped, saying so, where the seeds are absent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli import main
from harness.records.notebook import read_records
from tests.conftest import FIXTURES, ROOT
from tests.seeds import SEEDS, seeds_summarise_engines


@pytest.fixture
def checker(tmp_path):
    seed = seeds_summarise_engines(SEEDS)
    if seed is None:
        pytest.skip(f"no seed page embedding summarise-engines.py under {SEEDS}")
    script = tmp_path / "summarise-engines.py"
    script.write_text(seed)

    def check(book, *extra: str) -> str:
        argv = [sys.executable, str(script), "--labbook", str(book), "--check", *extra]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
        assert done.stdout.rstrip().endswith("0 failure(s)"), done.stdout[-3000:]
        return done.stdout

    return check


def test_the_seed_checker_accepts_the_engines_fixture(checker):
    out = checker(FIXTURES / "notebooks" / "engines-spark.md")
    assert "PASS  llama.cpp        speed pair and feature line present" in out


@pytest.mark.slow
def test_the_seed_checker_accepts_what_measure_and_probe_write(practice, tmp_path, checker):
    server = practice("kit")  # llama-server's dialect: its timings block on the last chunk
    idle, book = tmp_path / "idle.json", tmp_path / "labbook.md"
    assert main(["measure", "--snapshot-only", str(idle)]) == 0
    common = ["--engine", "llama.cpp", "--base-url", server.base_url, "--model", "practice-model"]
    common += ["--engine-version", "practice", "--labbook", str(book)]
    measure = ["--backend", "CPU", "--quant", "Q4_K_M", "--context-length", "8192", "--max-tokens", "16"]
    measure += ["--repetitions", "1", "--idle-snapshot", str(idle), "--server-pid", str(server.proc.pid)]
    assert main(["measure", *common, *measure]) == 0
    assert main(["probe", *common]) == 0
    long = next(r for r in read_records(book, "engine-speed").records if r["test"] == "long")
    assert "server_timings_check" in long  # the harness's own field rides the line the seed reads
    out = checker(book, "--allow-cpu")  # the practice server runs on the CPU
    assert "PASS  llama.cpp        speed pair and feature line present" in out
