"""What every command does with the options it was given before it runs (harness.options.given):
a base URL without a path takes /v1 and says so, a key on the command line is hidden and warned
about, and a URL that would leak or lose a part is refused in one line."""

from __future__ import annotations

import pytest

from harness.cli import build_parser
from harness.errors import ConfigError
from harness.options import given
from harness.safe_text import redact


def parsed(*argv: str):
    parser = build_parser()
    return parser, parser.parse_args(list(argv))


def test_a_base_url_without_a_path_takes_v1_and_says_so():
    _, args = parsed("sweep", "--model", "m", "--base-url", "http://127.0.0.1:8000")
    assert (
        given.with_base_path(args)
        == "    --base-url http://127.0.0.1:8000 has no path: using http://127.0.0.1:8000/v1"
    )
    assert args.base_url == "http://127.0.0.1:8000/v1"
    assert given.with_base_path(args) is None  # it has a path now
    _, args = parsed("summarise", "--list")
    assert given.with_base_path(args) is None  # no base URL at all


def test_a_key_on_the_command_line_is_hidden_and_warned_about():
    parser, args = parsed(
        "measure", "--engine", "e", "--model", "m", "--api-key", "sk-given-on-the-line-1234"
    )
    said: list[str] = []
    given.apply(parser, args, said.append)
    assert len(said) == 1 and said[0].startswith(
        "harness measure: warning: --api-key puts the key on the command line"
    )
    assert "sk-given-on-the-line-1234" not in redact("key sk-given-on-the-line-1234", anyone=False)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--base-url", "http://user:pw@127.0.0.1:8000/v1"], "carries a user name or password"),
        (["--metrics-url", "http://127.0.0.1:8000/metrics?x=1"], "--metrics-url"),
        (["--concurrency", "0"], "--concurrency"),
    ],
)
def test_what_every_command_refuses_is_one_line(argv, words):
    parser, args = parsed("sweep", "--model", "m", *argv)
    with pytest.raises(ConfigError, match=words.replace("?", r"\?")):
        given.apply(parser, args, lambda line: pytest.fail(f"warned: {line}"))
