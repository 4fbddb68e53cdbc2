"""Engine launchers (docs/architecture.md, "Contracts"): start with stated settings, refuse a busy port, wait
until healthy, read the version, keep the log, stop, and prove the port free. Every launcher can
dry-run: ``command()`` is exactly what it would execute.

All of them meet :class:`~harness.engines.launchers.base.Launcher`. Which one an engine gets is its
definition's ``launcher`` field, looked up in :data:`LAUNCHERS` (kind -> factory).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness import paths
from harness.errors import ConfigError
from harness.engines.command_line import (
    arg_words,
    engine_env,
    expand_vars,
    fill,
    imitation_argv,
    launch_argv,
    version_argv,
)
from harness.engines.launchers.base import Launcher
from harness.engines.launchers.compose import ComposeLauncher
from harness.engines.launchers.container import ContainerLauncher
from harness.engines.launchers.external import ExternalLauncher
from harness.engines.launchers.host import HostLauncher
from harness.engines.launchers.service import Before, ServiceLauncher

if TYPE_CHECKING:
    from harness.run.context import BlockContext


def _version(ctx: BlockContext) -> dict:
    """The engine's version command and, when it has none, the version the plan states. An
    imitation's is the practice server's own (the imitated engine is not here to ask)."""
    imitates = (ctx.block.stand_in or {}).get("imitates")
    if imitates:
        return {
            "version_argv": [sys.executable, "-m", "harness.cli", "--version"],
            "version_fallback": f"practice imitation of {imitates}",
        }
    return {
        "version_argv": version_argv(ctx.block.engine, ctx.settings),
        "version_fallback": ctx.block.record.get("engine_version", "unknown"),
    }


def stand_in_argv(ctx: BlockContext, argv: list[str]) -> list[str]:
    """A rehearsal's imitation: the engine's own command line, handed to the practice server's
    ``harness imitate``, which reads it as that engine would and serves its API surface."""
    stand_in = ctx.block.stand_in or {}
    argv = [*argv, *stand_in.get("extra_args", [])]  # what the stand-in adds, said in its record
    if stand_in.get("imitates"):
        return imitation_argv(argv)
    return argv


def stand_in_env(ctx: BlockContext) -> dict[str, str]:
    """The engine's environment, plus what its rehearsal stand-in needs (vLLM's CPU platform)."""
    return {**engine_env(ctx.block.engine, ctx.settings), **(ctx.block.stand_in or {}).get("env", {})}


def _process_args(ctx: BlockContext) -> dict:
    """What every launcher of a local process takes: the command line with the stand-in's
    additions, where it listens and logs, its environment and how its version is read."""
    return {
        "argv": stand_in_argv(ctx, launch_argv(ctx.block.engine, ctx.settings)),
        "host": ctx.host,
        "port": ctx.port,
        "health_url": ctx.health_url,
        "log_path": ctx.out,
        "env": stand_in_env(ctx),
        **_version(ctx),
    }


def _process(cls: type[HostLauncher]) -> Callable[[BlockContext], Launcher]:
    """A factory for a launcher that runs the engine's command line as a local process."""

    def make(ctx: BlockContext) -> Launcher:
        return cls(**_process_args(ctx))

    return make


def _ready_on_completion(kind: str) -> Callable[[BlockContext], Launcher]:
    """vLLM's CPU build, or mlx_lm.server on MLX's CPU backend: a host process that is ready only
    after a real completion (each answers ``/health`` before it can serve), and whose stop proves
    its child processes gone (harness/engines/vllm_cpu.py, harness/engines/mlx_cpu.py). Whether it can run
    here is checked when its binary is resolved."""

    def make(ctx: BlockContext) -> Launcher:
        from harness.engines.launchers import vllm_cpu  # only needed for these engines

        cls = vllm_cpu.MlxCpuLauncher if kind == "mlx-cpu" else vllm_cpu.VllmLauncher
        return cls(**_process_args(ctx), ready_body=vllm_cpu.ready_body(ctx.model))

    return make


def _compose(ctx: BlockContext) -> Launcher:
    engine = ctx.block.engine
    c = engine["compose"]
    variables = {
        # A conditional (an args-style if/switch item) gives its words joined by spaces.
        k: " ".join(arg_words(v, ctx.settings, f"engine {engine.name} compose variable {k}"))
        if isinstance(v, dict)
        else fill(v, ctx.settings, f"engine {engine.name} compose variable {k}")
        for k, v in c["variables"].items()
    }
    for k, v in variables.items():
        # Compose reads a relative path against the compose file's folder; plans mean the working directory.
        if k.endswith("_DIR") and v and not v.startswith(("/", "~", "$")):
            variables[k] = str(paths.workdir() / v)
    override = (ctx.block.stand_in or {}).get("compose_override")
    return ComposeLauncher(
        override_files=(paths.workdir() / override,) if override else (),
        merged_file=Path(ctx.settings["run_dir"]) / "compose" / f"{c['service']}.yaml" if override else None,
        service=c["service"],
        profile=c.get("profile", c["service"]),
        variables=variables,
        env_file=paths.workdir() / fill(c["env_file"], ctx.settings),
        host=ctx.host,
        port=ctx.port,
        health_url=ctx.health_url,
        log_path=ctx.out,
        version_command=c.get("version_command"),
        workers=c.get("workers"),
    )


