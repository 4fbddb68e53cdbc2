"""Every option of every parser is its declaration (harness/options): ``harness``'s subcommands
and Locust's user. One name is one declaration on every parser, save the homonyms listed below
with their reason, and no module outside harness/options declares a name another declares."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from harness.options import Option, ranges
from tests.conftest import ROOT
from tests.unit.options.by_hand import BY_HAND
from tests.unit.options.declared import declarations, describe, harness_parsers

# One spelling, two meanings: each declared in harness/options, each used where it means that.
HOMONYMS = {
    "--model": "the name the server reports (load, probe, measure) vs the model's files or table "
    "name (predict, engines, verify-allocation)",
    "--host": "a machine description (measure and probe, the lab scripts' name) vs the address a "
    "server binds (practice)",
    "--engine": "the engine's name for the record vs whose allocation arithmetic (predict) vs whose "
    "load log (verify-allocation): three choices of words",
    "--seed": "the client's arrivals and drawn lengths vs the practice server's profile",
    "--timeout": "one request's bound vs the wait for a local server's first completion",
    "--concurrency": "the levels a sweep runs vs the one row crosscheck matches",
    "--processes": "the sweep's worker processes (0: this one) vs Locust's own (-1: one per core)",
    "--tolerance": "gate's regression allowance (5% or 0.05) vs crosscheck's agreement share",
    "--json": "a flag (print as JSON) vs preflight's file to write the findings to",
    "--vllm": "crosscheck's vllm command vs install's pinned requirement",
    "--format": "predict's one weight format vs models' repeatable filter of formats vs export's output "
    "format (llm-d or csv)",
    "--port": "the practice server's port, where 0 asks the system for a free one, vs the port of an "
    "engine the harness starts and then waits on (1 to 65535)",
}
# Modules that imitate another program's command line (the practice server's stand-ins for
# Lemonade's CLI): their options are that program's, spelled as it spells them.
FOREIGN = {"harness/practice/imitation.py", "harness/practice/lemonade_cli.py"}


@lru_cache(maxsize=1)
def rows() -> list[dict]:
    out = [r for command, parser in harness_parsers() for r in describe(parser, command)]
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.options.declared"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out + json.loads(done.stdout)


def by_name() -> dict[str, Option]:
    import importlib
    import pkgutil

    import harness.options

    names = declarations()
    found = {}
    for info in pkgutil.iter_modules(harness.options.__path__):
        for value in vars(importlib.import_module(f"harness.options.{info.name}")).values():
            if isinstance(value, Option) and id(value) in names:
                found[names[id(value)]] = value
    return found


def expected(option: Option, command: str) -> dict:
    """What a parser made from ``option`` for ``command`` holds."""
    locust = command == "locust"
    required = command in option.required and not locust
    if option.type is bool:
        kind = "flag"
    elif locust:
        kind = "checked " + option.flag
    else:
        kind = None if option.type is str else option.type.__name__
    return {
        "flags": [option.flag, *option.aliases],
        "dest": option.dest,
        "default": repr(None if required else option.default_in(command)),
        "required": required,
        "help": option.help,
        "choices": list(option.choices) if option.choices else None,
        "type": kind,
    }


LOCUST_OWN = {"--users", "--processes"}  # Locust's own options, given a declared range only


def test_every_option_of_every_parser_is_its_declaration():
    declared = by_name()
    flags = {f for o in declared.values() for f in (o.flag, *o.aliases)}
    wrong = []
    for r in rows():
        name = max(r["flags"], key=len)
        if r["declared"] is None:
            if any(f in flags for f in r["flags"]) and r["command"] != "locust":
                wrong.append(f"{r['command']} {name}: declared by hand, but harness/options declares it")
            continue
        if name in LOCUST_OWN and r["command"] == "locust":
            continue
        option = declared[r["declared"]]
        # a set-up verb is declared under its own name (`llama-cpu serve`), the old spelling it keeps
        want = expected(option, r["command"].removeprefix("setup "))
        got = {k: r[k] for k in want}
        if got != want:
            diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
            wrong.append(f"{r['command']} {name} ({r['declared']}): parser vs declaration {diff}")
        env_ok = r["env_var"] == "LOCUST_" + option.dest.upper() and r["web"] == option.web_form
        if r["command"] == "locust" and not env_ok:
            wrong.append(f"locust {name}: env {r['env_var']}, web form {r['web']}")
    assert not wrong, "\n".join(wrong)


def test_one_name_is_one_declaration_on_every_parser():
    seen: dict[str, set[str]] = defaultdict(set)
    for r in rows():
        if r["declared"] is not None:
            for flag in r["flags"]:
                if flag.startswith("--"):
                    seen[flag].add(r["declared"])
    twice = {flag: sorted(d) for flag, d in seen.items() if len(d) > 1 and flag not in HOMONYMS}
    assert not twice, f"one name, several declarations (list a true homonym in HOMONYMS): {twice}"
    stale = {flag for flag in HOMONYMS if len(seen.get(flag, ())) < 2}
    assert not stale, f"HOMONYMS lists names that are one declaration now: {stale}"


def bare_names() -> dict[str, set[str]]:
    """Each ``add_argument("--x", ...)`` written outside harness/options: its names by module."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "harness").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        if where.startswith("harness/options/") or where in FOREIGN:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                        found[where].add(arg.value)
    return found


