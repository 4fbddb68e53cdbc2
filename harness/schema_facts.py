"""A record part's JSON Schema, from its dataclass: each field says its own schema facts.

A field of a record part is declared with ``fact(...)``: its description (``added: ...`` where only
this harness writes it), its bounds, its enum, whether it may hold null, and, where the line's key
is not the field's name, the key. Its JSON type comes from its annotation: ``int`` is an integer,
``float`` a number, ``X | None`` is ``X`` (None: the key is left out) unless ``nullable``, and a
part of its own (a dataclass) is an object of that part's fields. ``object_schema(Part)`` gives
the object; ``scripts/schemas.py`` writes ``harness/schemas/<kind>.schema.json`` from it.

A part its record's floor cannot import (the workload's, the energy's) is named by dotted path
(``declared_in``); the caller resolves it (``resolve``), so this module imports nothing. Pure.
It sits on the ground floor, so that a package below the records (the machine's) declares its
part here too.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Callable, Iterator, Mapping, TypeVar, Union

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

T = TypeVar("T")
SCHEMA = "schema"  # the metadata key that holds a field's facts
_PLAIN = {int: "integer", float: "number", str: "string", bool: "boolean", dict: "object"}
_FIRST = ("$ref", "const", "enum", "type", "required", "additionalProperties")  # a property's layout
_LAST = ("description", "items", "properties")
_TYPED = {"$ref", "const", "enum", "type", "oneOf", "anyOf"}  # facts that say the type themselves


def fact(
    description: str = "",
    *,
    key: str | None = None,
    required: bool = False,
    nullable: bool = False,
    omit_none: bool = False,
    flatten: str | None = None,
    declared_in: str | None = None,
    written: bool = True,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
    schema: Mapping[str, Any] | None = None,
    **keywords: Any,
) -> Any:
    """A dataclass field with its schema facts. ``key``: the line's key when not the field's name;
    ``required``: every line has it; ``nullable``: null is a value (not a left-out key);
    ``omit_none``: a nullable field left out while None all the same (written once known);
    ``flatten``: the part's own fields go on the line itself, each key after this prefix;
    ``declared_in``: the dotted path of the part's dataclass or schema fragment; ``written``:
    False for a field the line never carries (an input of the builder). ``keywords``: JSON
    Schema keywords as they are (``minimum=0``, ``enum=[...]``, ``exclusiveMinimum=0``), ``type``
    where the annotation cannot say it; ``schema``: more of them, for the ones no Python name can
    spell or that clash with a parameter (``{"$ref": "machine"}``, ``{"required": [...]}``)."""
    facts = {
        "description": description,
        "key": key,
        "required": required,
        "nullable": nullable,
        "omit_none": omit_none,
        "flatten": flatten,
        "declared_in": declared_in,
        "written": written,
        "schema": {**keywords, **(schema or {})},
    }
    extra = {} if default_factory is dataclasses.MISSING else {"default_factory": default_factory}
    return dataclasses.field(default=default, metadata={SCHEMA: facts}, **extra)


Resolve = Callable[[str], Any]


def _no_resolve(path: str) -> Any:
    raise LookupError(f"{path} is declared elsewhere; pass resolve= to read it")


def object_schema(part: type, resolve: Resolve = _no_resolve) -> dict:
    """The JSON Schema object of a part: its class facts (``SCHEMA_FACTS``), ``required`` and its
    ``properties``, the keys in field order (``SCHEMA_KEYS``, keys no field holds, first)."""
    props, required = properties(part, resolve)
    out: dict = {"type": "object", **getattr(part, "SCHEMA_FACTS", {})}
    if required:
        out["required"] = required
    out["properties"] = props
    return out


def properties(part: type, resolve: Resolve = _no_resolve, prefix: str = "") -> tuple[dict, list[str]]:
    """The properties a part puts on its line and the keys every line has, flattened parts in
    place. Besides its fields a part may name keys no field holds: ``SCHEMA_KEYS`` (first),
    ``SCHEMA_AFTER`` (last) and ``SCHEMA_REQUIRED`` among them."""
    props: dict = {}
    required: list[str] = [prefix + name for name in getattr(part, "SCHEMA_REQUIRED", ())]
    for name, spec in getattr(part, "SCHEMA_KEYS", {}).items():
        props[prefix + name] = dict(spec)
    hints = typing.get_type_hints(part)
    for f in dataclasses.fields(part):
        facts = f.metadata.get(SCHEMA) or {"description": "", "schema": {}, "written": True}
        if not facts.get("written", True):
            continue
        hint = hints[f.name]
        if facts.get("declared_in"):
            hint = resolve(facts["declared_in"])
        if facts.get("flatten") is not None:
            inner = _without_none(hint)
            more, needed = properties(inner, resolve, prefix + facts["flatten"])
            props.update(more)
            required += needed
            continue
        key = prefix + (facts.get("key") or f.name)
        props[key] = _property(hint, facts, resolve)
        if facts.get("required"):
            required.append(key)
    for name, spec in getattr(part, "SCHEMA_AFTER", {}).items():
        props[prefix + name] = dict(spec)
    return props, required


def line_keys(part: type, prefix: str = "") -> list[str]:
    """The keys a part writes on its line, in its order: each field's key (flattened parts' too,
    after their prefix) and the keys no field holds; a part declared elsewhere and flattened
    (the level's workload) is left out: its own dataclass names its keys."""
    keys = [prefix + name for name in getattr(part, "SCHEMA_KEYS", {})]
    hints = typing.get_type_hints(part)
    for f in dataclasses.fields(part):
        facts = f.metadata.get(SCHEMA) or {}
        if not facts.get("written", True):
            continue
        if facts.get("flatten") is not None:
            if not facts.get("declared_in"):
                keys += line_keys(_without_none(hints[f.name]), prefix + facts["flatten"])
        else:
            keys.append(prefix + (facts.get("key") or f.name))
    return keys + [prefix + name for name in getattr(part, "SCHEMA_AFTER", {})]


def _property(hint: Any, facts: Mapping[str, Any], resolve: Resolve) -> dict:
    given = dict(facts.get("schema") or {})
    out: dict = {}
    if isinstance(hint, dict):  # a schema fragment declared beside its builder
        out.update(hint)
    elif not _TYPED.intersection(given):
        out.update(type_schema(hint, resolve, bool(facts.get("nullable"))))
    out.update(given)
    if facts.get("description"):
        out["description"] = facts["description"]
    return {k: out[k] for k in sorted(out, key=_rank)}


def _rank(key: str) -> int:
    if key in _FIRST:
        return _FIRST.index(key)
    return len(_FIRST) + 1 + _LAST.index(key) if key in _LAST else len(_FIRST)


def _without_none(hint: Any) -> Any:
    """The type a hint names with None taken out (None on a field: the key is left out)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else Union[tuple(args)]
    return hint


def type_schema(hint: Any, resolve: Resolve = _no_resolve, nullable: bool = False) -> dict:
    """The JSON Schema of a Python type: a plain type, a list of one, or a part of its own (its
    ``$defs`` name where it has one, ``SCHEMA_DEF``, else its object inline; one of null and it
    where null is a value)."""
    base = _without_none(hint)
    origin = typing.get_origin(base)
    values = typing.get_args(base)[1:] if origin is dict else ()
    if values and _is_part(values[0]):  # a map of names to parts
        return {"type": "object", "additionalProperties": type_schema(values[0], resolve)}
    if base in _PLAIN or origin is dict:
        word = _PLAIN[dict if origin is dict else base]
        return {"type": [word, "null"] if nullable else word}
    if origin in (list, tuple):
        out: dict = {"type": ["array", "null"] if nullable else "array"}
        item = typing.get_args(base)[0] if typing.get_args(base) else Any
        if item not in (Any, dict):
            out["items"] = type_schema(item, resolve)
        return out
    if isinstance(base, type) and dataclasses.is_dataclass(base):
        name = getattr(base, "SCHEMA_DEF", None)
        part = {"$ref": f"#/$defs/{name}"} if name else object_schema(base, resolve)
        return {"oneOf": [{"type": "null"}, part]} if nullable else part
    raise TypeError(f"no JSON type for {hint!r}: give type= or a schema in its fact()")


def definitions(*parts: Any, resolve: Resolve = _no_resolve) -> dict:
    """The ``$defs`` of a schema: each named part (``SCHEMA_DEF``) as its object."""
    return {p.SCHEMA_DEF: object_schema(p, resolve) for p in parts}


class FieldNames:
    """The notebook keys of a record part as attributes: ``STATS.output_tokens_per_s`` is the key
    ``"output_tokens_per_s"``. The part's dataclass is the one place a key is spelled (a field's
    own name, or the key its ``fact`` gives); a reader that needs the key itself (a table of
    columns, a spread, a dict it reads) takes it from here, and a misspelt one fails where it is
    used."""

    def __init__(self, part: type) -> None:
        self._names = frozenset(line_keys(part))

    def __getattr__(self, name: str) -> str:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"no record field {name!r}")
        return name


class KeyNames:
    """Keys no dataclass holds, declared as a list of names and read as attributes:
    ``HEAD.harness_schema`` is the key ``"harness_schema"``. The list is the one place each is
    spelled; a misspelt one fails where it is used."""

    what = "key"

    def __init__(self, *names: str) -> None:
        self._names = frozenset(names)
        for name in names:  # plain attributes, read as fast as a literal; ``__getattr__`` sees misses
            setattr(self, name, name)

    def __getattr__(self, name: str) -> str:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"no {self.what} {name!r}")
        return name

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names))


def left_out_while_none(part: type) -> tuple[str, ...]:
    """The fields a line leaves out while they hold None: those null is no value of (a line read
    from an older shape that lacked one gives it back without it), and the ``omit_none`` ones."""
    written = [f for f in dataclasses.fields(part) if (f.metadata.get(SCHEMA) or {}).get("written", True)]
    return tuple(f.name for f in written if _absent_while_none(f))


def _absent_while_none(f: dataclasses.Field) -> bool:
    facts = f.metadata.get(SCHEMA) or {}
    return not facts.get("nullable") or bool(facts.get("omit_none"))


def line(part: Any, prefix: str = "") -> dict:
    """The notebook line of a record part, its keys in field order: a part of its own as its object,
    a flattened part's fields in place, and a field null is no value of left out while it is None.
    So the dataclass alone says what a line holds."""
    out: dict = {}
    for f in dataclasses.fields(part):
        facts = f.metadata.get(SCHEMA) or {}
        if not facts.get("written", True):
            continue
        value = getattr(part, f.name)
        if facts.get("flatten") is not None:
            if value is not None:
                out.update(_plain(value, prefix + facts["flatten"]))
            continue
        if value is None and _absent_while_none(f):
            continue
        out[prefix + (facts.get("key") or f.name)] = _plain(value)
    return out


def _plain(value: Any, prefix: str = "") -> Any:
    """A field's value as JSON holds it: a part by its own ``to_dict`` where it has one, else its
    ``line``; a list item by item."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict") and not prefix:
            return value.to_dict()
        return line(value, prefix)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and any(_is_part(type(v)) for v in value.values()):
        return {k: _plain(v) for k, v in value.items()}
    return value


