"""The CLI: every command documented, errors in one line, `check` and `demo` against real servers."""

import pytest

import harness
from harness.cli import build_parser, commands, main
from harness.cli.commands import NAMES
from harness.cli import setup


def test_public_api_is_small():
    assert sorted(harness.__all__) == ["HarnessError", "__version__"]


@pytest.mark.parametrize("name", NAMES)
def test_every_command_has_help(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([name, "--help"])
    assert exit_info.value.code == 0
    assert len(capsys.readouterr().out) > 100


@pytest.mark.parametrize("name", setup.NAMES)
@pytest.mark.parametrize("spelling", [["setup"], []], ids=["setup", "old"])
def test_every_set_up_verb_has_help_under_both_spellings(name, spelling, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*spelling, name, "--help"])
    assert exit_info.value.code == 0
    assert len(capsys.readouterr().out) > 100


LINES = (
    ["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--concurrency", "1,4"],
    ["summarise", "--labbook", "runs/x/labbook.md", "--list", "--markdown"],
    ["setup", "models", "--dry-run"],
    ["models", "--dry-run"],
    ["practice", "--port", "0"],
)


@pytest.mark.parametrize("argv", LINES, ids=lambda argv: argv[0])
def test_a_command_line_loads_its_own_command_alone_and_parses_the_same(argv, monkeypatch):
    loaded = []
    load = commands.load
    monkeypatch.setattr(commands, "load", lambda name, *rest: loaded.append(name) or load(name, *rest))
    alone = vars(build_parser(argv).parse_args(argv))
    assert loaded == ["setup" if argv[0] in setup.NAMES else argv[0]]
    whole = vars(build_parser().parse_args(argv))
    assert {k: v for k, v in alone.items() if k != "_subparsers"} == {
        k: v for k, v in whole.items() if k != "_subparsers"
    }


def test_a_command_line_naming_no_command_gets_every_command():
    choices = build_parser(["--help"])._subparsers._group_actions[0].choices
    assert set(NAMES) | set(setup.NAMES) <= set(choices)


def test_an_old_spelling_says_the_new_one_and_runs(capsys, tmp_path):
    dry = ["--dry-run", "--format", "gguf", "--library", str(tmp_path)]
    assert main(["models", *dry]) == 0
    out, err = capsys.readouterr()
    assert err == "harness: 'models' is now 'setup models'\n"
    assert main(["setup", "models", *dry]) == 0
    again, err = capsys.readouterr()
    assert again == out and "would run: hf download" in out and err == ""


def _subparsers():
    import argparse

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


@pytest.mark.parametrize("name", sorted(_subparsers()))
def test_every_help_states_every_default(name):
    """Each option with a default to state says it in --help, in the help's own words or ours."""
    parser = _subparsers()[name]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        d = action.default
        if not action.option_strings or d is None or d is False or d in ("", []) or action.dest == "help":
            continue
        d = " ".join(str(d).split())  # as the help wraps it
        shown = f"default: {d}" in text or f"(default {d})" in text or "default" in (action.help or "")
        assert shown, f"harness {name} {action.option_strings[0]}: default {d!r} not shown"


def test_bad_profile_is_one_line_and_exit_2(capsys):
    assert main(["practice", "--profile", "no-such-profile"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness practice: practice profile 'no-such-profile' not found")
    assert "\n" not in err


def test_empty_api_key_variable_is_refused(capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    assert main(["practice", "--api-key-env", "NO_SUCH_KEY_VAR"]) == 2
    assert "NO_SUCH_KEY_VAR" in capsys.readouterr().err


def test_unknown_machine_is_a_clear_error(capsys):
    assert main(["check", "--machine", "cray-1", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "not in" in capsys.readouterr().err


def test_version_is_the_one_declared_flag_and_runs_nothing_else(monkeypatch, capsys):
    loaded = []  # nor loads any command's module: each is added by name
    monkeypatch.setattr(commands, "load", lambda name, *rest: loaded.append(name))
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"harness {harness.__version__}\n" and loaded == []
    monkeypatch.undo()
    from harness.options.shared import VERSION

    (action,) = [a for a in build_parser()._actions if "--version" in a.option_strings]
    assert getattr(action, "option", None) is VERSION


def test_the_lemonade_cli_takes_the_services_address_and_context(monkeypatch):
    from harness.practice import imitation, lemonade_cli

    monkeypatch.setenv("LEMONADE_PORT", "13999")
    said: list[str] = []
    assert lemonade_cli.main(["lemonade", "--version"], said.append) == 0
    assert said == [f"lemonade practice imitation, harness {harness.__version__}"]
    got = lemonade_cli._parser().parse_known_args(["load", "m", "--ctx-size", "8192"])[0]
    service = imitation.read_command(["lemond", "--pulled", "m", "--ctx-size", "8192"])
    assert (got.host, got.port, got.ctx_size) == (service.host, service.port, service.ctx)
    assert (service.host, service.port, service.ctx) == ("127.0.0.1", 13999, 8192)
