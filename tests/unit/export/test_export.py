"""Export: every level of the fixture notebooks (old records, no machine part) as llm-d-benchmark
Benchmark Reports that pass the vendored schema, and as one CSV; the vendored schema is the file
its SOURCE.md names."""

from __future__ import annotations

import csv
import hashlib
import json

import jsonschema
import pytest

from harness import paths
from harness.records.base import is_level
from harness.errors import ConfigError
from harness.export import files, llmd, table
from harness.records.notebook import read_records
from tests.conftest import FIXTURES

NOTEBOOKS = sorted(
    p for p in (FIXTURES / "notebooks").iterdir() if read_records(p, "level", select=is_level).records
)
VENDOR = paths.schemas_dir() / "vendor" / "llm-d-benchmark"


def test_the_vendored_schema_is_the_one_source_md_names():
    body = (VENDOR / "br_v0_2_1_json_schema.json").read_bytes()
    assert hashlib.sha256(body).hexdigest() in (VENDOR / "SOURCE.md").read_text(encoding="utf-8")
    assert files.llmd_schema()["title"] == "Benchmark Report v0.2.1"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_fixture_level_exports_as_a_valid_report(notebook, tmp_path):
    levels = read_records(notebook, "level", select=is_level).records
    done = files.export([str(notebook)], "llm-d", str(tmp_path))
    assert done.levels == len(levels) == len(done.files)
    validator = jsonschema.Draft202012Validator(files.llmd_schema())
    for path, level in zip(done.files, levels, strict=True):
        report = json.loads(path.read_text(encoding="utf-8"))
        assert list(validator.iter_errors(report)) == []
        agg = report["results"]["request_performance"]["aggregate"]
        assert agg["requests"]["total"] == level["requests"]
        assert agg["throughput"]["output_token_rate"]["mean"] == level["output_tokens_per_s"]
        ttft = agg["latency"].get("time_to_first_token")
        if level["ttft_s"].get("mean") is None:
            assert ttft is None  # no mean recorded: no statistic made up
        else:
            assert ttft["p90"] == level["ttft_s"]["p90"] and ttft["units"] == "s"


def test_a_figure_the_level_lacks_is_left_out_not_zero():
    level = read_records(FIXTURES / "notebooks" / "practice-run.md", "level", select=is_level).records[0]
    level = {k: v for k, v in level.items() if k not in ("itl_s", "prompt_tokens_mean", "e2e_s")}
    report = llmd.report(level, "0")
    assert "inter_token_latency" not in report["results"]["request_performance"]["aggregate"]["latency"]
    assert "load" not in report["scenario"]  # the schema needs a prompt length: no guess
    assert files.llmd_problems(report) == []
    cells = dict(zip(table.COLUMNS, table.row(level), strict=True))
    assert cells["itl_p50_s"] is None and cells["prompt_tokens_mean"] is None


def test_csv_has_one_header_and_units_in_its_names(tmp_path):
    done = files.export([str(p) for p in NOTEBOOKS], "csv", str(tmp_path))
    (path,) = done.files
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(table.COLUMNS) and len(rows) == 1 + done.levels
    assert all(c.endswith(("_s", "_per_s", "_bytes")) for c in rows[0] if c.startswith(("ttft", "wall")))


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="name a run directory"):
        files.export([str(tmp_path / "none")], "csv", str(tmp_path))
    (tmp_path / "labbook.md").write_text("prose only\n")
    with pytest.raises(ConfigError, match="no level records"):
        files.export([str(tmp_path)], "llm-d", str(tmp_path / "out"))
