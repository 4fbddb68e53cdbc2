"""The feature probe's requests: /v1/models, a tool call, a streamed tool call and a JSON-schema
answer, each judged (``harness.endpoints.probes``) into a verdict that keeps the server's own words when
it fails. A server that never answers or trickles ends at the bounds, as a finding, not a hang."""

from __future__ import annotations

import json
from contextlib import suppress

from harness.endpoints import probes
from harness.bounds import Bounds
from harness.records.engine import VERDICT, Features
from harness.safe_text import redact, redact_tree, safe_text
from harness.measure.stream import error_message
from harness.errors import TargetError, TargetUnreachable
from harness.records.clock import now_stamp
from harness.endpoints.http_client import (
    MAX_BODY,
    READ_ERRORS,
    Reply,
    auth_headers,
    chat_headers,
    failure,
    opened,
    request,
)


def _failed(status: int | None, detail: str) -> dict:
    """A probe's verdict where the server did not deliver: its status and the exact reason."""
    return {VERDICT.status: status, VERDICT.supported: False, VERDICT.detail: detail}


class Client:
    """The probe's requests, through the one HTTP helper under both bounds: a server that never
    answers or trickles ends at the bound, as a finding in the record, not a hang."""

    def __init__(self, base_url: str, key: str | None, timeout: float, idle: float | None = None) -> None:
        self.base, self.bounds = base_url.rstrip("/"), Bounds.of(timeout, idle)
        self.headers = auth_headers(key)

    def get(self, path: str) -> Reply:
        return self._do("GET", path, None)

    def post(self, path: str, body: dict) -> Reply:
        return self._do("POST", path, body)

    def _do(self, method: str, path: str, body) -> Reply:
        try:
            return request(method, self.base + path, self.bounds, payload=body, headers=self.headers)
        except TargetUnreachable:
            raise
        except TargetError as exc:  # past a bound, reset, garbage: the server's failure, recorded
            return Reply(0, {}, str(exc).encode())

    def stream(self, path: str, body: dict) -> tuple[int, list[bytes], str]:
        """Status, every body line, and the error that cut the stream ('' when none)."""
        lines: list[bytes] = []
        fired = False
        payload = json.dumps(body).encode()
        try:
            with opened("POST", self.base + path, self.bounds, payload, chat_headers(None, self.headers)) as (
                resp,
                dog,
            ):
                try:
                    if resp.status != 200:
                        return resp.status, [resp.read(MAX_BODY)], ""
                    while not dog.expired() and (line := resp.readline(MAX_BODY)):
                        lines.append(line.strip())
                finally:
                    fired = dog.fired
            return 200, lines, failure(TimeoutError(), self.bounds, True) if fired else ""
        except ConnectionRefusedError as exc:
            raise TargetUnreachable(
                f"nothing answers at {self.base}; start the server or fix --base-url"
            ) from exc
        except READ_ERRORS as exc:  # reset, garbled, a broken chunk size: the server's failure
            return 0, lines, failure(exc, self.bounds, fired)


def _reply(resp: Reply) -> tuple[int, dict | None, str]:
    """Status, the JSON object, and the reason there is none (the server's words where it sent some)."""
    if resp.status == 200 and resp.headers.get("Content-Type", "").startswith("text/event-stream"):
        return resp.status, None, "a stream came back for a non-streamed request"
    try:
        body = resp.json()
    except UnicodeDecodeError:
        return resp.status, None, "the reply is not UTF-8 text: " + resp.text[:120]
    except (ValueError, RecursionError):  # not JSON, absurdly nested
        return resp.status, None, resp.text[:160]
    if not isinstance(body, dict):
        return resp.status, None, resp.text[:160]
    if resp.status == 200 and "error" in body:
        return resp.status, None, f"error in a 200 answer: {error_message(body)}"
    return resp.status, body, ""


