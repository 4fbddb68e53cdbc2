"""A headless Locust run with ``--labbook`` writes one valid level record (the sweep's builder, the shared
default objectives) and its exact samples beside it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.records.base import DEFAULT_OBJECTIVES, UNKNOWN, is_level
from harness.records.notebook import read_records
from tests.conftest import ROOT
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow


def test_headless_run_appends_a_valid_level_record(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "locustfiles/llm_user.py"),
        "--headless",
        "-u",
        "2",
        "-r",
        "2",
        "-t",
        "3s",
        "--stop-timeout",
        "20",
        "--host",
        server.root,
        "--max-tokens",
        "8",
        "--only-summary",
        "--labbook",
        str(book),
        "--label",
        "headless",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=START_S + 3 + 20, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = read_records(book, "level", select=is_level)
    assert not result.warnings and len(result.records) == 1
    rec = result.records[0]
    assert rec["label"] == "headless" and rec["engine"] == UNKNOWN and rec["concurrency"] == 2
    assert (rec["slo_ttft_s"], rec["slo_tpot_s"]) == (DEFAULT_OBJECTIVES.ttft_s, DEFAULT_OBJECTIVES.tpot_s)
    assert list(rec)[:3] == ["lab", "harness_schema", "label"] and "arrival" not in rec
    samples = book.with_suffix(".samples.jsonl").read_text().splitlines()
    assert len(samples) == rec["requests"] and json.loads(samples[0])["label"] == "headless"
