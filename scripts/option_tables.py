#!/usr/bin/env python3
"""Every option of ``harness sweep``, ``harness capacity`` and the Locust user as the parsers hold
them, with where each is declared and range-checked, as Markdown tables: the record of how many
times an option is declared and which checker bounds it.

    .venv/bin/python scripts/option_tables.py > options.md
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKERS = ("number", "seconds", "port", "whole", "number_list", "whole_list", "option_type")


def _call_name(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _limits(tree: ast.AST, where: Path, checked: dict[str, list[str]]) -> None:
    """The ``LIMITS`` table of Locust's option checks: flag -> (low, high, whole)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "LIMITS":
            assert isinstance(node.value, ast.Dict)
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant):
                    checked[key.value].append(f"{where}:{key.lineno} LIMITS {ast.unparse(value)}")


def declarations() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Where each ``--flag`` is declared (add_argument, option) and where a checker bounds it."""
    declared: dict[str, list[str]] = defaultdict(list)
    checked: dict[str, list[str]] = defaultdict(list)
    for path in sorted((ROOT / "harness").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT / "harness")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            first, fn = node.args[0], _call_name(node)
            if not (isinstance(first, ast.Constant) and str(first.value).startswith("--")):
                continue
            if fn in ("add_argument", "option"):
                declared[first.value].append(f"{where}:{node.lineno}")
            elif fn in CHECKERS or "whole" in fn:
                checked[first.value].append(f"{where}:{node.lineno} {ast.unparse(node)[:90]}")
        _limits(tree, where, checked)
    return declared, checked


def _kind(action: argparse.Action) -> str:
    flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
    kind = "flag" if flag else getattr(action.type, "__name__", str(action.type)) if action.type else "str"
    return kind + (" {" + "|".join(map(str, action.choices)) + "}" if action.choices else "")


def rows(actions, found, where_from: tuple[str, ...], checks_from: tuple[str, ...]) -> list[tuple]:
    """One row per option: name, type, default, bounds, help, where declared."""
    declared, checked = found
    out = []
    for a in actions:
        if not a.option_strings or isinstance(a, argparse._HelpAction):
            continue
        name = max(a.option_strings, key=len)
        default = "required" if a.required else repr(a.default)
        where = [x for x in declared.get(name, []) if x.startswith(where_from)]
        checks = [x.split(" ", 1)[1] + " (" + x.split(":")[0] + ")" for x in checked.get(name, [])]
        bounds = "; ".join(
            sorted(
                {c for c, x in zip(checks, checked.get(name, []), strict=True) if x.startswith(checks_from)}
            )
        )
        text = (a.help or "").replace("|", "/").replace("\n", " ")
        text = text[:77] + "..." if len(text) > 80 else text
        out.append((name, _kind(a), default, bounds[:160] or "-", text, ", ".join(where)))
    return out


def table(title: str, found: list[tuple], extra: list[str] | None = None) -> None:
    heads = ["option", "type", "default", "bounds (check today)", "help", "declared"] + (
        ["web form"] if extra else []
    )
    print(f"\n### {title} ({len(found)} options)\n")
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for i, r in enumerate(found):
        cells = [f"`{r[0]}`", *map(str, r[1:])] + ([extra[i]] if extra else [])
        print("| " + " | ".join(cells) + " |")


class Recorder(argparse.ArgumentParser):
    """A parser that keeps Locust's own keywords (env var, web form) on each action."""

    def add_argument(self, *args, env_var=None, include_in_web_ui=True, **kw):
        action = super().add_argument(*args, **kw)
        action.env_var, action.web = env_var, include_in_web_ui  # type: ignore[attr-defined]
        return action


def main() -> int:
    sys.path.insert(0, str(ROOT))
    import locust  # noqa: F401  (Locust patches ssl on import: first, as harness.cli.entry does)

    import harness.load.locust_options as locust_options
    from harness.cli.dispatch import build_parser

    found = declarations()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    checks = ("cli/sweep", "bounds", "workloads/specs", "workloads/request")
    table("harness sweep", rows(sub["sweep"]._actions, found, ("cli/sweep",), checks))
    capacity = ("cli/capacity", "cli/sweep")
    table("harness capacity", rows(sub["capacity"]._actions, found, capacity, ("cli/capacity", *checks)))
    recorder = Recorder(add_help=False)
    locust_options._options(recorder)
    actions = [a for a in recorder._actions if a.option_strings]
    web = ["yes" if a.web else "no" for a in actions]  # type: ignore[attr-defined]
    table(
        "Locust user (harness/load/locust_options.py; env LOCUST_<NAME>)",
        rows(actions, found, ("load/",), ("load/", "bounds")),
        web,
    )
    sweep = {max(a.option_strings, key=len) for a in sub["sweep"]._actions if a.option_strings}
    user = {max(a.option_strings, key=len) for a in actions}
    print(
        f"\nsweep only: {len(sweep - user)} | locust only: {sorted(user - sweep)} | both: {len(sweep & user)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
