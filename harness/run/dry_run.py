"""``harness track PLAN --dry-run``: every engine start and every step's command, in run order,
exactly as a real run would execute them; nothing is started or written."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable

from harness import words
from harness.engines import handover_watch as handover
from harness.run.context import BlockContext, block_context, file_target
from harness.engines.command_line import engine_env, engine_files
from harness.run.launcher_table import make_launcher
from harness.run.plans import Block, Plan, Step, stages
from harness.run.steps import step_calls


def describe(step: Step, run_dir: Path) -> str:
    """In words, what a step that runs no harness command does."""
    if step.kind == "recovery":
        return "wait until the server reports no request running or waiting, then one smoke request"
    if step.kind == "preflight":
        return "python, model files, free disk, ports, engine binaries, the accelerator (harness preflight)"
    if step.kind == "environments":
        return "the disk each Python environment takes, after the installs and first starts (du -sh, df -h ~)"
    if step.kind == "report":
        return f"write {run_dir / 'report.md'}, report.html and the charts from the notebook's records"
    if step.kind == "verify-allocation":
        return "skipped: this engine's log states no allocation the harness can check"
    return step.kind


def _block_heading(block: Block) -> str:
    change = ""
    if block.base:
        change = f" (one change from {block.base}: " + words.change_text(block.changed) + ")"
    return f"\n# {block.id}: {block.engine['title']}{change}"


def _print_start(ctx: BlockContext, run_dir: Path, out: Callable[[str], None]) -> None:
    """The files the engine needs, its start command (with its environment) and the health wait."""
    engine = ctx.block.engine
    out(_block_heading(ctx.block))
    for name, text in engine_files(engine, ctx.settings).items():
        out(f"write {file_target(run_dir, name)}:\n" + "\n".join("    " + x for x in text.splitlines()))
    env = engine_env(engine, ctx.settings)
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    launcher = make_launcher(ctx)
    for line in getattr(launcher, "before_start_lines", lambda: [])():
        out(f"first: {line}")
    out(f"start: {prefix + ' ' if prefix else ''}{launcher.command()}")
    inside = getattr(launcher, "container_command", None)
    if inside is not None:  # what the engine itself runs, the Compose variables resolved
        out(f"       in the container: {shlex.join(inside())}")
    timeout = ctx.block.start_timeout_s or engine.get("health_timeout_s", 300)
    if ctx.block.launcher == "vllm-cpu":  # /health answers before the engine can serve
        out(f"wait:  {ctx.health_url} answers 200 and a streamed completion returns tokens")
    else:
        out(f"wait:  {ctx.health_url} answers 200")
    if ctx.block.optional:
        out(
            f"       optional: if {engine.name} is missing or not healthy within {timeout:g} s (or "
            f"{ctx.block.base} was skipped), its steps and what needs it are skipped, with the reason"
            if ctx.block.base
            else f"       optional: if {engine.name} is missing or not healthy within {timeout:g} s, its "
            "steps, its variants and what needs it are skipped, with the reason"
        )


def _rehearsal_lines(plan: Plan, step: Step, out: Callable[[str], None]) -> bool:
    """A rehearsal's word on a step: skipped (False), or what the overlay changed in it (True)."""
    if plan.rehearsal is None:
        return True
    if step.kind in plan.rehearsal.skips:
        out(f"{step.id}: skipped in a rehearsal: {plan.rehearsal.skips[step.kind]}")
        return False
    for note in plan.rehearsal.step_notes(step.id):
        out(f"       rehearsal: {note}")
    return True


def _rehearsal_header(r, out: Callable[[str], None]) -> None:
    """What a rehearsal says before its steps: its stand-ins, its size and the blocks it left out."""
    out(
        f"    REHEARSAL on this machine's CPU stand-ins, not {r.stands_for}"
        + (f" ({r.size} sizes)" if r.quick else "")
        + f"; overlay {r.path}"
    )
    for block_id, why in r.left_out.items():
        out(f"    left out at the {r.size} size: {block_id} ({why})")


def print_dry_run(plan: Plan, run_dir: Path, notebook: Path, out: Callable[[str], None]) -> None:
    """Print the plan as it would run into ``run_dir`` (absolute); ``notebook`` as the steps see it."""
    out(f"==> plan {plan.name}: {plan.title}" + (f" (tier {plan.tier})" if plan.tier else ""))
    if plan.rehearsal is not None:
        _rehearsal_header(plan.rehearsal, out)
    out(f"    run directory {run_dir}; nothing is started (dry run)")
    for block, steps in stages(plan):
        ctx = block_context(plan, block, run_dir, dry_run=True) if block is not None else None
        if ctx is not None:
            _print_start(ctx, run_dir, out)
            _rehearsal_lines(plan, steps[0], out)  # which stand-in serves a block that has its own
        for s in steps:
            if s.kind in ("start", "stop"):
                continue
            if not _rehearsal_lines(plan, s, out):
                continue
            calls = step_calls(plan, run_dir, notebook, s, ctx)
            for c in calls:
                out(f"{s.id}: {c.line()}")
            if not calls:
                out(f"{s.id}: {describe(s, run_dir)}")
            if s.needs:
                out(f"       needs {s.needs}: skipped, with the reason, when that optional block is")
        if ctx is not None:
            launcher = make_launcher(ctx)
            memory = handover.planned(block.launcher, launcher.keeps_port)
            if launcher.keeps_port:
                out(f"stop:  {block.id} ({launcher.stopped_note()}){memory}")
            else:
                out(f"stop:  {block.id}, then prove port {ctx.port} free{memory}")
