"""The ``harness`` command each plan step runs, as data: a :class:`StepCall` names the subcommand
and its options in order, and ``to_argv()`` gives the exact command line. The calls are pure
functions of the plan, the step and its block's context, so a dry run prints exactly what a real
run executes."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union

from harness.records.labels import file_label
from harness.run.context import BlockContext
from harness.engines.command_line import expand_vars, launch_argv
from harness.run.plans import Block, Plan, Step

# An option's value: a string, True for a flag without a value, or several strings (nargs).
Value = Union[str, bool, tuple[str, ...]]
Option = tuple[str, Value]


@dataclass(frozen=True)
class StepCall:
    """One ``harness`` command: the subcommand (one word, or a group and its verb: ``setup models``)
    and its options, in command-line order. Option names are the long flags spelt with underscores
    (``base_url`` is ``--base-url``)."""

    command: str
    options: tuple[Option, ...] = ()

    def to_argv(self) -> list[str]:
        """The arguments after ``harness``: ``["sweep", "--base-url", "http://...", ...]``."""
        argv = self.command.split()
        for name, value in self.options:
            flag = "--" + name.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif isinstance(value, tuple):
                argv += [flag, *value]
            else:
                argv += [flag, value]
        return argv

    def line(self) -> str:
        """How the call reads in a dry run and in the manifest."""
        return "harness " + shlex.join(self.to_argv())


def flag_options(options: dict) -> list[Option]:
    """A plan's option mapping as call options: ``True`` is a bare flag, false/null/empty are left out,
    anything else is its text with ``${VAR}`` filled from the environment."""
    out: list[Option] = []
    for key, value in options.items():
        if value is True:
            out.append((key, True))
        elif value is None or value is False or value == "":
            continue
        else:
            out.append((key, str(expand_vars(value, {}))))
    return out


def call(command: str, *groups: list[Option]) -> StepCall:
    return StepCall(command, tuple(opt for group in groups for opt in group))


READ_AFTER_START = "<read after start>"


def engine_record(plan: Plan, ctx: BlockContext) -> dict:
    """The engine, version and host written into a block's records. A version the plan states
    (the DGX Spark track's TensorRT-LLM image tag, as the lab records ``--engine-version "$TRTLLM_IMAGE"``) is
    recorded as stated, but by a rehearsal's imitation, which records its own; otherwise what the
    runner read from the engine once it started (a value, never a shell substitution), and before
    that (a dry run) ``<read after start>``."""
    block, version = ctx.block, ctx.state.version
    stated = block.record.get("engine_version")
    if stated and not (block.stand_in or {}).get("imitates"):
        version = str(stated)
    elif version is None:
        version = stated or READ_AFTER_START
    return {
        "engine": block.record.get("engine", block.engine.get("engine_label", block.engine.name)),
        "engine_version": version,
        "host": block.record.get("host", plan.variables.get("HOST_DESC", "unknown")),
    }


@dataclass(frozen=True)
class Where:
    """What every step builder needs besides the step: the plan, the run's charts folder and the
    notebook path as the steps are told it."""

    plan: Plan
    run_dir: Path
    notebook: str


# -- steps outside any engine block ------------------------------------------------------------------
def _predict(w: Where, o: dict) -> list[StepCall]:
    return [call("predict", flag_options(o))]


def _models(w: Where, o: dict) -> list[StepCall]:
    return [call("setup models", flag_options(o), [("labbook", w.notebook)])]


def _summarise(w: Where, o: dict) -> list[StepCall]:
    charts = w.run_dir / "charts"
    return [
        call(
            "summarise",
            [("labbook", w.notebook), ("label", label), ("record", True), ("markdown", True)],
            flag_options({"promise": o.get("promise"), "peak": o.get("peak"), "spares": o.get("spares")}),
            [("tpot_chart", str(charts / f"{file_label(label)}-tpot.png"))],
        )
        for label in o.get("labels", [])
    ]


def _compare(w: Where, o: dict) -> list[StepCall]:
    return [call("summarise", [("labbook", w.notebook), ("compare", (a, b))]) for a, b in o.get("items", [])]


def _check(w: Where, o: dict) -> list[StepCall]:
    known = w.plan.rehearsal.known if w.plan.rehearsal else {}  # a stand-in's known findings
    calls = [
        call(
            "summarise",
            [("labbook", w.notebook), ("check", True)],
            [("known_failure", f"{label}={why}") for label, why in known.items()],
        )
    ]
    machine = w.plan.variables.get("MACHINE") or w.plan.machine  # the tier's machine, else the plan's
    if o.get("engines", True):
        calls.append(
            call(
                "engines",
                [("labbook", w.notebook), ("check", True)],
                [("allow_cpu", True)] if o.get("allow_cpu") else [],
                # each engine against the ceiling of its own format on the plan's machine;
                # a rehearsal's stand-ins run on this machine, not the plan's
                [("machine", machine)] if machine and not w.plan.rehearsal else [],
            )
        )
    return calls


def _install(w: Where, o: dict) -> list[StepCall]:
    """The NVIDIA track's installs (``harness setup install``): the plan's vLLM environment and
    TabbyAPI checkout."""
    return [call("setup install", flag_options(o))]


PLAN_STEPS: dict[str, Callable[[Where, dict], list[StepCall]]] = {
    "predict": _predict,
    "models": _models,
    "install": _install,
    "summarise": _summarise,
    "compare": _compare,
    "check": _check,
}


# -- steps against a block's engine ------------------------------------------------------------------
def _served(ctx: BlockContext) -> list[Option]:
    """The options that say which server a measuring command talks to."""
    return [("base_url", ctx.api_url), ("model", ctx.model)]


def _verify_allocation(w: Where, ctx: BlockContext, o: dict) -> list[StepCall]:
    block = ctx.block
    return [
        call(
            "verify-allocation",
            [("log", str(ctx.log)), ("labbook", w.notebook), ("label", block.id)],
            flag_options(allocation_options(block, ctx.settings, o)),
        )
    ]


def _sweep(w: Where, ctx: BlockContext, o: dict, admission: bool = False) -> list[StepCall]:
    block, rec = ctx.block, engine_record(w.plan, ctx)
    cond = {k: block.record[k] for k in ("quant", "context_length", "server_slots") if k in block.record}
    opts = {**w.plan.sweep, **o}
    if admission:
        opts.pop("from", None)
        opts.setdefault("prompt_set", "mixed-long")
        opts["concurrency"] = ctx.state.admission_level or "<operating point of " + o.get("from", "?") + ">"
    return [
        call(
            "sweep",
            _served(ctx),
            [
                ("engine", rec["engine"]),
                ("engine_version", rec["engine_version"]),
                ("host_desc", rec["host"]),
            ],
            flag_options({**cond, **opts}),
            _load_workers(ctx),
            [("labbook", w.notebook)],
        )
    ]


def _load_workers(ctx: BlockContext) -> list[Option]:
    """For an engine whose compose definition names a Locust worker service: the sweep's master
    here, its workers in containers beside the engine (what the launcher reported once started;
    before that, a dry run, what it would start)."""
    if not ctx.block.engine.get("compose", {}).get("workers"):
        return []
    from harness.run.launcher_table import make_launcher  # the launchers import this package's context

    w = ctx.state.workers or make_launcher(ctx).load_workers()
    return [
        ("processes", str(w["processes"])),
        ("worker_command", w["worker_command"]),
        ("master_host", w["master_host"]),
        ("worker_url", w["worker_url"]),
    ]


def _admission(w: Where, ctx: BlockContext, o: dict) -> list[StepCall]:
    """The admission sweep at the level chosen from its ``from`` sweep; with ``search: true``,
    ``harness capacity`` instead: the largest crowd within the plan's promise on the same workload,
    its search starting at that level (the level it finds is the admission recommendation, and
    ``peak``/``spares`` size copies from it)."""
    if not o.get("search"):
        return _sweep(w, ctx, o, admission=True)
    block, rec = ctx.block, engine_record(w.plan, ctx)
    cond = {k: block.record[k] for k in ("quant", "context_length", "server_slots") if k in block.record}
    sweep = {k: v for k, v in w.plan.sweep.items() if k not in ("requests", "min_rounds")}
    opts = {**sweep, **{k: v for k, v in o.items() if k not in ("from", "search")}}
    opts.setdefault("prompt_set", "mixed-long")
    opts.setdefault("promise", w.plan.variables.get("PROMISE_S", w.plan.sweep.get("slo_ttft", 2.0)))
    start = ctx.state.admission_level or "<operating point of " + o.get("from", "?") + ">"
    return [
        call(
            "capacity",
            _served(ctx),
            [
                ("engine", rec["engine"]),
                ("engine_version", rec["engine_version"]),
                ("host_desc", rec["host"]),
            ],
            flag_options({**cond, **opts}),
            [("start", start), ("labbook", w.notebook)],
        )
    ]


def _cross_check(w: Where, ctx: BlockContext, o: dict) -> list[StepCall]:
    if ctx.block.launcher == "compose" and o.get("tool") != "batched-bench" and "exec" not in o:
        from harness.run.launcher_table import make_launcher

        o = {**o, "exec": make_launcher(ctx).exec_prefix()}  # the engine's own tool, in its container
    return [
        call(
            "crosscheck",
            flag_options(crosscheck_options(ctx.block, ctx.settings, o)),
            [("labbook", w.notebook)],
        )
    ]


def _probe(w: Where, ctx: BlockContext, o: dict) -> list[StepCall]:
    rec = engine_record(w.plan, ctx)
    return [
        call(
            "probe",
            [("engine", rec["engine"])],
            _served(ctx),
            [("engine_version", rec["engine_version"]), ("host", rec["host"])],
            flag_options(o),
            [("labbook", w.notebook)],
        )
    ]


def _measure(w: Where, ctx: BlockContext, o: dict) -> list[StepCall]:
    block, rec = ctx.block, engine_record(w.plan, ctx)
    backend = block.record.get("backend", block.engine.get("backend", ""))
    return [
        call(
            "measure",
            [("engine", rec["engine"])],
            _served(ctx),
            [("engine_version", rec["engine_version"]), ("backend", backend), ("host", rec["host"])],
            flag_options(
                {"quant": block.record.get("quant"), "context_length": block.record.get("context_length")}
            ),
            _checkpoint_of(block, ctx),
            _resident_of(block, ctx),
            [("idle_snapshot", str(ctx.idle))],
            flag_options(o),
            [("labbook", w.notebook)],
        )
    ]


def _checkpoint_of(block: Block, ctx: BlockContext) -> list[Option]:
    """The model file or folder a server on this machine loaded, for its chat template's fingerprint;
    none for a container's, a shim's or an external server's (their paths are not this machine's)."""
    model = ctx.settings.get("model")
    if block.launcher in ("host", "service", "vllm-cpu") and isinstance(model, str) and "/" in model:
        return [("checkpoint", model)]
    return []


def _resident_of(block: Block, ctx: BlockContext) -> list[Option]:
    """Whose resident set measure reads: a container engine's container by name (the pid here would
    be the docker client's; a compose engine's name is known once started, v1 and v2 differ), a
    host engine's pid. A service's is the process found listening on its port, and when none is
    visible (started, no pid) measure runs without it, as the manifest notes: never a placeholder."""
    kind = block.launcher
    if kind == "container":
        return [("container", str(block.engine["container"]["name"]))]
    if kind == "compose":
        if ctx.state.container:
            return [("container", ctx.state.container)]
        service = block.engine["compose"]["service"]
        return [] if ctx.state.version is not None else [("container", f"<compose container of {service}>")]
    if kind in ("external", "shim"):  # a shim engine's process is on the shim's host, not here
        return []
    if ctx.state.pid:
        return [("server_pid", str(ctx.state.pid))]
    if ctx.state.version is not None:  # started, and no process to read
        return []
    return [("server_pid", f"<pid listening on port {ctx.port}>" if kind == "service" else "<server pid>")]


BLOCK_STEPS: dict[str, Callable[[Where, BlockContext, dict], list[StepCall]]] = {
    "verify-allocation": _verify_allocation,
    "sweep": _sweep,
    "admission": _admission,
    "cross-check": _cross_check,
    "probe": _probe,
    "measure": _measure,
}


def step_calls(
    plan: Plan, run_dir: Path, notebook: Path, step: Step, ctx: BlockContext | None
) -> list[StepCall]:
    """The harness commands a step runs (none for the steps the runner does in-process)."""
    where, options = Where(plan, run_dir, str(notebook)), dict(step.options)
    if step.block is None:
        build = PLAN_STEPS.get(step.kind)
        return build(where, options) if build else []
    build_block = BLOCK_STEPS.get(step.kind)
    return build_block(where, ctx, options) if build_block else []


def crosscheck_options(block: Block, settings: dict, options: dict) -> dict:
    """Where the engine's own generator lives: llama-batched-bench beside the server binary, with
    the model file the server loaded; vllm bench serve inside the engine's container."""
    opts = dict(options)
    if opts.get("tool") == "batched-bench":
        server = Path(launch_argv(block.engine, settings)[0])
        opts.setdefault("binary", str(server.with_name("llama-batched-bench")))
        opts.setdefault("model_file", settings.get("model"))
        opts.setdefault("threads", settings.get("threads"))
    elif block.launcher == "container" and "exec" not in opts:
        opts["exec"] = f"docker exec {block.engine['container']['name']}"
    elif block.launcher == "vllm-cpu":
        # vllm bench serve from the same .venv-vllm, its tokeniser from the local model folder, offline
        opts.setdefault("vllm", settings.get("vllm_bin"))
        opts.setdefault("checkpoint", settings.get("model"))
        opts.setdefault("exec", "env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_TARGET_DEVICE=cpu")
    return opts


