import sys

from harness.cli.dispatch import main

sys.exit(main())
