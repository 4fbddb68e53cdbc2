"""Track M's rehearsal (quick sizes) with every engine started through the host-side shim
(`harness track m --rehearse --quick --via-shim`): the track's own llama-server, control and
mlx_lm.server command lines, checked by the shim against the allow-list `harness shim-allow` wrote
from the same plan, the CPU llama-server and the practice server's mlx_lm.server imitation
standing in. Every step passes as it does with the host launcher. It binds the lab's ports 8080
and 8081, so run it under `flock /tmp/lab-ports.lock`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.io.ports import port_open
from tests.conftest import ROOT, free_port
from tests.integration.shim.conftest import start_shim

MODELS = ROOT / "models"


def test_track_m_rehearsed_through_the_shim(tmp_path):
    from harness.errors import InstallError
    from harness.run import llama_cpu

    try:
        model = llama_cpu.find_model()
        llama_cpu.find_llama_server()
    except InstallError as exc:
        pytest.skip(f"the CPU llama-server is not installed (make llama-cpu): {exc}")
    # The imitation loads no model, but the shim still wants mlx_lm.server's --model under the library.
    common = ["m", "--rehearse", "--quick", "--via-shim", "--set", f"MLX_MODEL={model}"]
    allow = tmp_path / "allow.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "shim-allow",
            *common,
            "--out",
            str(allow),
            "--library",
            str(MODELS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert set(json.loads(allow.read_text())["engines"]) == {"llama-server", "llama-server-control", "mlx-lm"}
    port = free_port()
    shim = start_shim(allow, tmp_path / "state", MODELS, port=port)
    env = {
        **os.environ,
        "HARNESS_SHIM_URL": f"http://127.0.0.1:{port}",
        "HARNESS_SHIM_TOKEN_FILE": str(tmp_path / "state" / "token"),
    }
    run_dir = tmp_path / "run"
    try:
        track = subprocess.run(
            [sys.executable, "-m", "harness.cli", "track", *common, "--run-dir", str(run_dir)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=2400,
        )
    finally:
        shim.stop()
    assert track.returncode == 0, track.stdout[-4000:] + track.stderr[-2000:]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "passed"
    assert manifest["engines"] and all(
        e["command"].startswith(f"(shim http://127.0.0.1:{port}) ") for e in manifest["engines"].values()
    )
    started = [line for line in shim.log_lines() if "/start 200 " in line]
    assert len(started) == len(manifest["engines"])  # every block's engine, through the shim
    assert not port_open("127.0.0.1", 8080) and not port_open("127.0.0.1", 8081)
