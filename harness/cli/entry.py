"""The ``harness`` console script. SIGINT and SIGTERM are taken first (``harness.signals``), so a
signal during start-up (gevent's patching, the CLI's imports) ends the process at once in one line
with status 130. Commands that run Locust need gevent's monkey-patching before anything imports
``ssl`` or ``requests``, so it happens here, before the CLI is imported."""

import os
import signal
import sys

from harness import signals

GEVENT_COMMANDS = {"sweep", "capacity"}


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    signals.install(starting=command)
    try:
        if command in GEVENT_COMMANDS:
            from gevent import monkey

            monkey.patch_all()
        from harness.cli.dispatch import main as cli_main

        signals.started()
        code = cli_main()
    except KeyboardInterrupt:
        print(f"harness {command}: interrupted".replace("  ", " "), file=sys.stderr)
        code = 130
    code = 130 if signals.received() else code
    signals.finished()
    _quiet_exit(code)
    return code


def _quiet_exit(code: int) -> None:
    """Everything is written: a signal from here on ends the process at once with 130 (never a
    traceback from the interpreter's shutdown)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) not in (signal.SIG_IGN, None):
            signal.signal(sig, lambda *_: os._exit(130))


if __name__ == "__main__":
    sys.exit(main())
