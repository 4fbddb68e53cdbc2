"""Issue 40, seed fidelity round four: each item against the seed pages' own words."""

from __future__ import annotations

from harness.report.identity import HEAD, identity_rows
from harness.run.plans import load_plan


def test_vllm_single_user_record_carries_the_labs_awq_label():
    """Engines lab, serve-vllm.sh's compare-engines line: --quant "AWQ 4-bit, group size 128"."""
    plan = load_plan("track-n")
    assert plan.blocks["vllm-single"].record["quant"] == "AWQ 4-bit, group size 128"


def test_identity_row_has_a_chat_template_column():
    """Engines lab: the identity row names source checkpoint, representation, template, prompt, ..."""
    assert HEAD[:4] == ["Engine", "Checkpoint", "Representation", "Chat template"]
    rec = {"model": "Qwen3-8B-AWQ", "quant": "AWQ 4-bit, group size 128", "prompt_tag": True}
    base = {"model": "Qwen3-8B", "quant": "Q4_K_M", "prompt_tag": True}
    rows = identity_rows(["llama.cpp", "vllm"], {"llama.cpp": {"long": base}, "vllm": {"long": rec}})
    assert rows[0][3] == "Qwen3-8B's own"
    assert rows[1][3] == "Qwen3-8B-AWQ's own *"  # another checkpoint's template is a difference
