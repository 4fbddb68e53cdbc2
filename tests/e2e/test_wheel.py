"""The built wheel, installed into a fresh virtual environment outside the checkout, serves the
practice server, runs a short sweep whose notebook record validates (so the installed schemas are
found) and prints the CPU track's dry run (so the engine definitions and track plans shipped too).

The wheel goes in without its dependencies, which the new environment reads from this one's
site-packages (a .pth line: their own .pth files, the checkout's editable finder among them, are
not run): every one the wheel requires is checked there by name, and the wheel's own copy is the
one imported. pip resolving them from the registries is `make setup`'s, which CI runs anyway."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.slow

# What a source copy leaves out: the checkout's own environment, caches, models and run output.
# The checkout's models/ and runs/ only: harness/engines/models/ is a package of the wheel.
_ANYWHERE = shutil.ignore_patterns(
    ".git", ".venv*", "wheels", ".hypothesis", "build", "*.egg-info", "__pycache__", ".*_cache", "tests"
)
_AT_ROOT = {"models", "runs", "labbook.md"}


def LEAVE_OUT(directory: str, names: list[str]) -> set[str]:
    left = set(_ANYWHERE(directory, names))
    return left | (_AT_ROOT & set(names) if Path(directory) == ROOT else set())


def run(argv: list, cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{argv[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_installed_wheel_serves_sweeps_and_plans(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("HARNESS_")
    }
    source, wheels, venv, elsewhere = (tmp_path / n for n in ("source", "wheels", "venv", "elsewhere"))
    shutil.copytree(ROOT, source, ignore=LEAVE_OUT, symlinks=True)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source], tmp_path, env)
    (wheel,) = wheels.glob("llm_serving_harness-*.whl")
    run([sys.executable, "-m", "venv", venv], tmp_path, env)
    run([venv / "bin/python", "-m", "pip", "install", "-q", "--no-deps", wheel], tmp_path, env, timeout=300)
    ours = run(
        [venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        tmp_path,
        env,
    ).stdout.strip()
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(ours) / "deps-from-the-test-environment.pth").write_text("\n".join(sorted(here)) + "\n")
    elsewhere.mkdir()
    harness = venv / "bin/harness"
    requires = (
        "import importlib.metadata as m, re; "
        "need = [re.split(r'[ ;<>=!~\\[]', r, 1)[0] for r in m.requires('llm-serving-harness') "
        "if 'extra ==' not in r and 'win32' not in r]; "
        "missing = [n for n in need if not any(True for _ in [m.version(n)])]; print(len(need), missing)"
    )
    assert (
        run([venv / "bin/python", "-c", requires], elsewhere, env).stdout.split(maxsplit=1)[1].strip() == "[]"
    )

    where = run(
        [
            venv / "bin/python",
            "-c",
            "import harness, harness.paths as p; print(harness.__file__); print(p.checkout())",
        ],
        elsewhere,
        env,
    ).stdout.split()
    assert where[0].startswith(str(venv)) and where[1] == "None"  # the installed copy, not the checkout

    port = free_port()
    log = elsewhere / "practice.out"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [harness, "practice", "--port", str(port)],
            cwd=elsewhere,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log.read_text()
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "the installed practice server never became healthy"
            time.sleep(0.1)
        book = elsewhere / "labbook.md"
        run(
            [
                harness,
                "sweep",
                "--base-url",
                f"http://127.0.0.1:{port}/v1",
                "--model",
                "local-chat",
                "--concurrency",
                "1",
                "--requests",
                "2",
                "--max-tokens",
                "8",
                "--label",
                "wheel",
                "--labbook",
                book,
            ],
            elsewhere,
            env,
            timeout=120,
        )
    finally:
        server.terminate()
        server.wait(10)
    check = (
        "import sys; from harness.records.notebook import read_records; "
        "r = read_records(sys.argv[1], 'level', select=lambda o: o.get('label') == 'wheel' and "
        "'concurrency' in o); "
        "import json; print(json.dumps([len(r.records), r.warnings, r.records[0]['completed']]))"
    )
    count, warnings, completed = json.loads(
        run([venv / "bin/python", "-c", check, book], elsewhere, env).stdout
    )
    assert (count, warnings, completed) == (1, [], 2)

    dry = run(
        [harness, "track", "cpu", "--dry-run", "--run-dir", elsewhere / "run"], elsewhere, env, timeout=120
    )
    assert "start: " in dry.stdout and "practice/sweep:practice-baseline" in dry.stdout
    assert not (elsewhere / "run" / "manifest.json").exists()
