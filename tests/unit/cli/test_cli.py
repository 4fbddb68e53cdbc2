"""The CLI: every command documented, errors in one line, `check` and `demo` against real servers."""

import subprocess
import sys

import pytest

import harness
from harness.cli import COMMANDS, build_parser, main


def test_public_api_is_small():
    assert sorted(harness.__all__) == ["HarnessError", "__version__"]


@pytest.mark.parametrize("module", COMMANDS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_command_has_help(module, capsys):
    name = module.__name__.rsplit(".", 1)[-1].replace("_", "-")
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([name, "--help"])
    assert exit_info.value.code == 0
    assert len(capsys.readouterr().out) > 100


def test_bad_profile_is_one_line_and_exit_2(capsys):
    assert main(["practice", "--profile", "no-such-profile"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("harness practice: practice profile 'no-such-profile' not found") and "\n" not in err


def test_empty_api_key_variable_is_refused(capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    assert main(["practice", "--api-key-env", "NO_SUCH_KEY_VAR"]) == 2
    assert "NO_SUCH_KEY_VAR" in capsys.readouterr().err


@pytest.mark.slow
def test_check_reports_speed_limit_and_up_down(practice, capsys):
    server = practice("kit")
    assert main(["check", "--machine", "m4-max", "--base-url", server.base_url]) == 0
    out = capsys.readouterr().out
    assert "~546 GB/s (machine table: Apple M4 Max)" in out
    assert "~111 tok/s for a 4.9 GB model" in out
    assert "mock:        UP" in out and "slots=8" in out
    server.stop()
    assert main(["check", "--machine", "spark", "--base-url", server.base_url]) == 1
    assert "DOWN" in capsys.readouterr().out


def test_unknown_machine_is_a_clear_error(capsys):
    assert main(["check", "--machine", "cray-1", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "not in" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_prints_the_crowd_table(tmp_path):
    out = subprocess.run([sys.executable, "-m", "harness.cli", "demo", "--crowds", "1,8,16", "--rounds", "1",
                          "--max-tokens", "24", "--log-dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "| crowd |" in out.stdout.replace("   ", " ").replace("  ", " ") or "crowd" in out.stdout
    assert "One copy holds 8 people within the promise" in out.stdout
