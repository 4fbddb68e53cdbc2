"""The Locust command-line options of the harness's user (also the web UI's form fields where
``include_in_web_ui``): what to send, the two bounds of every request, and the headless-only
thresholds and notebook, and the telemetry (``harness.load.locust_energy``). Registered
on import by ``harness.load.user``."""

from __future__ import annotations

import argparse
import os

from locust import events

from harness.core.prompts import PROMPT_SETS
from harness.errors import ConfigError


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    # include_in_web_ui works on the parser itself, not on argument groups; every option can also be
    # set through its LOCUST_* environment variable (the compose services are configured that way).
    def option(name: str, **kw) -> None:
        parser.add_argument(name, env_var="LOCUST_" + name[2:].upper().replace("-", "_"), **kw)

    option("--model", default="", include_in_web_ui=True, help="model name the server reports (empty: omit)")
    option("--max-tokens", type=int, default=128, include_in_web_ui=True)
    option("--temperature", type=float, default=0.0, include_in_web_ui=True)
    option("--prompt-set", default="mixed", choices=list(PROMPT_SETS), include_in_web_ui=True)
    option("--api-base-path", default="/v1", include_in_web_ui=True, help="path before /chat/completions")
    # the workloads beyond the prompt sets (docs/workloads.md), as harness sweep has them
    option(
        "--workload",
        default="prompts",
        choices=["prompts", "conversations", "agent"],
        include_in_web_ui=True,
        help="prompts: one request each; conversations: each user holds a conversation; agent: the "
        "labs' preamble and tools, tool calls answered by tool results",
    )
    option(
        "--input-tokens",
        default="",
        include_in_web_ui=True,
        help="prompt lengths: fixed:N, uniform:LO-HI, ...",
    )
    option("--output-tokens", default="", include_in_web_ui=True, help="output lengths, each forced")
    option(
        "--turns", default="uniform:3-5", include_in_web_ui=True, help="conversations: turns per conversation"
    )
    option(
        "--message-tokens", default="uniform:40-80", include_in_web_ui=True, help="conversations: new message"
    )
    option(
        "--think-time", type=float, default=0.0, include_in_web_ui=True, help="conversations: s between turns"
    )
    option(
        "--api-key-env",
        default="LOADTEST_API_KEY",
        include_in_web_ui=False,
        help="environment variable holding the API key",
    )
    # command-line only (not on the web UI's form): thresholds are for headless runs, and the
    # notebook is chosen when the UI starts (one record per test)
    headless = {"include_in_web_ui": False}
    option(
        "--ttft-p95-max",
        type=float,
        default=0.0,
        help="headless: fail when TTFT p95 exceeds this (s)",
        **headless,
    )
    option(
        "--fail-ratio-max",
        type=float,
        default=-1.0,
        help="headless: fail above this failure ratio",
        **headless,
    )
    option(
        "--labbook",
        default="",
        help="append one level record per test (headless: the run; web UI: each test, at its "
        "stop) to this notebook, and its exact samples beside it",
        **headless,
    )
    option("--label", default="locust", help="label of that record", **headless)
    option(
        "--proof-wait",
        type=float,
        default=0.0,
        help="headless: seconds to wait for an endpoint that refuses connections before the proof fails",
        **headless,
    )
    option("--request-timeout", type=float, default=300.0, help="seconds one request may take in all")
    option("--idle-timeout", type=float, default=0.0, help="seconds without a byte (0: the request timeout)")
    # telemetry (harness.load.locust_energy): as harness sweep's, command-line only (the
    # sources are opened and the idle baseline read when Locust starts, before any test)
    option(
        "--telemetry",
        default=os.environ.get("HARNESS_TELEMETRY") or "auto",
        type=_telemetry_words,
        help="power and energy during each test (web UI: each phase): auto, none, or sources by name "
        "comma-separated (practice: the practice server's IMITATION figure); an absent one is one line",
        **headless,
    )
    option(
        "--telemetry-interval", type=float, default=0.5, help="seconds between telemetry readings", **headless
    )
    option(
        "--idle-seconds", type=float, default=2.0, help="the idle baseline's seconds (0: none)", **headless
    )
    option(
        "--subtract-idle",
        action="store_true",
        default=False,
        help="take the idle power off each record's energy before the per-token figures",
        **headless,
    )
    option("--price-per-hour", type=float, default=None, help="cost per million output tokens", **headless)
    option("--price-per-kwh", type=float, default=None, help="cost per million output tokens", **headless)


def _telemetry_words(text: str) -> str:
    """``--telemetry`` checked as it is parsed (argparse's one line for a word that is no source)."""
    from harness.io.telemetry.detect import parse_spec

    try:
        parse_spec(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--telemetry ")) from None
    return text
