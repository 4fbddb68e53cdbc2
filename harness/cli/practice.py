"""``harness practice``: start the practice server in the foreground."""

from __future__ import annotations

from harness.core import bounds
from harness.practice import profile as profiles
from harness.practice.http import HEADER_TIMEOUT_S
from harness.practice.server import (
    DEFAULT_PORT,
    api_key_from_env,
    resolve_log,
    run as run_server,
    tls_context,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "practice",
        help="run the practice server (an OpenAI-compatible stand-in with seats)",
        description="Run the practice server until Ctrl-C. Profiles: " + ", ".join(profiles.available()),
    )
    p.add_argument(
        "--profile", default=profiles.DEFAULT_PROFILE, help="profile name or YAML path (default: kit)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--slots", type=int, help="override the profile's seats")
    p.add_argument("--ctx-per-slot", type=int, help="override the profile's context per seat")
    p.add_argument(
        "--api-key-env", metavar="VAR", help="require the API key held in this environment variable"
    )
    p.add_argument("--log-file", help="write the engine-style load log here")
    p.add_argument("--seed", type=int, help="override the profile's random seed")
    p.add_argument("--no-uvloop", action="store_true", help="use the standard asyncio loop")
    p.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate (and --tls-key)")
    p.add_argument("--tls-key", help="PEM private key for --tls-cert")
    p.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT_S,
        help="close a connection that sends no complete request head within this many seconds "
        "of opening or of its last answer (0: never)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    if args.port != 0:  # 0: the system picks a free port, and the start line says which
        bounds.port("--port", args.port)
    bounds.number("--header-timeout", args.header_timeout, 0, bounds.MAX_SECONDS)
    overrides = {}
    if args.slots is not None:
        overrides["seats"] = args.slots
    if args.ctx_per_slot is not None:
        overrides["ctx_per_seat"] = args.ctx_per_slot
    if args.seed is not None:
        overrides["seed"] = args.seed
    profile = profiles.load_profile(args.profile, overrides)
    return run_server(
        profile,
        host=args.host,
        port=args.port,
        api_key=api_key_from_env(args.api_key_env),
        log_path=resolve_log(args.log_file),
        use_uvloop=not args.no_uvloop,
        tls=tls_context(args.tls_cert, args.tls_key),
        header_timeout_s=args.header_timeout,
    )
