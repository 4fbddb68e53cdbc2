"""The ``harness`` command lines each plan step runs: pure functions of the plan, the step and
its block's context (settings resolved, address, model, version), so a dry run prints exactly what
a real run executes."""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.run.engine_defs import expand_vars, launch_argv, version_argv
from harness.run.plans import Block, Plan, Step


def options_to_flags(options: dict) -> list[str]:
    """``{max_tokens: 64, swa_full: true}`` -> ``--max-tokens 64 --swa-full``; false/null are left out."""
    flags: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is None or value is False or value == "":
            continue
        else:
            flags += [flag, str(expand_vars(value, {}))]
    return flags


def engine_record(plan: Plan, block: Block, ctx: dict) -> dict:
    """The engine, version and host written into a block's records."""
    version = ctx["version"]
    if version is None:
        argv = version_argv(block.engine, ctx["settings"])
        version = "$(" + shlex.join(argv) + ")" if argv else block.record.get("engine_version", "unknown")
    return {"engine": block.record.get("engine", block.engine.get("engine_label", block.engine.name)),
            "engine_version": version,
            "host": block.record.get("host", plan.variables.get("HOST_DESC", "unknown"))}

def step_commands(plan: Plan, run_dir: Path, notebook: Path, step: Step, ctx: dict | None) -> list[list[str]]:
    """The harness command lines a step runs (empty for in-process steps)."""
    o, nb = dict(step.options), str(notebook)
    if step.block is None:
        if step.kind == "predict":
            return [["predict", *options_to_flags(o)]]
        if step.kind == "models":
            return [["models", *options_to_flags(o), "--labbook", nb]]
        if step.kind == "summarise":
            charts = run_dir / "charts"
            return [["summarise", "--labbook", nb, "--label", label, "--record", "--markdown",
                     *options_to_flags({"promise": o.get("promise")}),
                     "--tpot-chart", str(charts / f"{label}-tpot.png")] for label in o.get("labels", [])]
        if step.kind == "compare":
            return [["summarise", "--labbook", nb, "--compare", a, b] for a, b in o.get("items", [])]
        if step.kind == "check":
            cmds = [["summarise", "--labbook", nb, "--check"]]
            if o.get("engines", True):
                cmds.append(["engines", "--labbook", nb, "--check", *(["--allow-cpu"] if o.get("allow_cpu") else [])])
            return cmds
        return []
    block, rec = step.block, engine_record(plan, step.block, ctx)
    cond = {k: block.record[k] for k in ("quant", "context_length", "server_slots") if k in block.record}
    if step.kind == "verify-allocation":
        return [["verify-allocation", "--log", str(ctx["log"]), "--labbook", nb, "--label", block.id,
                 *options_to_flags(allocation_options(block, ctx["settings"], o))]]
    if step.kind in ("sweep", "admission"):
        opts = {**plan.sweep, **o}
        if step.kind == "admission":
            opts.pop("from", None)
            opts.setdefault("prompt_set", "mixed-long")
            opts["concurrency"] = ctx.get("admission_level") or "<operating point of " + o.get("from", "?") + ">"
        return [["sweep", "--base-url", ctx["base_url"], "--model", ctx["model"], "--engine", rec["engine"],
                 "--engine-version", rec["engine_version"], "--host-desc", rec["host"],
                 *options_to_flags({**cond, **opts}), "--labbook", nb]]
    if step.kind == "cross-check":
        return [["crosscheck", *options_to_flags(crosscheck_options(block, ctx["settings"], o)),
                 "--labbook", nb]]
    if step.kind == "probe":
        return [["probe", "--engine", rec["engine"], "--base-url", ctx["base_url"], "--model", ctx["model"],
                 "--engine-version", rec["engine_version"], "--host", rec["host"], *options_to_flags(o),
                 "--labbook", nb]]
    if step.kind == "measure":
        backend = block.record.get("backend", block.engine.get("backend", ""))
        return [["measure", "--engine", rec["engine"], "--base-url", ctx["base_url"], "--model", ctx["model"],
                 "--engine-version", rec["engine_version"], "--backend", backend, "--host", rec["host"],
                 *options_to_flags({"quant": block.record.get("quant"),
                                    "context_length": block.record.get("context_length")}),
                 "--server-pid", str(ctx["pid"] or "<server pid>"), "--idle-snapshot", str(ctx["idle"]),
                 *options_to_flags(o), "--labbook", nb]]
    return []

def crosscheck_options(block: Block, settings: dict, options: dict) -> dict:
    """Where the engine's own generator lives: llama-batched-bench beside the server binary, with
    the model file the server loaded; vllm bench serve inside the engine's container."""
    opts = dict(options)
    if opts.get("tool") == "batched-bench":
        server = Path(launch_argv(block.engine, settings)[0])
        opts.setdefault("binary", str(server.with_name("llama-batched-bench")))
        opts.setdefault("model_file", settings.get("model"))
        opts.setdefault("threads", settings.get("threads"))
    elif block.engine["launcher"] == "container" and "exec" not in opts:
        opts["exec"] = f"docker exec {block.engine['container']['name']}"
    return opts

def allocation_options(block: Block, settings: dict, options: dict) -> dict:
    alloc = block.engine.get("allocation", "none")
    found = {"engine": alloc}
    for name, keys in (("model", ("model",)), ("slots", ("slots", "max_seqs")),
                       ("ctx_per_slot", ("ctx_per_slot", "ctx")), ("cache_type", ("cache_type", "kv_dtype")),
                       ("swa_full", ("swa_full",)), ("kv_bytes", ("kv_bytes",))):
        for key in keys:
            if settings.get(key) not in (None, ""):
                found[name] = settings[key]
                break
    if found.get("cache_type") == "auto":
        found["cache_type"] = "f16"
    return {**found, **options}
