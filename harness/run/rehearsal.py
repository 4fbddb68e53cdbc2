"""Rehearsals: a GPU track's own plan, unchanged, run on this machine's CPU with an overlay that
maps each accelerator-only thing to a stand-in (``harness/data/rehearsals/<track>.yaml``).

The overlay is data and says only what the stand-ins need: plan variables (the model files, the
images, the backend's name), per-engine stand-ins (a setting, the compose override file, the
practice server imitating an engine's API), step options per engine (what verify-allocation
expects of a CPU log, which model a prediction is for) and, for ``--quick``, the sizes that let a
whole track finish on two cores in minutes (``--smoke``: smaller still, every step run once at the
least size that still passes it; what CI runs). Everything else is the track's. Applying it is a
pure function of the raw plan and the overlay (``apply``); where things are installed is resolved
once (``resolve``).

Every changed option is kept as a note (what the track asks, what the rehearsal uses), so the run
manifest, the records and the report can say what the hardware would have done instead.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness import paths
from harness.errors import ConfigError
from harness.records.notebook import problems
from harness.run.installed import resolve_auto
from harness.engines.vllm_precision import PRECISION_KINDS
from harness.run.step_syntax import split_step, step_ids
from harness.run.rehearsal_cuts import cut_stages, left_out
from harness.run.rehearsal_installs import (
    block_entry,
    choose_block_stand_ins,
    choose_stand_ins,
    install_state,
)

REHEARSAL_DIR = paths.PACKAGE / "data" / "rehearsals"
REHEARSAL_ENV = "HARNESS_REHEARSAL"  # what a rehearsal's step commands stamp on every record
SWEEP_KINDS = ("sweep", "prefix-pair", "admission")
# Where an overlay's '@name' values point (resolve); the one placeholder resolve_auto has no word for.
KINDS = (
    "llama-cpu-model",
    "llama-cpu-bin-dir",
    "llama-vulkan-bin-dir",
    "vllm-cpu-model",
    "vllm-cpu-venv",
    *PRECISION_KINDS,
    "models-dir",
    "stand-ins-dir",
    "mlx-cpu-server",
    "mlx-cpu-model",
)
_PLACEHOLDERS = {
    "llama-cpu-bin-dir": "<folder of the CPU llama-server from make llama-cpu>",
    "llama-vulkan-bin-dir": "<folder of the Vulkan llama-server from make llama-vulkan>",
}


@dataclass
class Rehearsal:
    """The overlay as applied to one plan: where it came from and what it changed."""

    track: str
    path: Path
    sha256: str
    quick: bool
    stands_for: str
    size: str = "full"  # full, quick or smoke: the sizes the steps ran at
    stand_ins: dict[str, dict] = field(default_factory=dict)  # engine name -> its stand-in entry
    block_stand_ins: dict[str, dict] = field(default_factory=dict)  # block id -> its own stand-in (blocks:)
    block_engines: dict[str, str] = field(default_factory=dict)  # block id -> its engine, for the above
    notes: list[str] = field(default_factory=list)  # plan-wide changes, in words
    skips: dict[str, str] = field(default_factory=dict)  # step kind -> why a rehearsal skips it
    models: dict[str, str] = field(default_factory=dict)  # the track's model -> the stand-in's (predict)
    left_out: dict[str, str] = field(default_factory=dict)  # block id -> why this size leaves it out
    # engine -> why its stand-in gave way to the overlay's ``otherwise`` one (an install not here)
    fallbacks: dict[str, str] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)  # label -> why its check FAIL is this stand-in's

    def step_notes(self, step_id: str) -> list[str]:
        """The overlay's changes to one step (``control/verify-allocation: expect_device CUDA0 -> CPU``)."""
        block_kind = step_id.split(":", 1)[0]
        mine = (block_kind + ": ", step_id + ": ")
        return [
            n.removeprefix(next(p for p in mine if n.startswith(p))) for n in self.notes if n.startswith(mine)
        ]

    def stand_in(self, engine: str, block_id: str | None = None) -> dict | None:
        """The block's own stand-in where the overlay has one installed here, else its engine's."""
        return self.block_stand_ins.get(block_id or "") or self.stand_ins.get(engine)

    def to_dict(self) -> dict:
        entries = {
            **self.stand_ins,
            **{f"{self.block_engines[b]}, block {b}": e for b, e in self.block_stand_ins.items()},
        }
        return {
            "overlay": str(self.path),
            "overlay_sha256": self.sha256,
            "quick": self.quick,
            "size": self.size,
            "stands_for": self.stands_for,
            "stand_ins": {
                name: {k: v for k, v in entry.items() if k in ("stand_in", "real", "imitates", "ignored")}
                for name, entry in entries.items()
            },
            "notes": self.notes,
            "skips": self.skips,
            "left_out": self.left_out,
            "fallbacks": self.fallbacks,
            "known": self.known,
        }


