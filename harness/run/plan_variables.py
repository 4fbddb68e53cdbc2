"""A track plan's variables as the command line sets them: ``--set NAME=VALUE`` pairs, and a free
port for each variable the plan marks ``free`` and ``--set`` leaves alone."""

from __future__ import annotations

import yaml

from harness.errors import ConfigError
from harness.engines.ports import free_port
from harness.run.plans import find_plan

FREE = "free"  # a plan variable with this value is given a port no one holds (tracks/practice.yaml)


def parse_sets(items: list[str]) -> dict[str, str]:
    """``--set`` pairs by name (ConfigError, one line, for one that is not NAME=VALUE)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set takes NAME=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


def free_ports(plan: str, sets: dict[str, str]) -> dict[str, str]:
    """``--set`` values for the plan's variables whose value is ``free`` and that ``--set`` leaves
    alone: a free port each, chosen here before the plan loads (the runner still refuses a port
    that is busy by the time its engine starts)."""
    try:
        variables = (yaml.safe_load(find_plan(plan).read_text(encoding="utf-8")) or {}).get("variables") or {}
    except (OSError, yaml.YAMLError):
        return {}  # load_plan says what is wrong with the file
    if not isinstance(variables, dict):
        return {}
    return {k: str(free_port()) for k, v in variables.items() if v == FREE and k not in sets}


def plan_size(args) -> bool | str:
    """``--quick`` and ``--smoke`` as load_plan takes them (``--smoke`` wins: it is the smaller)."""
    return "smoke" if args.smoke else args.quick
