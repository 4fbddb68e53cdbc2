"""The shim's allow-list (shim/harness_shim.py): what it may start, written from a plan's engine
definitions. For each engine a block starts with ``launcher: shim``: its program and fixed words
(resolved here, on the host), its argument templates, and the settings a request may give with
each one's check (the definition's ``shim.settings``). Every other setting is fixed here, so two
blocks of one engine that differ in a setting the definition does not declare are refused: the
shim could not start the second.

The shim reads JSON (it has the standard library only), so this is where the YAML is read.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.errors import ConfigError
from harness.run.installed import resolve_auto
from harness.engines.command_line import expand_vars, fill, imitation_argv, resolve_settings
from harness.run.plans import Block, Plan

ALLOW_SCHEMA = 1
HARNESS_SIDE = ("shim_url", "shim_token_file")  # settings only the harness's launcher reads


def _entry(plan: Plan, block: Block) -> dict:
    engine = block.engine
    spec = engine.get("shim")
    if spec is None:
        raise ConfigError(
            f"engine {engine.name} says launcher: shim but has no shim section; declare its settings"
        )
    settings = resolve_settings(engine, block.settings, plan.variables)
    for name, kind in engine.get("resolve", {}).items():
        if settings.get(name) == "auto":
            settings[name] = resolve_auto(kind, dry_run=False)
    declared, fills = spec["settings"], spec.get("fills", {})
    skip = {*declared, *fills, *HARNESS_SIDE, *engine.get("derived", {})}
    fixed = {k: v for k, v in settings.items() if k not in skip}
    where = f"engine {engine.name}"
    stand_in = block.stand_in or {}
    head = [fill(engine["binary"], fixed, where)]
    version = [fill(x, fixed, where) for x in engine.get("version_command", [])] or None
    if stand_in.get("imitates"):  # a rehearsal's imitation: the practice server reads the engine's line
        head = imitation_argv(head)
        version = [sys.executable, "-m", "harness.cli", "--version"]
    env = {
        k: expand_vars(v, plan.variables)
        for k, v in {**engine.get("env", {}), **stand_in.get("env", {})}.items()
    }
    return {
        "title": engine["title"],
        "argv_head": head,
        "args": engine["args"],
        "argv_tail": [str(x) for x in stand_in.get("extra_args", [])],
        "env": env,
        "fixed": fixed,
        "derived": engine.get("derived", {}),
        "settings": declared,
        "fills": fills,
        "port": engine["port"],
        "health": engine["health"],
        "version_argv": version,
        # the preflight's device check, run by the shim on its host (llama-server's own listing)
        "devices_argv": [head[0], "--list-devices"] if Path(head[0]).name == "llama-server" else None,
    }


def allow_list(plan: Plan, library: str | None = None, powermetrics: bool = False) -> dict:
    """The allow-list for every shim block of ``plan`` (a ConfigError when it has none); with
    ``powermetrics``, macOS's powermetrics too, found on the shim's PATH when it starts (the shim
    sets its arguments and answers ``GET /v1/power`` only when it runs as root)."""
    engines: dict[str, dict] = {}
    for block in plan.blocks.values():
        if block.launcher != "shim":
            continue
        entry = _entry(plan, block)
        name = block.engine.name
        if name in engines and engines[name] != entry:
            changed = sorted(k for k in entry["fixed"] if entry["fixed"][k] != engines[name]["fixed"].get(k))
            raise ConfigError(
                f"block {block.id} changes {', '.join(changed) or 'a fixed part'} of engine {name}, which "
                "its definition does not declare under shim.settings; declare it there"
            )
        engines[name] = entry
    if not engines:
        raise ConfigError(f"plan {plan.name} has no block whose engine says launcher: shim; nothing to allow")
    data: dict = {"schema_version": ALLOW_SCHEMA, "plan": plan.name, "engines": engines}
    if library:
        data["library"] = library
    if powermetrics:
        data["powermetrics"] = {"argv_head": ["powermetrics"]}
    return data


def via_shim(plan: Plan, reach_host: str | None = None) -> list[str]:
    """``harness track --via-shim``: every block whose engine definition has a ``shim`` section is
    started through the host-side shim instead of its own launcher (a Mac's native engines for a
    harness in a container, or a rehearsal's stand-ins). ``reach_host`` is where the harness reaches
    the engines (host.docker.internal from a container); the shim fills the engine's own address.
    The ids moved; a ConfigError when the plan has no engine the shim can start."""
    moved = []
    for block in plan.blocks.values():
        if block.engine.get("shim") and block.launcher != "shim":
            block.stand_in = {**(block.stand_in or {}), "launcher": "shim"}
            if reach_host:
                block.settings = {**block.settings, "host": reach_host}
            moved.append(block.id)
    if not any(b.launcher == "shim" for b in plan.blocks.values()):
        raise ConfigError(
            f"plan {plan.name} has no engine with a shim section; --via-shim has nothing to move"
        )
    return moved


def request_settings(block: Block, settings: dict) -> dict:
    """What the shim launcher sends for a block: its declared settings' values, nothing else."""
    return {k: settings.get(k) for k in block.engine["shim"]["settings"]}
