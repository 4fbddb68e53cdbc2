"""``harness probe``: the lab's feature probe (feature-probe.py's options), plus a streaming
tool-call probe. One record per server; each failure carries the exact reason (the requests are
``harness.endpoints.probe_requests``'s)."""

from __future__ import annotations

import json
import os

from harness import options
from harness.options.load import BASE_URL, IDLE_TIMEOUT, MAX_TOKENS, TIMEOUT
from harness.options.record import ENGINE, ENGINE_VERSION
from harness.options.shared import API_KEY, API_KEY_ENV, LABBOOK, MACHINE_DESC, MODEL, PRINT_ONLY
from harness.options.single_user import PROMPT_SUFFIX
from harness.safe_text import safe_text
from harness.records.engine import FEATURES, VERDICT, Features
from harness.records.notebook import append_record, check_writable
from harness.endpoints import probe_requests


def add_parser(sub) -> None:
    p = sub.add_parser(
        "probe", help="which API features a server really delivers (drop-in for feature-probe.py)"
    )
    options.to_argparse(
        p, ENGINE, BASE_URL, MODEL, API_KEY, API_KEY_ENV, ENGINE_VERSION, MACHINE_DESC, command="probe"
    )
    options.to_argparse(p, PROMPT_SUFFIX, command="probe")
    options.to_argparse(p, MAX_TOKENS, TIMEOUT, IDLE_TIMEOUT, LABBOOK, PRINT_ONLY, command="probe")
    p.set_defaults(func=run)


def run(args) -> int:
    key = (os.environ.get(args.api_key_env) if args.api_key_env else None) or args.api_key or None
    options.check(args, MAX_TOKENS, TIMEOUT, IDLE_TIMEOUT)
    if not args.print_only:
        check_writable(args.labbook)
    record = probe_requests.features(args, key)
    shown = (  # each verdict's key, its title, and what a supported one shows
        (FEATURES.models_endpoint, "/v1/models", lambda r: r["model_ids"]),
        (FEATURES.tool_calling, "tool calling", lambda r: {r.get("called"): r.get("arguments")}),
        (
            FEATURES.streaming_tool_calling,
            "tool calling, streamed",
            lambda r: {r.get("called"): r.get("arguments")},
        ),
        (FEATURES.structured_output, "JSON schema", lambda r: r.get("value")),
    )
    for section, title, show in shown:
        r = record[section]
        verdict = (
            f"yes {json.dumps(show(r))}"
            if r[VERDICT.supported]
            else f"no ({safe_text(r.get(VERDICT.detail))})"
        )
        print(f"    {args.engine}: {title:<24} {verdict}")
    if not args.print_only:
        append_record(args.labbook, record, Features.KIND)
        print(f"    appended a features record to {args.labbook}")
    return 0
