"""Run a track plan: one engine at a time, each step a ``harness`` command (or a short in-process
check), every outcome in the run manifest, resumable (docs/architecture.md, "Contracts").

A run directory holds the notebook (``labbook.md``), the samples file beside it, each engine's
log under ``engines/``, each step's output under ``steps/``, charts, ``report.md`` and
``manifest.json``. This module is the stage loop; what it calls lives beside it: the block
contexts (``context``), starting and stopping their engines (``engine_control``), the launchers
(``launchers``), the step calls (``steps``), the manifest (``manifest``), the in-process steps
(``recovery``) and the dry run (``dry_run``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from harness.records.base import read_stamp
from harness.errors import HarnessError, InstallError
from harness.run.child import run_harness
from harness.run.cleanup import stop_server
from harness.run.context import BlockContext, block_context
from harness.run.dry_run import print_dry_run
from harness.run.engine_control import EngineControl
from harness.engines.handover_watch import HandOver
from harness.run.launcher_table import Launcher, make_launcher
from harness.records.manifest import CUT, ENGINE, MANIFEST, STEP
from harness.run.manifest import Manifest, now
from harness.run.plans import Block, Plan, Step, stages
from harness.run.admission_step import admission_level, write_admission
from harness.run.recovery import recovery
from harness.run.rehearsal import REHEARSAL_ENV, rehearsal_env
from harness.run.startup import explain, missing_program
from harness.run.steps import step_calls

STOP_ON_FAIL = True
CHECK_KINDS = ("check",)  # a FAIL here is recorded, and the report is still written


class Runner(EngineControl):
    """Executes a plan's stages in order into ``run_dir``; starting and stopping each block's
    engine is ``EngineControl``'s (``engine_control``)."""

    def __init__(self, plan: Plan, run_dir: Path, dry_run: bool = False, out: Callable[[str], None] = print):
        self.plan, self.run_dir, self.dry_run, self.out = plan, run_dir.absolute(), dry_run, out
        self.notebook = run_dir / "labbook.md"  # as given: the steps are told the path the user gave
        self.launcher: Launcher | None = None
        self.ctx: BlockContext | None = None  # the block whose engine was started last
        self.child_env: dict[str, str] = {}  # API keys for the steps: in their environment, never on disk
        self.manifest: Manifest | None = None
        self.handover: HandOver | None = None  # memory read before the running engine started
        self.versions: dict[tuple, str] = {}  # each engine build's version, read at its first start

    def step_env(self, block: Block | None) -> dict[str, str]:
        """A step's environment: the engine's API key, and in a rehearsal what every record it
        writes must say (rehearsal, and the block's stand-in)."""
        if self.plan.rehearsal is None:
            return self.child_env
        return {**self.child_env, REHEARSAL_ENV: rehearsal_env(self.plan.rehearsal, block)}

    def dry_run_print(self) -> None:
        print_dry_run(self.plan, self.run_dir, self.notebook, self.out)

    # -- the stage loop ---------------------------------------------------------------------------
    def execute(self, resume: bool) -> int:
        """Run every unfinished step; 0 when all passed, 1 when any failed, 130 when interrupted."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest.open(self.plan, self.run_dir, resume)
        self.manifest.save()
        if resume:
            self._after_a_cut()
        done = sum(1 for s in self.manifest.data[MANIFEST.steps] if s[STEP.status] in ("passed", "skipped"))
        self.out(
            f"==> {self.plan.name}: {self.plan.title}; {len(self.plan.steps)} steps, {done} already "
            f"done; run directory {self.run_dir}"
        )
        if not self._run_stages():
            return self._interrupted()
        return self._finish()

    def _after_a_cut(self) -> None:
        """Say where the last attempt was cut, if it was, and stop the engines it left running (by
        the manifest's own record, as ``harness cleanup`` does): a resumed run starts its own."""
        cut = self.manifest.cut
        if cut is not None:
            where = f"step {cut[CUT.step]}" if cut[CUT.step] else "between two steps"
            self.out(f"==> the last attempt was cut in {where} (no word from it: a SIGKILL or a crash)")
        left = [(b, e) for b, e in self.manifest.data[MANIFEST.engines].items() if e.get(ENGINE.running)]
        for block, entry in left:
            outcome = stop_server({**entry, "manifest": self.manifest.path, "block": block})
            entry[ENGINE.running] = False
            self.out(f"==> {block}: left running by the last attempt: {outcome}")
        if left:
            self.manifest.save()

    def _run_stages(self) -> bool:
        """Each stage's unfinished steps, stopping at the first failure outside the checks; the
        engine is stopped however this ends. False when interrupted (Ctrl-C or SIGINT)."""
        m, failed = self.manifest, False
        try:
            for block, steps in stages(self.plan):
                todo = [s for s in steps if not m.done(s.id) and s.kind not in ("start", "stop")]
                if not todo:
                    self._close_a_cut_stop(steps)
                    continue
                if block is None:
                    for s in todo:
                        failed |= not self.run_step(s, None)
                        if failed and STOP_ON_FAIL and s.kind not in CHECK_KINDS:
                            break
                else:
                    failed |= not self.run_block(block, steps, todo)
                if failed and STOP_ON_FAIL and not all(s.kind in CHECK_KINDS for s in todo):
                    break
        except KeyboardInterrupt:
            return False
        finally:
            try:
                self.stop_engine()
            except HarnessError as exc:
                self.out(f"    WARN  {exc}")
        return True

    def _close_a_cut_stop(self, steps: list[Step]) -> None:
        """A block whose measuring steps all finished but whose stop was cut (a SIGKILL while it
        stopped the engine): the resume's first act stopped what the cut left (``_after_a_cut``),
        so the stop step has done its work and passes, saying so, rather than fail the run."""
        for step in steps:
            entry = self.manifest.step(step.id)
            if step.kind == "stop" and entry[STEP.status] in ("interrupted", "running"):
                self._end(entry, "passed", "cut while it stopped the engine; the resume found it stopped")

    def _interrupted(self) -> int:
        m = self.manifest
        for entry in m.data[MANIFEST.steps]:
            if entry[STEP.status] == "running":
                entry.update(status="interrupted", ended=now(), reason="interrupted (Ctrl-C or SIGINT)")
        m.data[MANIFEST.status] = "interrupted"
        m.save()
        self.out(
            f"==> interrupted; the engine was stopped. Continue with: harness track {self.plan.path} "
            f"--run-dir {self.run_dir} --resume"
        )
        return 130

    def _finish(self) -> int:
        m = self.manifest
        statuses = [s[STEP.status] for s in m.data[MANIFEST.steps]]
        m.data[MANIFEST.status] = "passed" if all(x in ("passed", "skipped") for x in statuses) else "failed"
        m.save()
        counts = {k: statuses.count(k) for k in ("passed", "skipped", "failed", "pending")}
        self.out(
            f"==> {m.data[MANIFEST.status]}: "
            + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
            + f"; manifest {m.path}"
        )
        return 0 if m.data[MANIFEST.status] == "passed" else 1

    # -- one step's manifest entry ----------------------------------------------------------------
    def _begin(self, step: Step) -> dict:
        entry = self.manifest.step(step.id)
        entry.update(
            status="running", started=now(), ended=None, reason=None, attempts=entry[STEP.attempts] + 1
        )
        self.manifest.save()
        return entry

    def _end(self, entry: dict, status: str, reason: str | None = None, result: dict | None = None) -> bool:
        started = read_stamp(entry[STEP.started]).timestamp()
        duration = round(max(0.0, time.time() - started), 1)
        entry.update(status=status, reason=reason, ended=now(), duration_s=duration)
        if result is not None:
            entry[STEP.result] = result
        self.manifest.save()
        mark = {"passed": "PASS", "skipped": "SKIP", "failed": "FAIL"}.get(status, status)
        self.out(f"    {mark}  {entry['id']}" + (f": {reason}" if reason else "") + f" ({duration} s)")
        return status != "failed"

    # -- an engine block --------------------------------------------------------------------------
    def run_block(self, block: Block, steps: list[Step], todo: list[Step]) -> bool:
        """Start the block's engine, run its unfinished steps, stop it and prove the port free. On
        --resume the engine is started again (its start step counts a second attempt); finished
        measuring steps are not repeated."""
        why = self._cannot_run(block) if block.optional else None
        if why:
            return self._skip_block(block, steps, why)
        ctx = block_context(self.plan, block, self.run_dir, self.dry_run)
        self.ctx = ctx
        start, stop = steps[0], steps[-1]
        self.out(f"\n==> {block.id}: {block.engine['title']}")
        for note in self.plan.rehearsal.step_notes(start.id) if self.plan.rehearsal else []:
            self.out(f"    rehearsal: {note}")  # which stand-in serves this block, where it has its own
        entry = self._begin(start)
        if not self.start_engine(ctx, entry):
            if block.optional:  # the lab's "if it does not start, skip it and record that it did not"
                return self._skip_block(
                    block, steps, f"it did not start: {ctx.state.start_error}", heading=False
                )
            self._end(entry, "failed", ctx.state.start_error)
            for s in todo + [stop]:
                self.manifest.step(s.id).update(status="pending", reason=f"not run: {start.id} failed")
            self.manifest.save()
            return False
        self._end(entry, "passed", f"healthy in {ctx.state.startup_s:.1f} s; {ctx.state.version}")
        ok = True
        for s in todo:
            ok = self.run_step(s, ctx) and ok
            if not ok and STOP_ON_FAIL:
                break
        entry = self._begin(stop)
        launcher = self.launcher
        try:
            self.stop_engine()
        except HarnessError as exc:
            return self._end(entry, "failed", str(exc)) and False
        self._end(entry, "passed", launcher.stopped_note())
        return ok

    def _cannot_run(self, block: Block) -> str | None:
        """Why an optional block is skipped before its engine is tried: its engine is missing here,
        or its base block was skipped (a variant of an engine that did not start)."""
        why = self._missing(block)
        if why is None and block.base and self.manifest.step(f"{block.base}/start")[STEP.status] == "skipped":
            why = f"its base block {block.base} was skipped"
        return why

    def _not_running_here(self) -> set[str]:
        """Optional blocks that were skipped or whose engine is missing: their ports are not the lab's."""
        return {
            b.id
            for b in self.plan.blocks.values()
            if b.optional
            and (self.manifest.step(f"{b.id}/start")[STEP.status] == "skipped" or self._missing(b))
        }

    def _missing(self, block: Block) -> str | None:
        """Why an optional block's engine cannot run here (not installed, unsupported), or None."""
        try:
            ctx = block_context(self.plan, block, self.run_dir, self.dry_run)
            make_launcher(ctx)
        except InstallError as exc:
            return str(exc)
        return missing_program(ctx)

    def _needs_missing(self, block_id: str) -> str | None:
        """Why a global step that needs an optional block is skipped (that block was skipped, or
        will be because its engine is missing), or None."""
        if self.manifest.step(f"{block_id}/start")[STEP.status] == "skipped":
            return f"optional block {block_id} was skipped"
        why = self._missing(self.plan.blocks[block_id])
        return f"optional block {block_id} cannot run here: {why}" if why else None

    def _skip_block(self, block: Block, steps: list[Step], why: str, heading: bool = True) -> bool:
        """An optional block whose engine is missing or did not start: every unfinished step skipped
        with the reason; not a failure."""
        self.out(
            (f"\n==> {block.id}: {block.engine['title']}\n" if heading else "")
            + f"    SKIP  optional block: {why}"
        )
        for s in steps:
            if not self.manifest.done(s.id):
                self.manifest.step(s.id).update(
                    status="skipped", reason=f"optional block {block.id} skipped: {why}", ended=now()
                )
        self.manifest.save()
        return True

    # -- one step ---------------------------------------------------------------------------------
    def run_step(self, step: Step, ctx: BlockContext | None) -> bool:
        """Run one step and record its outcome; False when it failed."""
        entry = self._begin(step)
        log_path = self.run_dir / "steps" / f"{step.id.replace('/', '__').replace(':', '_')}.txt"
        entry[STEP.log] = str(log_path)
        self.out(f"--> {step.id}")
        try:
            done = self._in_process(step, ctx, entry)
            if done is not None:
                return done
            calls = step_calls(self.plan, self.run_dir, self.notebook, step, ctx)
            entry[STEP.command] = " && ".join(c.line() for c in calls)
            self.manifest.save()
            env = self.step_env(step.block)
            failures = [c.command for c in calls if run_harness(c.to_argv(), log_path, env, self.out) != 0]
            if failures:
                why = f"harness {failures[0]} exited non-zero; read {log_path}"
                return self._end(entry, "failed", why + self._explain(step, entry, log_path))
            if step.kind == "admission":
                write_admission(self.notebook, step, entry, self.out, env=env)
            return self._end(entry, "passed")
        except HarnessError as exc:
            return self._end(entry, "failed", str(exc))

    def _explain(self, step: Step, entry: dict, log_path: Path) -> str:
        """A failed step of an engine block: the troubleshooting row its output matches (a 401 from
        TabbyAPI), printed and kept; what to add to the step's reason ('' when none matches)."""
        found = explain(step.block.engine.name, "", log_path) if step.block is not None else None
        if found is None:
            return ""
        self.out(f"    WHY   {found.text()}")
        entry[STEP.result] = {**(entry.get(STEP.result) or {}), "diagnosis": found.to_dict()}
        return f"; {found.cause}: {found.remedy}"

    def _in_process(self, step: Step, ctx: BlockContext | None, entry: dict) -> bool | None:
        """The steps the runner does itself; their outcome, or None when the step's harness
        commands are still to run (the admission step first chooses its level here)."""
        rehearsal = self.plan.rehearsal
        if rehearsal is not None:
            if step.kind in rehearsal.skips:
                return self._end(entry, "skipped", f"rehearsal: {rehearsal.skips[step.kind]}")
            for note in rehearsal.step_notes(step.id):
                self.out(f"    rehearsal: {note}")
        if step.needs:
            why = self._needs_missing(step.needs)
            if why:
                return self._end(entry, "skipped", why)
        if step.kind == "verify-allocation" and step.block.engine.get("allocation", "none") == "none":
            return self._end(entry, "skipped", "this engine's log states no allocation the harness can check")
        if step.kind == "recovery":
            return self._end(entry, *recovery(ctx, self.child_env))
        if step.kind == "admission":
            level, why = admission_level(self.notebook, step)
            if level is None:
                write_admission(self.notebook, step, entry, self.out, why, self.step_env(step.block))
                return self._end(entry, "skipped", why)
            ctx.state.admission_level = str(level)
            entry[STEP.result] = {"admission_level": level, "why": why}
            self.out(f"    admission: c={level} ({why})")
        if step.kind in ("preflight", "environments"):
            return self._preflight(entry) if step.kind == "preflight" else self._environments(entry)
        if step.kind == "report":
            from harness.report.run_report import write_report

            path = write_report(self.run_dir, self.plan, self.manifest.data)
            return self._end(entry, "passed", None, {"report": str(path)})
        return None

    def _environments(self, entry: dict) -> bool:
        """The disk each engine's Python environment takes on the NVIDIA track: its size, measured once the
        installs and the first starts (TabbyAPI's installs PyTorch and ExLlamaV3) have made them."""
        from harness.run.guards import environment_sizes
        from harness.run.preflight_checks import summary

        findings = environment_sizes(str(self.plan.variables.get("ENV_DIRS", "")), made=True)
        for f in findings:
            self.out("    " + f.line())
        return self._end(entry, "passed", f"{len(findings)} line(s)", summary(findings))

    def _preflight(self, entry: dict) -> bool:
        from harness.run.preflight import plan_findings, plan_targets
        from harness.run.preflight_checks import summary

        findings = plan_findings(self.plan, plan_targets(self.plan, self.run_dir, self.dry_run), self.run_dir)
        for f in findings:
            self.out("    " + f.line())
        result = summary(findings)
        fails = result["counts"]["FAIL"]
        return self._end(
            entry,
            "failed" if fails else "passed",
            f"{fails} check(s) failed; nothing was started"
            if fails
            else f"{result['counts']['PASS']} pass, {result['counts']['WARN']} warn",
            result,
        )
