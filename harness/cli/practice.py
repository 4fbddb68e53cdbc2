"""``harness practice``: start the practice server in the foreground."""

from __future__ import annotations

from harness import bounds
from harness.practice import profile as profiles
from harness.practice.http import HEADER_TIMEOUT_S
from harness.practice.server import (
    api_key_from_env,
    resolve_log,
    run as run_server,
    tls_context,
)
from harness import options
from harness.options.serve import BIND_HOST, CTX_PER_SLOT, LOG_FILE, PRACTICE_SERVER_PORT, PROFILE_SEED, SLOTS
from harness.options.shared import API_KEY_ENV


def add_parser(sub) -> None:
    p = sub.add_parser(
        "practice",
        help="run the practice server (an OpenAI-compatible stand-in with seats)",
        description="Run the practice server until Ctrl-C. Profiles: " + ", ".join(profiles.available()),
    )
    p.add_argument(
        "--profile", default=profiles.DEFAULT_PROFILE, help="profile name or YAML path (default: kit)"
    )
    options.to_argparse(p, BIND_HOST, command="practice")
    options.to_argparse(p, PRACTICE_SERVER_PORT, command="practice")
    options.to_argparse(p, SLOTS, command="practice")
    options.to_argparse(p, CTX_PER_SLOT, command="practice")
    options.to_argparse(p, API_KEY_ENV, command="practice")
    options.to_argparse(p, LOG_FILE, command="practice")
    options.to_argparse(p, PROFILE_SEED, command="practice")
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
