"""``python -m harness.cli``: the same as the ``harness`` console script (which patches for gevent
first, for the commands that run Locust)."""

import sys

from harness.cli.entry import main

sys.exit(main())
