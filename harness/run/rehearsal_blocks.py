"""A rehearsal overlay's stand-in for one block alone: ``blocks: {block_id: entry}``.

An engine's stand-in (``engines:``) serves every block of that engine. A block may have its own,
used only where what it needs is installed here (``needs: llama-vulkan-bin-dir``): Track X's
Vulkan control runs on llama.cpp's real Vulkan build (on llvmpipe, Mesa's software Vulkan device,
where no GPU is here) when ``make llama-vulkan`` built it, while the HIP control beside it keeps
the CPU stand-in. Where it is not installed the block keeps its engine's stand-in, and a note on
its start says why in one line. Either way the note reaches the dry run, the run's output and the
manifest.
"""

from __future__ import annotations

from harness.errors import ConfigError


def missing(kind: str) -> str | None:
    """Why what an overlay's block entry needs (``needs: llama-vulkan-bin-dir``) is not installed
    here, or None when it is."""
    if kind == "llama-vulkan-bin-dir":
        from harness.run import llama_vulkan

        return llama_vulkan.install_status()
    raise ConfigError(f"rehearsal overlay: a block cannot need @{kind}; known: llama-vulkan-bin-dir")


def block_entries(overlay: dict, missing_here=missing) -> tuple[dict[str, dict], dict[str, str]]:
    """The overlay's own stand-ins for single blocks (``blocks:``): those whose needs are installed
    here, and why each other one is not used."""
    used: dict[str, dict] = {}
    absent: dict[str, str] = {}
    for block_id, entry in overlay.get("blocks", {}).items():
        why = missing_here(entry["needs"])
        if why:
            absent[block_id] = why
        else:
            used[block_id] = entry
    return used, absent


def block_entry(stage: dict, overlay: dict, chosen: tuple[dict, dict], notes: list[str]) -> dict | None:
    """The stand-in entry for one engine block: its own where the overlay has one that is installed
    (said in a note on its start), else its engine's (with why in one line, where it has its own)."""
    used, absent = chosen
    sid = stage["id"]
    if sid in used:
        notes.append(f"{sid}/start: served by {used[sid]['stand_in']} (this block's own stand-in)")
        return used[sid]
    entry = overlay.get("engines", {}).get(stage["engine"])
    if sid in absent:
        instead = f" ({entry['stand_in']})" if entry else ""
        notes.append(f"{sid}/start: on its engine's stand-in{instead}, since {absent[sid]}")
    return entry
