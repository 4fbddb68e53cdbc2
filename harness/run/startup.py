"""Around an engine's start: every port the lab uses checked free before it, and, when it does not
come up, the labs' troubleshooting row that its log matches (``data/diagnoses.yaml``, matched by
``engines/diagnoses.py``), in one line with the matching log line."""

from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from harness import paths
from harness.engines.diagnoses import Diagnosis, diagnose
from harness.errors import PortBusy
from harness.records.notebook import validate
from harness.engines.ports import holder, port_open
from harness.engines.command_line import launch_argv
from harness.run.plans import Plan

if TYPE_CHECKING:
    from harness.run.context import BlockContext

TAIL_BYTES = 256_000  # the end of a long log is where a start-up failure is


@lru_cache(maxsize=1)
def rules() -> tuple[dict, ...]:
    """The troubleshooting rows, validated against schemas/diagnoses.schema.json."""
    path = paths.data_file("diagnoses.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(data, "diagnoses", where=str(path))
    return tuple(data["rules"])


def log_tail(*logs: Path) -> str:
    """The end of each log that exists (an engine may write its own log and print to stdout)."""
    parts = []
    for log in logs:
        try:
            with open(log, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - TAIL_BYTES))
                parts.append(fh.read().decode("utf-8", "replace"))
        except OSError:
            continue
    return "\n".join(parts)


def explain(engine: str, error: str, *logs: Path) -> Diagnosis | None:
    """The troubleshooting row that the start error or the engine's logs match, or None."""
    return diagnose(error + "\n" + log_tail(*logs), list(rules()), engine)


def lab_ports(
    plan: Plan, run_dir: Path, skipped: set[str] | frozenset = frozenset()
) -> dict[tuple[str, int], list[str]]:
    """Every port the plan's own servers listen on, with the blocks that use it. A service's port
    (Lemonade: held by its service all along), an external endpoint's and those of ``skipped``
    blocks (optional ones that will not run here) are not the lab's to free."""
    from harness.run.context import block_context  # the context imports the plans; only needed here

    ports: dict[tuple[str, int], list[str]] = {}
    for block in plan.blocks.values():
        if block.launcher in ("service", "external") or block.id in skipped:
            continue
        ctx = block_context(plan, block, run_dir, dry_run=True)
        ports.setdefault((ctx.host, ctx.port), []).append(block.id)
    return ports


def refuse_busy_lab_ports(
    plan: Plan,
    run_dir: Path,
    ctx: BlockContext,
    keeps_port: bool,
    skipped: set[str] | frozenset = frozenset(),
) -> None:
    """Before an engine starts, every port the lab uses must be free (one server at a time), its own
    first; PortBusy names the port, its holder when the OS shows it, and the blocks that use it."""
    ports = lab_ports(plan, run_dir, skipped)
    own = (ctx.host, ctx.port)
    if not keeps_port:
        ports.setdefault(own, [ctx.block.id])
    else:
        ports.pop(own, None)
    for (host, port), blocks in sorted(ports.items(), key=lambda kv: kv[0] != own):
        if port_open(host, port):
            who = holder(port)
            used = "this engine's port" if (host, port) == own else f"the lab's port for {', '.join(blocks)}"
            raise PortBusy(
                f"port {port} is already in use{f' by {who}' if who else ''} ({used}); stop it first "
                "(one server at a time) or choose another port"
            )


def service_facts(launcher) -> dict:
    """What a service launcher learnt while starting, for the manifest: the process found on its port
    (``service_pid``: never ``pid``, which cleanup would stop), the API base it answered at, the
    status of each command run before the load, and why its memory is unknown. Empty otherwise. A
    rehearsal's stand-in service is the run's own: its pid is the engine's ``pid``, as any started
    process's."""
    if not hasattr(launcher, "before_results"):
        return {}
    facts: dict = {"before_start": launcher.before_results}
    if launcher.keeps_port:  # not a rehearsal's stand-in service (that one is the run's, and stopped)
        facts["service_pid"] = launcher.pid
    if launcher.api_base:
        facts["base_url"] = launcher.api_base
    if launcher.memory_note():
        facts["memory_note"] = launcher.memory_note()
    return facts


def service_notes(launcher) -> list[str]:
    """The lines printed under a started service: the fallback base path, an unknown memory."""
    facts = service_facts(launcher)
    notes = (
        [f"the API answered at {facts['base_url']} (not the plan's /v1); the steps use it"]
        if "base_url" in facts
        else []
    )
    return notes + ([facts["memory_note"]] if "memory_note" in facts else [])


def missing_program(ctx: BlockContext) -> str | None:
    """Why a host engine's program cannot be run here (its path is no file, its name not on PATH),
    or None; other launchers find their programs when they start."""
    if ctx.block.launcher != "host":
        return None
    from harness.run.launcher_table import stand_in_argv  # the launchers import this module

    program = stand_in_argv(ctx, launch_argv(ctx.block.engine, ctx.settings))[0]
    found = Path(program).is_file() if "/" in program else shutil.which(program) is not None
    return None if found else f"{program} not found; install it as the track's install lesson describes"