def _kept(verdict: dict, raw: bytes | str) -> dict:
    """A failed verdict keeps the server's raw reply (cut at a few kB), not only its summary."""
    if verdict.get(VERDICT.supported):
        return verdict
    detail = verdict.get(VERDICT.detail)  # the server's words: no key it echoed goes on disk
    detail = redact(detail) if isinstance(detail, str) else detail
    return {**verdict, VERDICT.detail: detail, VERDICT.raw_reply: redact(probes.raw_excerpt(raw))}


def probe_models(client: Client) -> dict:
    resp = client.get("/models")
    status, body, text = _reply(resp)
    data = body.get("data") if status == 200 and isinstance(body, dict) else None
    data = data if isinstance(data, list) else []  # "data": null is no list of models
    ids = [safe_text(m["id"], 200) for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    out = {VERDICT.status: status, VERDICT.supported: status == 200 and bool(ids), "model_ids": ids[:10]}
    if not out[VERDICT.supported]:
        out[VERDICT.detail] = f"status {status}: {text or json.dumps(body)[:160]}"
    return _kept(out, resp.body)


def _chat_body(args, prompt: str, **extra) -> dict:
    return {
        "model": args.model,
        "messages": [{"role": "user", "content": prompt + args.prompt_suffix}],
        "max_tokens": args.max_tokens,
        "temperature": 0,
        **extra,
    }


def probe_tools(client: Client, args) -> dict:
    resp = client.post(
        "/chat/completions",
        _chat_body(args, probes.TOOL_PROMPT, tools=[probes.WEATHER_TOOL], tool_choice="auto"),
    )
    status, body, text = _reply(resp)
    if status != 200 or body is None:
        verdict = _failed(status, f"status {status}: {text or json.dumps(body)[:160]}")
        return _kept(verdict, resp.body)
    return _kept({VERDICT.status: status, **probes.judge_tool_reply(body)}, resp.body)


def probe_streaming_tools(client: Client, args) -> dict:
    body = _chat_body(args, probes.TOOL_PROMPT, tools=[probes.WEATHER_TOOL], tool_choice="auto", stream=True)
    status, lines, cut = client.stream("/chat/completions", body)
    return _kept(_judge_stream(status, lines, cut), b"\n".join(lines) or cut)


def _judge_stream(status: int, lines: list[bytes], cut: str) -> dict:
    if status != 200:
        text = cut or (lines[0] if lines else b"").decode("utf-8", "replace")
        with suppress(ValueError):
            text = error_message(json.loads(text))
        return _failed(status, f"status {status}: {text[:160]}")
    events = []
    for line in lines:
        if line.startswith(b"error:"):
            said = line[6:200].decode("utf-8", "replace").strip()
            return _failed(200, f"error mid-stream: {said}")
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            try:
                events.append(json.loads(line[5:]))
            except (ValueError, RecursionError):  # not JSON, not UTF-8, absurdly nested
                return _failed(200, "a stream line was not JSON: " + line[:80].decode("utf-8", "replace"))
    if cut:
        return _failed(200, f"the stream was cut: {cut}")
    name, arguments, text, finish = probes.assemble_tool_deltas(events)
    return {VERDICT.status: 200, **probes.judge_tool_call(name, arguments, text, finish)}


def probe_schema(client: Client, args) -> dict:
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "person", "strict": True, "schema": probes.PERSON_SCHEMA},
    }
    resp = client.post("/chat/completions", _chat_body(args, probes.PERSON_PROMPT, response_format=fmt))
    status, body, text = _reply(resp)
    if status != 200 or body is None:
        verdict = _failed(status, f"status {status}: {text or json.dumps(body)[:160]}")
        return _kept(verdict, resp.body)
    return _kept({VERDICT.status: status, **probes.judge_schema_reply(body)}, resp.body)


def features(args, key: str | None) -> dict:
    """The features record of the server at ``args.base_url``: every probe's verdict, with any key
    the server echoed redacted from every field."""
    client = Client(args.base_url, key, args.timeout, args.idle_timeout or None)
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
        measured_on=now_stamp(),
    ).to_dict()
    return redact_tree(record)  # a key a server echoed, in any field or split over deltas: never shown