def rehearsal_env(rehearsal: Rehearsal, block) -> str:
    """The value of HARNESS_REHEARSAL for one step: the track rehearsed and, for a block's step,
    the stand-in serving it (records/notebook.py stamps both on every record the step writes)."""
    stand_in = (block.stand_in or {}).get("stand_in") if block is not None else None
    return json.dumps({"track": rehearsal.track, "stand_in": stand_in})


def overlay_path(plan_name: str) -> Path:
    return REHEARSAL_DIR / f"{plan_name}.yaml"


def available() -> list[str]:
    return sorted(p.stem for p in REHEARSAL_DIR.glob("*.yaml"))


def read_overlay(plan_name: str) -> tuple[dict, Path, str]:
    path = overlay_path(plan_name)
    if not path.is_file():
        raise ConfigError(
            f"plan {plan_name} has no rehearsal overlay ({path} is missing); plans with one: "
            + ", ".join(available())
        )
    text = path.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    found = problems(raw, "rehearsal")
    if found:
        raise ConfigError(f"{path}: the overlay does not match schemas/rehearsal.schema.json at {found[0]}")
    if raw["track"] != plan_name:
        raise ConfigError(f"{path} is the overlay of {raw['track']}, not {plan_name}")
    return raw, path, hashlib.sha256(text.encode()).hexdigest()


def resolve(kind: str) -> str:
    """Where a stand-in lives on this machine (``@llama-cpu-model`` in an overlay), found as the CPU
    track's ``auto`` settings are; one not installed yet gets a placeholder naming the make target
    that installs it (a real run then stops at the preflight, which names it missing)."""
    if kind in ("llama-cpu-model", "vllm-cpu-model") or kind in PRECISION_KINDS:
        return resolve_auto(kind, dry_run=True)
    if kind == "llama-cpu-bin-dir":
        server = resolve_auto("llama-cpu-binary", dry_run=True)
        return _PLACEHOLDERS[kind] if server.startswith("<") else str(Path(server).parent)
    if kind == "llama-vulkan-bin-dir":
        from harness.engines import llama_vulkan

        return _PLACEHOLDERS[kind] if llama_vulkan.install_status() else str(llama_vulkan.bin_dir())
    if kind == "vllm-cpu-venv":
        from harness.engines import vllm_cpu

        return str(vllm_cpu.venv_dir())
    if kind == "models-dir":
        return str(paths.models_dir())
    if kind in ("mlx-cpu-server", "mlx-cpu-model"):  # where make mlx-cpu puts them, there or not yet
        from harness.engines import mlx_cpu

        return str(mlx_cpu.server_bin() if kind == "mlx-cpu-server" else mlx_cpu.model_dir())
    if kind == "stand-ins-dir":  # an imitated engine's own folder (TabbyAPI's checkout)
        return str(paths.workdir() / "runs" / ".stand-ins")
    raise ConfigError(f"rehearsal overlay: unknown stand-in location @{kind}; known: {', '.join(KINDS)}")


def _fill(value, resolver):
    """``@name`` strings replaced by where that stand-in lives (recursively)."""
    if isinstance(value, dict):
        return {k: _fill(v, resolver) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, resolver) for v in value]
    if isinstance(value, str) and value.startswith("@"):
        name, sep, rest = value[1:].partition("/")
        return resolver(name) + sep + rest
    return value


def _quick_sweep(kind: str, options: dict, quick: dict) -> dict:
    """A sweep, prefix pair or admission level at the quick size: the track's own levels (the labs'
    checkers look for the baseline's 1, 5, 10 and 20), fewer requests per level and shorter answers;
    the prefix pair, whose long prompts cost a CPU most, at its own smaller levels and count."""
    out = dict(options)
    for key in ("requests", "max_tokens"):
        if key in quick:
            out[key] = min(int(out.get(key, quick[key])), int(quick[key]))
    if kind == "prefix-pair":  # its own sizes, after the others (smoke's 2 requests would cap its 4)
        out.update({k: quick[f"prefix_{k}"] for k in ("concurrency", "requests") if f"prefix_{k}" in quick})
    if "min_rounds" in quick:
        out["min_rounds"] = quick["min_rounds"]
    return out


def _quick_step(kind: str, options: dict, quick: dict) -> dict:
    """A measuring step at the quick size."""
    if kind in SWEEP_KINDS:
        return _quick_sweep(kind, options, quick)
    out = dict(options)
    if kind == "cross-check":
        for key in ("num_prompts", "max_tokens"):
            if key in quick and key in out:
                out[key] = min(int(out[key]), int(quick[key]))
    elif kind == "measure":
        for key, size in (
            ("repetitions", "repetitions"),
            ("max_tokens", "measure_max_tokens"),
            ("long_repeats", "long_repeats"),
        ):
            if size in quick:
                out[key] = min(int(out.get(key, quick[size])), int(quick[size]))
    elif kind == "probe" and "probe_max_tokens" in quick:
        out.setdefault("max_tokens", quick["probe_max_tokens"])
    return out