def allocation_options(block: Block, settings: dict, options: dict) -> dict:
    """What verify-allocation checks the engine's log against: the allocation the settings ask for."""
    alloc = block.engine.get("allocation", "none")
    found: dict = {"engine": alloc}
    for name, keys in (
        ("model", ("model",)),
        ("slots", ("slots", "max_seqs", "parallel")),
        ("ctx_per_slot", ("ctx_per_slot", "ctx")),
        ("cache_type", ("cache_type", "kv_dtype")),
        ("swa_full", ("swa_full",)),
        ("kv_bytes", ("kv_bytes",)),
    ):
        for key in keys:
            if settings.get(key) not in (None, ""):
                found[name] = settings[key]
                break
    if alloc == "trtllm" and settings.get("kv_tokens") not in (None, ""):
        found["kv_max_tokens"] = settings["kv_tokens"]  # the options file's kv_cache_config.max_tokens
    if found.get("cache_type") == "auto":
        found["cache_type"] = "f16"
    checks = block.engine.get("log_checks", {})
    found["expect_offload"] = bool(checks.get("offload"))
    # "prompt cache is disabled" is what --cache-ram 0 logs; a plan turning the cache on expects no such line
    found["expect_prompt_cache_off"] = (
        bool(checks.get("prompt_cache_off")) and str(settings.get("cache_ram", 0)) == "0"
    )
    return {**found, **options}
