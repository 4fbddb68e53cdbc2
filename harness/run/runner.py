"""Run a track plan: one engine at a time, each step a ``harness`` command (or a short in-process
check), every outcome in the run manifest, resumable (DESIGN.md, "Runs on disk").

A run directory holds the notebook (``labbook.md``), the samples file beside it, each engine's
log under ``engines/``, each step's output under ``steps/``, charts, ``report.md`` and
``manifest.json``. The manifest is rewritten after every step and validated before each write.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests
import yaml

from harness import __version__
from harness.run.engine_defs import (api_model, engine_env, engine_files, expand_vars, fill, launch_argv, port_of,
                             resolve_settings, version_argv)
from harness.errors import ConfigError, EngineError, HarnessError, InstallError
from harness.run.launchers.host import HostLauncher
from harness.run.launchers.others import ContainerLauncher, ExternalLauncher, ServiceLauncher, refuse_busy
from harness.run.plans import Block, Plan, Step, stages
from harness.io.notebook import validate
from harness.run.steps import step_commands

STOP_ON_FAIL = True
CHECK_KINDS = ("check",)
QUEUE_GAUGES = ("requests_processing", "requests_deferred", "num_requests_running", "num_requests_waiting")  # a FAIL here is recorded, and the report is still written


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def harness_argv(args: list[str]) -> list[str]:
    """How a step runs a harness command: this interpreter, so the run uses this installation."""
    return [sys.executable, "-m", "harness.entry", *args]


def _resolver(kind: str, dry_run: bool) -> str:
    from harness.run import llama_cpu

    try:
        if kind == "llama-cpu-binary":
            return str(llama_cpu.find_llama_server())
        if kind == "llama-cpu-model":
            return str(llama_cpu.find_model())
        return sys.executable
    except InstallError:
        if dry_run:
            return {"llama-cpu-binary": "<llama-server from make llama-cpu>",
                    "llama-cpu-model": "<models/gemma-3-270m-q4_k_m.gguf from make llama-cpu>"}[kind]
        raise


class Manifest:
    """The run manifest: plan identity, engines started, each step's outcome."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data

    @classmethod
    def new(cls, path: Path, plan: Plan, run_dir: Path) -> "Manifest":
        data = {
            "record": "run-manifest", "harness_schema": 1, "harness_version": __version__,
            "plan": plan.name, "plan_file": str(plan.path), "plan_sha256": plan.sha256, "tier": plan.tier,
            "variables": {k: v for k, v in plan.variables.items() if "KEY" not in k.upper()},
            "run_dir": str(run_dir), "status": "running", "started": now(), "updated": now(),
            "host": {"node": platform.node(), "system": platform.platform(), "python": platform.python_version(),
                     "cpus": os.cpu_count()},
            "engines": {},
            "steps": [{"id": s.id, "kind": s.kind, "block": s.block.id if s.block else None, "status": "pending",
                       "reason": None, "command": None, "started": None, "ended": None, "duration_s": None,
                       "attempts": 0, "log": None, "result": None} for s in plan.steps],
        }
        return cls(path, data)

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read {path} ({exc.__class__.__name__}); start a new run instead of --resume") \
                from None
        validate(data, "run-manifest", where=str(path))
        return cls(path, data)

    def step(self, step_id: str) -> dict:
        for entry in self.data["steps"]:
            if entry["id"] == step_id:
                return entry
        raise ConfigError(f"step {step_id} is not in {self.path}; the plan changed, start a new run")

    def save(self) -> None:
        self.data["updated"] = now()
        validate(self.data, "run-manifest", where=str(self.path))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)


