"""The ``harness`` command line: one thin module per subcommand (parse, call, render), each with
``add_parser(subparsers)`` and ``run(args) -> int``; ``dispatch`` builds the parser and turns a
HarnessError into one line and an exit code."""

from harness.cli.dispatch import COMMANDS, build_parser, main, stop_on_sigterm

__all__ = ["COMMANDS", "build_parser", "main", "stop_on_sigterm"]