def _service(ctx: BlockContext) -> Launcher:
    """A service told to load a model by its CLI. In a rehearsal whose stand-in imitates it, every
    CLI call goes to the imitation (``harness imitate lemonade ...``) and the stand-in's ``daemon``,
    the imitated service, is started first and stopped last."""
    engine = ctx.block.engine
    where = f"engine {engine.name} service"
    spec = engine.get("service", {})
    stand_in = ctx.block.stand_in or {}
    imitated = bool(stand_in.get("imitates"))

    def cli(argv: list[str]) -> list[str]:
        return imitation_argv(argv) if imitated else argv

    before = []  # an item is an argv, or {argv, check: false} for a status that is only recorded
    for b in spec.get("before", []):
        argv, check = (b["argv"], b.get("check", True)) if isinstance(b, dict) else (b, True)
        before.append(Before(cli([fill(x, ctx.settings, where) for x in argv]), check))
    daemon = None
    if stand_in.get("daemon"):
        daemon = HostLauncher(
            argv=cli([fill(x, ctx.settings, f"{where} stand-in daemon") for x in stand_in["daemon"]]),
            host=ctx.host,
            port=ctx.port,
            health_url=ctx.health_url,
            log_path=ctx.out.with_name(ctx.out.stem + ".service" + ctx.out.suffix),
            env=stand_in_env(ctx),
        )
    return ServiceLauncher(
        before=before,
        fallback_path=spec.get("api_fallback"),
        argv=stand_in_argv(ctx, launch_argv(engine, ctx.settings)),
        stop_argv=cli([expand_vars(x, {}) for x in engine.get("stop_command", [])]),
        host=ctx.host,
        port=ctx.port,
        health_url=ctx.health_url,
        log_path=ctx.out,
        env=stand_in_env(ctx),
        daemon=daemon,
        **_version(ctx),
    )


def _shim(ctx: BlockContext) -> Launcher:
    """A native engine on the host, started through the host-side shim (docs/shim.md)."""
    from harness.engines.launchers.shim import ShimLauncher
    from harness.run.shim_allow import request_settings

    engine = ctx.block.engine
    # A shim engine's own settings say where the shim is; an engine moved there by --via-shim has
    # none, and the environment says (HARNESS_SHIM_URL, HARNESS_SHIM_TOKEN_FILE), else the defaults.
    where = {
        "shim_url": os.environ.get("HARNESS_SHIM_URL", "http://127.0.0.1:8790"),
        "shim_token_file": os.environ.get("HARNESS_SHIM_TOKEN_FILE", "runs/shim/token"),
    }
    token = Path(fill(ctx.settings.get("shim_token_file", where["shim_token_file"]), ctx.settings))
    return ShimLauncher(
        shim_url=fill(ctx.settings.get("shim_url", where["shim_url"]), ctx.settings),
        token_file=token if token.is_absolute() else paths.workdir() / token,
        engine=engine.name,
        settings=request_settings(ctx.block, ctx.settings),
        preview=stand_in_argv(ctx, launch_argv(engine, ctx.settings)),
        host=ctx.host,
        port=ctx.port,
        health_url=ctx.health_url,
        log_path=ctx.log,
        version_fallback=ctx.block.record.get("engine_version", "unknown"),
    )


def _external(ctx: BlockContext) -> Launcher:
    return ExternalLauncher(base_url=ctx.base_url, health_url=ctx.health_url, **_version(ctx))


LAUNCHERS: dict[str, Callable[[BlockContext], Launcher]] = {
    "host": _process(HostLauncher),
    "vllm-cpu": _ready_on_completion("vllm-cpu"),
    "mlx-cpu": _ready_on_completion("mlx-cpu"),
    "container": _process(ContainerLauncher),
    "compose": _compose,
    "service": _service,
    "external": _external,
    "shim": _shim,
}


def make_launcher(ctx: BlockContext) -> Launcher:
    """The launcher for a block, by its engine definition's ``launcher`` kind."""
    kind = ctx.block.launcher
    try:
        factory = LAUNCHERS[kind]
    except KeyError:
        raise ConfigError(
            f"engine {ctx.block.engine.name}: no launcher {kind!r}; known: {', '.join(LAUNCHERS)}"
        ) from None
    return factory(ctx)


__all__ = ["LAUNCHERS", "Launcher", "make_launcher"]
