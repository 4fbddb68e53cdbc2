#!/usr/bin/env python3
"""Which modules of harness/ are pure by the house rule (tests/unit/test_house.py, whose checks
this uses): marked ``PURE = True``, pure but not marked yet, or impure and why (what it touches,
or the impure harness modules it imports). Ends with the counts.

    .venv/bin/python scripts/pure_modules.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.test_house import PACKAGE_DATA, imports, marked_pure, modules, outside_uses  # noqa: E402


def main() -> int:
    known = modules(ROOT)
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in known.items()}
    touches = {  # the one package-data read the house allows (PACKAGE_DATA) is no outside use
        name: [
            u for u in outside_uses(tree) if not (name in PACKAGE_DATA and u.startswith(PACKAGE_DATA[name]))
        ]
        for name, tree in trees.items()
    }
    deps: dict[str, set[str]] = {name: set() for name in known}
    for e in imports(ROOT):
        deps[e.source].add(e.target)
    pure = {name for name in known if not touches[name]}
    while dropped := {name for name in pure if deps[name] - pure}:  # impure through an import
        pure -= dropped
    marked = {name for name, tree in trees.items() if marked_pure(tree)}
    for name, path in known.items():
        if name in pure:
            state = "PURE (marked)" if name in marked else "PURE (not marked)"
        elif touches[name]:
            state = "impure: " + ", ".join(dict.fromkeys(u.split(" (line")[0] for u in touches[name]))
        else:
            state = "impure via " + ", ".join(sorted(deps[name] - pure))
        print(f"{name:45s} {len(path.read_text(encoding='utf-8').splitlines()):4d}  {state}")
    print(f"pure modules: {len(pure)} of {len(known)}; marked: {len(marked)}; not pure: {len(marked - pure)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
