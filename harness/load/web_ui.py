"""The Locust web UI's harness parts: the endpoint proof at START, the stop when every request
fails, the Exact tab (per phase when the user count changes), the Live charts tab, the downloads,
and the request statistics that count chat requests only.

Loaded with the users by ``locustfiles/llm_user.py`` (Locust's own command line and web UI).
Everything shown is of the current test only: ``harness.load.users`` clears the exact samples when
a test starts and when its statistics are reset (RESET), and takes no sample sent before that; the
charts' timeline and the phases are cleared at the same moments.

* START runs the headless path's endpoint proof (``harness.load.headless.prove``: the model list,
  one short request, the context) with the form's host, model and options; a wrong model, a closed
  port or a server that is no OpenAI API is refused on the form in one line, and no load is sent.
* While a test runs, when every request of the last few seconds failed
  (``harness.load.live.failing_streak``), the users are stopped and the Exact tab says why.
* The Live charts tab draws output tokens/s, requests in flight, TTFT, TPOT and ITL (p50 and p95)
  against the time since the test started, each axis labelled with its unit (``CHARTS_JS``; the
  same script serves the standalone page ``/harness/charts``).

The ``TTFT`` and ``TPOT`` rows of Locust's table are not requests: they are fired as request
events of type ``METRIC`` so they show in the table, but ``ChatOnlyStats`` keeps them (and the
resent stale connections) out of the Aggregated row, whose RPS, failure share and response times
are the header's and the stock charts'.
"""

from __future__ import annotations

import html
import json
import logging
import os
import sys
import time
from types import SimpleNamespace

import gevent
from locust import events
from locust.stats import RequestStats

from harness.load.live import COLUMNS, TIMELINE_FIELDS, csv_text, failing_streak, phase_rows, timeline_point
from harness.errors import ConfigError, TargetError, TargetUnreachable
from harness.energy.meter import LOCUST_RUN
from harness.load import headless, users as user
from harness.endpoints.urls import chat_url
from harness.paths import PACKAGE
from harness.endpoints import KINDS

NOT_REQUESTS = {"METRIC"}  # request types that are measurements, not requests
NOT_REQUEST_NAMES = {"stale-connection (resent)"}  # never reached the server
TIMELINE_EVERY_S = 2.0
TIMELINE_WINDOW_S = 10.0
GUARD_EVERY_S = 0.1  # how often the failing-streak check looks (a refusing port fails fast)
TAB_KEY = "harness-exact"
CHARTS_KEY = "harness-charts"
CHARTS_TITLE = "Live charts"
# the form's fields the proof reads (the option's dest); their types are the parsed options'
PROOF_FIELDS = (
    "model",
    "max_tokens",
    "temperature",
    "prompt_set",
    "api_base_path",
    "timeout",
    "idle_timeout",
)


class ChatOnlyStats(RequestStats):
    """Locust's request statistics with measurement rows kept out of the Aggregated row."""

    @staticmethod
    def _is_request(method: str, name: str) -> bool:
        return method not in NOT_REQUESTS and name not in NOT_REQUEST_NAMES

    def log_request(self, method: str, name: str, response_time: int, content_length: int) -> None:
        if self._is_request(method, name):
            self.total.log(response_time, content_length)
        self.entries[(name, method)].log(response_time, content_length)

    def log_error(self, method: str, name: str, error) -> None:
        if self._is_request(method, name):
            super().log_error(method, name, error)
            return
        self.entries[(name, method)].log_error(error)


TIMELINE: list[dict] = []
_TIMER: list = []
PHASES: list[dict] = []  # this test's user counts: {"start": perf_counter, "users": n}, in order
STATUS: dict[str, str] = {}  # "url": the chat URL proved at START; "stopped": why the load stopped


def in_flight() -> int:
    return user.IN_FLIGHT[0]


def current_rows(environment) -> list[dict]:
    start = user.RUN_WINDOW.get("start")
    end = user.RUN_WINDOW.get("stop") if _stopped(environment) else time.perf_counter()
    state = getattr(environment.runner, "state", "ready") if environment.runner else "ready"
    phases = PHASES if PHASES else ([{"start": start, "users": 0}] if start is not None else [])
    rows = phase_rows(phases, list(user.SAMPLES), end if end is not None else 0.0, in_flight(), str(state))
    notes = [("chat URL", STATUS.get("url")), ("stopped because", STATUS.get("stopped"))]
    blank = dict.fromkeys(COLUMNS[2:], "")
    return [{"metric": k, "value": v, **blank} for k, v in notes if v] + rows


def _stopped(environment) -> bool:
    return environment.runner is not None and environment.runner.state == "stopped"


def _tick(environment) -> None:
    while True:
        start = user.RUN_WINDOW.get("start")
        if start is not None:
            point = timeline_point(
                list(user.SAMPLES), start, time.perf_counter(), TIMELINE_WINDOW_S, in_flight()
            )
            TIMELINE.append(point)
        gevent.sleep(TIMELINE_EVERY_S)


