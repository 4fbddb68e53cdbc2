"""A sweep's run around its levels (harness.load.sweep_run): the checks before any load in their
order, the warning for a model the server does not list, the exit status, and an interrupt after
the first level keeping the finished ones. The levels themselves run against real servers in
tests/integration; here the load is a stand-in that hands over real level records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.errors import ConfigError
from harness.load import sweep_run
from harness.load.sweep_options import plan_from
from harness.records.level import LevelRecord
from harness.report.sweep_lines import end_lines, ready_lines

ROOT = Path(__file__).resolve().parents[3]
LEVELS = [
    json.loads(line)
    for line in (ROOT / "tests/fixtures/notebooks/practice-run.md").read_text().splitlines()
    if '"output_tokens_per_s"' in line
]


def plan(tmp_path, *extra: str):
    args = build_parser().parse_args(
        ["sweep", "--model", "m", "--labbook", str(tmp_path / "book.md"), "--label", "a", *extra]
    )
    return plan_from(args)


def test_the_checks_run_in_order_and_return_the_models_listed(tmp_path, monkeypatch):
    book = tmp_path / "book.md"
    book.write_text(json.dumps({**LEVELS[0], "label": "a"}) + "\n")
    said: list[str] = []
    monkeypatch.setattr(sweep_run.sweeping, "list_models", lambda p: said.append("listed") or ["m", "n"])
    monkeypatch.setattr(sweep_run, "refuse_plain_http", lambda p: said.append("https"))
    assert sweep_run.checked(plan(tmp_path), said.append, label="a") == ["m", "n"]
    assert said[0].startswith("warning: label 'a' already has 1 level(s)") and said[1:] == ["https", "listed"]
    said.clear()
    assert sweep_run.checked(plan(tmp_path), said.append, plain_http=False) == ["m", "n"]
    assert said == ["listed"]  # no label given (--append, or a capacity search): no warning


def test_an_unwritable_samples_file_is_refused_before_the_server_is_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_run.sweeping, "list_models", lambda p: pytest.fail("the server was asked"))
    (tmp_path / "dir").mkdir()
    with pytest.raises(ConfigError, match="--samples"):
        sweep_run.checked(plan(tmp_path, "--samples", str(tmp_path / "dir")), print)


def test_a_model_the_server_does_not_list_is_a_warning():
    assert sweep_run.unlisted([], "m") is None  # a server that lists nothing says nothing
    assert sweep_run.unlisted(["m"], "m") is None
    assert sweep_run.unlisted(["a", "b"], "m") == "warning: the server lists a, b, not 'm'"


def test_the_exit_status_and_the_last_lines(tmp_path):
    p = plan(tmp_path)
    done = sweep_run.Swept([{"completed": 3}, {"completed": 2}])
    assert done.status == 0
    assert end_lines(done, p) == ([f"    appended 2 line(s) to {p.labbook}; samples in {p.samples_path}"], [])
    none = sweep_run.Swept([{"completed": 3}, {"completed": 0}])
    assert none.status == sweep_run.NO_REQUEST == 1
    assert end_lines(none, p)[1] == ["    at least one level completed no request; see its first error above"]
    cut = sweep_run.Swept([{"completed": 0}], interrupted=True)
    assert cut.status == sweep_run.INTERRUPTED == 130
    assert end_lines(cut, p) == ([], [f"\n    interrupted: 1 finished level(s) are in {p.labbook}"])


def test_the_workers_are_named_once_the_first_level_starts(tmp_path):
    assert ready_lines(plan(tmp_path)) == []
    assert ready_lines(plan(tmp_path, "--processes", "2")) == ["    load from 2 Locust worker process(es)"]


class Heard:
    """A view that keeps what it hears, in order."""

    def __init__(self) -> None:
        self.heard: list = []

    def before_levels(self) -> None:
        self.heard.append("before")

    def ready(self) -> None:
        self.heard.append("ready")

    def progress(self, level, p) -> None:
        self.heard.append("progress")

    def level(self, record: dict, previous: dict | None) -> None:
        self.heard.append((record["concurrency"], previous and previous["concurrency"]))


def record(r: dict) -> LevelRecord:
    class Written:
        def to_dict(self) -> dict:
            return r

    return Written()  # type: ignore[return-value]


def test_an_interrupt_after_the_first_level_keeps_the_finished_ones(tmp_path, monkeypatch):
    def two_then_ctrl_c(p, on_level, on_ready, on_progress=None, meter=None):
        on_ready()
        on_level(record(LEVELS[0]))
        on_level(record(LEVELS[1]))
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run.sweeping, "run_levels", two_then_ctrl_c)
    view = Heard()
    swept = sweep_run._levels(plan(tmp_path), view, None)
    assert swept.interrupted and swept.written == LEVELS[:2] and swept.status == 130
    first, second = LEVELS[0]["concurrency"], LEVELS[1]["concurrency"]
    assert view.heard == ["before", "ready", (first, None), (second, first)]


def test_an_interrupt_during_the_warm_up_propagates(tmp_path, monkeypatch):
    def ctrl_c(p, on_level, on_ready, on_progress=None, meter=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run.sweeping, "run_levels", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        sweep_run._levels(plan(tmp_path), Heard(), None)
