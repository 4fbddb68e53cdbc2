"""`harness compare` on a practice run and a real CPU llama-server run (Gemma 3 270M) of the same
requests: compared, what differs named (engine, quantisation, slots, context), and the differences
beyond the runs' spread called. The practice server answers to the model's name and decodes a token
in 2 ms; one CPU thread cannot do that for a 270M model (about 0.5 GFLOP a token), so llama-server's
TPOT is called worse every time."""

from __future__ import annotations

import pytest

from harness.engines import llama_cpu
from tests.conftest import free_port, kit_profile
from tests.integration.test_sizing_practice import harness

pytestmark = [pytest.mark.llama, pytest.mark.slow]

SLOW_KIT = kit_profile(
    name="kit-gemma",
    model={"id": llama_cpu.MODEL_ALIAS, "aliases": []},
    timing={"step_base_s": 0.002, "step_per_seq_s": 0.0005},
)


# two levels, 4 requests each, 8-token answers, three runs of each level
TINY = ("--model", llama_cpu.MODEL_ALIAS, "--concurrency", "1,2", "--requests", "4", "--max-tokens", "8")


def sweep(base_url, label, book, *extra):
    argv = ("sweep", "--base-url", base_url, *TINY, "--repeat", "3", "--label", label, "--labbook", str(book))
    out = harness(*argv, *extra, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_practice_against_llama_server_names_what_differs(practice, tmp_path):
    kit = practice(SLOW_KIT)
    book = tmp_path / "labbook.md"
    sweep(
        kit.base_url,
        "practice",
        book,
        "--engine",
        "practice",
        "--server-slots",
        "8",
        "--context-length",
        "4096",
    )
    port = free_port()
    with llama_cpu.launcher(port, tmp_path / "llama-server.log", slots=2, ctx_per_slot=1024, threads=1):
        sweep(
            f"http://127.0.0.1:{port}/v1",
            "llama",
            book,
            "--engine",
            "llama.cpp",
            "--quant",
            "Q4_K_M",
            "--server-slots",
            "2",
            "--context-length",
            "2048",
        )
    out = harness("compare", f"{book}:practice", f"{book}:llama", "--report-dir", str(tmp_path / "cmp"))
    assert out.returncode == 0, out.stderr
    assert "==> compare: 2 runs in 1 comparable set(s)" in out.stdout
    assert (
        "What differs between the runs: engine (practice, llama.cpp); quantisation (not stated, Q4_K_M); "
        "slots (8, 2); context (4096, 2048). The charts colour by engine." in out.stdout
    )
    named = (
        "called: llama against practice (engine practice -> llama.cpp, quantisation not stated -> Q4_K_M, "
    )
    called = [line.split(": ", 2)[2] for line in out.stdout.splitlines() if named in line]
    assert any(c.startswith("TPOT p50 at c=1: ") and c.endswith("worse, called") for c in called), out.stdout
    page = (tmp_path / "cmp" / "compare.md").read_text()
    assert "### llama against practice" in page and "Differences called:" in page
    assert (tmp_path / "cmp" / "charts" / "compare-pareto.png").is_file()
