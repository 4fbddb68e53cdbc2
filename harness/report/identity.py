"""The engines lab's identity row (001, "Label what each comparison can establish"): per engine, what
its run was: source checkpoint, representation, template, prompt, context, answer limit and cache
state, each cell that differs from the portable baseline (llama.cpp) marked. The template column says
which chat template formatted the prompt: every engine block of the plans serves the checkpoint with
its own template (llama-server with ``--jinja``, the others by default). Where ``measure
--checkpoint`` recorded the template's SHA-256 (``engines/models/chat_template.py``), the cell shows it
and a difference is a different template text, whatever the checkpoints are called; without one, the
cell names the checkpoint whose template it is, and a different checkpoint is marked."""

from __future__ import annotations

from tabulate import tabulate

from harness.records.engine import SPEED

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

PORTABLE = ("llama.cpp", "llama-server")
TEMPLATE = 2  # the template's cell: a recorded fingerprint is compared, not where it was read
PROMPT = 3  # the prompt's cell: its token count differs by tokenizer, its tag must match
HEAD = [
    "Engine",
    "Checkpoint",
    "Representation",
    "Chat template",
    "Prompt (long test)",
    "Context",
    "Answer limit",
    "Cache state",
]


def _cells(pair: dict) -> list[str]:
    rec = pair.get("long") or pair.get("short") or {}
    cached = rec.get(SPEED.max_cached_prompt_tokens)
    tag = "tagged" if rec.get(SPEED.prompt_tag) else "untagged"
    prompt = f"{rec[SPEED.prompt_tokens]:,.0f} tokens, {tag}" if rec.get(SPEED.prompt_tokens) else tag
    return [
        str(rec.get(SPEED.model) or "—"),
        str(rec.get(SPEED.quant) or "—"),
        _template(rec),
        prompt,
        f"{rec[SPEED.context_length]:,}" if rec.get(SPEED.context_length) else "—",
        f"{rec[SPEED.max_tokens]}" if rec.get(SPEED.max_tokens) else "—",
        "—" if cached is None else f"at most {cached:,} prompt tokens cached",
    ]


def _template(rec: dict) -> str:
    found = rec.get(SPEED.chat_template) or {}
    if found.get("sha256"):
        return f"sha256 {found['sha256']} ({found.get('source') or 'the checkpoint'})"
    return f"{rec[SPEED.model]}'s own" if rec.get(SPEED.model) else "the checkpoint's own"


def _same(i: int, cell: str, base: str) -> bool:
    """A cell the baseline's matches: the prompt by its tag, the template by its fingerprint."""
    if i == PROMPT:
        return cell.split(", ")[-1] == base.split(", ")[-1]
    if i == TEMPLATE and cell.startswith("sha256 ") and base.startswith("sha256 "):
        return cell.split(" (")[0] == base.split(" (")[0]
    return cell == base


def identity_rows(order: list[str], speed: dict) -> list[list[str]]:
    """One row per engine; a cell differing from the baseline's ends in ``*`` (none without one)."""
    base_engine = next((e for e in order if e in PORTABLE and e in speed), None)
    base = _cells(speed[base_engine]) if base_engine else None
    rows = []
    for engine in order:
        if engine not in speed:
            continue
        cells = _cells(speed[engine])
        if base is not None and engine != base_engine:
            cells = [c if _same(i, c, base[i]) else c + " *" for i, c in enumerate(cells)]
        rows.append([engine, *cells])
    return rows


def section(order: list[str], speed: dict) -> list[str]:
    rows = identity_rows(order, speed)
    if not rows:
        return []
    return [
        "Identity of each run (* differs from the portable baseline, llama.cpp; where the representations "
        "differ, the rows compare deployable stacks, not the same bits)",
        "",
        tabulate(rows, headers=HEAD, tablefmt="github", disable_numparse=True),
        "",
    ]
