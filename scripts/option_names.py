"""Option names declared by hand (``add_argument("--x", ...)``) in more than one module of
harness/, and how many options harness/options declares. Run from the repository root:
``.venv/bin/python scripts/option_names.py``."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path


def bare(root: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted((root / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                        found[arg.value].add(str(path.relative_to(root)))
    return found


def main(root: Path = Path(".")) -> int:
    names = bare(root)
    multi = {n: sorted(w) for n, w in names.items() if len(w) > 1}
    declared = sum(
        1
        for path in (root / "harness" / "options").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Option"
    )
    print(f"names declared by hand in more than one module: {len(multi)}")
    for name, where in sorted(multi.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {name:20s} {len(where)}  {', '.join(where)}")
    print(f"options declared in harness/options: {declared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
