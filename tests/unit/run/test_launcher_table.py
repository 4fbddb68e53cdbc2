"""Launchers come from one table keyed by the engine definition's ``launcher`` field, and every
one meets the Launcher protocol; the shared health wait reports what the URL answered last."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import EngineError
from harness.run.context import block_context
from harness.run.launcher_table import LAUNCHERS, Launcher, make_launcher
from harness.engines.launchers.base import NotHealthy, wait_healthy
from harness.run.plans import load_plan
from tests.conftest import free_port


def test_every_block_of_every_track_gets_its_kind_of_launcher():
    seen = set()
    for track in ("cpu", "s", "n", "x", "m"):
        plan = load_plan(track)
        for block in plan.blocks.values():
            ctx = block_context(plan, block, Path("/tmp/launchers"), dry_run=True)
            launcher = make_launcher(ctx)
            assert isinstance(launcher, Launcher)
            assert launcher.command()
            assert launcher.keeps_port == (block.engine["launcher"] in ("external", "service"))
            seen.add(block.engine["launcher"])
    assert seen <= set(LAUNCHERS)


def test_the_shared_health_wait_names_the_last_answer_and_stops_on_a_dead_engine():
    url = f"http://127.0.0.1:{free_port()}/health"
    with pytest.raises(NotHealthy, match=r"not healthy after 0 s \(last: nothing answers\)"):
        wait_healthy(url, 0.3, interval=0.05)

    def dead() -> None:
        raise EngineError("exited with status 1")

    with pytest.raises(EngineError, match="exited with status 1"):
        wait_healthy(url, 5.0, alive=dead)


def test_a_last_try_cut_short_by_the_wait_keeps_what_the_server_answered(monkeypatch):
    """The wait's final try, bounded by the little time left, times out: that is the wait's own
    deadline, not news of the server, so the error names the earlier answer (here a 500)."""
    import harness.engines.launchers.base as base

    bounds: list[float] = []

    def answer(url: str, bound: float) -> str:
        bounds.append(bound)
        return "HTTP 500" if len(bounds) == 1 else f"Timeout: no byte from the server for {bound:g} s"

    monkeypatch.setattr(base, "health_answer", answer)
    with pytest.raises(NotHealthy) as caught:
        wait_healthy("http://127.0.0.1:9/health", 0.3, interval=0.05, request_timeout=2.0)
    assert caught.value.last == "HTTP 500" and len(bounds) >= 2 and bounds[-1] < 2.0
    # A try given its whole bound that times out is news of the server: it is what the error names.
    bounds.clear()
    monkeypatch.setattr(base, "health_answer", lambda url, bound: (bounds.append(bound), "Timeout: x")[1])
    with pytest.raises(NotHealthy) as caught:
        wait_healthy("http://127.0.0.1:9/health", 0.3, interval=0.05, request_timeout=0.01)
    assert caught.value.last == "Timeout: x"
