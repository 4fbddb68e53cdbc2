#!/usr/bin/env python3
"""The package's shape in figures: size of cli/ against the whole, modules near or past the size
warning, record fields spelled as string literals in many modules, and option names declared by
``add_argument`` in more than one module. Reads the source only (AST and regex).

    .venv/bin/python scripts/measure_shape.py
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WATCHED_FIELD = "output_tokens_per_s"


def sources() -> dict[Path, str]:
    """Every module of harness/ by its path relative to the repository root, with its text."""
    return {
        p.relative_to(ROOT): p.read_text(encoding="utf-8") for p in sorted((ROOT / "harness").rglob("*.py"))
    }


def sizes(texts: dict[Path, str]) -> None:
    lines = {p: len(t.splitlines()) for p, t in texts.items()}
    total = sum(lines.values())
    cli = sum(n for p, n in lines.items() if p.parts[1] == "cli")
    print(f"modules {len(texts)}, lines {total}; cli {cli} = {100 * cli / total:.1f} %")
    counts = [sum(n > 400 for n in lines.values()), sum(350 <= n <= 400 for n in lines.values())]
    counts.append(sum(n > 600 for n in lines.values()))
    print(f"modules over 400: {counts[0]}  350-400: {counts[1]}  over 600: {counts[2]}")


def schema_fields() -> set[str]:
    """Every property name declared in a record schema, at any depth."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            found.update(node.get("properties", {}))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for schema in (ROOT / "harness" / "schemas").glob("*.json"):
        walk(json.loads(schema.read_text(encoding="utf-8")))
    return found


def field_spellings(texts: dict[Path, str]) -> None:
    fields = schema_fields()
    quoted: dict[str, Counter] = defaultdict(Counter)  # field -> module -> string literals
    for path, text in texts.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in fields:
                quoted[node.value][str(path)] += 1
    rank = sorted(fields, key=lambda f: (-len(quoted[f]), -sum(quoted[f].values()), f))
    print("\nrecord fields (schema properties) by modules spelling them as a string literal:")
    for name in rank[:15]:
        print(f"  {name:28s} modules {len(quoted[name]):3d}  literals {sum(quoted[name].values()):4d}")
    word = [str(p) for p, t in texts.items() if re.search(rf"\b{WATCHED_FIELD}\b", t)]
    seen = quoted[WATCHED_FIELD]
    literals = f"string literals in {len(seen)} modules ({sum(seen.values())})"
    print(f"\n{WATCHED_FIELD}: {literals}; as a word in {len(word)}:")
    for path in word:
        print("   ", path, seen.get(path, 0))
    many = sum(len(quoted[f]) > 3 for f in fields)
    print("fields spelled as literals in more than 3 modules:", many, "of", len(fields))


def generated_schemas() -> None:
    """How many record schemas are written from their typed records (scripts/schemas.py)."""
    schemas = sorted((ROOT / "harness" / "schemas").glob("*.schema.json"))
    made = [p.name for p in schemas if "scripts/schemas.py" in json.loads(p.read_text()).get("$comment", "")]
    print(f"\nJSON Schemas generated: {len(made)} of {len(schemas)} ({', '.join(made)})")


def option_declarations(texts: dict[Path, str]) -> None:
    opts: dict[str, set[str]] = defaultdict(set)
    for path, text in texts.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                        opts[a.value].add(str(path))
    files = {q for s in opts.values() for q in s}
    print(f"\noption strings declared by add_argument: {len(opts)} names in {len(files)} files")
    multi = {o: sorted(s) for o, s in opts.items() if len(s) > 1}
    print(f"declared in more than one module: {len(multi)}")
    for name, where in sorted(multi.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {name:28s} {len(where)}  " + ", ".join(x.replace("harness/", "") for x in where))


def main() -> int:
    texts = sources()
    sizes(texts)
    field_spellings(texts)
    generated_schemas()
    option_declarations(texts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
