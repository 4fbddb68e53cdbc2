"""Blocks a smoke rehearsal leaves out: ``smoke.leave_out: {block_id: reason}`` in an overlay.

CI rehearses all five tracks, and several of them run the same path: the Ryzen track's native
vLLM blocks are the NVIDIA track's (the same launcher, the same stand-in build), and a variant
block is its base engine started again with one flag changed. At the smoke size a block whose
path another rehearsal already runs may be left out, saying why; the quick and full sizes keep
every block.

Leaving a block out also leaves out what reads it: a comparison item naming one of its labels, a
summary's label, and a global step that ``needs`` it. A summary left with none of its labels is an
error in the overlay (the track's own summary would then say nothing), as are an unknown block and
a kept variant whose base is left out. Every cut is a note, so the manifest and the report say so.
"""

from __future__ import annotations

from harness.errors import ConfigError
from harness.run.step_syntax import PREFIX_SIDES, prefix_pair_label, split_step

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it


def left_out(overlay: dict, quick: bool | str) -> dict[str, str]:
    """The blocks the chosen size leaves out (block id -> why): only the smoke size cuts."""
    if quick != "smoke":
        return {}
    return dict((overlay.get("smoke") or {}).get("leave_out") or {})


def block_labels(stage: dict) -> set[str]:
    """The curve labels an engine block's steps write (its sweeps, prefix pair and admission)."""
    labels: set[str] = set()
    for raw in stage.get("steps", []):
        kind, options = split_step(raw)
        if kind in ("sweep", "admission") and options.get("label"):
            labels.add(str(options["label"]))
        elif kind == "prefix-pair" and options.get("label_prefix"):
            labels.update(prefix_pair_label(options["label_prefix"], side) for side in PREFIX_SIDES)
    return labels


def _rejoin(kind: str, options: dict, items: list):
    """A compare stage again, with the items kept, in the form it was written."""
    if set(options) == {"items"}:
        return {kind: items}
    return {kind: {**options, "items": items}}


def _refuse_misfits(blocks: dict[str, dict], cuts: dict[str, str], track: str) -> None:
    unknown = sorted(set(cuts) - set(blocks))
    if unknown:
        raise ConfigError(
            f"the {track} overlay leaves out {', '.join(unknown)}, not a block of the plan "
            f"(its blocks: {', '.join(blocks)})"
        )
    for block_id, block in blocks.items():
        if block_id not in cuts and block.get("base") in cuts:
            raise ConfigError(
                f"the {track} overlay leaves out {block['base']} but keeps {block_id}, a variant of it: "
                "leave out both or neither"
            )


def _cut_summary(stage, options: dict, gone: set[str], track: str, notes: list[str]):
    """A summarise step without the labels of the cut blocks, each dropped label a note. One that
    would read none of its labels is an error in the overlay: the track's summary would say nothing."""
    labels = list(map(str, options.get("labels", [])))
    read = [label for label in labels if label in gone]
    if not read:
        return stage
    kept = [label for label in labels if label not in gone]
    if not kept:
        raise ConfigError(
            f"the {track} overlay leaves out the blocks that write {', '.join(read)}, every label a "
            "summarise step reads; keep one of those blocks or give the step `needs`"
        )
    notes.extend(f"summarise: {label} left out with the block that writes it" for label in read)
    return {"summarise": {**options, "labels": kept}}


def _cut_global(stage, cuts: dict[str, str], gone: set[str], track: str, notes: list[str]):
    """A global step as the cuts leave it: unchanged, with fewer compare items, or None (gone)."""
    kind, options = split_step(stage)
    if options.get("needs") in cuts:
        notes.append(f"{kind}: the step that needs {options['needs']} is left out with it")
        return None
    if kind == "summarise":
        return _cut_summary(stage, options, gone, track, notes)
    if kind != "compare":
        return stage
    items = [list(map(str, item)) for item in options.get("items", [])]
    kept = [item for item in items if not gone & set(item)]
    for item in items:
        if item not in kept:
            notes.append(f"compare: {' vs '.join(item)} left out with the blocks that write it")
    return _rejoin(kind, options, kept) if kept else None


def cut_stages(stages: list, cuts: dict[str, str], track: str, notes: list[str]) -> list:
    """``stages`` without the blocks in ``cuts`` and what reads them; each cut appended to
    ``notes``. ConfigError when the cuts do not fit the plan."""
    if not cuts:
        return stages
    blocks = {s["id"]: s for s in stages if isinstance(s, dict) and "engine" in s}
    _refuse_misfits(blocks, cuts, track)
    gone = {label for block_id in cuts for label in block_labels(blocks[block_id])}
    out: list = []
    for stage in stages:
        if isinstance(stage, dict) and stage.get("id") in cuts:
            notes.append(f"{stage['id']}: left out at the smoke size ({cuts[stage['id']]})")
        elif isinstance(stage, dict) and "engine" in stage:
            out.append(stage)
        elif (kept := _cut_global(stage, cuts, gone, track, notes)) is not None:
            out.append(kept)
    return out
