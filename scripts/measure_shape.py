#!/usr/bin/env python3
"""The package's shape in figures: size of cli/ against the whole, modules near or past the size
warning, record fields spelled as string literals in many modules, and option names declared by
``add_argument`` in more than one module. Reads the source only (AST and regex).

Record fields are counted twice. The first count takes every string literal equal to any schema
property, so common words ("name", "model", "host") in HTTP payloads and tables count too. The
second takes only literals used as a key (``x["f"]``, ``x.get("f")``, ``{"f": ...}``) of a field
of a record schema: a place that reads or writes a record by spelling its field. A third leaves out
the fields that are also a word of another declared vocabulary: an option's name (harness/options),
a data file's key (the schemas not generated from a record, the vendored export format's too), a
key of the wire format (harness/endpoints/wire.py) or a command's name (harness/cli/commands.py,
the key of each command's own default). Such a word is rightly spelled where that vocabulary is
handled.

    .venv/bin/python scripts/measure_shape.py
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterator

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


# Record schemas besides those with a harness_schema property: lines written beside the notebook.
OTHER_RECORDS = ("sample", "memory-snapshot")
KEY_METHODS = ("get", "pop", "setdefault")  # x.get("f"): a key read like x["f"]


def _properties(node: object, found: set[str]) -> set[str]:
    """Every property name in a schema, at any depth (its $defs too)."""
    if isinstance(node, dict):
        found.update(node.get("properties", {}))
        for value in node.values():
            _properties(value, found)
    elif isinstance(node, list):
        for value in node:
            _properties(value, found)
    return found


def record_fields() -> dict[str, set[str]]:
    """Each record kind's field names, at any depth: the schemas of lines a notebook or the samples
    file holds (their top level has ``harness_schema``, or ``OTHER_RECORDS`` names them)."""
    kinds: dict[str, set[str]] = {}
    for schema in sorted((ROOT / "harness" / "schemas").glob("*.schema.json")):
        kind = schema.name.removesuffix(".schema.json")
        tree = json.loads(schema.read_text(encoding="utf-8"))
        if "harness_schema" in tree.get("properties", {}) or kind in OTHER_RECORDS:
            kinds[kind] = _properties(tree, set())
    return kinds


def key_literals(tree: ast.AST) -> Iterator[str]:
    """The string literals a module uses as keys: subscripts, ``.get``-like calls, dict displays."""
    for node in ast.walk(tree):
        keys: list[ast.expr | None] = []
        if isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in KEY_METHODS and node.args:
            keys = [node.args[0]]
        elif isinstance(node, ast.Dict):
            keys = list(node.keys)
        for key in keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield key.value


def _short(path: str) -> str:
    return path.removeprefix("harness/").removesuffix(".py")


def key_spellings(texts: dict[Path, str]) -> None:
    kinds = record_fields()
    fields = set().union(*kinds.values())
    keyed: dict[str, Counter] = defaultdict(Counter)  # field -> module -> key literals
    for path, text in texts.items():
        for key in key_literals(ast.parse(text)):
            if key in fields:
                keyed[key][str(path)] += 1
    rank = sorted(keyed, key=lambda f: (-len(keyed[f]), -sum(keyed[f].values()), f))
    print('\nrecord fields used as keys (x["f"], .get/.pop/.setdefault("f"), {"f": ...}) by modules:')
    for name in rank[:15]:
        where = sorted(keyed[name], key=lambda m: (-keyed[name][m], m))
        shown = ", ".join(_short(m) for m in where[:6]) + (f", +{len(where) - 6}" if len(where) > 6 else "")
        print(f"  {name:24s} modules {len(keyed[name]):3d}  keys {sum(keyed[name].values()):4d}  {shown}")
    modules: Counter = Counter()
    for per_module in keyed.values():
        modules.update(per_module)
    print(f"modules spelling record fields as keys: {len(modules)} ({sum(modules.values())} keys); the most:")
    for path, n in modules.most_common(10):
        print(f"  {n:4d}  {path}")
    print("each kind's own fields (in no other record schema): keyed in more than 3 modules, keys, modules")
    for kind, names in sorted(kinds.items()):
        own = names - set().union(*(v for k, v in kinds.items() if k != kind))
        many = sum(len(keyed[f]) > 3 for f in own)
        where = {m for f in own for m in keyed[f]}
        spelt = sum(sum(keyed[f].values()) for f in own)
        print(f"  {kind:16s} {many:3d} of {len(own):3d}  keys {spelt:4d}  modules {len(where):3d}")
    shared = {f for f in fields if sum(f in v for v in kinds.values()) > 1}
    wide = sum(len(keyed[f]) > 3 for f in shared)
    print(f"  (fields in several kinds: {len(shared)}, {wide} of them keyed in more than 3 modules)")
    many = sum(len(keyed[f]) > 3 for f in fields)
    print("record fields used as keys in more than 3 modules:", many, "of", len(fields))
    record_only(fields, keyed)


def _calls(path: Path, name: str) -> Iterator[ast.Call]:
    """The calls of ``name(...)`` in one module of the package."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == name:
            yield node


