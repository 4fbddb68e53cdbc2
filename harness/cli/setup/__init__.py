"""``harness setup THING``: the set-up verbs in one group (engines installed and served, the model
library, the NVIDIA track's installs, the shim's allow-list). The old top-level spellings (``harness
llama-cpu``) stay as aliases: they parse the same options and run after one line naming the new."""

from __future__ import annotations

import sys
from types import ModuleType

from harness.cli.commands import load

# The set-up verbs, each the module of that name in this package; loaded only when a command line
# names `setup` or one of their old spellings (harness.cli.dispatch).
NAMES = ("llama-cpu", "llama-vulkan", "vllm-cpu", "mlx-cpu", "models", "install", "shim-allow")


def things() -> tuple[ModuleType, ...]:
    """Every set-up verb's module, loaded."""
    return tuple(load(name, __name__) for name in NAMES)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "setup",
        help="set-up: llama-cpu, llama-vulkan, vllm-cpu, mlx-cpu, models, install, shim-allow",
        description="Install and serve the CPU engines, fill the model library, run the NVIDIA track's "
        "installs or write the shim's allow-list.",
    )
    group = p.add_subparsers(dest="thing", metavar="THING", required=True)
    for module in things():
        module.add_parser(group)


def add_aliases(sub) -> None:
    """Each set-up verb under its old top-level name too, marked so ``notice`` names the new one,
    and listed in the top-level help as the old spelling."""
    old = set()
    for module in things():
        before = set(sub.choices)
        module.add_parser(sub)
        old |= set(sub.choices) - before
    for name in old:
        sub.choices[name].set_defaults(renamed=name)
    for line in sub._choices_actions:
        if line.dest in old:
            line.help = f"the old spelling of 'setup {line.dest}'"


def notice(args) -> None:
    """One line on standard error when a command came by its old spelling."""
    old = getattr(args, "renamed", None)
    if old:
        print(f"harness: {old!r} is now 'setup {old}'", file=sys.stderr)
