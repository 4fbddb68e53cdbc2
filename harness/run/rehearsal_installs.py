"""A rehearsal's stand-ins that need an install (``requires: mlx-cpu`` in an overlay): the install's
state on this machine, and each engine's stand-in chosen by it. Where the install is missing, the
overlay's ``otherwise`` entry stands in and why is kept in one line."""

from __future__ import annotations

from harness.errors import ConfigError

VIA_SHIM = (
    "the engines start through the host-side shim, and the harness's container does not see {name}'s "
    "environment: run the rehearsal natively (without COMPOSE=1) for the real server"
)


def install_state(name: str, via_shim: bool = False) -> tuple[str | None, dict]:
    """An install a stand-in ``requires``: None when it is here, else why not (one line); and the
    environment its server runs with, declared once in its module. Through the shim the harness
    and the shim's host could judge it differently, so the fallback stands in there."""
    if via_shim:
        return VIA_SHIM.format(name=f"make {name}"), {}
    if name == "mlx-cpu":
        from harness.run import mlx_cpu

        return mlx_cpu.install_status(), mlx_cpu.server_env()
    raise ConfigError(f"rehearsal overlay: unknown install {name!r} in requires; known: mlx-cpu")


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
            own = {k: v for k, v in entry.items() if k not in ("requires", "otherwise")}
            chosen[name] = {**own, "env": {**env, **entry.get("env", {})}}
        else:
            other = entry["otherwise"]
            who = "the practice server imitates it" if other.get("imitates") else other["stand_in"]
            why_not[name] = f"{who}: {why}"
            chosen[name] = {**other, "stand_in": f"{other['stand_in']} ({why})"}
    return chosen, why_not
