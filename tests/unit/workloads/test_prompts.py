"""Prompt sets: what each kind shares and what it never shares, and prompt files."""

from __future__ import annotations

import json
import os

import pytest

from harness.workloads import prompts
from harness.workloads.prompts import PREAMBLE, PROMPT_SETS, QUESTIONS, SHORT, make_prompts
from harness.errors import ConfigError
from harness.workloads.files import load_prompt_file


@pytest.mark.parametrize("kind", PROMPT_SETS)
def test_every_set_gives_the_count_asked(kind):
    assert len(make_prompts(kind, 11)) == 11
    assert make_prompts(kind, 0) == []


def test_mixed_prompts_are_tagged_so_none_repeats():
    out = make_prompts("mixed", 2 * len(SHORT))
    assert len(set(out)) == len(out)  # the same text comes round again behind a new tag
    assert out[0].endswith(SHORT[0]) and out[len(SHORT)].endswith(SHORT[0])
    assert all(p.startswith("Request ") for p in out)


def test_shared_prefix_repeats_exactly_and_unique_prefix_differs_from_the_start():
    shared = make_prompts("shared-prefix", len(QUESTIONS) + 1)
    assert shared[0] == shared[len(QUESTIONS)]  # no tag: the whole text can be cached
    assert all(p.startswith(PREAMBLE) for p in shared)
    unique = make_prompts("unique-prefix", 2)
    assert unique[0] != unique[1] and unique[0][:8] == "Request "
    # the tags (random hex) differ in their first line, straight after "Request " (a shared first
    # hex digit or two is chance, 1 in 16 per digit: not asserted)
    assert unique[0].split("\n", 1)[0] != unique[1].split("\n", 1)[0]
    assert len(os.path.commonprefix(unique)) < len("Request ") + 16
    assert unique[0].split("\n", 1)[1] == shared[0]  # the control is the same text behind one tag line


def test_preamble_is_long_and_lists_its_tools_as_json():
    assert len(PREAMBLE.split()) > 500  # about 1,400 tokens
    tools = json.loads(PREAMBLE.split("Tools:\n", 1)[1])
    assert len(tools) == 20 and {"tool", "purpose", "arguments"} == set(tools[0])


def test_mixed_long_takes_every_fourth_from_long():
    out = make_prompts("mixed-long", 8)
    long_ones = [i for i, p in enumerate(out) if PREAMBLE in p]
    assert long_ones == [3, 7]


def test_unknown_set_is_a_config_error_naming_the_sets(monkeypatch):
    with pytest.raises(ConfigError, match="unknown prompt set 'lots'.*mixed, shared-prefix"):
        make_prompts("lots", 1)
    monkeypatch.setattr(prompts, "_tag", lambda: "Request fixed.")
    assert make_prompts("mixed", 2) == [f"Request fixed. {SHORT[0]}", f"Request fixed. {SHORT[1]}"]


def test_prompt_file_reads_prompts_and_last_user_messages_and_cycles(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(
        json.dumps({"prompt": "one"})
        + "\n\n"
        + json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": "x"},
                    {"role": "user", "content": "two"},
                ]
            }
        )
        + "\n"
    )
    assert load_prompt_file(path, 5) == ["one", "two", "one", "two", "one"]


@pytest.mark.parametrize(
    "content, words",
    [
        ("{not json\n", "p.jsonl:1: not valid JSON"),
        (
            '{"prompt": "ok"}\n{"messages": [{"role": "system", "content": "s"}]}\n',
            "p.jsonl:2: needs a 'prompt'",
        ),
        ('["a list"]\n', "p.jsonl:1: needs a 'prompt'"),
        ("\n\n", "holds no prompts"),
    ],
)
def test_bad_prompt_files_name_the_line(tmp_path, content, words):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    with pytest.raises(ConfigError, match=words):
        load_prompt_file(path, 1)
    with pytest.raises(ConfigError, match="not found"):
        load_prompt_file(tmp_path / "missing.jsonl", 1)