def test_no_option_is_declared_by_hand_outside_the_list_of_those_left():
    """A new option is declared in harness/options; the ones still written by hand are listed
    (tests/unit/options/by_hand.py), each in its one module, and the list only shrinks."""
    bare = bare_names()
    new = {
        m: sorted(names - BY_HAND.get(m, set())) for m, names in bare.items() if names - BY_HAND.get(m, set())
    }
    assert not new, f"declared by hand (declare them in harness/options): {new}"
    gone = {
        m: sorted(names - bare.get(m, set())) for m, names in BY_HAND.items() if names - bare.get(m, set())
    }
    assert not gone, f"no longer declared by hand: take them off by_hand.py: {gone}"
    declared = {f for o in by_name().values() for f in (o.flag, *o.aliases)}
    modules: dict[str, set[str]] = defaultdict(set)
    for m, names in bare.items():
        for name in names:
            modules[name].add(m)
    again = {name: sorted(w) for name, w in modules.items() if name in declared or len(w) > 1}
    assert not again, f"declared by hand where harness/options or another module declares it: {again}"


def test_every_reader_and_source_word_is_real():
    """A reader named by its path is importable and reads; the telemetry words are the sources'."""
    from harness.energy import IMITATIONS, KINDS
    from harness.energy.meter import DEFAULT_IDLE_S
    from harness.energy.sampler import DEFAULT_INTERVAL
    from harness.options import telemetry

    for option in by_name().values():
        if option.reader:  # found without importing it (the telemetry one lives beside Locust)
            module, _, name = option.reader.partition(":")
            spec = importlib.util.find_spec(module)
            assert spec and spec.origin, option.reader
            assert f"\ndef {name}(flag" in Path(spec.origin).read_text(encoding="utf-8"), option.reader
    lengths = by_name()["workload.TURNS"]
    assert ranges.problem(lengths, "fixed:2") is None and "--turns" in ranges.problem(lengths, "x")
    assert set(telemetry.SOURCE_WORDS) == set(KINDS + IMITATIONS)
    assert (telemetry.DEFAULT_IDLE_S, telemetry.DEFAULT_INTERVAL_S) == (DEFAULT_IDLE_S, DEFAULT_INTERVAL)


@pytest.mark.parametrize("flag", ["--timeout", "--request-timeout"])
def test_the_request_bound_has_one_name_and_its_old_one(flag):
    locust = [r for r in rows() if r["command"] == "locust" and flag in r["flags"]]
    sweep = [r for r in rows() if r["command"] == "sweep" and "--timeout" in r["flags"]]
    assert locust[0]["declared"] == sweep[0]["declared"] == "load.TIMEOUT"
