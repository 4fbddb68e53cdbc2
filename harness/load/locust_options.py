"""The Locust command-line options of the harness's user, made from their declarations
(``harness.options``): what to send, the two bounds of every request, the headless-only
thresholds, the notebook and the telemetry. Those marked ``web_form`` are the web UI's form
fields too. Every number and length text is checked as it is parsed (argparse's one line, exit
status 2, before ``--processes`` forks or any user starts; the ``LOCUST_*`` variables as well),
and on the web UI's form when a test is started (the same words, and nothing starts).

Registered on import by ``harness.load.users``; both locustfiles import it."""

from __future__ import annotations

from locust import events

from harness import options
from harness.energy.detect import parse_spec
from harness.options import load, prometheus, record, slo, telemetry, workload

SETS = (
    load.LOCUST,
    workload.LOCUST,
    slo.LOCUST,
    record.LOCUST,
    telemetry.TELEMETRY_SET,
    prometheus.PROMETHEUS,
)
# the web UI form's field that is no option's dest: Locust's form calls --users "user_count"
FORM_FIELDS = {"user_count": "--users"}


def telemetry_words(flag: str, text: str) -> None:
    """``--telemetry``'s words read (ConfigError, one line, for one that names no source)."""
    parse_spec(text)


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    options.to_locust(parser, *SETS)
    options.retype(parser, load.LOCUST_OWN)


def form_problem(form) -> str | None:
    """The first field of a web UI start form that does not read as its option, as one line, or None."""
    return options.check_form(form, *SETS, load.LOCUST_OWN, fields=FORM_FIELDS)


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