def _split(raw_step) -> tuple[str, dict]:
    """A stage as (kind, options), as the plan reader splits it (a list of options is ``items``)."""
    return split_step(raw_step)


def _join(kind: str, options: dict):
    """The inverse of _split: the stage as a plan writes it."""
    if set(options) == {"items"}:
        return {kind: options["items"]}
    return {kind: options} if options else kind


def _block_stage(stage: dict, entry: dict | None, quick: dict | None, notes: list[str]) -> dict:
    """One engine block with its stand-in's settings and step options (and the quick sizes)."""
    stage = copy.deepcopy(stage)
    if entry:
        if entry.get("settings"):
            stage["settings"] = {**stage.get("settings", {}), **entry["settings"]}
        if entry.get("record"):
            stage["record"] = {**stage.get("record", {}), **entry["record"]}
        if "start_timeout_s" in entry:
            stage["start_timeout_s"] = entry["start_timeout_s"]
    steps = []
    for raw_step in stage.get("steps", []):
        kind, options = _split(raw_step)
        changed = (entry or {}).get("steps", {}).get(kind)
        if changed:
            for key, value in changed.items():
                before = options.get(key, "<the engine definition's>")
                if before != value:
                    notes.append(
                        f"{stage['id']}/{kind}: {key} {before} -> {value} (the track's -> the stand-in's)"
                    )
            options = {**options, **changed}
        if quick:
            options = _quick_step(kind, options, quick)
        steps.append(_join(kind, options))
    stage["steps"] = steps
    return stage


def _smoke_caps(stage: dict, caps: dict | None, notes: list[str]) -> dict:
    """A block's steps under its stand-in's caps at the smoke size (``smoke_steps``): each number
    at most its cap, each switch (``no_warmup: true``) set, each change a note. A block on a slow
    stand-in (llvmpipe) runs every step, with fewer tokens and requests."""
    if not caps:
        return stage
    steps = []
    for raw_step in stage.get("steps", []):
        kind, options = _split(raw_step)
        for key, cap in caps.get(kind, {}).items():
            before = options.get(key)
            after = cap if isinstance(cap, bool) else int(cap)
            if before != after and (isinstance(cap, bool) or before is None or int(before) > after):
                for where in step_ids(stage["id"], kind, options):
                    notes.append(f"{where}: {key} {before} -> {after} (the smoke size for this block)")
                options = {**options, key: after}
        steps.append(_join(kind, options))
    return {**stage, "steps": steps}


def _global_stages(stage, overlay: dict, notes: list[str], seen: dict[str, int]) -> list:
    """A global step; a prediction for the track's model is kept (labelled the track's own) and
    followed by the same prediction for the stand-in model."""
    kind, options = _split(stage)
    changed = overlay.get("steps", {}).get(kind)
    if changed:  # a global step's options (check: allow_cpu), each change kept as a note
        for key, value in changed.items():
            notes.append(
                f"{kind}: {key} {options.get(key, '<not set>')} -> {value} (the track's -> the stand-in's)"
            )
        _global_id(kind, seen)
        return [_join(kind, {**options, **changed})]
    swaps = overlay.get("predict", {})
    model = str(options.get("model", ""))
    if kind != "predict" or model not in swaps:
        _global_id(kind, seen)
        return [stage]
    stand_in = {**options, **swaps[model]}
    stand_in.pop("machine", None)  # the stand-in runs on this machine, not the track's
    stand_in.pop("usable_from", None)  # nor against the track's device
    ids = [_global_id("predict", seen), _global_id("predict", seen)]
    machine = str(options.get("machine") or "")
    where = f" on {machine}" if "${" not in machine else " on the tier's machine"
    where = where if machine else ""
    notes.append(f"{ids[0]}: this is the track's own prediction ({model}{where}), printed for comparison")
    notes.append(f"{ids[1]}: this is the stand-in's prediction ({stand_in['model']}, this machine)")
    return [stage, {"predict": stand_in}]


def _global_id(kind: str, seen: dict[str, int]) -> str:
    """The id load_plan gives the next global step of ``kind`` (predict, predict-2, ...)."""
    seen[kind] = seen.get(kind, 0) + 1
    return kind if seen[kind] == 1 else f"{kind}-{seen[kind]}"


def size_name(quick: bool | str) -> str:
    """``quick`` as load_plan takes it (False, True or "smoke") as the size's name."""
    return "smoke" if quick == "smoke" else "quick" if quick else "full"


