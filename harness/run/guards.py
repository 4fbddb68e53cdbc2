"""What an engine definition's ``guards`` require before it starts, as preflight findings: the
checks serve-mlx.sh makes before it runs mlx_lm.server. mlx-lm runs only on macOS; the
model must be an absolute path, because mlx_lm.server loads whatever a request's ``model`` names and
the clients send the path it was started with; a config.json without a ``quantization`` block is
not the four-bit MLX model the lab compares (a warning, as in the script). Pure: the system's name
and config.json's text come in. Also the tools a plan's installs use (``INSTALL_TOOLS``: uv and git on
the NVIDIA track), found or not."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path
from typing import Callable

from harness.run.preflight_checks import Finding


def darwin(system: str, model: str, config: str | None) -> Finding | None:
    if system == "Darwin":
        return None
    return Finding("FAIL", "platform", f"mlx-lm runs on Apple silicon; this machine reports {system}")


def absolute_model(system: str, model: str, config: str | None) -> Finding | None:
    if model.startswith("/"):
        return None
    return Finding(
        "FAIL",
        "model",
        f"{model!r} is not an absolute path: set it to the model directory's absolute path "
        "(it is also the name every request sends)",
    )


def quantization_block(system: str, model: str, config: str | None) -> Finding | None:
    if config is None or '"quantization"' in config:  # a missing config.json is the model check's FAIL
        return None
    return Finding(
        "WARN",
        "model",
        f"{model}/config.json has no quantization block: not the 4-bit MLX model the lab serves",
    )


GUARDS: dict[str, Callable[[str, str, str | None], Finding | None]] = {
    "darwin": darwin,
    "absolute-model": absolute_model,
    "quantization-block": quantization_block,
}


def guard_findings(guards: list[str], system: str, model: str, config: str | None) -> list[Finding]:
    """The findings of the guards that object (none when all hold)."""
    return [f for g in guards if (f := GUARDS[g](system, model, config)) is not None]


INSTALLS = {  # the engines lab's installs on the NVIDIA track, what each tool is for
    "uv": "the vLLM environment: uv venv ~/vllm-env --python 3.12 --seed; uv pip install vllm==0.28.0 "
    "--torch-backend=auto",
    "git": "TabbyAPI: git clone https://github.com/theroyallab/tabbyAPI ~/tabbyAPI (and its version)",
}


def install_tools(names: str, which: Callable[[str], str | None] = shutil.which) -> list[Finding]:
    """The tools a plan's installs use (its ``INSTALL_TOOLS``, space-separated): PASS where found, else
    WARN saying what needs it (the blocks that need them are optional or read their version with it)."""
    out = []
    for name in names.split():
        why = INSTALLS.get(name, "this plan's installs")
        found = which(name)
        out.append(
            Finding("PASS", name, f"{found}")
            if found
            else Finding(
                "WARN", name, f"{name} not found on the PATH; it installs {why}; install {name} first"
            )
        )
    return out


def read_config(model: str) -> str | None:
    path = Path(model).expanduser() / "config.json"
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def engine_guards(guards: list[str], model: str, system: str | None = None) -> list[Finding]:
    """The guards against this machine and the model directory as they are now."""
    return guard_findings(guards, system or platform.system(), model, read_config(model))


def tier_finding(tier: str | None, tiers: list[str], memory: tuple[float, str] | None) -> Finding | None:
    """The plan's tier checked against this machine's memory (a Mac's hw.memsize, an NVIDIA card's
    memory.total: the serving lab's preflight decides the lab.env by it): PASS when the tier is the
    one that memory fits, WARN naming the one that fits when it is not; None when there is nothing
    to check (no sized tier, or this machine is not of the plan's kind)."""
    from harness.sizing.arithmetic import tier_for_memory

    if tier is None or memory is None or tier_for_memory([tier], 10**6) is None:
        return None
    gib, source = memory
    fits = tier_for_memory(tiers, gib)
    text = f"{source} reads {gib:.1f} GiB"
    if fits == tier:
        return Finding("PASS", "tier", f"tier {tier}: {text}, the largest tier it fits")
    better = f"run with --tier {fits}" if fits else "no tier of this plan fits it"
    return Finding("WARN", "tier", f"tier {tier} was chosen, but {text}: {better}")


def plan_tier(plan, run=None) -> list[Finding]:
    """``tier_finding`` for a plan as loaded (not a rehearsal: its machine is not the track's)."""
    import yaml

    from harness.sizing.machines import memory_for_tier

    if getattr(plan, "rehearsal", None) is not None or not getattr(plan, "tier", None):
        return []
    raw = yaml.safe_load(Path(plan.path).read_text(encoding="utf-8"))
    tiers = list(raw.get("tiers") or {})
    found = tier_finding(plan.tier, tiers, memory_for_tier(str(plan.variables.get("ACCELERATOR", "")), run))
    return [found] if found else []


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (what ``du`` counts, without following links)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
    return total


NOT_YET = "not there yet (its install or first start makes it)"


def environment_sizes(
    dirs: str, usage=shutil.disk_usage, size=tree_bytes, made: bool = False
) -> list[Finding]:
    """The disk each Python environment takes on the NVIDIA track (neither installer
    states it; the lab measures them with du -sh) and the space left beside them (df -h ~). A
    directory not made yet says which start makes it; ``made`` (the plan's step after the installs
    and the first starts) warns instead: by then it should be there."""
    out = []
    for raw in dirs.split():
        path = Path(os.path.expandvars(raw)).expanduser()
        if path.is_dir():
            out.append(Finding("PASS", "environment", f"{path}: {size(path) / 1e9:.1f} GB"))
        else:
            out.append(
                Finding("WARN", "environment", f"{path}: not there after the installs and first starts")
                if made
                else Finding("PASS", "environment", f"{path}: {NOT_YET}")
            )
    if out:
        home = Path.home()
        free = usage(str(home)).free
        out.append(Finding("PASS", "environment", f"{free / 1e9:.0f} GB free beside them ({home})"))
    return out


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def memory_fractions(plan, findings: list[Finding]) -> list[Finding]:
    """The serving lab's memory-fraction rule before vLLM starts: each block's ``mem_fraction`` x the
    GPU-visible total of the device line (``llama-server --list-devices``, read by the preflight's
    accelerator check) against the weights of the format the block serves. Nothing without a device
    line (a CUDA card's fraction is of its own memory, which vLLM reads itself) or a fraction."""
    from harness.sizing.format_compare import format_for_quant
    from harness.engines.logs import device_memory
    from harness.sizing.memory_fraction import fraction_findings, visible_total_gib
    from harness.errors import HarnessError
    from harness.engines.models.info import load_model

    lines = [f.text.replace("; ", "\n") for f in findings if f.check == "accelerator" and f.level == "PASS"]
    visible = visible_total_gib(device_memory("\n".join(lines)))
    fractions, fmt, model = {}, None, None
    for step in getattr(plan, "steps", []):
        block = step.block
        value = (block.settings or {}).get("mem_fraction") if block is not None else None
        if value in (None, "") or block is None:
            continue
        try:
            fractions[block.id] = float(value)
        except (TypeError, ValueError):
            continue
        model = model or step.options.get("model")
        fmt = fmt or block.record.get("quant") or plan.variables.get("VLLM_QUANT")
    if visible is None or not fractions or not model:
        return []
    try:
        info = load_model(str(model))
    except HarnessError:
        return []
    name = format_for_quant(str(fmt or ""), info.formats)
    if name is None:
        return []
    names = {  # the plan variable each fraction came from (MEM_FRACTION_A, _B), for the remedy's --set
        bid: key
        for bid, f in fractions.items()
        for key, value in plan.variables.items()
        if key.startswith("MEM_FRACTION") and _number(value) == f
    }
    found = fraction_findings(fractions, visible, int(info.formats[name]["tensor_bytes"]), name, names)
    return [Finding(level, "memory-fraction", text) for level, text in found]
