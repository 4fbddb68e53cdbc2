"""The Locust web UI's harness parts: the Exact tab, the live charts, the downloads, and the
request statistics that count chat requests only.

Loaded with the users by ``locustfiles/llm_user.py`` (Locust's own command line and web UI).
Everything shown is of the current test only: ``harness.load.user`` clears the exact samples when
a test starts and when its statistics are reset, and takes no sample sent before that.

The ``TTFT`` and ``TPOT`` rows of Locust's table are not requests: they are fired as request
events of type ``METRIC`` so they show in the table, but ``ChatOnlyStats`` keeps them (and the
resent stale connections) out of the Aggregated row, whose RPS, failure share and response times
are the header's and the stock charts'.
"""

from __future__ import annotations

import html
import json
import time

import gevent
from locust import events
from locust.stats import RequestStats

from harness.core.live import COLUMNS, TIMELINE_FIELDS, csv_text, exact_rows, timeline_point
from harness.load import user

NOT_REQUESTS = {"METRIC"}  # request types that are measurements, not requests
NOT_REQUEST_NAMES = {"stale-connection (resent)"}  # never reached the server
TIMELINE_EVERY_S = 2.0
TIMELINE_WINDOW_S = 10.0
TAB_KEY = "harness-exact"


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


def in_flight() -> int:
    return user.IN_FLIGHT[0]


def current_rows(environment) -> list[dict]:
    start = user.RUN_WINDOW.get("start")
    end = user.RUN_WINDOW.get("stop") if _stopped(environment) else time.perf_counter()
    wall = (end - start) if start is not None and end is not None else 0.0
    state = getattr(environment.runner, "state", "ready") if environment.runner else "ready"
    return exact_rows(list(user.SAMPLES), max(wall, 0.0), in_flight(), str(state))


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


def _restart_timeline(environment) -> None:
    TIMELINE.clear()
    _stop_timeline()
    _TIMER.append(gevent.spawn(_tick, environment))


def _stop_timeline() -> None:
    while _TIMER:
        _TIMER.pop().kill(block=False)


@events.init.add_listener
def _chat_only_stats(environment, **_kw) -> None:
    # the runner holds the same object, so changing its class covers the header, CSVs and report
    environment.stats.__class__ = ChatOnlyStats


@events.test_start.add_listener
def _timeline_start(environment, **_kw) -> None:
    if environment.web_ui is not None:
        # each test started from the form reads the form's options anew (the last test's users
        # built the workload from the options as they were then; a sweep's is its own)
        if not getattr(environment, "harness_workload_external", False):
            environment.harness_workload = None
        _restart_timeline(environment)


@events.reset_stats.add_listener
def _timeline_reset(**_kw) -> None:
    TIMELINE.clear()


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
    from flask import request as flask_request

    app, args = environment.web_ui.app, environment.web_ui.template_args
    args.setdefault("extended_tabs", []).append({"title": "Exact TTFT/TPOT", "key": TAB_KEY})
    args.setdefault("extended_tables", []).append(
        {"key": TAB_KEY, "structure": [{"key": c, "title": c} for c in COLUMNS]}
    )
    args.setdefault("extended_csv_files", []).extend(
        [
            {"href": "./harness/exact.csv", "title": "Download the exact table CSV (this test)"},
            {
                "href": "./harness/timeline.csv",
                "title": "Download the timeline CSV (tokens/s, in flight, TTFT/TPOT)",
            },
            {
                "href": "./harness/charts",
                "title": "Live charts: output tokens/s, in flight, TTFT/TPOT p50/p95",
            },
        ]
    )

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

    @app.after_request
    def _extend(response):
        if flask_request.path == "/stats/requests" and response.is_json:
            data = response.get_json()
            data["extended_stats"] = [{"key": TAB_KEY, "data": current_rows(environment)}]
            response.set_data(json.dumps(data))
        elif flask_request.path == "/stats/report" and response.mimetype == "text/html":
            page = response.get_data(as_text=True)
            table = exact_html(current_rows(environment))
            response.set_data(page.replace("</body>", table + "</body>", 1))
        return response


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


# One page, no dependencies: polls /harness/exact and draws three SVG line charts.
CHARTS_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>harness live charts</title>
<style>body{font-family:sans-serif;margin:1em}svg{border:1px solid #ccc;margin:.5em 0}
.legend span{margin-right:1em}</style></head><body>
<h2>This test, live (requests finished in the last 10 s; refreshed every 2 s)</h2>
<div id="charts"></div>
<script>
const CHARTS=[["output tokens/s",[["output_tokens_per_s","#1f77b4"]]],
["requests in flight",[["in_flight","#2ca02c"]]],
["TTFT p50/p95 (s)",[["ttft_p50_s","#1f77b4"],["ttft_p95_s","#d62728"]]],
["TPOT p50/p95 (s)",[["tpot_p50_s","#1f77b4"],["tpot_p95_s","#d62728"]]]];
function draw(points){const W=640,H=160,P=40;let out="";
for(const [title,series] of CHARTS){let xs=points.map(p=>p.t_s),xmax=Math.max(1,...xs);
let ys=[];for(const [k] of series){for(const p of points){if(p[k]!=null)ys.push(p[k]);}}
let ymax=Math.max(1e-9,...ys);let svg=`<svg width="${W}" height="${H}">`;
for(const [k,col] of series){let d=points.filter(p=>p[k]!=null).map((p,i)=>
`${i?"L":"M"}${(P+(W-P-10)*p.t_s/xmax).toFixed(1)},${(H-20-(H-30)*p[k]/ymax).toFixed(1)}`).join("");
svg+=`<path d="${d}" fill="none" stroke="${col}" stroke-width="2"/>`;}
svg+=`<text x="4" y="14" font-size="12">${ymax.toPrecision(3)}</text>`;
svg+=`<text x="4" y="${H-22}" font-size="12">0</text>`;
svg+=`<text x="${W-60}" y="${H-4}" font-size="12">${xmax.toFixed(0)} s</text></svg>`;
let legend=series.map(([k,c])=>`<span style="color:${c}">${k}</span>`).join("");
out+=`<h3>${title}</h3><div class="legend">${legend}</div>${svg}`;}
document.getElementById("charts").innerHTML=out;}
async function poll(){try{const r=await fetch("./exact");const j=await r.json();draw(j.timeline);}catch(e){}}
poll();setInterval(poll,2000);
</script></body></html>"""
