"""A rehearsal's stand-ins that need an install (``requires: mlx-cpu`` or ``requires: llama-vulkan``
in an overlay): the install's state on this machine, and the stand-in each engine and block gets by
it. An engine's entry names what stands in where its install is missing (``otherwise``); a block's
own entry (``blocks:``) gives way to its engine's. Either way why is kept in one line."""

from __future__ import annotations

from harness.errors import ConfigError

VIA_SHIM = (
    "the engines start through the host-side shim, and the harness's container does not see {name}'s "
    "environment: run the rehearsal natively (without COMPOSE=1) for the real server"
)
INSTALLS = ("mlx-cpu", "llama-vulkan")


def install_state(name: str, via_shim: bool = False) -> tuple[str | None, dict]:
    """An install a stand-in ``requires``: None when it is here, else why not (one line); and the
    environment its server runs with, declared once in its module. Through the shim the harness
    and the shim's host could judge it differently, so the fallback stands in there."""
    if name not in INSTALLS:
        raise ConfigError(
            f"rehearsal overlay: unknown install {name!r} in requires; known: {', '.join(INSTALLS)}"
        )
    if via_shim:
        return VIA_SHIM.format(name=f"make {name}"), {}
    if name == "mlx-cpu":
        from harness.engines import mlx_cpu

        return mlx_cpu.install_status(), mlx_cpu.server_env()
    from harness.engines import llama_vulkan

    return llama_vulkan.install_status(), dict(llama_vulkan.LLVMPIPE_ENV)


def _own(entry: dict, env: dict) -> dict:
    """An entry whose install is here, as it runs: without the install words, with its environment."""
    own = {k: v for k, v in entry.items() if k not in ("requires", "otherwise")}
    return {**own, "env": {**env, **entry.get("env", {})}}


def choose_stand_ins(engines: dict, state=install_state) -> tuple[dict, dict[str, str]]:
    """Each engine's stand-in as this machine has it: one whose ``requires`` install is here runs
    with that install's environment; one whose install is not gives way to its ``otherwise`` entry,
    and why is kept (engine -> one line). Pure apart from ``state``."""
    chosen: dict = {}
    why_not: dict[str, str] = {}
    for name, entry in engines.items():
        need = entry.get("requires")
        if not need:
            chosen[name] = entry
            continue
        why, env = state(need)
        if why is None:
            chosen[name] = _own(entry, env)
        else:
            other = entry["otherwise"]
            who = "the practice server imitates it" if other.get("imitates") else other["stand_in"]
            why_not[name] = f"{who}: {why}"
            chosen[name] = {**other, "stand_in": f"{other['stand_in']} ({why})"}
    return chosen, why_not


def choose_block_stand_ins(blocks: dict, state=install_state) -> tuple[dict[str, dict], dict[str, str]]:
    """The overlay's own stand-ins for single blocks (``blocks:``): those whose install is here, as
    they run, and why each other one is not used (block id -> one line). Pure apart from ``state``."""
    used: dict[str, dict] = {}
    absent: dict[str, str] = {}
    for block_id, entry in blocks.items():
        why, env = state(entry["requires"])
        if why is None:
            used[block_id] = _own(entry, env)
        else:
            absent[block_id] = why
    return used, absent


def block_entry(stage: dict, engines: dict, chosen: tuple[dict, dict], notes: list[str]) -> dict | None:
    """The stand-in entry for one engine block: its own where the overlay has one whose install is
    here (said in a note on its start), else its engine's (with why in one line, where it has its own)."""
    used, absent = chosen
    sid = stage["id"]
    if sid in used:
        notes.append(f"{sid}/start: served by {used[sid]['stand_in']} (this block's own stand-in)")
        return used[sid]
    entry = engines.get(stage["engine"])
    if sid in absent:
        instead = f" ({entry['stand_in']})" if entry else ""
        notes.append(f"{sid}/start: on its engine's stand-in{instead}, since {absent[sid]}")
    return entry
