"""``harness imitate <an engine's command line>``: the practice server imitating that engine's API
surface (TensorRT-LLM's trtllm-serve, mlx_lm.server, TabbyAPI's start.sh, Lemonade's service
``lemond``), for rehearsing a GPU track where the engine cannot run; ``harness imitate lemonade ...``
is Lemonade's CLI, sent to that service. Every answer names the imitation."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.practice import profile as profiles
from harness.practice.imitation import read_command
from harness.practice.server import run as run_server


def add_parser(sub) -> None:
    p = sub.add_parser(
        "imitate",
        help="the practice server imitating another engine's API, started by that engine's command line",
        description="Read an engine's own command line (trtllm-serve, mlx_lm.server, TabbyAPI's "
        "start.sh, lemond --pulled MODEL) and serve the practice server with that engine's routes, "
        "health, version and key rules on the address it names; `lemonade ...` is Lemonade's CLI, "
        "sent to that service. For rehearsals; labelled an imitation.",
    )
    p.add_argument("engine_argv", nargs=argparse.REMAINDER, help="the engine's command line")
    p.set_defaults(func=run)


def run(args) -> int:
    argv = args.engine_argv[1:] if args.engine_argv[:1] == ["--"] else args.engine_argv
    if argv and Path(argv[0]).name == "lemonade":  # Lemonade's CLI: a client of its service (lemond)
        from harness.practice import lemonade_cli

        return lemonade_cli.main(argv)
    imitation = read_command(argv)
    overrides: dict = {"seats": imitation.seats, "model": {"id": imitation.model}}
    if imitation.ctx:
        overrides["ctx_per_seat"] = imitation.ctx
    base = "llama" if imitation.persona.mode == "llama" else "vllm"
    profile = profiles.load_profile(base, overrides)
    return run_server(
        profile, host=imitation.host, port=imitation.port, api_key=imitation.api_key, imitation=imitation
    )
