"""``harness probe``: the lab's feature probe (feature-probe.py's options), plus a streaming
tool-call probe. One record per server; each failure carries the exact reason (the requests are
``harness.run.probe_requests``'s)."""

from __future__ import annotations

import json
import os

from harness.core import bounds
from harness.core.server_text import safe_text
from harness.io.notebook import append_record, check_writable
from harness.run import probe_requests


def add_parser(sub) -> None:
    p = sub.add_parser(
        "probe", help="which API features a server really delivers (drop-in for feature-probe.py)"
    )
    p.add_argument("--engine", required=True, help="engine name for the notebook")
    p.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    p.add_argument("--model", required=True, help="model name to send")
    p.add_argument("--api-key", default="", help="bearer token (prefer --api-key-env; never recorded)")
    p.add_argument("--api-key-env", help="environment variable holding the bearer token")
    p.add_argument("--engine-version", default="")
    p.add_argument("--host", default="", help="short description of the machine")
    p.add_argument("--prompt-suffix", default=" /no_think", help="appended to the probe prompts")
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one request may take in all")
    p.add_argument(
        "--idle-timeout", type=float, help="seconds a request may go without a byte (default: --timeout)"
    )
    p.add_argument("--labbook", default="labbook.md")
    p.add_argument("--print-only", action="store_true", help="print the verdicts, record nothing")
    p.set_defaults(func=run)


def run(args) -> int:
    key = (os.environ.get(args.api_key_env) if args.api_key_env else None) or args.api_key or None
    bounds.number("--max-tokens", args.max_tokens, 1, bounds.MAX_TOKENS, whole=True)
    if not args.print_only:
        check_writable(args.labbook)
    record = probe_requests.features(args, key)
    shown = {
        "models_endpoint": lambda r: r["model_ids"],
        "tool_calling": lambda r: {r.get("called"): r.get("arguments")},
        "streaming_tool_calling": lambda r: {r.get("called"): r.get("arguments")},
        "structured_output": lambda r: r.get("value"),
    }
    for section, title in (
        ("models_endpoint", "/v1/models"),
        ("tool_calling", "tool calling"),
        ("streaming_tool_calling", "tool calling, streamed"),
        ("structured_output", "JSON schema"),
    ):
        r = record[section]
        verdict = (
            f"yes {json.dumps(shown[section](r))}" if r["supported"] else f"no ({safe_text(r.get('detail'))})"
        )
        print(f"    {args.engine}: {title:<24} {verdict}")
    if not args.print_only:
        append_record(args.labbook, record, "features")
        print(f"    appended a features record to {args.labbook}")
    return 0