def option_words() -> set[str]:
    """Every declared option's name and dest, its aliases too: the first argument of each
    ``Option(...)`` in harness/options."""
    words: set[str] = set()
    for path in sorted((ROOT / "harness" / "options").glob("*.py")):
        for call in _calls(path, "Option"):
            spelt = [a for a in call.args[:1] if isinstance(a, ast.Constant)]
            for kw in call.keywords:
                if kw.arg == "aliases" and isinstance(kw.value, ast.Tuple):
                    spelt += [e for e in kw.value.elts if isinstance(e, ast.Constant)]
            for constant in spelt:
                name = str(constant.value).lstrip("-")
                words.update({name, name.replace("-", "_")})
    return words


def data_file_words() -> set[str]:
    """Every property of the data files' schemas: those not generated from a record (no
    scripts/schemas.py in their ``$comment``), the vendored ones (an export's format) too."""
    words: set[str] = set()
    for schema in sorted((ROOT / "harness" / "schemas").rglob("*.json")):
        tree = json.loads(schema.read_text(encoding="utf-8"))
        if "scripts/schemas.py" not in tree.get("$comment", ""):
            _properties(tree, words)
    return words


def wire_words() -> set[str]:
    """Every key of the wire format: the arguments of each ``WireKeys(...)`` in its declaration."""
    calls = _calls(ROOT / "harness" / "endpoints" / "wire.py", "WireKeys")
    return {a.value for call in calls for a in call.args if isinstance(a, ast.Constant)}


def command_words() -> set[str]:
    """Every ``harness`` command's name: the strings of ``NAMES`` in harness/cli/commands.py."""
    tree = ast.parse((ROOT / "harness" / "cli" / "commands.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "NAMES" for t in node.targets):
            return {e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)}
    return set()


def record_only(fields: set[str], keyed: dict[str, Counter]) -> None:
    """The record fields no other vocabulary declares, keyed in more than 3 modules, with where."""
    vocabularies = {
        "option": option_words(),
        "data file": data_file_words(),
        "wire": wire_words(),
        "command": command_words(),
    }
    shared = {f: [v for v, words in vocabularies.items() if f in words] for f in fields}
    own = sorted((f for f in fields if not shared[f]), key=lambda f: (-len(keyed[f]), f))
    sizes = ", ".join(f"{v} {len(words)}" for v, words in vocabularies.items())
    print(f"\nwords of other vocabularies ({sizes}): {sum(bool(v) for v in shared.values())} record fields")
    many = [f for f in own if len(keyed[f]) > 3]
    print("record-only fields keyed in more than 3 modules:", len(many), "of", len(own))
    for name in many:
        print(f"  {name:24s} {len(keyed[name]):3d}  " + ", ".join(_short(m) for m in sorted(keyed[name])))


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
    key_spellings(texts)
    option_declarations(texts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
