"""The practice server's HTTP application: routing, the OpenAI and llama-server routes, and the
chat-completions path (check, plan, keep the ground truth, schedule). The request checks live in
``chat_request``, faults in ``faults``, the reply writers in ``sinks``, the ground-truth record in
``truth`` and the ``/metrics`` text in ``metrics``.

Ground truth: for every request the server keeps when it received it and, for each output token,
the time it was scheduled and the time it was written to the socket, as ``time.monotonic()``
seconds (CLOCK_MONOTONIC on Linux, the clock ``time.perf_counter()`` also reads there, so a client
on the same host can compare directly). ``GET /practice/truth/<id>`` returns one request (the id is
the client's ``X-Request-Id`` header, else the completion id); ``GET /practice/timing`` summarises
the server's own lateness (sent minus scheduled) since start or the last ``POST /practice/reset``.
"""

from __future__ import annotations

import random
import re
import time
from collections import OrderedDict

from harness import __version__
from harness.measure.stats import percentile as nearest_rank
from harness.sizing.arithmetic import llama_kv_caches, llama_kv_log_line, vllm_kv_log_lines
from harness.practice import metrics
from harness.practice.chat_request import (
    ChatCall,
    Rejected,
    check_context,
    check_size,
    max_tokens_of,
    messages_of,
    parse_body,
    prompt_of,
    unknown_model,
)
from harness.practice.engine import PreciseTimer, Sequence, clock, make_engine
from harness.practice.faults import Faults, draw_faults, parse_fault_header
from harness.practice.http import Request, Responder
from harness.practice.profile import Profile
from harness.practice.replies import plan_reply
from harness.practice.sinks import StreamSink, TextStreamSink, TextWholeSink, WholeSink
from harness.practice.tokenizer import encode, encode_chat
from harness.practice.truth import LATENESS_KEEP, STEPS_KEEP, TRUTH_KEEP, Recent, Truth

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.:-]")


