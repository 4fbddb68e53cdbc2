"""The blocks a smoke rehearsal leaves out (harness/run/rehearsal_cuts.py): only at the smoke size,
with what reads them, each cut said; an overlay whose cuts do not fit its plan is refused."""

from __future__ import annotations

import pytest
import yaml

from harness.errors import ConfigError
from harness.run import rehearsal
from harness.run.plans import load_plan
from harness.run.rehearsal_cuts import block_labels, cut_stages

TRACKS = rehearsal.REHEARSAL_DIR.parent / "tracks"


def fake_place(kind: str) -> str:
    return f"/stand-in/{kind}"


def block_ids(plan: dict) -> list[str]:
    return [s["id"] for s in plan["stages"] if isinstance(s, dict) and "engine" in s]


def stage(kind: str, plan: dict) -> list:
    return [s[kind] for s in plan["stages"] if isinstance(s, dict) and kind in s]


def test_smoke_leaves_out_what_the_overlay_names_and_quick_keeps_every_block() -> None:
    raw = yaml.safe_load((TRACKS / "track-x.yaml").read_text())
    overlay, _, _ = rehearsal.read_overlay("track-x")
    quick, _ = rehearsal.apply(raw, overlay, quick=True, resolver=fake_place)
    smoke, notes = rehearsal.apply(raw, overlay, quick="smoke", resolver=fake_place)
    assert block_ids(quick) == block_ids(rehearsal.apply(raw, overlay, False, fake_place)[0])
    cut = set(overlay["smoke"]["leave_out"])
    assert set(block_ids(quick)) - set(block_ids(smoke)) == cut and "vllm" in cut
    assert "llama" in block_ids(smoke) and "control" in block_ids(smoke)
    # the steps that need the cut vLLM block go with it, and the compare items reading its labels
    assert all(s.get("needs") != "vllm" for s in stage("summarise", smoke))
    pairs = [tuple(p) for c in stage("compare", smoke) for p in (c["items"] if isinstance(c, dict) else c)]
    assert pairs == [("llama-prefix-unique", "llama-prefix-shared")]
    assert (
        "vllm: left out at the smoke size (Track N's rehearsal runs the same native vllm serve path "
        "on the same CPU build)" in notes
    )
    assert "compare: llama-baseline vs llama-kv-alt left out with the blocks that write it" in notes


@pytest.mark.parametrize("track", ["x", "n", "s"])
def test_every_smoke_plan_with_cuts_loads_and_keeps_its_baselines(track: str) -> None:
    plan = load_plan(track, rehearse_it=True, quick="smoke")
    assert plan.rehearsal is not None and plan.rehearsal.left_out
    assert not set(plan.rehearsal.left_out) & set(plan.blocks)
    # the llama-server block stays in X (and M, which cuts nothing); N and S leave it to them
    assert ("llama" in plan.blocks) == (track == "x") and ("control" in plan.blocks) == (track != "s")
    summarised = {label for s in plan.steps if s.kind == "summarise" for label in s.options.get("labels", [])}
    assert ("llama-baseline" in summarised) == (track == "x") and summarised
    assert plan.rehearsal.to_dict()["left_out"] == plan.rehearsal.left_out
    if track in ("n", "s"):  # the vLLM baseline stays where vLLM runs, and one memory fraction in N
        assert {"vllm", "vllm-mem-a"} & set(plan.blocks) == (
            {"vllm", "vllm-mem-a"} if track == "n" else {"vllm"}
        )


def _path(track: str, block_id: str) -> tuple[str, str]:
    """A block's path in a rehearsal: its engine, and the stand-in that serves it."""
    raw = yaml.safe_load((TRACKS / f"track-{track}.yaml").read_text())
    engine = next(s["engine"] for s in raw["stages"] if isinstance(s, dict) and s.get("id") == block_id)
    overlay, _, _ = rehearsal.read_overlay(f"track-{track}")
    entry = (overlay.get("blocks") or {}).get(block_id) or overlay["engines"][engine]
    return engine, " ".join(str(entry["stand_in"]).split())


