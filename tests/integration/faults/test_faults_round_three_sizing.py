"""The fault matrix, round three: `harness capacity` against promises it
must refuse and servers that fail, die or contradict themselves during its search, and `harness
gate` against baselines it must refuse and runs unlike each other. Small: a few requests a level,
the fault matrix's short bounds. No test times a started process (tests/integration/deadlines.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.cli.dispatch import main as harness_main
from harness.records.notebook import read_records
from tests.integration.faults.hostile import DIE_AFTER, MODEL, SERVER_MESSAGE, HostileServer
from tests.integration.faults.test_faults import IDLE, TOTAL, _run

# -- capacity ---------------------------------------------------------------------------------------


def _capacity(srv, book, *extra: str):
    args = ["capacity", "--base-url", srv.base_url, "--model", MODEL, "--timeout", str(TOTAL)]
    args += ["--idle-timeout", str(IDLE), "--warmup", "0", "--labbook", str(book), "--metrics-url", "none"]
    args += ["--no-endpoint-check", "--requests", "4", *extra]
    return _run(args, 8 * TOTAL)


def _record(book) -> dict:
    result = read_records(book, "capacity", select=lambda o: o.get("record") == "capacity")
    assert not result.warnings, result.warnings
    (rec,) = result.records  # schema-valid, or the reader would have skipped it
    return rec


@pytest.mark.slow
@pytest.mark.parametrize(
    "promise, criterion",
    [("nan", "ttft-p95"), ("inf", "ttft-p95"), ("0", "e2e-p99"), ("-0.5", "ttft-p95"), ("nan", "goodput")],
)
def test_a_promise_that_is_no_time_is_refused_before_any_request(promise, criterion, tmp_path):
    """`--promise nan` sent load and judged it (p95 <= nan is never true) before the record's
    check refused it; now 0, negative, NaN and infinite promises are one line before anything."""
    book = tmp_path / "b.md"
    with HostileServer("ok") as srv:
        proc = _capacity(srv, book, "--promise", promise, "--criterion", criterion)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert err[0].startswith("harness capacity: ") and "--promise" in err[0], err
    assert srv.requests == [] and not book.exists()  # not even /v1/models was asked


@pytest.mark.slow
def test_a_promise_past_the_requests_own_cut_is_refused(tmp_path):
    with HostileServer("ok") as srv:
        proc = _capacity(srv, tmp_path / "b.md", "--promise", "2")  # TTFT is cut at the 1.5 s idle bound
    assert proc.returncode == 2 and "is not below the 1.5 s at which each request is cut" in proc.stderr
    assert srv.requests == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault, words", [("http-500", f"HTTP 500: {SERVER_MESSAGE}"), ("no-headers", "Timeout")]
)
def test_a_server_that_fails_every_request_ends_the_search_with_its_reason(fault, words, tmp_path):
    """Every request answered 500 gave "none: 1 at once already breaks the promise" and exit 0, the
    reason never shown. A run in which no request completed is no latency: the search ends there,
    the run is on disk, the reason is the last line, and the exit is 1 (as a sweep's level that
    completed nothing), never 0."""
    book = tmp_path / "b.md"
    with HostileServer(fault) as srv:
        proc = _capacity(srv, book, "--promise", "0.5", "--min-rounds", "1", "--requests", "2")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("harness capacity: the search ended without an answer: 1 at once, run 1: ")
    assert "no request of 2 completed" in last and words in last, last
    rec = _record(book)
    assert rec["stopped"] == "server" and rec["capacity"] is None and rec["reading"] == "none"
    assert rec["answer"].startswith("none known: the search ended before a level had a verdict that holds")
    assert [t["verdict"] for t in rec["tried"]] == ["error"] and words in rec["end_reason"]
    (level,) = read_records(book, "level").records
    assert level["failed"] == 2 and level["run_id"] == rec["run_id"]


@pytest.mark.slow
def test_a_server_that_dies_during_the_search_keeps_the_levels_that_passed(tmp_path):
    """The server gone after 14 requests: "none: 1 at once already breaks the promise", exit 0,
    the levels that had passed dropped (the failures pooled into them). Now the failing run ends
    the search, is never pooled, and the answer is what passed before it."""
    book = tmp_path / "b.md"
    with HostileServer("dies-after") as srv:  # c=1: 4 requests, c=2: 6, c=4: 12 (the server dies in it)
        proc = _capacity(srv, book, "--promise", "0.5", "--max-users", "8")
    assert DIE_AFTER == 14
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "kept the promise: 1 at once, 2 at once" in proc.stdout, proc.stdout
    assert "4 at once, run 1: the server failed 8 of 12 request(s)" in proc.stderr.strip().splitlines()[-1]
    rec = _record(book)
    assert (rec["capacity"], rec["reading"], rec["stopped"]) == (2, "at least", "server")
    assert [(t["level"], t["verdict"]) for t in rec["tried"]] == [(1, "pass"), (2, "pass"), (4, "error")]
    assert rec["levels_measured"] == 3 and rec["runs"] == 3
    levels = read_records(book, "level").records
    assert [(r["concurrency"], r["completed"]) for r in levels] == [(1, 4), (2, 6), (4, 4)]


@pytest.mark.slow
def test_a_server_whose_answers_contradict_each_other_ends_the_search(tmp_path):
    """The same load answered fast, slow, then fast again: one level's runs gave opposite
    verdicts, each with its whole interval on its side of the promise. No boundary drawn from
    that holds, so the search ends there with the reason (exit 1), every run on disk."""
    book = tmp_path / "b.md"
    with HostileServer("slow-window") as srv:  # chat requests 5-8 slow: c=2's first run, nothing else
        proc = _capacity(srv, book, "--promise", "0.3", "--max-users", "2", "--min-rounds", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    reason = "2 at once broke the promise in run 1 and kept it in run 2"
    assert reason in proc.stderr.strip().splitlines()[-1]
    rec = _record(book)
    assert rec["stopped"] == "contradiction" and reason in rec["end_reason"] and rec["runs"] == 4
    # the contradicted level has no verdict: its pooled runs would have read "2 at once breaks it"
    assert (rec["capacity"], rec["reading"]) == (1, "at least") and reason in rec["answer"]
    assert "kept the promise: 1 at once\n" in proc.stdout
    assert len(read_records(book, "level").records) == 4


# -- gate -------------------------------------------------------------------------------------------


def _sweep(srv, book, label, *extra: str) -> None:
    args = ["sweep", "--base-url", srv.base_url, "--model", MODEL, "--concurrency", "1", "--requests", "2"]
    args += ["--timeout", str(TOTAL), "--warmup", "0", "--labbook", str(book), "--metrics-url", "none"]
    proc = _run([*args, "--no-endpoint-check", "--repeat", "3", "--label", label, *extra], 6 * TOTAL)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three runs a side: base on a fast server, slow on one whose first token waits 0.3 s."""
    book = tmp_path_factory.mktemp("gate") / "labbook.md"
    with HostileServer("ok") as fast:
        _sweep(fast, book, "base")
    with HostileServer("ok", ttft_s=0.3) as slow:
        _sweep(slow, book, "slow")
    return book


