"""The Lemonade CLI, imitated for rehearsals (``harness imitate lemonade ...``): the commands Track
X's serve script runs against a running Lemonade service (``status``, ``backends``, ``backends
install``, ``unload``, ``load MODEL --ctx-size N --llamacpp B --llamacpp-args A``, ``--version``),
each sent to the service that LEMONADE_HOST and LEMONADE_PORT (or ``--host``/``--port``) name:
the practice server imitating Lemonade's service (``harness imitate lemond``).

Load and unload go to the service's own routes (POST /api/v1/load and /api/v1/unload, with the
fields Lemonade's server spec names); the backend commands install nothing and say so. Every line
it prints names the imitation. Exit status 0 when the service answered as asked, 1 when it could
not be reached or refused, 2 for a command the imitation does not do.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request

from harness import options
from harness.options.shared import VERSION
from harness.practice.imitation import lemonade_options

BACKENDS = ("llamacpp:rocm", "llamacpp:vulkan", "llamacpp:cpu")
TIMEOUT_S = 30.0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lemonade", add_help=False)
    lemonade_options(p)  # --host, --port and --ctx-size, as the service (lemond) takes them
    options.to_argparse(p, VERSION, command="lemonade")
    p.add_argument("--api-key", default=os.environ.get("LEMONADE_API_KEY"))
    p.add_argument("words", nargs="*")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true")
    p.add_argument("--llamacpp")
    p.add_argument("--llamacpp-args")
    return p


def _call(base: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """(status, JSON body) of one request to the service; (0, {"message": why}) when unreachable."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as reply:  # noqa: S310 (a local URL)
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"message": f"HTTP {exc.code}"}
    except (OSError, ValueError) as exc:
        return 0, {"message": f"{exc.__class__.__name__}: {exc}"}


def main(argv: list[str], say=print) -> int:
    """Run one Lemonade CLI command line (``argv[0]`` is the program) against the service."""
    args, _unknown = _parser().parse_known_args(argv[1:])
    tag = "(practice imitation of the Lemonade CLI)"
    if args.version:
        from harness import __version__

        say(f"lemonade practice imitation, harness {__version__}")
        return 0
    base = f"http://{args.host}:{args.port}/api/v1"
    words = args.words
    command = words[0] if words else "status"
    if command not in ("status", "backends", "load", "unload"):
        say(f"the Lemonade imitation does not do `lemonade {command}` {tag}")
        return 2
    status, health = _call(base, "/health")
    if status != 200:
        where = f"{args.host}:{args.port}"
        say(f"Error: could not reach Lemonade Server at {where} ({health.get('message')}) {tag}")
        return 1
    if command == "status":
        say(json.dumps(health) if args.json else f"Server is running on port {args.port} {tag}; "
            f"model loaded: {health.get('model_loaded') or 'none'}")  # fmt: skip
        return 0
    if command == "backends":
        if words[1:2] == ["install"]:
            named = " ".join(words[2:]) or "nothing"
            say(f"{named}: nothing installed; the practice server answers for it {tag}")
        else:
            say("\n".join(f"{b}  imitated by the practice server  installed" for b in BACKENDS))
        return 0
    if command == "unload":
        status, reply = _call(base, "/unload", {})
    else:
        if len(words) < 2:
            say(
                f"usage: lemonade load MODEL [--ctx-size N] [--llamacpp BACKEND] [--llamacpp-args ARGS] {tag}"
            )
            return 2
        body = {"model_name": words[1], "ctx_size": args.ctx_size, "llamacpp_backend": args.llamacpp}
        if args.llamacpp_args is not None:
            body["llamacpp_args"] = args.llamacpp_args
        status, reply = _call(base, "/load", {k: v for k, v in body.items() if v is not None})
    say(f"{reply.get('message', reply)} {tag}")
    return 0 if status == 200 else 1
