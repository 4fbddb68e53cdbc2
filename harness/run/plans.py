"""Track plans as data (docs/architecture.md, "Contracts"): read a plan, choose a memory tier, fill in its
variables, and flatten it into the ordered list of steps a run executes. Pure apart from reading
the YAML; nothing here starts anything.

A plan has engine blocks (one server started with stated settings, the steps run against it,
then stopped) and global steps (predict, summarise, compare, check, report). A block with
``base`` is a one-change variant: the base block's settings, then its own.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.engines.definitions import Engine, load_engine
from harness.records.notebook import problems
from harness.run.step_syntax import PREFIX_SIDES, prefix_pair_label, split_step, step_ids
from harness.run.rehearsal import Rehearsal, rehearse

TRACK_DIR = paths.tracks_dir()
BLOCK_KINDS = (
    "verify-allocation",
    "sweep",
    "prefix-pair",
    "probe",
    "measure",
    "recovery",
    "admission",
    "cross-check",
)
GLOBAL_KINDS = (
    "models",
    "install",
    "preflight",
    "environments",
    "predict",
    "summarise",
    "compare",
    "check",
    "report",
)
_WHOLE_VAR = re.compile(r"^\$\{(\w+)\}$")
_VAR = re.compile(r"\$\{(\w+)\}")


@dataclass
class Block:
    id: str
    engine: Engine
    settings: dict  # the plan's settings for this engine (before defaults)
    record: dict  # test conditions written into every record
    title: str = ""
    base: str | None = None
    changed: dict | None = None  # for a variant: {setting: [base value, this value]}
    optional: bool = False  # skipped (not failed) when its engine is missing here or does not start
    start_timeout_s: float | None = None  # how long its engine may take to become healthy (plan's word)
    stand_in: dict | None = None  # a rehearsal's stand-in for this block's engine (rehearsal.py)

    @property
    def launcher(self) -> str:
        """The launcher kind this block starts with: its engine's, or its rehearsal stand-in's."""
        return (self.stand_in or {}).get("launcher") or self.engine["launcher"]


@dataclass
class Step:
    id: str
    kind: str
    options: dict = field(default_factory=dict)
    block: Block | None = None
    needs: str | None = None  # a global step's optional block: skipped when that block was skipped


@dataclass
class Plan:
    name: str
    title: str
    path: Path
    sha256: str
    tier: str | None
    variables: dict
    machine: str | None
    sweep: dict
    blocks: dict[str, Block]
    steps: list[Step]
    rehearsal: Rehearsal | None = None  # set when the plan runs as a rehearsal on CPU stand-ins


def find_plan(name: str) -> Path:
    """A plan by path, or by name in ``tracks/`` (``cpu`` or ``track-s``)."""
    p = Path(name)
    if p.is_file():
        return p
    for candidate in (TRACK_DIR / f"{name}.yaml", TRACK_DIR / f"track-{name}.yaml"):
        if candidate.is_file():
            return candidate
    known = ", ".join(sorted(x.stem for x in TRACK_DIR.glob("*.yaml")))
    raise ConfigError(f"no plan {name!r}: give a YAML file or one of {known}")


def substitute(value, variables: dict):
    """``${VAR}`` filled from the plan's variables. A value that is exactly ``${VAR}`` keeps the
    variable's type; unknown names are left for the environment (``${HOME}``)."""
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if not isinstance(value, str):
        return value
    whole = _WHOLE_VAR.match(value)
    if whole and whole.group(1) in variables:
        return variables[whole.group(1)]
    return _VAR.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0), value)


def _expand_block_step(block: Block, kind: str, options: dict) -> list[Step]:
    ids = step_ids(block.id, kind, options)
    if kind == "prefix-pair":
        # The control first, then the shared prefix, each a plain sweep (the lab's order).
        prefix = options.pop("label_prefix", block.id)
        base = {"concurrency": "1,10", "max_tokens": 64, **options}
        return [
            Step(
                step_id,
                "sweep",
                {**base, "prompt_set": f"{s}-prefix", "label": prefix_pair_label(prefix, s)},
                block,
            )
            for step_id, s in zip(ids, PREFIX_SIDES, strict=True)
        ]
    if kind in ("sweep", "admission"):
        options["label"] = options.get("label") or f"{block.id}-{kind}"
    return [Step(ids[0], kind, options, block)]


def _optional(stage: dict, blocks: dict[str, Block]) -> tuple[bool, float | None]:
    """A block's ``optional`` flag and ``start_timeout_s``; a variant inherits its base's."""
    base = blocks.get(stage.get("base") or "")
    return (
        bool(stage.get("optional", base.optional if base else False)),
        stage.get("start_timeout_s", base.start_timeout_s if base else None),
    )


def _check_needs(path: Path, steps: list[Step], blocks: dict[str, Block]) -> None:
    for s in steps:
        if s.needs is not None and not (s.needs in blocks and blocks[s.needs].optional):
            raise ConfigError(f"{path}: step {s.id!r} needs {s.needs!r}, which is not an optional block")