def gate(capsys, *args: str) -> tuple[int, str, str]:
    code = harness_main(["gate", *args])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def _copy(runs, tmp_path, edit, name: str = "edited.md") -> str:
    """A notebook holding the label ``base`` of ``runs`` with each record changed by ``edit``."""
    out = tmp_path / name
    lines = []
    for line in runs.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("label") == "base":
            lines.append(json.dumps(edit(rec)))
    out.write_text("\n".join(lines) + "\n")
    return str(out)


@pytest.mark.slow
def test_the_same_run_passes_and_a_clearly_worse_one_fails(runs, capsys):
    assert gate(capsys, "--baseline", "base", "--candidate", "base", "--labbook", str(runs))[0] == 0
    code, out, _ = gate(capsys, "--baseline", "base", "--candidate", "slow", "--labbook", str(runs))
    assert code == 1 and "FAIL: worse beyond the tolerance and the noise: " in out and "TTFT p95" in out, out


def _cannot(capsys, *args: str) -> str:
    """The one line a gate that cannot decide ends with (exit 2), from stderr or stdout."""
    code, out, err = gate(capsys, *args)
    assert code == 2, out + err
    line = (err.strip() or out.strip()).splitlines()[-1]
    assert line.startswith(("harness gate: ", "    cannot decide: ")), line
    return line