def _stop_if_failing(environment) -> bool:
    """Stop the users when every request of the last few seconds failed, and say why (True)."""
    runner = environment.runner
    if runner is None or runner.state not in ("spawning", "running") or "stopped" in STATUS:
        return False
    users = max(getattr(runner, "user_count", 0) or getattr(runner, "target_user_count", 0) or 1, 1)
    why = failing_streak(user.SAMPLES[-max(201, 10 * users + 1) :], users)  # the tail decides
    if why is None:
        return False
    STATUS["stopped"] = why
    logging.getLogger("harness").warning(why)  # Locust's log, and so its Logs tab too
    gevent.spawn(runner.stop)  # not from a user's greenlet, which the stop kills
    return True


def _guard(environment) -> None:
    """The check, every ``GUARD_EVERY_S`` (a master's samples come from its workers in messages)."""
    while not _stop_if_failing(environment):
        gevent.sleep(GUARD_EVERY_S)


@events.request.add_listener
def _failed_request(request_type, name, exception=None, context=None, **_kw) -> None:
    """The check at each failed chat request here, so a refusing port stops within a few hundred."""
    environment = getattr(_failed_request, "environment", None)
    if exception is not None and name in KINDS and environment is not None and environment.web_ui:
        _stop_if_failing(environment)


def _restart_timeline(environment) -> None:
    TIMELINE.clear()
    _stop_timeline()
    _TIMER.append(gevent.spawn(_tick, environment))
    _TIMER.append(gevent.spawn(_guard, environment))


def _new_phases(environment) -> None:
    PHASES.clear()
    start = user.RUN_WINDOW.get("start", time.perf_counter())
    users = getattr(environment.runner, "target_user_count", 0) if environment.runner else 0
    PHASES.append({"start": start, "users": users or 0})


def _stop_timeline() -> None:
    while _TIMER:
        _TIMER.pop().kill(block=False)


@events.init.add_listener
def _chat_only_stats(environment, **_kw) -> None:
    _failed_request.environment = environment  # type: ignore[attr-defined]
    environment.harness_phases = PHASES  # the notebook's records: one per phase (harness.load.users)
    # the runner holds the same object, so changing its class covers the header, CSVs and report
    environment.stats.__class__ = ChatOnlyStats


@events.test_start.add_listener
def _timeline_start(environment, **_kw) -> None:
    if environment.web_ui is not None:
        # each test started from the form reads the form's options anew (the last test's users
        # built the workload from the options as they were then; a sweep's is its own)
        if not getattr(environment, "harness_workload_external", False):
            environment.harness_workload = None
        STATUS.pop("stopped", None)
        _new_phases(environment)
        _restart_timeline(environment)


@events.reset_stats.add_listener
def _timeline_reset(**_kw) -> None:
    TIMELINE.clear()
    STATUS.pop("stopped", None)
    if PHASES:  # a reset during a test: one phase from now, at the current user count
        users = PHASES[-1]["users"]
        PHASES.clear()
        PHASES.append({"start": user.RUN_WINDOW.get("start", time.perf_counter()), "users": users})


@events.spawning_complete.add_listener
def _phase(user_count: int, **_kw) -> None:
    """A change of user count during a test starts a new phase of the Exact figures."""
    if not PHASES:
        return
    if PHASES[-1]["users"] in (0, user_count):
        PHASES[-1]["users"] = user_count  # the first spawn of the test names its phase
        return
    PHASES.append({"start": time.perf_counter(), "users": user_count})
    LOCUST_RUN.new_phase()  # the telemetry's span too: each phase's record has its own energy


@events.test_stop.add_listener
def _timeline_stop(environment, **_kw) -> None:
    if environment.web_ui is None:
        return
    _stop_timeline()
    start = user.RUN_WINDOW.get("start")
    if start is not None:
        TIMELINE.append(timeline_point(list(user.SAMPLES), start, time.perf_counter(), TIMELINE_WINDOW_S, 0))


@events.init.add_listener
def _web_tab(environment, **_kw) -> None:
    if environment.web_ui is None:
        return
    from flask import Response, jsonify

    app = environment.web_ui.app
    _tabs(environment.web_ui.template_args)
    _hooks(app, environment)

    @app.route("/harness/exact")
    def exact():
        return jsonify({"rows": current_rows(environment), "timeline": TIMELINE})

    @app.route("/harness/exact.csv")
    def exact_csv():
        return Response(csv_text(current_rows(environment), COLUMNS), mimetype="text/csv")

    @app.route("/harness/timeline.csv")
    def timeline_csv():
        return Response(csv_text(TIMELINE, TIMELINE_FIELDS), mimetype="text/csv")

    @app.route("/harness/charts")
    def charts():
        return Response(CHARTS_PAGE, mimetype="text/html")

    @app.route("/harness/charts.js")
    def charts_js():
        return Response(CHARTS_JS, mimetype="text/javascript")


