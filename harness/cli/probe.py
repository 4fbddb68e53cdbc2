"""``harness probe``: the lab's feature probe (feature-probe.py's options), plus a streaming
tool-call probe. One record per server; each failure carries the exact reason."""

from __future__ import annotations

import json
import os

import requests

from harness.io.http import auth_headers
from harness.core import probes
from harness.errors import TargetUnreachable
from harness.core.records import Features, utc_stamp
from harness.io.notebook import append_record


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
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--labbook", default="labbook.md")
    p.add_argument("--print-only", action="store_true", help="print the verdicts, record nothing")
    p.set_defaults(func=run)


class _Client:
    def __init__(self, base_url: str, key: str | None, timeout: float) -> None:
        self.base, self.timeout = base_url.rstrip("/"), timeout
        self.headers = auth_headers(key)

    def get(self, path: str):
        return self._do("get", path, None)

    def post(self, path: str, body: dict, stream: bool = False):
        return self._do("post", path, body, stream)

    def _do(self, method: str, path: str, body, stream: bool = False):
        try:
            return getattr(requests, method)(
                self.base + path, json=body, headers=self.headers, timeout=self.timeout, stream=stream
            )
        except requests.ConnectionError as exc:
            raise TargetUnreachable(
                f"nothing answers at {self.base}; start the server or fix --base-url"
            ) from exc


def _reply(resp) -> tuple[int, dict | None, str]:
    try:
        return resp.status_code, resp.json(), ""
    except ValueError:
        return resp.status_code, None, resp.text[:160]


def probe_models(client: _Client) -> dict:
    status, body, text = _reply(client.get("/models"))
    ids = [m.get("id") for m in (body or {}).get("data", []) if isinstance(m, dict)] if status == 200 else []
    out = {"status": status, "supported": status == 200 and bool(ids), "model_ids": ids[:10]}
    if not out["supported"]:
        out["detail"] = f"status {status}: {text or json.dumps(body)[:160]}"
    return out


def _chat_body(args, prompt: str, **extra) -> dict:
    return {
        "model": args.model,
        "messages": [{"role": "user", "content": prompt + args.prompt_suffix}],
        "max_tokens": args.max_tokens,
        "temperature": 0,
        **extra,
    }


def probe_tools(client: _Client, args) -> dict:
    status, body, text = _reply(
        client.post(
            "/chat/completions",
            _chat_body(args, probes.TOOL_PROMPT, tools=[probes.WEATHER_TOOL], tool_choice="auto"),
        )
    )
    if status != 200 or body is None:
        return {
            "status": status,
            "supported": False,
            "detail": f"status {status}: {text or json.dumps(body)[:160]}",
        }
    return {"status": status, **probes.judge_tool_reply(body)}


def probe_streaming_tools(client: _Client, args) -> dict:
    resp = client.post(
        "/chat/completions",
        _chat_body(args, probes.TOOL_PROMPT, tools=[probes.WEATHER_TOOL], tool_choice="auto", stream=True),
        stream=True,
    )
    if resp.status_code != 200:
        return {
            "status": resp.status_code,
            "supported": False,
            "detail": f"status {resp.status_code}: {resp.text[:160]}",
        }
    events = []
    for line in resp.iter_lines():
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            try:
                events.append(json.loads(line[5:]))
            except json.JSONDecodeError:
                return {
                    "status": 200,
                    "supported": False,
                    "detail": "a stream line was not JSON: " + line[:80].decode(),
                }
    name, arguments, text, finish = probes.assemble_tool_deltas(events)
    return {"status": 200, **probes.judge_tool_call(name, arguments, text, finish)}


def probe_schema(client: _Client, args) -> dict:
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "person", "strict": True, "schema": probes.PERSON_SCHEMA},
    }
    status, body, text = _reply(
        client.post("/chat/completions", _chat_body(args, probes.PERSON_PROMPT, response_format=fmt))
    )
    if status != 200 or body is None:
        return {
            "status": status,
            "supported": False,
            "detail": f"status {status}: {text or json.dumps(body)[:160]}",
        }
    return {"status": status, **probes.judge_schema_reply(body)}


def run(args) -> int:
    key = (os.environ.get(args.api_key_env) if args.api_key_env else None) or args.api_key or None
    client = _Client(args.base_url, key, args.timeout)
    record = Features(
        engine=args.engine,
        engine_version=args.engine_version,
        host=args.host,
        model=args.model,
        base_url=args.base_url,
        models_endpoint=probe_models(client),
        tool_calling=probe_tools(client, args),
        streaming_tool_calling=probe_streaming_tools(client, args),
        structured_output=probe_schema(client, args),
        measured_on=utc_stamp(),
    ).to_dict()
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
        verdict = f"yes {json.dumps(shown[section](r))}" if r["supported"] else f"no ({r.get('detail')})"
        print(f"    {args.engine}: {title:<24} {verdict}")
    if not args.print_only:
        append_record(args.labbook, record, "features")
        print(f"    appended a features record to {args.labbook}")
    return 0
