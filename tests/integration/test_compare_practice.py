"""`harness compare` on real practice sweeps (separate processes): two repeated sweeps of one server
call no difference, and sweeps of other prompt lengths are said not comparable."""

from __future__ import annotations

import pytest

from tests.integration.test_sizing_practice import harness

pytestmark = pytest.mark.slow


# tiny sweeps: two levels, 8 requests each, 16-token answers
TINY = ("--model", "practice-model", "--concurrency", "2,4", "--requests", "8", "--max-tokens", "16")


def sweep(server, label, book, *extra):
    out = harness(
        "sweep", "--base-url", server.base_url, *TINY, "--label", label, "--labbook", str(book), *extra
    )
    assert out.returncode == 0, out.stderr
    return out


def test_two_repeated_sweeps_of_one_server_call_no_difference(practice, tmp_path):
    kit = practice("kit")
    first, second = tmp_path / "first", tmp_path / "second"
    for run in (first, second):
        run.mkdir()
        sweep(kit, "kit", run / "labbook.md", "--repeat", "3")
    out = harness("compare", str(first), str(second), "--report-dir", str(tmp_path / "cmp"))
    assert out.returncode == 0, out.stderr
    assert "==> compare: 2 runs in 1 comparable set(s), tolerance 5%" in out.stdout
    assert "Nothing recorded differs between the runs" in out.stdout
    assert "no difference called beyond the tolerance and the runs' spread" in out.stdout
    page = (tmp_path / "cmp" / "compare.md").read_text()
    assert "### kit (second) against kit (first)" in page
    assert "No difference called" in page and "3 runs)" in page
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert html.count("data:image/png;base64,") == 2


def test_other_prompt_lengths_are_said_not_comparable(practice, tmp_path):
    kit = practice("kit")
    book = tmp_path / "labbook.md"
    sweep(kit, "short-prompts", book, "--input-tokens", "fixed:32")
    sweep(kit, "long-prompts", book, "--input-tokens", "fixed:256")
    out = harness("compare", str(book), "--report-dir", str(tmp_path / "cmp"))
    assert out.returncode == 0, out.stderr
    assert "==> compare: 2 runs in 2 comparable set(s)" in out.stdout
    said = next(line for line in out.stdout.splitlines() if "Set 2: long-prompts" in line)
    assert "not compared with the others: different conditions: workload is" in said
    assert "fixed:32" in said and "fixed:256" in said
    page = (tmp_path / "cmp" / "compare.md").read_text()
    assert "_Nothing compared: no two runs ran alike._" in page
