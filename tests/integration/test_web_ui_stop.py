"""After Stop in the Locust web UI, the streams still being read are named: the Exact tab's state
row says "finishing N streams" while Locust's own header only greys out, then "stopped". Driven
over the web UI's own HTTP routes (the ones its page calls), against a practice server whose
answers take about 4 s each."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import requests

from tests.conftest import ROOT, free_port, kit_profile
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow
TOKENS, ITL_S = 80, 0.05  # each answer about 4 s: long enough to stop in the middle of it


@pytest.fixture
def web_ui(practice, tmp_path):
    profile = kit_profile(
        name="slow",
        timing={"kind": "fixed", "ttft_s": 0.05, "itl_s": ITL_S},
        output={"length": {"kind": "fixed", "tokens": TOKENS}, "thinking_tokens": 0},
    )
    server = practice(profile)
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "locustfiles/llm_user.py"),
        "--host",
        server.root,
        "--web-host",
        "127.0.0.1",
        "--web-port",
        str(port),
        "--stop-timeout",
        "30",
        "--max-tokens",
        str(TOKENS),
    ]
    with open(tmp_path / "locust.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S  # Locust's start on a loaded machine
    while True:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.2)
        assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "locust.log").read_text()
    yield url, server
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def state(url: str) -> str:
    rows = requests.get(url + "/harness/exact", timeout=5).json()["rows"]
    return next(str(r["value"]) for r in rows if r["metric"] == "state")


def processing(server) -> int:
    """The practice server's own count of the requests it is answering now."""
    line = next(x for x in server.metrics().splitlines() if x.startswith("llamacpp:requests_processing "))
    return int(float(line.split()[-1]))


def test_stop_names_the_streams_still_finishing(web_ui):
    url, server = web_ui
    requests.post(url + "/swarm", data={"user_count": 4, "spawn_rate": 4}, timeout=10)
    # Stop once the server is answering (each answer lasts about 4 s, and the users ask again at
    # once): waited for by the server's own count, not a 2 s sleep a loaded machine can outlast.
    deadline = time.monotonic() + 60
    while processing(server) < 1:
        assert time.monotonic() < deadline, "no request reached the server in 60 s"
        time.sleep(0.1)
    assert state(url) == "running"
    stopper = threading.Thread(target=lambda: requests.post(url + "/stop", timeout=60))
    stopper.start()
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen.append(state(url))
        if seen[-1] == "stopped":
            break
        time.sleep(0.1)
    stopper.join(60)
    finishing = [s for s in seen if s.startswith("finishing ")]
    assert finishing, seen
    assert finishing[0] in {f"finishing {n} stream{'s' if n != 1 else ''}" for n in range(1, 5)}
    assert seen[-1] == "stopped"
    print(f"states after Stop: {list(dict.fromkeys(seen))}")
