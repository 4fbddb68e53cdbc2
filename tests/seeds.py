"""The user's source documents (the seed lab pages) as tests read them: the lab's own checker,
cut from the page that embeds it. Absent seeds give None; the tests using them say so."""

from __future__ import annotations

import os
from pathlib import Path

SEEDS = Path(os.environ.get("HARNESS_SEEDS", "/work/shared/seeds"))


def seeds_summarise_load(folder: Path) -> str | None:
    """The seeds' summarise-load.py, cut from the seed page that embeds it (None without the seeds)."""
    return _script(folder, "summarise-load.py", "    sys.exit(main(sys.argv[1:]))\n")


def seeds_summarise_engines(folder: Path) -> str | None:
    """The engines lab's summarise-engines.py, cut from its page (None without the seeds)."""
    end = 'if __name__ == "__main__":\n    raise SystemExit(main())\n'
    return _script(folder, "summarise-engines.py", end)


def _script(folder: Path, name: str, end: str) -> str | None:
    """A script a seed page embeds under its name, from its first line to ``end`` (its last lines)."""
    start = f"{name}\n\n#!/usr/bin/env python3\n"
    for page in sorted(folder.glob("*.txt")) if folder.is_dir() else []:
        text = page.read_text(encoding="utf-8")
        if start in text:
            return "#!/usr/bin/env python3\n" + text.split(start, 1)[1].split(end, 1)[0] + end
    return None
