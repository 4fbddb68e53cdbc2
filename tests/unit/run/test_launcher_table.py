"""Launchers come from one table keyed by the engine definition's ``launcher`` field, and every
one meets the Launcher protocol; the shared health wait reports what the URL answered last."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import EngineError
from harness.run.context import block_context
from harness.run.launchers import LAUNCHERS, Launcher, make_launcher
from harness.run.launchers.base import NotHealthy, wait_healthy
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