def read_line(part: type[T], record: Mapping[str, Any], prefix: str = "") -> T:
    """A record part from its notebook line (``line`` back): a key the line lacks reads as the
    field's default, else None, so lines written before a field existed still read; a part of its
    own is read from its object, a flattened one from the line itself."""
    given: dict = {}
    for name, key, inner, each, flatten, needed in _reading(part):  # type: ignore[arg-type]
        if flatten is not None:
            if any(prefix + flatten + k in record for k in line_keys(inner)):
                given[name] = read_line(inner, record, prefix + flatten)
            elif needed:
                given[name] = read_line(inner, {})
            continue
        if prefix + key in record:
            value = record[prefix + key]
            if inner is not None and isinstance(value, Mapping):
                value = read_line(inner, value)
            elif each is not None and isinstance(value, list):
                value = [read_line(each, v) if isinstance(v, Mapping) else v for v in value]
            given[name] = value
        elif needed:
            given[name] = None
    return part(**given)


@functools.lru_cache(maxsize=None)
def _reading(part: type) -> tuple[tuple[str, str, Any, Any, str | None, bool], ...]:
    """How ``read_line`` reads each field of a part, worked out once per part: its name, its key,
    its own part's class (None for a plain value), the class of each item of a list of parts, its
    flatten prefix, and whether it has no default."""
    hints = typing.get_type_hints(part)
    plan = []
    for f in dataclasses.fields(part):
        facts = f.metadata.get(SCHEMA) or {}
        if not facts.get("written", True):
            continue
        inner = _without_none(hints[f.name])
        own = inner if _is_part(inner) else None
        items = typing.get_args(inner) if typing.get_origin(inner) is list else ()
        each = items[0] if items and _is_part(items[0]) else None
        flatten = facts.get("flatten") if own is not None else None
        needed = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        plan.append((f.name, facts.get("key") or f.name, own, each, flatten, needed))
    return tuple(plan)


def _is_part(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)