@pytest.mark.slow
def test_a_baseline_that_is_missing_empty_foreign_or_a_directory_is_refused(runs, tmp_path, capsys):
    empty, folder = tmp_path / "empty.md", tmp_path / "run-dir"
    empty.write_text("")
    folder.mkdir()
    foreign = tmp_path / "foreign.md"
    foreign.write_text('{"record": "capacity", "lab": "other"}\n\x00\x01 binary \xff\n' + "prose line\n")
    samples = str(runs.with_suffix(".samples.jsonl"))
    for baseline, words in [
        (str(tmp_path / "none.md"), "no notebook or run directory at"),
        (f"{tmp_path}/gone/labbook.md:base", f"no notebook or run directory at {tmp_path}/gone"),
        (str(empty), "holds 0 labels"),
        (str(foreign), "holds 0 labels"),
        (samples, "holds 0 labels"),
        (str(folder), "is a directory with no labbook.md"),
        ("nosuchlabel", "no level records for label 'nosuchlabel'"),
        ("", "name a label"),
    ]:
        line = _cannot(capsys, "--baseline", baseline, "--candidate", "base", "--labbook", str(runs))
        assert words in line, (baseline, line)
    line = _cannot(capsys, "--baseline", "base", "--candidate", "base", "--labbook", str(folder))
    assert "is a directory with no labbook.md" in line
    shutil.copy(runs, folder / "labbook.md")  # a run directory with its notebook is read
    assert gate(capsys, "--baseline", f"{folder}:base", "--candidate", "base", "--labbook", str(runs))[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("figure", ["NaN", "1e308", "-1e300"])
def test_a_record_with_an_impossible_figure_is_refused_not_skipped(runs, tmp_path, capsys, figure):
    """A NaN or 1e308 figure in one of the label's records: the reader skips that line, and the
    gate went on deciding on the runs that were left. It now refuses (exit 2), naming the line."""
    first = []

    def spoil(rec):
        if not first:
            first.append(1)
            return {**rec, "output_tokens_per_s": "@@"}
        return rec

    path = _copy(runs, tmp_path, spoil)
    with open(path) as fh:
        text = fh.read().replace('"@@"', figure, 1)
    with open(path, "w") as fh:
        fh.write(text)
    line = _cannot(capsys, "--baseline", f"{path}:base", "--candidate", "base", "--labbook", str(runs))
    assert "1 level record(s) of 'base' are invalid" in line and f"{path}:1" in line, line


@pytest.mark.slow
@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda r: {**r, "model": "other-model"}, "model is other-model in the baseline and fake-model"),
        (lambda r: {**r, "max_tokens": 64}, "max tokens is 64 in the baseline and 128"),
        (
            lambda r: {**r, "workload": {"kind": "conversations", "turns": "fixed:3"}},
            'workload is {"kind": "conversations", "turns": "fixed:3"} in the baseline and '
            '{"kind": "prompts"}',
        ),
        (
            lambda r: {**r, "concurrency": 4},
            "the levels differ: the baseline measured c=4 and the candidate c=1",
        ),
    ],
)
def test_runs_unlike_each_other_are_refused_with_the_difference(runs, tmp_path, capsys, edit, words):
    """A conversations run against a prompt-set run passed; other models, lengths or levels are
    no comparison either."""
    path = _copy(runs, tmp_path, edit)
    line = _cannot(capsys, "--baseline", f"{path}:base", "--candidate", "base", "--labbook", str(runs))
    assert words in line, line


@pytest.mark.slow
def test_open_loop_levels_are_matched_by_offered_rate(runs, tmp_path, capsys):
    """8 requests/s against 2 requests/s exited 1 as a regression: both had one request in flight
    at peak, and the gate grouped open-loop levels by that. It matches them by offered rate."""

    def at(rate):
        return lambda r: {**r, "arrival": "fixed-rate", "rate_rps": rate}

    two, eight = _copy(runs, tmp_path, at(2.0), "two.md"), _copy(runs, tmp_path, at(8.0), "eight.md")
    line = _cannot(capsys, "--baseline", f"{two}:base", "--candidate", f"{eight}:base")
    assert "the levels differ: the baseline measured 2 req/s and the candidate 8 req/s" in line, line
    code, out, _ = gate(capsys, "--baseline", f"{two}:base", "--candidate", f"{two}:base")
    assert code == 0 and "2 req/s" in out