def tier_from_memory(raw: dict) -> str | None:
    """The plan's tier for this machine's memory (a Mac's hw.memsize, a card's memory.total, MemTotal),
    read only on a machine of the plan's kind (its ACCELERATOR); None leaves the plan's default."""
    tiers = list(raw.get("tiers") or {})
    if not tiers:
        return None
    from harness.sizing.arithmetic import tier_for_memory
    from harness.sizing.machines import memory_for_tier

    found = memory_for_tier(str((raw.get("variables") or {}).get("ACCELERATOR", "")))
    return tier_for_memory(tiers, found[0]) if found else None


# Complexity allowed: the plan is read, tiered, filled in and flattened in one pass.
def load_plan(  # noqa: C901
    name: str,
    tier: str | None = None,
    overrides: dict | None = None,
    rehearse_it: bool = False,
    quick: bool | str = False,
    via_shim: bool = False,
) -> Plan:
    """Read, validate and flatten a plan. ``overrides`` replace variables (``--set NAME=VALUE``);
    ``rehearse_it`` applies the plan's rehearsal overlay (``quick``: its quick sizes, "smoke": its
    smoke sizes) first."""
    path = find_plan(name)
    raw_text = path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(raw_text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc.__class__.__name__}); fix the file") from None
    found = problems(raw, "track")
    if found:
        raise ConfigError(f"{path}: the plan does not match schemas/track.schema.json at {found[0]}")
    rehearsal = None
    if rehearse_it:
        raw, rehearsal = rehearse(raw, raw["name"], quick, via_shim)
    elif quick:
        flag = "--smoke" if quick == "smoke" else "--quick"
        raise ConfigError(f"{flag} sizes a rehearsal; add --rehearse (or leave {flag} out)")
    tiers = raw.get("tiers", {})
    # A rehearsal's machine is not the track's: its memory chooses no tier (--tier does).
    tier = tier or (None if rehearsal else tier_from_memory(raw)) or raw.get("default_tier")
    if tier is not None and tier not in tiers:
        raise ConfigError(f"{path}: no tier {tier!r}; the plan's tiers are {', '.join(tiers) or 'none'}")
    variables = {**raw["variables"], **(tiers.get(tier, {}) if tier else {})}
    for key, value in (overrides or {}).items():
        variables[key] = yaml.safe_load(value) if isinstance(value, str) else value
    variables = {k: substitute(v, variables) for k, v in variables.items()}

    blocks: dict[str, Block] = {}
    steps: list[Step] = []
    for stage in raw["stages"]:
        if "engine" in stage:
            sid = stage["id"]
            if sid in blocks:
                raise ConfigError(f"{path}: block id {sid!r} is used twice; give each block its own id")
            settings = substitute(stage.get("settings", {}), variables)
            record = substitute(stage.get("record", {}), variables)
            changed = None
            if stage.get("base"):
                base = blocks.get(stage["base"])
                if base is None:
                    raise ConfigError(
                        f"{path}: block {sid!r} is a variant of {stage['base']!r}, which is not "
                        "defined before it"
                    )
                if stage["engine"] != base.engine.name:
                    raise ConfigError(
                        f"{path}: variant {sid!r} must use its base's engine ({base.engine.name})"
                    )
                changed = {
                    k: [base.settings.get(k, base.engine["settings"].get(k)), v]
                    for k, v in settings.items()
                    if base.settings.get(k) != v
                }
                settings = {**base.settings, **settings}
                record = {**base.record, **record}
            block = Block(
                sid,
                load_engine(stage["engine"]),
                settings,
                record,
                stage.get("title", ""),
                stage.get("base"),
                changed,
                *_optional(stage, blocks),
                stand_in=rehearsal.stand_in(stage["engine"], sid) if rehearsal else None,
            )
            blocks[sid] = block
            steps.append(Step(f"{sid}/start", "start", {}, block))
            for raw_step in stage["steps"]:
                kind, options = split_step(raw_step)
                steps += _expand_block_step(block, kind, substitute(options, variables))
            steps.append(Step(f"{sid}/stop", "stop", {}, block))
        else:
            kind, options = split_step(stage)
            needs = options.pop("needs", None)
            sid, n = kind, 2
            while any(s.id == sid for s in steps):
                sid, n = f"{kind}-{n}", n + 1
            steps.append(Step(sid, kind, substitute(options, variables), needs=needs))
    _check_needs(path, steps, blocks)
    seen: set[str] = set()
    for s in steps:
        if s.id in seen:
            raise ConfigError(f"{path}: step {s.id!r} appears twice; give the sweeps distinct labels")
        seen.add(s.id)
    return Plan(
        raw["name"],
        raw["title"],
        path,
        hashlib.sha256(raw_text.encode()).hexdigest(),
        tier,
        variables,
        raw.get("machine"),
        substitute(raw.get("sweep", {}), variables),
        blocks,
        steps,
        rehearsal,
    )


def block_steps(plan: Plan, block_id: str) -> list[Step]:
    return [s for s in plan.steps if s.block is not None and s.block.id == block_id]


def stages(plan: Plan) -> list[tuple[Block | None, list[Step]]]:
    """The steps grouped as the run executes them: consecutive steps of one block share a server."""
    out: list[tuple[Block | None, list[Step]]] = []
    for s in plan.steps:
        if out and s.block is not None and out[-1][0] is s.block:
            out[-1][1].append(s)
        else:
            out.append((s.block, [s]))
    return out
