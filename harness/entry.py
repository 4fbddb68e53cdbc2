"""The ``harness`` console script. Commands that run Locust need gevent's monkey-patching before
anything imports ``ssl`` or ``requests``, so it happens here, before the CLI is imported."""

import sys

GEVENT_COMMANDS = {"sweep", "capacity"}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] in GEVENT_COMMANDS:
        from gevent import monkey

        monkey.patch_all()
    from harness.cli.dispatch import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
