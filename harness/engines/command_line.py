"""Engines as data (docs/architecture.md, "Contracts"): an engine definition (``engines/*.yaml``, read
by ``harness.engines.definitions``) plus stated settings turned into the exact command line. Pure.

A string ``{name}`` is filled from the settings; a flag group naming a setting that is empty,
null or false is left out whole, so optional flags need no code. ``${VAR}`` in a setting's value
is taken from the plan's variables, then the environment (``${HOME}``).
"""

from __future__ import annotations

import os
import re
import string

from harness.errors import ConfigError
from harness.engines.definitions import Engine

_VAR = re.compile(r"\$\{(\w+)\}")
_FORMATTER = string.Formatter()


def expand_vars(value, variables: dict):
    """``${VAR}`` from ``variables``, then the environment; an unknown variable is an error."""
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key in variables:
            return str(variables[key])
        if key in os.environ:
            return os.environ[key]
        raise ConfigError(f"${{{key}}} is not set: add it to the plan's variables or the environment")

    return _VAR.sub(sub, value)


def resolve_settings(
    engine: Engine, overrides: dict | None = None, variables: dict | None = None, run: dict | None = None
) -> dict:
    """Defaults, then the plan's overrides, with variables expanded and derived settings computed.
    ``run`` adds what only the run knows ({log}, {run_dir}, ...)."""
    variables = variables or {}
    unknown = set(overrides or {}) - set(engine["settings"])
    if unknown:
        raise ConfigError(
            f"engine {engine.name} has no setting {', '.join(sorted(unknown))}; "
            f"its settings are {', '.join(engine['settings'])}"
        )
    settings = {k: expand_vars(v, variables) for k, v in {**engine["settings"], **(overrides or {})}.items()}
    for name, rule in engine.get("derived", {}).items():
        product = 1
        for part in rule["product"]:
            try:
                product *= int(settings[part])
            except (TypeError, ValueError):
                raise ConfigError(
                    f"engine {engine.name}: {part}={settings.get(part)!r} must be a whole number"
                ) from None
        settings[name] = product
    return {**settings, **(run or {})}


def _empty(value) -> bool:
    return value is None or value == "" or value is False


def fill(template, settings: dict, where: str = "") -> str:
    """``template`` with every ``{name}`` replaced; a missing setting is a ConfigError."""
    try:
        return str(template).format_map(settings)
    except KeyError as exc:
        raise ConfigError(
            f"{where or 'template'} names {{{exc.args[0]}}}, which no setting provides"
        ) from None


def _names(template) -> list[str]:
    return [field for _, field, _, _ in _FORMATTER.parse(str(template)) if field]


def _group(items, settings: dict, where: str) -> list[str]:
    if any(_empty(settings.get(n)) for item in items for n in _names(item)):
        return []
    return [fill(item, settings, where) for item in items]


def arg_words(arg, settings: dict, where: str) -> list[str]:
    """One item of an engine's ``args``: a group of words, or an ``if`` or ``switch`` choosing one."""
    if isinstance(arg, list):
        return _group(arg, settings, where)
    if "if" in arg:
        chosen = arg["then"] if not _empty(settings.get(arg["if"])) else arg.get("else", [])
        return _group(chosen, settings, where)
    value = str(settings.get(arg["switch"]))
    if value not in arg["cases"]:
        raise ConfigError(f"{where}: {arg['switch']} must be one of {', '.join(arg['cases'])}, not {value!r}")
    return _group(arg["cases"][value], settings, where)


def engine_argv(engine: Engine, settings: dict) -> list[str]:
    """The engine's own command line: binary and flags, in the definition's order."""
    where = f"engine {engine.name}"
    argv = [fill(engine["binary"], settings, where)]
    for arg in engine["args"]:
        argv += arg_words(arg, settings, where)
    return argv


def container_argv(engine: Engine, settings: dict) -> list[str]:
    """``docker run`` for a container engine: loopback-published ports, read-only model mounts."""
    c, where = engine["container"], f"engine {engine.name}"
    image = fill(c["image"], settings, where)
    if _empty(settings.get("image")) or image in ("", "None"):
        raise ConfigError(f"engine {engine.name} needs an image tag: set `image` in the plan (no :latest)")
    argv = ["docker", "run", "--rm", "--name", fill(c["name"], settings, where)]
    if c.get("gpus"):
        argv += ["--gpus", c["gpus"]]
    if c.get("ipc"):
        argv.append(f"--ipc={c['ipc']}")
    for limit in c.get("ulimits", []):
        argv += ["--ulimit", limit]
    for vol in c.get("volumes", []):
        argv += ["-v", fill(vol, settings, where)]
    for port in c.get("ports", []):
        argv += ["-p", fill(port, settings, where)]
    return argv + [image] + engine_argv(engine, settings)


def launch_argv(engine: Engine, settings: dict) -> list[str]:
    """What the launcher executes: the engine itself, or docker run around it."""
    if engine["launcher"] == "container":
        return container_argv(engine, settings)
    return engine_argv(engine, settings)


def engine_env(engine: Engine, settings: dict) -> dict[str, str]:
    return {k: fill(v, settings, f"engine {engine.name} env") for k, v in engine.get("env", {}).items()}


def engine_files(engine: Engine, settings: dict) -> dict[str, str]:
    """Files to write before start, keyed by path (relative paths are inside the run directory)."""
    return {
        fill(name, settings): fill(text, settings, f"engine {engine.name} file {name}")
        for name, text in engine.get("files", {}).items()
    }


def port_of(engine: Engine, settings: dict) -> int:
    value = fill(engine["port"], settings, f"engine {engine.name} port")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"engine {engine.name}: port {value!r} is not a number") from None


def api_model(engine: Engine, settings: dict) -> str:
    return fill(engine["api_model"], settings, f"engine {engine.name} api_model")


def version_argv(engine: Engine, settings: dict) -> list[str] | None:
    cmd = engine.get("version_command")
    return [fill(x, settings) for x in cmd] if cmd else None


def imitation_argv(argv: list[str]) -> list[str]:
    """The practice server imitating an engine (``harness imitate``), given that engine's own
    command line, which it reads as the engine would: a rehearsal's stand-in."""
    import sys

    return [sys.executable, "-m", "harness.cli", "imitate", *argv]
