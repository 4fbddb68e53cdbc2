"""What every ``harness`` command does with the options it was given, before it runs: a base URL
without a path given the API path, each declared option checked against its range, the machine
part's settings applied, a key on the command line kept out of every output (and warned about),
and the URLs' form checked. Each problem is one ConfigError line."""

from __future__ import annotations

import argparse
from typing import Callable

from harness import options
from harness.endpoints.http_client import check_base_url
from harness.machine import probe as machine_probe
from harness.options.parser import with_api_path
from harness.safe_text import keep_secret


def with_base_path(args: argparse.Namespace) -> str | None:
    """``--base-url`` given without a path takes ``/v1``, the same URL form for every command;
    the line that says so, or None when it had a path (or the command takes no base URL)."""
    given = getattr(args, "base_url", None)
    if isinstance(given, str) and with_api_path(given) != given:
        args.base_url = with_api_path(given)
        return f"    --base-url {given} has no path: using {args.base_url}"
    return None


def apply(parser: argparse.ArgumentParser, args: argparse.Namespace, warn: Callable[[str], None]) -> None:
    """Every declared option in its range, the machine part's settings (``--engine-log``,
    ``--record-host-name``), a key given with ``--api-key`` kept secret with a warning to ``warn``
    (``ps`` shows it to every user), then ``--base-url`` and ``--metrics-url`` in a usable form."""
    options.check_parsed(parser, args)
    machine_probe.configure(getattr(args, "engine_log", None), getattr(args, "record_host_name", False))
    if isinstance(getattr(args, "api_key", None), str) and args.api_key:
        keep_secret(args.api_key)
        warn(
            f"harness {args.command}: warning: --api-key puts the key on the command line, where "
            "`ps` shows it to every user of this machine; export it and pass --api-key-env NAME"
        )
    for name in ("base_url", "metrics_url"):
        if isinstance(getattr(args, name, None), str) and getattr(args, name) not in ("", "none"):
            check_base_url(getattr(args, name), "--" + name.replace("_", "-"))
