"""``harness summarise`` prints what a notebook holds, and a notebook is a file anyone may edit
(reliability round two, second sweep): escape sequences in a label never reach the terminal raw, and a level
with a negative time (written by hand) is skipped with a warning, never shown as a figure."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli.dispatch import main

ROOT = Path(__file__).resolve().parents[3]
LEVELS = [
    json.loads(line)
    for line in (ROOT / "tests/fixtures/notebooks/practice-run.md").read_text().splitlines()
    if '"output_tokens_per_s"' in line
]
NASTY = "red\x1b[31m label\x1b]0;title\x07\x08"


def _book(tmp_path, records) -> str:
    book = tmp_path / "book.md"
    book.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(book)


def test_escape_sequences_in_a_label_never_reach_the_terminal(tmp_path, capsys):
    book = _book(tmp_path, [{**r, "label": NASTY, "engine": "e\x1b[2Jngine"} for r in LEVELS])
    assert main(["summarise", "--labbook", book, "--list"]) == 0
    assert main(["summarise", "--labbook", book, "--label", NASTY]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err and "\x07" not in out.out and "\x08" not in out.out
    assert "red? label" in out.out  # shown, made harmless


def test_a_hand_written_negative_ttft_is_skipped_with_a_warning(tmp_path, capsys):
    first, *rest = LEVELS
    label = first["label"]
    bad = {**first, "ttft_s": {**first["ttft_s"], "p50": -0.5}}
    book = _book(tmp_path, [bad, *rest])
    assert main(["summarise", "--labbook", book, "--label", label]) == 0
    out = capsys.readouterr()
    assert "ttft_s.p50 is negative; record skipped" in out.err, out.err
    assert "-0.5" not in out.out and "-0.500" not in out.out, out.out


def test_a_label_with_a_line_break_is_skipped_never_printed_as_a_line_of_its_own(tmp_path, capsys):
    forged = "x\nPASS  every check passed"
    book = _book(tmp_path, [*LEVELS, *({**r, "label": forged} for r in LEVELS)])
    assert main(["summarise", "--labbook", book, "--list"]) == 0
    out = capsys.readouterr()
    assert "PASS  every check passed" not in out.out, out.out
    assert "label holds a line break; record skipped" in out.err, out.err
