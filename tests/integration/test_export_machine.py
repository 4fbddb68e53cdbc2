"""A real sweep against the practice server, tiny: every record it writes carries this machine's
part (valid, with a reason beside each null), and ``harness export`` turns its levels into
llm-d-benchmark Benchmark Reports that pass the vendored schema and into one CSV."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import jsonschema

from harness.export import files, table
from harness.records.notebook import problems, read_records
from tests.conftest import ROOT

HARNESS = [sys.executable, "-m", "harness.cli"]


def harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, *args], cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_a_practice_sweep_records_the_machine_and_exports(practice, tmp_path):
    server = practice("kit")
    book = tmp_path / "labbook.md"
    done = harness(
        "sweep",
        "--base-url",
        server.base_url,
        "--model",
        "local-chat",
        "--labbook",
        str(book),
        "--label",
        "tiny",
        "--concurrency",
        "1,2",
        "--requests",
        "4",
        "--max-tokens",
        "8",
        "--warmup",
        "0",
        "--timeout",
        "20",
        "--engine-log",
        str(server.log),
    )
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
    lines = [json.loads(x) for x in book.read_text().splitlines() if x.startswith("{")]
    assert {r.get("record", "level") for r in lines} >= {"endpoint-check", "level"}
    for record in lines:  # every record written carries the part, and it is valid
        assert not problems(record["machine"], "machine"), record.get("record")
        assert record["machine"]["endpoint_here"] is True
        assert "host_name" not in record["machine"]
    levels = read_records(book, "level", select=lambda r: "concurrency" in r).records
    assert [r["concurrency"] for r in levels] == [1, 2]

    out = tmp_path / "br"
    done = harness("export", "--format", "llm-d", "--out", str(out), str(tmp_path))
    assert done.returncode == 0, done.stderr
    reports = sorted(out.glob("*.json"))
    assert len(reports) == 2
    validator = jsonschema.Draft202012Validator(
        files.llmd_schema(), format_checker=jsonschema.FormatChecker()
    )
    for path in reports:
        report = json.loads(path.read_text())
        assert list(validator.iter_errors(report)) == [], path
        (engine,) = report["scenario"]["stack"]
        assert engine["standardized"]["machine"]["cpu"] == levels[0]["machine"]["cpu"]
    by_level = {
        json.loads(p.read_text())["scenario"]["load"]["standardized"]["concurrency"]: p for p in reports
    }
    for level in levels:
        report = json.loads(by_level[level["concurrency"]].read_text())
        agg = report["results"]["request_performance"]["aggregate"]
        assert agg["throughput"]["output_token_rate"]["mean"] == level["output_tokens_per_s"]
        assert agg["latency"]["time_to_first_token"]["p50"] == level["ttft_s"]["p50"]
        assert agg["requests"]["total"] == level["requests"] == 4

    done = harness("export", "--format", "csv", "--out", str(tmp_path / "csv"), str(book))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "csv" / "levels.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["concurrency"]) for r in rows] == [1, 2]
    assert rows[0]["machine_cpu_model"] == (levels[0]["machine"]["cpu"]["model"] or "")
    assert float(rows[1]["output_tokens_per_s"]) == levels[1]["output_tokens_per_s"]
    assert list(rows[0]) == list(table.COLUMNS)