def _sizes(overlay: dict, quick: bool | str) -> tuple[dict, dict | None]:
    """The variables and step sizes of the size chosen: none for the track's own, the overlay's
    quick sizes, or its smoke sizes over the quick ones."""
    if not quick:
        return {}, None
    variables = dict(overlay.get("quick", {}).get("variables", {}))
    sizes = dict(overlay.get("quick", {}).get("sizes") or {})
    if quick == "smoke":
        if "smoke" not in overlay:
            raise ConfigError(f"the {overlay['track']} overlay has no smoke sizes; use --quick")
        variables.update(overlay["smoke"].get("variables", {}))
        sizes.update(overlay["smoke"].get("sizes") or {})
    return variables, sizes or None


def apply(
    raw: dict, overlay: dict, quick: bool | str, resolver=resolve, state=install_state
) -> tuple[dict, list[str]]:
    """The plan with the overlay applied (a new dict) and the notes of what changed. Pure apart
    from ``resolver`` (where the stand-ins live) and ``state`` (whether the install a block's own
    stand-in requires is here). ``quick``: False (the track's sizes), True (the overlay's quick sizes)
    or "smoke" (its smoke sizes)."""
    overlay = _fill(overlay, resolver)
    ids = {s["id"] for s in raw["stages"] if isinstance(s, dict) and "engine" in s}
    unknown = sorted(set(overlay.get("blocks", {})) - ids)
    if unknown:
        raise ConfigError(f"rehearsal overlay: blocks {', '.join(unknown)} are not in the plan {raw['name']}")
    chosen = choose_block_stand_ins(overlay.get("blocks", {}), state)
    notes: list[str] = []
    out = copy.deepcopy(raw)
    size_variables, q = _sizes(overlay, quick)
    changes = {**overlay.get("variables", {}), **size_variables}
    for name, value in changes.items():
        notes.append(f"variable {name}: {out['variables'].get(name, '<unset>')} -> {value}")
    out["variables"] = {**out["variables"], **changes}
    for tier in out.get("tiers", {}).values():  # a tier never brings the track's hardware back
        for name in changes:
            tier.pop(name, None)
    if q:
        out["sweep"] = {
            **out.get("sweep", {}),
            **{k: q[k] for k in ("requests", "min_rounds", "max_tokens") if k in q},
        }
    if out.get("machine"):
        notes.append(f"check: --machine {out['machine']} -> left out (the stand-ins run on this machine)")
    stages: list = []
    seen: dict[str, int] = {}  # global steps so far, by kind (their ids)
    for stage in out["stages"]:
        if isinstance(stage, dict) and "engine" in stage:
            entry = block_entry(stage, overlay.get("engines", {}), chosen, notes)
            block = _block_stage(stage, entry, q, notes)
            caps = (entry or {}).get("smoke_steps") if quick == "smoke" else None
            stages.append(_smoke_caps(block, caps, notes))
        else:
            stages.extend(_global_stages(stage, overlay, notes, seen))
    out["stages"] = cut_stages(stages, left_out(overlay, quick), overlay.get("track", "the"), notes)
    return out, notes


def rehearse(raw: dict, plan_name: str, quick: bool | str, via_shim: bool = False) -> tuple[dict, Rehearsal]:
    """Read the plan's overlay and apply it: the rehearsed plan and what was done."""
    overlay, path, sha = read_overlay(plan_name)

    def state(name: str) -> tuple[str | None, dict]:
        return install_state(name, via_shim)

    chosen, fallbacks = choose_stand_ins(overlay.get("engines", {}), state)
    overlay = {**overlay, "engines": chosen}
    plan, notes = apply(raw, overlay, quick, resolve, state)
    notes = [f"{name}: {why}" for name, why in fallbacks.items()] + notes
    engines = _fill(overlay.get("engines", {}), resolve)
    blocks, _ = choose_block_stand_ins(_fill(overlay.get("blocks", {}), resolve), state)
    info = Rehearsal(
        track=plan_name,
        path=path,
        sha256=sha,
        quick=bool(quick),
        size=size_name(quick),
        stands_for=overlay["stands_for"],
        stand_ins=engines,
        block_stand_ins=blocks,
        block_engines={
            s["id"]: s["engine"] for s in raw["stages"] if isinstance(s, dict) and s.get("id") in blocks
        },
        notes=notes,
        skips=dict(overlay.get("skip", {})),
        models={
            model: str(swap["model"]) for model, swap in _fill(overlay.get("predict", {}), resolve).items()
        },
        left_out=left_out(overlay, quick),
        fallbacks=fallbacks,
        known={label: why for entry in chosen.values() for label, why in entry.get("known", {}).items()},
    )
    return plan, info
