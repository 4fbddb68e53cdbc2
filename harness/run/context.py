"""A block's context: what the runner, the step calls and the preflight know about one engine
block before it starts (its settings resolved, address, model, log paths), and the little that is
learnt once it has started (version, pid, start-up time, admission level).

The context is computed from the plan alone, so a dry run, the preflight and a real run all see
the same addresses and paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import InstallError
from harness.engines.command_line import api_model, port_of, resolve_settings
from harness.run.installed import resolve_auto
from harness.run.plans import Block, Plan


@dataclass
class EngineState:
    """What becomes known only once the block's engine has started (all None before)."""

    version: str | None = None
    pid: int | None = None
    startup_s: float | None = None
    admission_level: str | None = None  # the level the admission step chose, for its sweep
    start_error: str | None = None
    workers: dict | None = None  # the Locust workers the launcher starts beside its engine (compose)
    container: str | None = None  # the engine's container, where a compose launcher started one
    base_url: str | None = (
        None  # the API base the engine answered at, when not the plan's (Lemonade's /api/v1)
    )


@dataclass(frozen=True)
class BlockContext:
    """One engine block, resolved: ``log`` is the engine's own log when it writes one, else its
    captured output ``out``; ``idle`` is where the idle memory snapshot goes before it loads."""

    block: Block
    settings: dict
    host: str
    port: int
    base_url: str
    health_url: str
    model: str
    log: Path
    out: Path
    idle: Path
    state: EngineState = field(default_factory=EngineState)

    @property
    def api_url(self) -> str:
        """Where the steps send their requests: the plan's base URL, or the one the engine answered at."""
        return self.state.base_url or self.base_url


def block_settings(plan: Plan, block: Block, run_dir: Path, dry_run: bool = False) -> dict:
    """The block's engine settings: defaults, the plan's values, the run's paths, ``auto`` resolved."""
    engine = block.engine
    run = {"log": str(run_dir / "engines" / f"{block.id}.log"), "run_dir": str(run_dir)}
    settings = resolve_settings(engine, block.settings, plan.variables, run)
    for name, kind in engine.get("resolve", {}).items():
        # A shim engine's programs are the host's, found when its allow-list is written (shim_allow.py).
        if settings.get(name) == "auto" and block.launcher != "shim":
            settings[name] = resolve_auto(kind, dry_run)
    return settings


def block_context(plan: Plan, block: Block, run_dir: Path, dry_run: bool = False) -> BlockContext:
    """The context of one block of ``plan`` run into ``run_dir`` (an absolute path)."""
    engine, settings = block.engine, block_settings(plan, block, run_dir, dry_run)
    host = settings.get("host", "127.0.0.1")
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"  # a server listening everywhere is reached here
    port = port_of(engine, settings)
    engines = run_dir / "engines"
    out = engines / f"{block.id}.out"
    own_log = engine.get("log", "stdout") == "own"
    root = f"http://{host}:{port}"
    return BlockContext(
        block=block,
        settings=settings,
        host=host,
        port=port,
        base_url=f"{root}/v1",
        health_url=f"{root}{engine['health']}",
        model=api_model(engine, settings),
        log=Path(settings["log"]) if own_log else out,
        out=out,
        idle=engines / f"{block.id}.idle.json",
    )


def check_model_file(ctx: BlockContext) -> None:
    """A host engine's model path must exist before anything starts (containers see their own paths)."""
    model = ctx.settings.get("model")
    if (
        ctx.block.launcher == "host"
        and not (ctx.block.stand_in or {}).get("imitates")  # an imitation loads no model
        and isinstance(model, str)
        and model.startswith("/")
        and not Path(model).exists()
    ):
        raise InstallError(f"model file {model} not found; download it first or fix the plan's variables")


def file_target(run_dir: Path, name: str) -> Path:
    """Where an engine's file (a config it reads) is written: relative names are inside the run."""
    p = Path(name)
    return p if p.is_absolute() else run_dir / p
