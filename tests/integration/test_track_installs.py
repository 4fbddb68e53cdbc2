"""`harness install` (Track N's install step) in its own process: with uv on the PATH and a network
(a listening HTTPS proxy stands for one: nothing here downloads vLLM) it runs the engines lab's uv
commands in order, and says so; with the proxy closed it skips them, naming the network; TabbyAPI
is cloned for real by git from a local repository; a second run finds both installed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.conftest import ROOT, free_port

FAKE_UV = """#!/bin/sh
# records its arguments; `uv pip install --python V/bin/python ...` leaves V/bin/vllm behind;
# `uv python find 3.12` finds one (nothing to download)
if [ "$1" = python ]; then exit 0; fi
echo "$@" >> "$UV_LOG"
if [ "$1" = venv ]; then mkdir -p "$2/bin"; fi
vllm="$(dirname "$4")/vllm"
if [ "$1" = pip ]; then printf '#!/bin/sh\\necho 0.28.0\\n' > "$vllm"; chmod +x "$vllm"; fi
"""


def harness_install(tmp_path, env_extra: dict, *argv: str) -> subprocess.CompletedProcess:
    unset = ("HARNESS_REHEARSAL", "HTTPS_PROXY", "https_proxy")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env = {**env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "install", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_uv_install_runs_with_a_network_and_is_skipped_without(tmp_path):
    (tmp_path / "bin").mkdir()
    uv = tmp_path / "bin" / "uv"
    uv.write_text(FAKE_UV)
    uv.chmod(0o755)
    log, venv = tmp_path / "uv.log", tmp_path / "vllm" / ".venv"
    closed = free_port()
    offline = harness_install(
        tmp_path, {"UV_LOG": str(log), "HTTPS_PROXY": f"http://127.0.0.1:{closed}"}, "--vllm-venv", str(venv)
    )
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert f"skip: no network to pypi.org through the proxy 127.0.0.1:{closed}" in offline.stdout
    assert f"    (not run) $ uv venv {venv} --python 3.12 --seed" in offline.stdout and not log.exists()
    with socket.socket() as proxy:  # a proxy that answers the connection: the network is there
        proxy.bind(("127.0.0.1", 0))
        proxy.listen(4)
        online = {"UV_LOG": str(log), "HTTPS_PROXY": f"http://127.0.0.1:{proxy.getsockname()[1]}"}
        done = harness_install(tmp_path, online, "--vllm-venv", str(venv))
        assert done.returncode == 0, done.stdout + done.stderr
        assert log.read_text().splitlines() == [
            f"venv {venv} --python 3.12 --seed",
            f"pip install --python {venv}/bin/python vllm==0.28.0 --torch-backend=auto",
        ]
        assert f"    $ {venv}/bin/vllm --version" in done.stdout and "0.28.0" in done.stdout
        again = harness_install(tmp_path, online, "--vllm-venv", str(venv))
    assert f"done: already installed ({venv}/bin/vllm is there)" in again.stdout
    assert len(log.read_text().splitlines()) == 2  # nothing ran the second time


def test_tabbyapi_is_cloned_by_git(tmp_path):
    repo = tmp_path / "tabbyAPI-origin"
    repo.mkdir()
    (repo / "start.sh").write_text("#!/bin/sh\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    for argv in (["init", "-q"], ["add", "start.sh"], ["commit", "-qm", "start"]):
        subprocess.run([*git, *argv], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    (tmp_path / "bin").mkdir()
    target = tmp_path / "tabbyAPI"
    done = harness_install(tmp_path, {}, "--tabby-dir", str(target), "--tabby-repo", str(repo))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "start.sh").is_file() and head in done.stdout.splitlines()
    again = harness_install(tmp_path, {}, "--tabby-dir", str(target), "--tabby-repo", str(repo))
    assert "done: already installed" in again.stdout
    # a folder of someone else's in its place is refused, never cloned over
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    refused = harness_install(tmp_path, {}, "--tabby-dir", str(other), "--tabby-repo", str(repo))
    assert refused.returncode == 1 and "is not a TabbyAPI checkout" in refused.stdout
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


def test_a_rehearsal_installs_nothing(tmp_path):
    (tmp_path / "bin").mkdir()
    done = harness_install(
        tmp_path,
        {"HARNESS_REHEARSAL": '{"track": "track-n"}'},
        "--vllm-venv",
        str(tmp_path / "v"),
        "--dry-run",
    )
    assert done.returncode == 0 and "skip: rehearsal: the stand-ins come from make llama-cpu" in done.stdout