class Runner:
    """Executes a plan's stages in order into ``run_dir``."""

    def __init__(self, plan: Plan, run_dir: Path, dry_run: bool = False, out=print):
        self.plan, self.run_dir, self.dry_run, self.out = plan, run_dir.absolute(), dry_run, out
        self.notebook = run_dir / "labbook.md"
        self.launcher = None
        self.block_ctx: dict = {}
        self.child_env: dict[str, str] = {}  # API keys for the steps: in their environment, never on disk
        self.manifest: Manifest | None = None

    # -- per-block context ------------------------------------------------------------------------
    def settings_for(self, block: Block) -> dict:
        engine = block.engine
        log = self.run_dir / "engines" / f"{block.id}.log"
        run = {"log": str(log), "run_dir": str(self.run_dir)}
        settings = resolve_settings(engine, block.settings, self.plan.variables, run)
        for name, kind in engine.get("resolve", {}).items():
            if settings.get(name) == "auto":
                settings[name] = _resolver(kind, self.dry_run)
        return settings

    def context(self, block: Block) -> dict:
        engine, settings = block.engine, self.settings_for(block)
        host = settings.get("host", "127.0.0.1")
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        port = port_of(engine, settings)
        own_log = engine.get("log", "stdout") == "own"
        return {"settings": settings, "host": host, "port": port, "base_url": f"http://{host}:{port}/v1",
                "health_url": f"http://{host}:{port}{engine['health']}", "model": api_model(engine, settings),
                "log": Path(settings["log"]) if own_log else self.run_dir / "engines" / f"{block.id}.out",
                "out": self.run_dir / "engines" / f"{block.id}.out", "version": None, "pid": None,
                "idle": self.run_dir / "engines" / f"{block.id}.idle.json"}

    def make_launcher(self, block: Block, ctx: dict):
        engine, settings = block.engine, ctx["settings"]
        kind = engine["launcher"]
        argv = launch_argv(engine, settings)
        env = engine_env(engine, settings)
        if kind == "host":
            return HostLauncher(argv=argv, host=ctx["host"], port=ctx["port"], health_url=ctx["health_url"],
                                log_path=ctx["out"], env=env)
        if kind == "container":
            return ContainerLauncher(argv=argv, host=ctx["host"], port=ctx["port"], health_url=ctx["health_url"],
                                     log_path=ctx["out"], env=env)
        if kind == "compose":
            from harness.run.launchers.compose import ComposeLauncher
            from harness import paths

            c = engine["compose"]
            variables = {k: fill(v, settings, f"engine {engine.name} compose variable {k}")
                         for k, v in c["variables"].items()}
            return ComposeLauncher(service=c["service"], profile=c.get("profile", c["service"]), variables=variables,
                                   env_file=paths.workdir() / fill(c["env_file"], settings), host=ctx["host"],
                                   port=ctx["port"], health_url=ctx["health_url"], log_path=ctx["out"])
        if kind == "service":
            stop = [expand_vars(x, {}) for x in engine.get("stop_command", [])]
            return ServiceLauncher(argv=argv, stop_argv=stop, host=ctx["host"], port=ctx["port"],
                                   health_url=ctx["health_url"], log_path=ctx["out"], env=env)
        return ExternalLauncher(base_url=ctx["base_url"], health_url=ctx["health_url"])

    # -- step commands ----------------------------------------------------------------------------
    def commands(self, step: Step, ctx: dict | None) -> list[list[str]]:
        """The harness command lines a step runs (empty for in-process steps)."""
        return step_commands(self.plan, self.run_dir, self.notebook, step, ctx)

    # -- running ----------------------------------------------------------------------------------
    def run_harness(self, args: list[str], log_path: Path) -> int:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"$ harness {shlex.join(args)}\n")
            proc = subprocess.Popen(harness_argv(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    bufsize=1, env={**os.environ, **self.child_env})
            try:
                for line in proc.stdout:
                    log.write(line)
                    self.out("    " + line.rstrip("\n"))
                return proc.wait()
            except KeyboardInterrupt:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                raise

    def dry_run_print(self) -> None:
        p = self.plan
        self.out(f"==> plan {p.name}: {p.title}" + (f" (tier {p.tier})" if p.tier else ""))
        self.out(f"    run directory {self.run_dir}; nothing is started (dry run)")
        for block, steps in stages(p):
            if block is not None:
                ctx = self.context(block)
                self.out(f"\n# {block.id}: {block.engine['title']}" + (
                    f" (one change from {block.base}: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in
                                                                    (block.changed or {}).items()) + ")"
                    if block.base else ""))
                for name, text in engine_files(block.engine, ctx["settings"]).items():
                    self.out(f"write {self._file_path(name)}:\n" + "\n".join("    " + x for x in text.splitlines()))
                env = engine_env(block.engine, ctx["settings"])
                prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
                self.out(f"start: {prefix + ' ' if prefix else ''}{self.make_launcher(block, ctx).command()}")
                self.out(f"wait:  {ctx['health_url']} answers 200")
            else:
                ctx = None
            for s in steps:
                if s.kind in ("start", "stop"):
                    continue
                cmds = self.commands(s, ctx)
                if cmds:
                    for c in cmds:
                        self.out(f"{s.id}: harness {shlex.join(c)}")
                else:
                    self.out(f"{s.id}: {self.describe(s, ctx)}")
            if block is not None:
                self.out(f"stop:  {block.id}, then prove port {ctx['port']} free")

    def preflight_contexts(self) -> list[tuple[Block, dict]]:
        """Each block's context for the preflight; an engine that cannot be found is a finding,
        not an exception."""
        out = []
        for block in self.plan.blocks.values():
            try:
                ctx = self.context(block)
                ctx["argv0"] = launch_argv(block.engine, ctx["settings"])[0]
            except InstallError as exc:
                saved, self.dry_run = self.dry_run, True
                try:
                    ctx = self.context(block)
                finally:
                    self.dry_run = saved
                ctx.update(missing=str(exc), argv0="<missing>")
            out.append((block, ctx))
        return out

    def describe(self, step: Step, ctx: dict | None) -> str:
        if step.kind == "recovery":
            return "wait until the server reports no request running or waiting, then one smoke request"
        if step.kind == "preflight":
            return "python, model files, free disk, ports, engine binaries, the accelerator (harness preflight)"
        if step.kind == "report":
            return f"write {self.run_dir / 'report.md'} and the charts from the notebook's records"
        if step.kind == "verify-allocation":
            return "skipped: this engine's log states no allocation the harness can check"
        return step.kind

    def _file_path(self, name: str) -> Path:
        p = Path(name)
        return p if p.is_absolute() else self.run_dir / p

    def execute(self, resume: bool) -> int:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        path = self.run_dir / "manifest.json"
        if resume:
            self.manifest = Manifest.load(path)
            if self.manifest.data["plan_sha256"] != self.plan.sha256:
                raise ConfigError(f"{self.plan.path} changed since {self.run_dir} started; start a new run "
                                  "(without --resume)")
            self.manifest.data["status"] = "running"
        else:
            if path.exists():
                raise ConfigError(f"{self.run_dir} already holds a run; use --resume to continue it, or another "
                                  "--run-dir")
            self.manifest = Manifest.new(path, self.plan, self.run_dir)
        self.manifest.save()
        m = self.manifest
        total = len(self.plan.steps)
        done = sum(1 for s in m.data["steps"] if s["status"] in ("passed", "skipped"))
        self.out(f"==> {self.plan.name}: {self.plan.title}; {total} steps, {done} already done; run directory "
                 f"{self.run_dir}")
        failed = interrupted = False
        try:
            for block, steps in stages(self.plan):
                todo = [s for s in steps if m.step(s.id)["status"] not in ("passed", "skipped")
                        and s.kind not in ("start", "stop")]
                if not todo:
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
            interrupted = True
        finally:
            try:
                self.stop_engine()
            except HarnessError as exc:
                self.out(f"    WARN  {exc}")
        if interrupted:
            for entry in m.data["steps"]:
                if entry["status"] == "running":
                    entry.update(status="interrupted", ended=now(), reason="interrupted (Ctrl-C or SIGINT)")
            m.data["status"] = "interrupted"
            m.save()
            self.out(f"==> interrupted; the engine was stopped. Continue with: harness track {self.plan.path} "
                     f"--run-dir {self.run_dir} --resume")
            return 130
        statuses = [s["status"] for s in m.data["steps"]]
        m.data["status"] = "passed" if all(x in ("passed", "skipped") for x in statuses) else "failed"
        m.save()
        counts = {k: statuses.count(k) for k in ("passed", "skipped", "failed", "pending")}
        self.out(f"==> {m.data['status']}: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
                 + f"; manifest {m.path}")
        return 0 if m.data["status"] == "passed" else 1

    def _begin(self, step: Step) -> dict:
        entry = self.manifest.step(step.id)
        entry.update(status="running", started=now(), ended=None, reason=None, attempts=entry["attempts"] + 1)
        self.manifest.save()
        return entry

    def _end(self, entry: dict, status: str, reason: str | None = None, result: dict | None = None) -> bool:
        started = time.mktime(time.strptime(entry["started"][:19], "%Y-%m-%dT%H:%M:%S"))
        entry.update(status=status, reason=reason, ended=now(), duration_s=round(max(0.0, time.time() - started), 1))
        if result is not None:
            entry["result"] = result
        self.manifest.save()
        mark = {"passed": "PASS", "skipped": "SKIP", "failed": "FAIL"}.get(status, status)
        self.out(f"    {mark}  {entry['id']}" + (f": {reason}" if reason else "") + f" ({entry['duration_s']} s)")
        return status != "failed"

    def run_block(self, block: Block, steps: list[Step], todo: list[Step]) -> bool:
        """Start the block's engine, run its unfinished steps, stop it and prove the port free. On
        --resume the engine is started again (its start step counts a second attempt); finished
        measuring steps are not repeated."""
        ctx = self.context(block)
        self.block_ctx = ctx
        start, stop = steps[0], steps[-1]
        self.out(f"\n==> {block.id}: {block.engine['title']}")
        entry = self._begin(start)
        if not self.start_engine(block, ctx, entry):
            self._end(entry, "failed", ctx["start_error"])
            for s in todo + [stop]:
                self.manifest.step(s.id).update(status="pending", reason=f"not run: {start.id} failed")
            self.manifest.save()
            return False
        self._end(entry, "passed", f"healthy in {ctx['startup_s']:.1f} s; {ctx['version']}")
        ok = True
        for s in todo:
            ok = self.run_step(s, ctx) and ok
            if not ok and STOP_ON_FAIL:
                break
        entry = self._begin(stop)
        try:
            self.stop_engine()
        except HarnessError as exc:
            return self._end(entry, "failed", str(exc)) and False
        kind = block.engine["launcher"]
        self._end(entry, "passed", {"external": "external endpoint left as it was",
                                    "service": "model unloaded; the service keeps its port"}.get(
                                        kind, f"stopped; port {ctx['port']} is free"))
        return ok

    def start_engine(self, block: Block, ctx: dict, entry: dict) -> bool:
        engine = block.engine
        entries = self.manifest.data["engines"]
        try:
            launcher = self.make_launcher(block, ctx)
            entry["command"] = launcher.command()
            self._check_model_file(block, ctx["settings"])
            Path(ctx["out"]).parent.mkdir(parents=True, exist_ok=True)
            if engine["launcher"] not in ("external", "service"):
                refuse_busy(ctx["host"], ctx["port"])
            if any(s.kind == "measure" for s in self.plan.steps if s.block is block):
                # The idle memory reading the measure step subtracts, taken before this engine loads.
                if self.run_harness(["measure", "--snapshot-only", str(ctx["idle"])],
                                    self.run_dir / "steps" / f"{block.id}__idle-snapshot.txt") != 0:
                    self.out("    WARN  no idle memory snapshot; the memory column will be empty")
            for name, text in engine_files(engine, ctx["settings"]).items():
                target = self._file_path(name)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            Path(ctx["log"]).unlink(missing_ok=True)
            entries[block.id] = {"engine": engine.name, "command": launcher.command(),
                                 "settings": {k: v for k, v in ctx["settings"].items() if "key" not in k.lower()},
                                 "changed": block.changed, "version": None, "log": str(ctx["log"])}
            self.manifest.save()
            self.out(f"    start: {launcher.command()}")
            t0 = time.monotonic()
            self.launcher = launcher
            launcher.start(timeout=float(engine.get("health_timeout_s", 300)))
            ctx["startup_s"] = time.monotonic() - t0
            ctx["pid"] = launcher.pid
            self.child_env = self.api_key_env(block, ctx["settings"])
            ctx["version"] = self.read_version(block, ctx)
            # What harness cleanup needs to stop this server later, by our own record.
            entries[block.id].update(version=ctx["version"], pid=launcher.pid, host=ctx["host"], port=ctx["port"],
                                     running=True)
            self.manifest.save()
            self.out(f"    healthy after {ctx['startup_s']:.1f} s: {ctx['base_url']} ({ctx['version']})")
            return True
        except HarnessError as exc:
            ctx["start_error"] = str(exc)
            try:
                self.stop_engine()
            except HarnessError as stop_exc:
                ctx["start_error"] += f"; and stopping it: {stop_exc}"
            return False

    @staticmethod
    def _check_model_file(block: Block, settings: dict) -> None:
        """A host engine's model path must exist before anything starts (containers see their own paths)."""
        model = settings.get("model")
        if block.engine["launcher"] == "host" and isinstance(model, str) and model.startswith("/") \
                and not Path(model).exists():
            raise InstallError(f"model file {model} not found; download it first or fix the plan's variables")

    @staticmethod
    def api_key_env(block: Block, settings: dict) -> dict[str, str]:
        """The engine's own API key (TabbyAPI's api_tokens.yml) as an environment variable for the
        steps, which take it through --api-key-env; it is never printed or recorded."""
        spec = block.engine.get("api_key_file")
        if not spec:
            return {}
        path = Path(fill(spec, settings))
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            raise EngineError(f"cannot read the API key file {path}; it is written on the engine's first start") \
                from None
        key = data.get("api_key")
        key = key[0] if isinstance(key, list) and key else key
        if not isinstance(key, str) or not key:
            raise EngineError(f"{path} holds no api_key")
        return {block.engine.get("api_key_env", "LOADTEST_API_KEY"): key}

    def read_version(self, block: Block, ctx: dict) -> str:
        if block.engine["launcher"] == "compose":
            return self.launcher.version(block.engine["compose"].get("version_command"))
        argv = version_argv(block.engine, ctx["settings"])
        if not argv:
            return block.record.get("engine_version", "unknown")
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        if done.returncode != 0:
            return f"unknown ({shlex.join(argv)} exited with status {done.returncode})"
        lines = [x.strip() for x in (done.stdout + done.stderr).splitlines() if x.strip()]
        for line in lines:
            if line.lower().startswith("version"):
                return line
        return lines[-1] if lines else "unknown"

    def stop_engine(self) -> None:
        """Stop the running engine, if any; raises EngineError when its port stays busy."""
        launcher, self.launcher = self.launcher, None
        if launcher is None:
            return
        launcher.stop()
        for entry in self.manifest.data["engines"].values() if self.manifest else []:
            if entry.get("running"):
                entry["running"] = False
        if self.manifest:
            self.manifest.save()
        if self.block_ctx and not isinstance(launcher, (ServiceLauncher, ExternalLauncher)):
            self.out(f"    stopped; port {self.block_ctx['port']} is free")

    def run_step(self, step: Step, ctx: dict | None) -> bool:
        entry = self._begin(step)
        log_path = self.run_dir / "steps" / f"{step.id.replace('/', '__').replace(':', '_')}.txt"
        entry["log"] = str(log_path)
        self.out(f"--> {step.id}")
        try:
            if step.kind == "verify-allocation" and step.block.engine.get("allocation", "none") == "none":
                return self._end(entry, "skipped", "this engine's log states no allocation the harness can check")
            if step.kind == "recovery":
                return self._end(entry, *self.recovery(ctx))
            if step.kind == "admission":
                level, why = self.admission_level(step)
                if level is None:
                    return self._end(entry, "skipped", why)
                ctx["admission_level"] = str(level)
                entry["result"] = {"admission_level": level, "why": why}
                self.out(f"    admission: c={level} ({why})")
            if step.kind == "preflight":
                from harness.run.preflight import plan_findings, summary

                findings = plan_findings(self.plan, self.preflight_contexts(), self.run_dir)
                for f in findings:
                    self.out("    " + f.line())
                result = summary(findings)
                fails = result["counts"]["FAIL"]
                return self._end(entry, "failed" if fails else "passed",
                                 f"{fails} check(s) failed; nothing was started" if fails else
                                 f"{result['counts']['PASS']} pass, {result['counts']['WARN']} warn", result)
            if step.kind == "report":
                from harness.report.run_report import write_report

                path = write_report(self.run_dir, self.plan, self.manifest.data)
                return self._end(entry, "passed", None, {"report": str(path)})
            cmds = self.commands(step, ctx)
            entry["command"] = " && ".join("harness " + shlex.join(c) for c in cmds)
            self.manifest.save()
            failures = [c[0] for c in cmds if self.run_harness(c, log_path) != 0]
            if failures:
                return self._end(entry, "failed", f"harness {failures[0]} exited non-zero; read {log_path}")
            return self._end(entry, "passed")
        except HarnessError as exc:
            return self._end(entry, "failed", str(exc))

    # -- in-process steps -------------------------------------------------------------------------
    def recovery(self, ctx: dict, timeout: float = 120.0) -> tuple[str, str]:
        """After saturation: the server returns to idle and answers a fresh smoke request."""
        from harness.io.metrics_sampler import parse_metrics

        base = ctx["base_url"]
        metrics_url = base[: -len("/v1")] + "/metrics" if base.endswith("/v1") else base + "/metrics"
        deadline, busy = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try:
                r = requests.get(metrics_url, timeout=5)
            except requests.RequestException:
                break
            if r.status_code != 200:
                break
            gauges = [v for k, v in parse_metrics(r.text).items() if k.endswith(QUEUE_GAUGES)]
            if not gauges:
                break
            busy = sum(gauges)
            if busy == 0:
                break
            time.sleep(0.5)
        if busy:
            return "failed", f"still {busy:g} request(s) running or waiting {timeout:.0f} s after the load stopped"
        body = {"model": ctx["model"], "messages": [{"role": "user", "content": "Reply with one word: ready"}],
                "max_tokens": 8, "temperature": 0}
        headers = {"Authorization": f"Bearer {key}" for key in self.child_env.values()}
        t0 = time.monotonic()
        try:
            r = requests.post(base + "/chat/completions", json=body, headers=headers, timeout=60)
        except requests.RequestException as exc:
            return "failed", f"smoke request failed: {exc.__class__.__name__}"
        if r.status_code != 200:
            return "failed", f"smoke request answered HTTP {r.status_code}"
        idle = "idle by /metrics" if busy == 0 else "no /metrics to read"
        return "passed", f"{idle}; smoke request answered in {time.monotonic() - t0:.2f} s"

    def admission_level(self, step: Step) -> tuple[int | None, str]:
        from harness.core import curves
        from harness.core.levels import LAB_ID
        from harness.io.notebook import read_records

        source = step.options.get("from")
        recs = read_records(self.notebook, "level", select=lambda o: o.get("lab") == LAB_ID
                            and o.get("label") == source and "concurrency" in o).records
        levels = curves.by_label(recs).get(source, {})
        if not levels:
            return None, f"no levels recorded for {source}; its sweep did not run"
        d = curves.curve(levels)
        if d.operating_point is None:
            return None, f"no level of {source} met the objective (TTFT p90 <= {d.slo_ttft} s, TPOT p90 <= " \
                         f"{d.slo_tpot} s), so there is no admission level to recommend"
        return d.operating_point, f"highest level of {source} inside the objective"


def default_run_dir(plan: Plan, root: Path = Path("runs")) -> Path:
    return root / f"{time.strftime('%Y-%m-%d')}-{plan.name}"


def latest_run_dir(plan: Plan, root: Path = Path("runs")) -> Path | None:
    found = sorted(p for p in root.glob(f"*-{plan.name}*") if (p / "manifest.json").is_file())
    return found[-1] if found else None


def fresh_run_dir(plan: Plan, root: Path = Path("runs")) -> Path:
    base = default_run_dir(plan, root)
    path, n = base, 2
    while (path / "manifest.json").exists():
        path = base.with_name(f"{base.name}-{n}")
        n += 1
    return path
