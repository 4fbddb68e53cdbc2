"""`make track-m COMPOSE=1 DRY_RUN=1`: the containerised Track M path prints what it would run (the
allow-list, the shim, the harness container) and the plan's every command as the container would
run them (engines through the shim at host.docker.internal), and starts nothing."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("rehearse", [False, True])
def test_the_dry_run_prints_the_commands_and_starts_nothing(rehearse):
    state = f"runs/test-dry-{uuid.uuid4().hex[:8]}"
    argv = ["make", "--no-print-directory", "track-m", "COMPOSE=1", "DRY_RUN=1", "SHIM_PORT=18799"]
    argv += ["REHEARSE=1", "QUICK=1"] if rehearse else []
    env = {**os.environ, "SHIM_STATE": state, "PROJECT": f"llmh-test-dry-{uuid.uuid4().hex[:8]}"}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    out = done.stdout
    library = ROOT / "models" if rehearse else os.path.expanduser("~/models")
    shape = "--rehearse --quick --via-shim" if rehearse else "--via-shim"
    assert (
        f"would run: .venv/bin/harness setup shim-allow m {shape} --out {state}/allow.json "
        f"--library {library}" in out
    )
    assert f"shim/harness_shim.py serve --allow {state}/allow.json --library {library} --port 18799" in out
    assert (
        f"HARNESS_SHIM_TOKEN_FILE={ROOT}/{state}/token harness-host-paths harness track m --via-shim" in out
    )
    starts = [line for line in out.splitlines() if line.startswith("start: ")]
    assert len(starts) == 7 and all(
        s.startswith("start: (shim http://host.docker.internal:18799) ") for s in starts
    )
    assert all("--host host.docker.internal " in s for s in starts)
    assert "nothing is started (dry run)" in out
    assert not (ROOT / state).exists()  # no allow-list, no token: the shim never started
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"--state-dir {state}" not in ps