class PracticeApp:
    def __init__(self, profile: Profile, loop, api_key: str | None = None, log=None, imitation=None) -> None:
        self.imitation = imitation  # the engine a rehearsal's practice server imitates (imitation.py)
        self.profile = profile
        self.p = profile.raw
        self.mode = profile.mode
        self.api_key = api_key
        self.engine = make_engine(self.p, loop)
        self.rng = random.Random(self.p["seed"])
        self.truth: OrderedDict[str, Truth] = OrderedDict()
        self.lateness = Recent(LATENESS_KEEP)
        self.gc_pauses = Recent(4096)
        self.started = time.time()
        self.log = log
        self._n = 0
        self.requests_total = 0
        self.errors_total = 0

    # -- startup log ----------------------------------------------------------------------------
    def load_log_lines(self) -> list[str]:
        p, m = self.p, self.p["model"]
        lines = [f"practice server {__version__}: profile {self.profile.name} ({self.mode} dialect)"]
        if self.mode == "llama":
            if all(k in m for k in ("layers", "kv_heads", "head_dim")):
                caches = llama_kv_caches(
                    m["layers"],
                    m["kv_heads"],
                    m["head_dim"],
                    p["seats"],
                    p["ctx_per_seat"],
                    p["cache_type"],
                    m.get("swa_layers", 0),
                    m.get("swa_window", 0),
                )
                lines += [llama_kv_log_line(c, p["cache_type"]) for c in caches]
            lines.append(
                f"srv    load_model: initializing, n_slots = {p['seats']}, n_ctx_slot = "
                f"{p['ctx_per_seat']}, "
                f"kv_unified = 'false'"
            )
            lines.append("main: server is listening")
        else:
            pool = p.get("pool_tokens", p["seats"] * p["ctx_per_seat"])
            lines += [
                f"INFO [kv_cache_utils.py] {line}" for line in vllm_kv_log_lines(pool, p["ctx_per_seat"])
            ]
            lines.append("INFO:     Application startup complete.")
        return lines

    def _log(self, line: str) -> None:
        if self.log is not None:
            self.log.write(line + "\n")
            self.log.flush()

    # -- routing --------------------------------------------------------------------------------
    def _imitated(self, req: Request, res: Responder, path: str) -> str | None:
        """The path as the practice server's routes know it, or None once the imitated engine's own
        route (health, version, a service's load and unload) has answered."""
        if self.imitation is None:
            return path
        path = self.imitation.route(path)
        body = self.imitation.own_route(path)
        answer = (200, body) if body is not None else self.imitation.control(req.method, path, req.body)
        if answer is None:
            return path
        res.send_json(*answer)
        return None

    def handle(self, req: Request, res: Responder) -> None:
        path = self._imitated(req, res, req.path.rstrip("/") or "/")
        if path is None:
            return
        if path in ("/health", "/v1/health"):
            res.send_json(200, {"status": "ok"})
            return
        if self.api_key is not None and not self._authorised(req):  # only /health is open
            self._error(res, 401, "Invalid API Key", "authentication_error")
            return
        if path == "/metrics":
            res.send(200, self.metrics_text().encode(), content_type="text/plain; version=0.0.4")
            return
        if path.startswith("/practice/"):
            self.practice_route(req, res, path)
            return
        if path in ("/v1/models", "/models"):
            res.send_json(200, self.models())
        elif path in ("/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions"):
            if req.method != "POST":
                self._error(res, 405, "use POST for completions", "invalid_request_error")
            else:
                self.chat(req, res, text=not path.endswith("/chat/completions"))
        elif path == "/slots" and self.mode == "llama":
            res.send_json(200, self.slots())
        elif path == "/props" and self.mode == "llama":
            res.send_json(
                200,
                {
                    "total_slots": self.p["seats"],
                    "default_generation_settings": {"n_ctx": self.p["ctx_per_seat"]},
                    "model_path": self.p["model"]["id"],
                    "build_info": f"practice-{__version__}",
                },
            )
        else:
            self._error(res, 404, f"no route {req.method} {req.path}", "not_found_error")

    def _authorised(self, req: Request) -> bool:
        auth = req.headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else req.headers.get("x-api-key", "")
        return token == self.api_key

    def _error(self, res: Responder, status: int, message: str, kind: str, **extra) -> None:
        self.errors_total += 1
        if self.mode == "vllm":
            body = {"object": "error", "message": message, "type": kind, "param": None, "code": status}
        else:
            body = {"error": {"code": status, "message": message, "type": kind, **extra}}
        res.send_json(status, body)

    # -- simple routes --------------------------------------------------------------------------
    def models(self) -> dict:
        created = int(self.started)
        return {
            "object": "list",
            "data": [
                {"id": mid, "object": "model", "created": created, "owned_by": self.owner}
                for mid in self.profile.model_ids
            ],
        }

    @property
    def owner(self) -> str:
        """Who the models list says serves the model: never the imitated engine itself."""
        return f"practice imitation of {self.imitation.persona.engine}" if self.imitation else "practice"

    def slots(self) -> list[dict]:
        engine = self.engine
        busy = {s.seat: s for s in engine.running if s.seat is not None}
        out = []
        for i in range(self.p["seats"]):
            seq = busy.get(i)
            out.append(
                {
                    "id": i,
                    "id_task": -1 if seq is None else seq.seq_no,
                    "n_ctx": self.p["ctx_per_seat"],
                    "speculative": False,
                    "is_processing": seq is not None,
                    "next_token": {
                        "has_next_token": seq is not None,
                        "n_decoded": 0 if seq is None else seq.emitted,
                    },
                }
            )
        return out

    def practice_route(self, req: Request, res: Responder, path: str) -> None:
        if path == "/practice/timing":
            res.send_json(200, self.timing_summary())
        elif path == "/practice/reset" and req.method == "POST":
            self.lateness = Recent(LATENESS_KEEP)
            for name in ("step_late", "step_spread"):
                if hasattr(self.engine, name):
                    setattr(self.engine, name, Recent(STEPS_KEEP))
            res.send_json(200, {"reset": True})
        elif path == "/practice/profile":
            res.send_json(200, self.p)
        elif path == "/practice/power":
            power = self.imitation_power()
            if power is None:
                self._error(res, 404, "this profile publishes no imitation power", "not_found_error")
            else:
                res.send_json(200, power)
        elif path.startswith("/practice/truth/"):
            truth = self.truth.get(path[len("/practice/truth/") :])
            if truth is None:
                kept = f"no such request id (the server keeps the last {TRUTH_KEEP:,})"
                self._error(res, 404, kept, "not_found_error")
            else:
                res.send_json(200, truth.as_dict())
        else:
            self._error(res, 404, f"no route {req.method} {req.path}", "not_found_error")

    def imitation_power(self) -> dict | None:
        """The profile's IMITATION power now (``imitation_power``: idle W plus W per busy seat), or
        None when the profile has none. Made up from the seats, never measured: labelled so."""
        shape = self.p.get("imitation_power")
        if not shape:
            return None
        busy = len(self.engine.running)
        watts = shape["idle_w"] + shape["per_busy_seat_w"] * busy
        return {"label": "imitation", "profile": self.profile.name, "busy_seats": busy, "power_w": watts}

    def timing_summary(self) -> dict:
        late = self.lateness
        n = late.count
        c = self.engine.counters
        return {
            "events": n,
            "events_kept": len(late),  # the percentiles' events: the latest LATENESS_KEEP
            "lateness_mean_s": (late.total / n) if n else None,
            "lateness_p50_s": nearest_rank(late, 50),
            "lateness_p99_s": nearest_rank(late, 99),
            "lateness_max_s": late.largest,
            "behind_resets": c.behind_resets,
            "spun_s": PreciseTimer.spun_s,
            "gc_pause_max_s": self.gc_pauses.largest,
            "step_late_p50_s": nearest_rank(getattr(self.engine, "step_late", []), 50),
            "step_late_p99_s": nearest_rank(getattr(self.engine, "step_late", []), 99),
            "step_spread_p50_s": nearest_rank(getattr(self.engine, "step_spread", []), 50),
            "step_spread_p99_s": nearest_rank(getattr(self.engine, "step_spread", []), 99),
            "running": len(self.engine.running),
            "waiting": len(self.engine.waiting),
        }

    # -- chat completions -----------------------------------------------------------------------
    def chat(self, req: Request, res: Responder, text: bool = False) -> None:
        """A chat completion, or a text completion (``text``: a ``prompt``, no chat template)."""
        received = clock()
        self.requests_total += 1
        try:
            call = self._admit(req, text)
        except Rejected as no:
            self._error(res, no.status, no.message, no.kind, **no.extra)
            return
        self._schedule(req, res, call, received, text)

    def _admit(self, req: Request, text: bool = False) -> ChatCall:
        """Every check a request must pass, in the order its errors are reported; raises Rejected."""
        body = parse_body(req)
        messages = [{"role": "user", "content": prompt_of(body)}] if text else messages_of(body)
        model = body.get("model")
        if self.p["check_model"] and model is not None and model not in self.profile.model_ids:
            raise unknown_model(model, self.mode)
        max_tokens = max_tokens_of(body)
        try:
            faults = self._faults(req)
        except ValueError as exc:
            raise Rejected(400, f"X-Practice-Fault: {exc}", "invalid_request_error") from exc
        check_size(self.mode, self.p["ctx_per_seat"], messages, body.get("tools"))
        prompt = encode(messages[0]["content"]) if text else encode_chat(messages, body.get("tools"))
        check_context(self.mode, self.p["ctx_per_seat"], len(prompt), max_tokens)
        if faults.error_500:
            raise Rejected(500, "injected fault: internal server error", "server_error")
        limit = self.p["faults"]["queue_limit"]
        if limit is not None and len(self.engine.waiting) >= limit:
            raise Rejected(
                429,
                f"server busy: {len(self.engine.waiting)} requests already waiting",
                "rate_limit_error",
            )
        return ChatCall(body, prompt, max_tokens, faults)

    def _schedule(self, req: Request, res: Responder, call: ChatCall, received: float, text: bool) -> None:
        """Plan the reply, keep its ground truth, open its sink and hand it to the engine (a text
        completion's reply is prose only: no thinking, no tool call)."""
        body, prompt, max_tokens, faults = call.body, call.prompt, call.max_tokens, call.faults
        self._n += 1
        rid = (
            _SAFE_ID.sub("", req.headers.get("x-request-id", ""))[:128]
            or f"chatcmpl-{self._n:08x}{int(received * 1e6) & 0xFFFFFF:06x}"
        )
        budget = max_tokens if max_tokens is not None else self.p["ctx_per_seat"] - len(prompt)
        rng = random.Random(hash((self.p["seed"], self._n)))
        plain = {**body, "tools": None, "chat_template_kwargs": {"enable_thinking": False}}
        plan = plan_reply(plain if text else body, self.p, rng, budget)
        truth = Truth(
            rid,
            received,
            time.time(),
            len(prompt),
            budget,
            fault=faults.label(),
            prefix_cache=self.p["prefix_cache"],
        )
        self._keep_truth(truth)
        stream = bool(body.get("stream", False))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage", False))
        sink_cls = ((TextStreamSink, TextWholeSink) if text else (StreamSink, WholeSink))[not stream]
        sink = sink_cls(
            self, res, rid, body.get("model") or self.p["model"]["id"], truth, faults, include_usage
        )
        seq = Sequence(
            rid,
            prompt,
            plan,
            sink,
            received,
            stall_after=faults.stall_after if faults.stall_s is not None else None,
            stall_s=faults.stall_s or 0.0,
        )
        sink.start()
        self.engine.submit(seq)

    def _keep_truth(self, truth: Truth) -> None:
        self.truth[truth.id] = truth
        if len(self.truth) > TRUTH_KEEP:
            self.truth.popitem(last=False)

    def _faults(self, req: Request) -> Faults:
        header = req.headers.get("x-practice-fault")
        if header:
            return parse_fault_header(header)
        return draw_faults(self.p["faults"], self.rng)

    # -- pieces shared by both sinks ------------------------------------------------------------
    def usage(self, seq: Sequence) -> dict:
        return {
            "prompt_tokens": len(seq.prompt),
            "completion_tokens": seq.emitted,
            "total_tokens": len(seq.prompt) + seq.emitted,
            "prompt_tokens_details": {"cached_tokens": seq.cached},
        }

    def timings(self, seq: Sequence, end: float) -> dict:
        prompt_n = max(1, len(seq.prompt) - seq.cached)
        prompt_ms = max(seq.prefill_s, 1e-6) * 1000
        first = seq.first_token_at or end
        predicted_ms = max(end - first, 1e-6) * 1000
        n = max(seq.emitted, 1)
        return {
            "cache_n": seq.cached,
            "prompt_n": prompt_n,
            "prompt_ms": round(prompt_ms, 3),
            "prompt_per_token_ms": round(prompt_ms / prompt_n, 3),
            "prompt_per_second": round(prompt_n / prompt_ms * 1000, 3),
            "predicted_n": seq.emitted,
            "predicted_ms": round(predicted_ms, 3),
            "predicted_per_token_ms": round(predicted_ms / n, 3),
            "predicted_per_second": round(n / predicted_ms * 1000, 3),
        }

    def reasoning_field(self) -> str:
        return "reasoning_content" if self.mode == "llama" else "reasoning"

    # -- metrics --------------------------------------------------------------------------------
    def metrics_text(self) -> str:
        return metrics.metrics_text(self.mode, self.engine, self.p["model"]["id"])
