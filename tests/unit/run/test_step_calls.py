"""Every step call of every track (and tier) is a valid ``harness`` command line that gives back
its own options: ``to_argv()`` parsed by the real parser yields the call's subcommand, and each
option's value as that subcommand's argument would convert it. The contexts are those of a
started engine (version, pid and admission level known), as in a real run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.run.context import block_context
from harness.run.plans import load_plan
from harness.run.steps import StepCall, step_calls

CASES = [
    ("cpu", None),
    ("s", None),
    ("x", None),
    ("n", "24gb"),
    ("n", "16gb"),
    ("m", "32gb"),
    ("m", "16gb"),
    ("day3", None),
]
RUN_DIR = Path("/tmp/step-calls")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def all_calls(track: str, tier: str | None) -> list[tuple[str, StepCall]]:
    plan = load_plan(track, tier)
    contexts = {}
    for block in plan.blocks.values():
        ctx = block_context(plan, block, RUN_DIR, dry_run=True)
        ctx.state.version, ctx.state.pid, ctx.state.admission_level = "version: b1234", 4321, "10"
        contexts[block.id] = ctx
    return [
        (step.id, c)
        for step in plan.steps
        for c in step_calls(
            plan, RUN_DIR, RUN_DIR / "labbook.md", step, contexts[step.block.id] if step.block else None
        )
    ]


def expected(action: argparse.Action, value):
    """What argparse stores for this option given ``value`` (a string, True, or several strings)."""
    if value is True:
        return action.const if action.const is not None else True
    convert = action.type or (lambda x: x)
    if isinstance(value, tuple):
        return [convert(v) for v in value]
    converted = convert(value)
    return [converted] if isinstance(action, argparse._AppendAction) else converted


@pytest.mark.parametrize("track,tier", CASES, ids=[f"{t}-{x}" if x else t for t, x in CASES])
def test_every_step_call_round_trips_through_the_harness_parser(track, tier):
    parser = build_parser()
    sub = subparsers(parser)
    calls = all_calls(track, tier)
    assert calls, "the plan has no harness steps"
    for step_id, c in calls:
        args = parser.parse_args(c.to_argv())
        group, *verb = c.command.split()  # `setup models`: the group, then its verb
        assert [args.command, *([args.thing] if verb else [])] == [group, *verb], step_id
        assert getattr(args, "renamed", None) is None, f"{step_id}: an old spelling ({c.command})"
        command = subparsers(sub[group])[verb[0]] if verb else sub[group]
        flags = {s: a for a in command._actions for s in a.option_strings}
        for name, value in dict(c.options).items():
            action = flags["--" + name.replace("_", "-")]
            assert getattr(args, action.dest) == expected(action, value), (step_id, name)


def test_to_argv_spells_flags_values_and_pairs():
    c = StepCall("summarise", (("labbook", "lab.md"), ("compare", ("a", "b")), ("record", True)))
    assert c.to_argv() == ["summarise", "--labbook", "lab.md", "--compare", "a", "b", "--record"]
    assert c.line() == "harness summarise --labbook lab.md --compare a b --record"
    c = StepCall("setup models", (("track", "m"),))
    assert c.to_argv() == ["setup", "models", "--track", "m"] and c.line() == "harness setup models --track m"


def test_an_admission_with_search_runs_harness_capacity_from_the_chosen_level():
    calls = dict(all_calls("day3", None))
    search = calls["practice/admission:day3-practice-capacity"]
    argv = search.to_argv()
    assert argv[0] == "capacity"
    opts = dict(search.options)
    assert (opts["start"], opts["promise"], opts["peak"], opts["spares"]) == ("10", "0.5", "120", "0.2")
    assert opts["prompt_set"] == "mixed" and "requests" not in opts and "from" not in opts
    plain = dict(all_calls("cpu", None))["llama/admission:llama-admission"]
    assert plain.command == "sweep" and dict(plain.options)["concurrency"] == "10"