def test_the_rehearsals_together_keep_every_variant_once() -> None:
    """What one smoke rehearsal leaves out another keeps: each variant's path still runs in CI, as
    the same block or as another block of the same engine on the same stand-in (Track X's HIP
    control is Track N's control on the CPU llama-server). The two left out everywhere are a kept
    block's path with another value: the other memory fraction, and eight sequences where the
    baseline passes twenty (--max-num-seqs on every vLLM start)."""
    kept: set[str] = set()
    paths: set[tuple[str, str]] = set()
    for track in ("x", "n", "s", "m"):
        blocks = set(load_plan(track, rehearse_it=True, quick="smoke").blocks)
        kept |= blocks
        paths |= {_path(track, b) for b in blocks}
    for track in ("x", "n", "s", "m"):
        overlay, _, _ = rehearsal.read_overlay(f"track-{track}")
        for block_id in (overlay.get("smoke") or {}).get("leave_out", {}):
            if block_id in ("vllm-mem-b", "vllm-seqs8"):
                continue
            assert block_id in kept or _path(track, block_id) in paths, (track, block_id)
    assert _path("x", "control-hip") == _path("n", "control")
    raw = yaml.safe_load((TRACKS / "track-n.yaml").read_text())
    seqs8 = next(s for s in raw["stages"] if isinstance(s, dict) and s.get("id") == "vllm-seqs8")
    assert seqs8["base"] == "vllm" and set(seqs8["settings"]) == {"max_seqs"}


def _blocks() -> list:
    return [
        {
            "id": "a",
            "engine": "e",
            "steps": [{"sweep": {"label": "a-base"}}, {"prefix-pair": {"label_prefix": "a"}}],
        },
        {"id": "a2", "engine": "e", "base": "a", "steps": [{"sweep": {"label": "a-two"}}]},
        {
            "id": "b",
            "engine": "f",
            "steps": [{"sweep": {"label": "b-base"}}, {"admission": {"label": "b-adm"}}],
        },
    ]


def test_block_labels_name_the_sweeps_the_pair_and_admission() -> None:
    a, _, b = _blocks()
    assert block_labels(a) == {"a-base", "a-prefix-unique", "a-prefix-shared"}
    assert block_labels(b) == {"b-base", "b-adm"}


def test_an_unknown_block_a_kept_variant_of_a_cut_base_and_a_summary_of_a_cut_label_are_refused() -> None:
    with pytest.raises(ConfigError, match="leaves out zz, not a block of the plan"):
        cut_stages(_blocks(), {"zz": "why"}, "t", [])
    with pytest.raises(ConfigError, match="leaves out a but keeps a2, a variant of it"):
        cut_stages(_blocks(), {"a": "why"}, "t", [])
    with pytest.raises(ConfigError, match="b-base, every label a summarise step reads"):
        cut_stages([*_blocks(), {"summarise": {"labels": ["b-base"]}}], {"b": "why"}, "t", [])


def test_a_summary_keeps_the_labels_still_written_and_says_which_went() -> None:
    notes: list[str] = []
    stages = [*_blocks(), {"summarise": {"labels": ["a-base", "b-base"], "promise": "p"}}, "report"]
    out = cut_stages(stages, {"b": "a runs it"}, "t", notes)
    assert out[-2:] == [{"summarise": {"labels": ["a-base"], "promise": "p"}}, "report"]
    assert "summarise: b-base left out with the block that writes it" in notes


def test_a_compare_keeps_its_form_and_goes_when_nothing_is_left() -> None:
    notes: list[str] = []
    stages = [
        *_blocks(),
        {"compare": [["a-base", "a-two"], ["a-base", "b-base"]]},
        {"compare": {"items": [["a-prefix-unique", "a-prefix-shared"]], "needs": "x"}},
        {"compare": [["a-base", "a-two"]]},
        "report",
    ]
    out = cut_stages(stages, {"a2": "a runs it"}, "t", notes)
    assert [s for s in out if not (isinstance(s, dict) and "engine" in s)] == [
        {"compare": [["a-base", "b-base"]]},
        {"compare": {"items": [["a-prefix-unique", "a-prefix-shared"]], "needs": "x"}},
        "report",
    ]
    assert notes.count("compare: a-base vs a-two left out with the blocks that write it") == 2
    assert notes[0] == "a2: left out at the smoke size (a runs it)"
    assert cut_stages(stages, {}, "t", []) is stages


def test_an_overlay_cut_must_say_why() -> None:
    overlay, _, _ = rehearsal.read_overlay("track-n")
    overlay["smoke"]["leave_out"] = {"vllm-mem-b": ""}
    from harness.records.notebook import problems

    assert problems(overlay, "rehearsal")
