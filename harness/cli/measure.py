"""``harness measure``: single-user prefill, decode and memory for one server, a drop-in for the
lab's compare-engines.py (same options, same record fields), and the power and energy of each
test's repetitions (the sweep's ``--telemetry`` options; the engine tables' energy). The tests,
the speed limit and the records are ``harness.engines.single_user``'s."""

from __future__ import annotations

import sys

from harness import options
from harness.options.load import BASE_URL, IDLE_TIMEOUT, MAX_TOKENS, TIMEOUT
from harness.options.record import CONTEXT_LENGTH, ENGINE, ENGINE_VERSION, QUANT
from harness.options.shared import (
    API_KEY,
    API_KEY_ENV,
    LABBOOK,
    MACHINE,
    MACHINE_DESC,
    MODEL,
    MODEL_GB,
    PRINT_ONLY,
)
from harness.options.telemetry import TELEMETRY_SET
from harness.engines import single_user
from harness.errors import ConfigError
from harness.options.shared import CHECKPOINT
from harness.options.single_user import (
    MEASURE,
    BACKEND,
    CONTAINER,
    IDLE_SNAPSHOT,
    LONG_REPEATS,
    NO_WARMUP,
    REPETITIONS,
    REUSE_PROMPT,
    SERVER_PID,
    SNAPSHOT_ONLY,
    WAIT_SECONDS,
)
from harness.report.single_user_lines import limit_line, result_lines


def add_parser(sub) -> None:
    p = sub.add_parser(
        "measure", help="single-user prefill, decode and memory (drop-in for compare-engines.py)"
    )
    options.to_argparse(
        p,
        *(SNAPSHOT_ONLY, ENGINE, BASE_URL, MODEL, API_KEY, API_KEY_ENV, ENGINE_VERSION, BACKEND),
        *(MACHINE_DESC, QUANT, CONTEXT_LENGTH, CHECKPOINT, SERVER_PID, CONTAINER, IDLE_SNAPSHOT),
        *(MAX_TOKENS, LONG_REPEATS, REPETITIONS, TIMEOUT, IDLE_TIMEOUT, WAIT_SECONDS),
        *(NO_WARMUP, REUSE_PROMPT),
        # with --machine: the short test's decode as a share of the speed limit; the power and energy
        # of each test's repetitions (docs/telemetry.md)
        *(MACHINE, MODEL_GB, LABBOOK, PRINT_ONLY, TELEMETRY_SET),
        command="measure",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    if args.snapshot_only:
        snap = single_user.write_snapshot(args.snapshot_only)
        print(f"    idle snapshot written to {args.snapshot_only}")
        print("    " + ", ".join(f"{k} {round(v)}" for k, v in snap.items() if isinstance(v, float)))
        return 0
    if not args.engine or not args.model:
        raise ConfigError("--engine and --model are needed (unless --snapshot-only)")
    # every numeric option in its declared range before anything is sent (ConfigError, one line)
    options.check(args, MEASURE, MAX_TOKENS, CONTEXT_LENGTH, TIMEOUT, IDLE_TIMEOUT, MODEL_GB, TELEMETRY_SET)
    got = single_user.run(args)
    for line in result_lines(args.engine, *got.records):
        print(line)
    if got.limit is not None:
        print(limit_line(args.engine, got.limit, got.records[0].decode_tokens_per_s))
    if args.reuse_prompt:
        print(
            "    --reuse-prompt: these runs measured the prefix cache, not prefill; nothing recorded",
            file=sys.stderr,
        )
        return 0
    if not args.print_only:
        single_user.append_speeds(args.labbook, got.short, got.long)
        print(f"    recorded 2 line(s) in {args.labbook}")
    return 0
