"""The ``harness`` subcommands, one module each, in the order ``harness --help`` lists them
(``harness.cli.dispatch`` builds the parser from this table and runs the one chosen)."""

from __future__ import annotations

from harness.cli import (
    capacity,
    check,
    cleanup,
    compare,
    crosscheck,
    demo,
    engines,
    export,
    gate,
    imitate,
    measure,
    practice,
    predict,
    preflight,
    probe,
    setup,
    summarise,
    sweep,
    telemetry,
    track,
    verify_allocation,
    worker,
)

COMMANDS = (
    practice,
    check,
    demo,
    sweep,
    worker,
    capacity,
    summarise,
    gate,
    export,
    compare,
    predict,
    verify_allocation,
    probe,
    measure,
    engines,
    preflight,
    track,
    cleanup,
    crosscheck,
    imitate,
    telemetry,
    setup,
)
