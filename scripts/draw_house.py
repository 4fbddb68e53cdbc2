"""Print the house: harness/'s packages floor by floor, each with the packages it imports (read
from the source, every import counted), and each package's modules. docs/architecture.md carries
both between its "house" and "modules" markers; tests/unit/test_docs.py fails when they differ.

Run: .venv/bin/python scripts/draw_house.py [--write]   (--write fills docs/architecture.md)"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_house import FLOORS, imports, layer, modules  # noqa: E402  (the floors are declared there)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"


def house() -> str:
    """The drawing as text: one line per package, top floor first; the ground floor's modules
    (errors, paths, bounds, ...) are one line, and "ground" where a package imports them."""
    uses: dict[str, set[str]] = {}
    for e in imports():
        source, target = layer(e.source), layer(e.target)
        if source != target:
            uses.setdefault(source, set()).add(target)
    floor_of = {p: n for n, ps in enumerate(FLOORS) for p in ps}
    width = max(len(p) for ps in FLOORS[1:] for p in ps)
    lines = []
    for n in range(len(FLOORS) - 1, 0, -1):
        for package in FLOORS[n]:
            below = sorted(uses.get(package, ()), key=lambda p: (-floor_of.get(p, -1), p))
            named = list(dict.fromkeys("ground" if floor_of.get(p) == 0 else p for p in below))
            lines.append(f"{n:>2}  {package:<{width}}  imports {', '.join(named) or '-'}")
    ground = ", ".join(p for p in FLOORS[0] if p)
    rest = f"{ground} (and harness/__init__.py): they import only each other"
    lines.append(f"{0:>2}  {'ground':<{width}}  {rest}")
    return "\n".join(lines)


def module_lines() -> str:
    """One bullet per package: its modules by name, in the order of the floors, top first."""
    by_package: dict[str, list[str]] = {}
    for name, path in modules().items():
        parts = name.split(".")
        if len(parts) > 2 and path.name != "__init__.py":
            by_package.setdefault(parts[1], []).append(".".join(parts[2:]))
        elif len(parts) == 2 and path.name != "__init__.py":
            by_package.setdefault("", []).append(parts[1])
    lines = []
    for n in range(len(FLOORS) - 1, -1, -1):
        for package in FLOORS[n]:
            if package in by_package:
                shown = ", ".join(f"`{m}`" for m in sorted(by_package[package]))
                lines.append(f"- `{package or 'harness'}/`: {shown}")
    return "\n".join(lines)


def filled(page: str) -> str:
    """The page with both generated blocks as the source says today."""
    blocks = {"house": "```\n" + house() + "\n```", "modules": module_lines()}
    for key, text in blocks.items():
        pattern = re.compile(rf"(<!-- {key}: begin -->\n).*?(<!-- {key}: end -->)", re.S)
        page = pattern.sub(lambda m, text=text: m.group(1) + text + "\n" + m.group(2), page)
    return page


if __name__ == "__main__":
    if "--write" in sys.argv:
        PAGE.write_text(filled(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(house())
        print()
        print(module_lines())
