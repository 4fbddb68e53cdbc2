"""Compose files as data: read ``compose/compose.yaml`` with a track's env file the way Docker
Compose does (YAML merge keys, ``${VAR}``, ``${VAR:-default}``, ``${VAR:?message}``, ``$$``),
list a profile's services, and check the file against the Compose specification's JSON Schema.
Pure apart from reading files; nothing here talks to Docker."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import yaml

from harness import paths
from harness.errors import ConfigError

COMPOSE_DIR = paths.compose_dir()
COMPOSE_FILE = COMPOSE_DIR / "compose.yaml"
_VAR = re.compile(r"\$(\$|\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>(?:[^{}]|\{[^{}]*\})*))?\})")


def read_env_file(path: str | Path) -> dict[str, str]:
    """KEY=VALUE lines; blank lines and # comments skipped; values taken literally."""
    out = {}
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ConfigError(f"{path}:{lineno}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def interpolate(value, env: dict[str, str], where: str = "compose file"):
    """Substitute variables as Compose does; ``${VAR:?msg}`` unset raises ConfigError(msg)."""
    if isinstance(value, dict):
        return {k: interpolate(v, env, where) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, where) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        if m.group(1) == "$":
            return "$"
        name, op, arg = m.group("name"), m.group("op"), m.group("arg") or ""
        current = env.get(name)
        unset_or_empty = current is None or (current == "" and op and op.startswith(":"))
        if op in (":-", "-"):
            return interpolate(arg, env, where) if unset_or_empty else current
        if op in (":?", "?"):
            if unset_or_empty:
                raise ConfigError(f"{where}: {arg or name + ' is required'}")
            return current
        return current or ""

    return _VAR.sub(sub, value)


def merge(base, override):
    """A later file merged over an earlier one as Compose does (mappings key by key; a command,
    an entrypoint or a list replaced whole), and a ``null`` removing the key, as v2's ``!reset``
    does: Compose v1 1.29 has no way to remove a key (a device reservation) from a later file."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(base[key], value) if key in base else value
        return out
    return override


def merged(path: str | Path, overrides: tuple = ()) -> dict:
    """The compose file with ``overrides`` merged after it, merge keys resolved and ``x-`` blocks
    dropped; variables are left for Compose (or ``load``) to fill."""
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    for extra in overrides:
        raw = merge(raw, yaml.safe_load(Path(extra).read_text(encoding="utf-8")))
    return {k: v for k, v in raw.items() if not k.startswith("x-")}


def write_merged(path: str | Path, overrides: tuple, target: Path) -> Path:
    """The merged file Compose is given (``-f target``): build contexts made absolute, since Compose
    reads them against the file's own folder (v1 checks that each exists)."""
    doc = merged(path, overrides)
    folder = Path(path).resolve().parent
    for service in doc.get("services", {}).values():
        build = service.get("build")
        if isinstance(build, dict) and "context" in build:
            build["context"] = str((folder / build["context"]).resolve())
    target.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# {Path(path).name} with {', '.join(Path(x).name for x in overrides)} merged after it (harness)\n"
    )
    target.write_text(header + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return target


def load(path: str | Path = COMPOSE_FILE, env: dict[str, str] | None = None, overrides: tuple = ()) -> dict:
    """The compose file (and any ``overrides`` merged after it, as ``-f a -f b`` does) with merge
    keys resolved, ``x-`` blocks dropped and variables filled."""
    return interpolate(merged(path, overrides), env or {}, str(path))


def profiles(doc: dict) -> list[str]:
    return sorted({p for svc in doc["services"].values() for p in svc.get("profiles", [])})


def services_for(doc: dict, profile: str) -> dict[str, dict]:
    """The services a ``--profile`` activates (services without profiles are always on)."""
    return {
        name: svc
        for name, svc in doc["services"].items()
        if not svc.get("profiles") or profile in svc["profiles"]
    }


def schema_problems(doc: dict, schema: dict) -> list[str]:
    validator = jsonschema.Draft201909Validator(schema)
    return [
        f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]


def load_schema(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