def _tabs(args: dict) -> None:
    """The Exact and Live charts tabs, and the downloads, in Locust's page."""
    args.setdefault("extended_tabs", []).extend(
        [{"title": "Exact TTFT/TPOT", "key": TAB_KEY}, {"title": CHARTS_TITLE, "key": CHARTS_KEY}]
    )
    args.setdefault("extended_tables", []).extend(
        [
            {"key": TAB_KEY, "structure": [{"key": c, "title": c} for c in COLUMNS]},
            {"key": CHARTS_KEY, "structure": []},  # the tab's table is hidden; CHARTS_JS draws there
        ]
    )
    args.setdefault("extended_csv_files", []).extend(
        [
            {"href": "./harness/exact.csv", "title": "Download the exact table CSV (this test)"},
            {
                "href": "./harness/timeline.csv",
                "title": "Download the timeline CSV (tokens/s, in flight, TTFT/TPOT/ITL)",
            },
            {
                "href": "./harness/charts",
                "title": "Live charts on a page of their own (also the Live charts tab)",
            },
        ]
    )


def _hooks(app, environment) -> None:
    """START proves the endpoint; the request statistics, Locust's page and its report get ours."""
    from flask import jsonify
    from flask import request as flask_request

    @app.before_request
    def _prove_at_start():
        if flask_request.method == "POST" and flask_request.path.endswith("/swarm"):
            problem = start_problem(environment, flask_request.form)
            if problem:
                return jsonify({"success": False, "message": problem, "host": environment.host})
        return None

    @app.after_request
    def _extend(response):
        if flask_request.path == "/stats/requests" and response.is_json:
            data = response.get_json()
            data["extended_stats"] = [
                {"key": TAB_KEY, "data": current_rows(environment)},
                {"key": CHARTS_KEY, "data": []},
            ]
            response.set_data(json.dumps(data))
        elif flask_request.path in ("/", "") and response.mimetype == "text/html":
            page = response.get_data(as_text=True)  # the Live charts tab's script, into Locust's page
            response.set_data(page.replace("</body>", TAB_SCRIPT + "</body>", 1))
        elif flask_request.path == "/stats/report" and response.mimetype == "text/html":
            page = response.get_data(as_text=True)
            table = exact_html(current_rows(environment))
            response.set_data(page.replace("</body>", table + "</body>", 1))
        return response


def start_problem(environment, form) -> str | None:
    """START from the form: the endpoint proof with the form's host and options, as one line for
    the form when it fails (None: start). A change of user count during a test is not proved again."""
    runner = environment.runner
    if runner is not None and runner.state in ("spawning", "running"):
        return None
    host = (form.get("host") or environment.host or "").strip()
    if not host:
        return "no Host given: name the server to load, e.g. http://127.0.0.1:8000 (with or without /v1)"
    opts = vars(environment.parsed_options) if environment.parsed_options else {}
    values = {}
    for field in PROOF_FIELDS:
        default = opts.get(field)
        text = form.get(field)
        values[field] = default if text is None else (type(default)(text) if default is not None else text)
    o = SimpleNamespace(**{**opts, **values})
    api_key = os.environ.get(getattr(o, "api_key_env", "") or "") or None
    try:
        warnings = headless.prove(host, o.api_base_path, o.model, api_key, o)
    except TargetUnreachable:
        return f"nothing answers at {host}; start the server or fix the Host field (no load was sent)"
    except (TargetError, ConfigError) as exc:  # the server's answer, or a key no header carries
        return f"{exc} (no load was sent)"
    STATUS["url"] = chat_url(host, o.api_base_path, getattr(o, "endpoint", None))
    print(f"harness: endpoint proved; loading {STATUS['url']}", file=sys.stderr, flush=True)
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr, flush=True)
    return None


def exact_html(rows: list[dict]) -> str:
    """The exact table as an HTML section, for Locust's downloadable report."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in COLUMNS) + "</tr>"
        for r in rows
    )
    return (
        '<section id="harness-exact" style="margin:2em;font-family:sans-serif">'
        "<h2>Exact TTFT/TPOT (this test, from every request's exact sample)</h2>"
        f'<table border="1" cellpadding="4"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        "</section>"
    )


# The live charts, no dependencies: polls the exact figures' timeline (cleared at each start and at
# RESET, drawn only from what the server returns) and draws one SVG line chart per measure, both
# axes labelled with their units. ``harnessTab`` puts them in the "Live charts" tab of Locust's page.
CHARTS_JS = (PACKAGE / "data" / "web" / "live_charts.js").read_text(encoding="utf-8")

TAB_SCRIPT = (
    '<script src="./harness/charts.js"></script>'
    f"<script>harnessTab({json.dumps(CHARTS_TITLE)}, './harness/exact');</script>"
)

CHARTS_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>harness live charts</title>
<style>body{font-family:sans-serif;margin:1em}</style></head><body>
<h2>This test, live (requests finished in the last 10 s; refreshed every 2 s)</h2>
<div id="harness-live-charts"></div>
<script src="./charts.js"></script>
<script>harnessCharts(document.getElementById("harness-live-charts"), "./exact");</script>
</body></html>"""
