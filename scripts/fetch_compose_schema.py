"""Fetch the Compose specification's JSON Schema for the offline compose checks.

The schema ships inside the docker-compose 1.29.2 wheel on PyPI (compose/config/compose_spec.json);
this downloads that wheel without its dependencies and extracts the one file. Usage:
    python scripts/fetch_compose_schema.py .venv/compose_spec.json
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "docker-compose==1.29.2"
MEMBER = "compose/config/compose_spec.json"


def main(dest: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", tmp, WHEEL],
            check=True,
        )
        (wheel,) = Path(tmp).glob("docker_compose-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            Path(dest).write_bytes(zf.read(MEMBER))
    print(f"compose schema: {dest} (from {WHEEL})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".venv/compose_spec.json"))
