"""Every numeric option of the Locust path checked before anything starts, one line each, under the
limits the sweep's own options have (``harness.core.bounds``):

* on Locust's command line and its ``LOCUST_*`` variables, as they are parsed: argparse prints
  ``locust: error: argument --request-timeout: takes a number from 0.001 to 604800, got 0`` and
  exits with status 2, before ``--processes`` forks or any user starts;
* on the web UI's form, when a test is started: the form answers with the same line and nothing
  starts (Locust itself would take ``max_tokens=-5``, or fail with a traceback on ``abc``).

Both locustfiles import it; it imports ``harness.load.options`` first, whose options it checks.
"""

from __future__ import annotations

import argparse
import os

from locust import events

import harness.load.options  # noqa: F401  (adds the options checked below: its listener runs first)
from harness.core import bounds
from harness.errors import ConfigError

# option: (lowest, highest, whole number); Locust's own --users and --processes included
LIMITS: dict[str, tuple[float, float, bool]] = {
    "--users": (0, bounds.MAX_CONCURRENCY, True),
    "--processes": (-1, 4 * (os.cpu_count() or 1), True),  # -1: one per core (Locust's meaning)
    "--max-tokens": (2, bounds.MAX_TOKENS, True),
    "--temperature": (0, 10, False),
    "--request-timeout": (1e-3, bounds.MAX_SECONDS, False),
    "--idle-timeout": (0, bounds.MAX_SECONDS, False),  # 0: the request timeout
    "--ttft-p95-max": (0, bounds.MAX_SECONDS, False),  # 0: no threshold
    "--fail-ratio-max": (-1, 1, False),  # negative: no threshold
    "--proof-wait": (0, bounds.MAX_SECONDS, False),  # 0: no wait for a refusing endpoint
    "--think-time": (0, bounds.MAX_SECONDS, False),
    "--telemetry-interval": (0.05, 60, False),  # as harness sweep's
    "--idle-seconds": (0, 600, False),
    "--price-per-hour": (0, 1e9, False),
    "--price-per-kwh": (0, 1e9, False),
}
# length-distribution options (harness.core.workloads), checked by reading them
SPECS = ("--input-tokens", "--output-tokens", "--turns", "--message-tokens")
# the web UI form's field names (an option's dest; Locust's form calls --users "user_count")
FORM_FIELDS = {"user_count": "--users", **{flag[2:].replace("-", "_"): flag for flag in LIMITS}}
SPEC_FIELDS = {flag[2:].replace("-", "_"): flag for flag in SPECS}


def spec_type(flag: str):
    """An argparse type for a length spec: the text when it reads (a file's counts included)."""

    def parse(text: str) -> str:
        from harness.load.specs import lengths_from

        try:
            lengths_from(flag, text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(
                str(exc).removeprefix(flag + " ").removeprefix(flag + ": ")
            ) from None
        return text

    return parse


@events.init_command_line_parser.add_listener
def _checked_types(parser) -> None:
    # argparse has no public way to reach an argument already added (Locust adds --users and
    # --processes itself), so the type of each action named in LIMITS is replaced here.
    for action in parser._actions:
        for flag in action.option_strings:
            if flag in LIMITS:
                action.type = bounds.option_type(flag, *LIMITS[flag])
            elif flag in SPECS:
                action.type = spec_type(flag)


def form_problem(form) -> str | None:
    """The first field of a web UI start form outside its option's range, as one line, or None."""
    for field, flag in FORM_FIELDS.items():
        text = form.get(field)
        if text is None or (field == "user_count" and text == ""):
            continue
        try:
            bounds.option_type(flag, *LIMITS[flag])(text)
        except argparse.ArgumentTypeError as exc:
            return f"{flag} {exc}"
    for field, flag in SPEC_FIELDS.items():
        text = form.get(field)
        if text:
            try:
                spec_type(flag)(text)
            except argparse.ArgumentTypeError as exc:
                return f"{flag} {exc}"
    return None


@events.init.add_listener
def _check_web_form(environment, web_ui=None, **_kw) -> None:
    if web_ui is None:
        return
    from flask import jsonify, request

    @web_ui.app.before_request
    def check_swarm_form():
        if request.method == "POST" and request.path.endswith("/swarm"):
            problem = form_problem(request.form)
            if problem:
                return jsonify({"success": False, "message": problem, "host": environment.host})
        return None
