"""Bad input to a track run: an engine not installed, a model file missing, a port already in use,
an engine that never becomes healthy. Each gives one clear line, the manifest records the failed
step, and no server is left running."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from harness.errors import ConfigError, EngineError
from harness.run.plans import load_plan
from harness.run.api_keys import api_key_env
from harness.run.context import block_context
from harness.run.runner import Runner
from tests.conftest import free_port, install_fake


def write_plan(tmp_path: Path, engine: dict, settings: dict | None = None) -> Path:
    spec = {
        "schema_version": 1,
        "title": "a test engine",
        "launcher": "host",
        "port": "{port}",
        "health": "/health",
        "api_model": "m",
        "log": "stdout",
        "health_timeout_s": 2,
        **engine,
    }
    spec.setdefault("settings", {})["port"] = free_port()
    engine_file = tmp_path / f"{spec['name']}.yaml"
    engine_file.write_text(yaml.safe_dump(spec))
    plan = {
        "schema_version": 1,
        "name": "bad-input",
        "title": "bad input",
        "variables": {},
        "stages": [
            {"id": "a", "engine": str(engine_file), "settings": settings or {}, "steps": ["probe"]},
            "report",
        ],
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def run(tmp_path: Path, plan_path: Path) -> tuple[int, dict, list[str]]:
    lines: list[str] = []
    runner = Runner(load_plan(str(plan_path)), tmp_path / "run", out=lines.append)
    code = runner.execute(resume=False)
    return code, json.loads((tmp_path / "run" / "manifest.json").read_text()), lines


def steps(manifest: dict) -> dict[str, dict]:
    return {s["id"]: s for s in manifest["steps"]}


def assert_failed_start(code: int, manifest: dict, lines: list[str], message: str) -> None:
    assert code == 1 and manifest["status"] == "failed"
    start = steps(manifest)["a/start"]
    assert start["status"] == "failed" and message in start["reason"]
    assert steps(manifest)["a/probe"]["status"] == "pending"  # not run, and a --resume will run it
    fail_lines = [x for x in lines if "FAIL  a/start" in x]
    assert len(fail_lines) == 1 and message in fail_lines[0]


def test_engine_not_installed(tmp_path):
    plan = write_plan(tmp_path, {"name": "missing", "binary": "/nonexistent/bin/engine-server", "args": []})
    assert_failed_start(*run(tmp_path, plan), "cannot start /nonexistent/bin/engine-server")


def test_model_file_missing(tmp_path):
    plan = write_plan(
        tmp_path,
        {
            "name": "needs-model",
            "binary": "{python}",
            "resolve": {"python": "python"},
            "settings": {"python": "auto", "model": "/nonexistent/model.gguf"},
            "args": [["-c", "print('{model}')"]],
        },
    )
    assert_failed_start(*run(tmp_path, plan), "model file /nonexistent/model.gguf not found")


def test_port_in_use_names_the_holder(tmp_path):
    plan = write_plan(
        tmp_path,
        {
            "name": "busy",
            "binary": "{python}",
            "resolve": {"python": "python"},
            "settings": {"python": "auto"},
            "args": [["-c", "pass"]],
        },
    )
    port = yaml.safe_load(next(tmp_path.glob("busy.yaml")).read_text())["settings"]["port"]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        code, manifest, lines = run(tmp_path, plan)
    assert_failed_start(code, manifest, lines, f"port {port} is already in use")
    assert "(pid " in steps(manifest)["a/start"]["reason"]


def test_engine_that_never_becomes_healthy_is_stopped(tmp_path):
    marker = f"never-healthy-{free_port()}"
    plan = write_plan(
        tmp_path,
        {
            "name": "sleepy",
            "binary": "{python}",
            "resolve": {"python": "python"},
            "settings": {"python": "auto"},
            "args": [["-c", f"import time; time.sleep(60)  # {marker}"]],
        },
    )
    assert_failed_start(*run(tmp_path, plan), "was not healthy after 2 s")
    left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert left == [], "the engine process was left running"


def test_resume_refuses_a_changed_plan_and_a_fresh_run_refuses_an_old_directory(tmp_path):
    plan_path = write_plan(tmp_path, {"name": "missing", "binary": "/nonexistent/engine", "args": []})
    run(tmp_path, plan_path)
    with pytest.raises(ConfigError, match="already holds a run; use --resume"):
        Runner(load_plan(str(plan_path)), tmp_path / "run").execute(resume=False)
    plan_path.write_text(plan_path.read_text() + "\n# edited\n")
    with pytest.raises(ConfigError, match="changed since"):
        Runner(load_plan(str(plan_path)), tmp_path / "run").execute(resume=True)
    assert sys.executable  # the runner uses this interpreter for every harness step


def test_external_endpoint_is_measured_and_left_running(tmp_path, practice):
    server = practice("kit")
    plan = {
        "schema_version": 1,
        "name": "ext",
        "title": "external",
        "variables": {},
        "stages": [
            {
                "id": "shared",
                "engine": "external",
                "settings": {"port": server.port},
                "record": {"engine": "someone-else"},
                "steps": ["probe", "recovery"],
            }
        ],
    }
    path = tmp_path / "ext.yaml"
    path.write_text(yaml.safe_dump(plan))
    code, manifest, _ = run(tmp_path, path)
    assert code == 0, manifest
    assert steps(manifest)["shared/stop"]["reason"] == "external endpoint left as it was"
    assert server.proc.poll() is None  # still running: not ours to stop
    notebook = (tmp_path / "run" / "labbook.md").read_text()
    assert '"engine": "someone-else"' in notebook and '"probe": "features"' in notebook


FAKE_MLX = """#!{python}
# Stands in for mlx_lm.server: takes its flags, and serves the practice server under the model
# name it was given, checking every request's "model" as mlx_lm.server does (it would load it).
import argparse, os, sys, yaml
p = argparse.ArgumentParser()
for flag in ("--model", "--host", "--port", "--prompt-cache-size", "--log-level"):
    p.add_argument(flag)
a = p.parse_args()
profile = yaml.safe_load(open(os.path.join({root!r}, "harness/practice/profiles/kit.yaml")))
profile.update(name="mlx", check_model=True)
profile["model"].update(id=a.model, aliases=[])
path = os.path.join(os.environ["TMPDIR_FOR_FAKE"], "mlx-profile.yaml")
yaml.safe_dump(profile, open(path, "w"))
os.execv(sys.executable, [sys.executable, "-m", "harness.cli", "practice", "--profile", path,
                          "--host", a.host, "--port", a.port])
"""


def test_mlx_shim_sends_exactly_the_served_path(tmp_path, monkeypatch):
    model = tmp_path / "models" / "mlx-community" / "Qwen3-8B-4bit"
    model.mkdir(parents=True)
    install_fake(tmp_path, monkeypatch, "mlx_lm.server", FAKE_MLX)
    plan = {
        "schema_version": 1,
        "name": "mlx",
        "title": "mlx shim",
        "variables": {},
        "stages": [
            {
                "id": "mlx",
                "engine": "mlx-lm",
                "settings": {"model": str(model), "port": free_port()},
                "record": {"quant": "MLX 4-bit"},
                "steps": [
                    "probe",
                    {"sweep": {"label": "mlx-c1", "concurrency": "1", "requests": 2, "max_tokens": 8}},
                ],
            }
        ],
    }
    path = tmp_path / "mlx.yaml"
    path.write_text(yaml.safe_dump(plan))
    code, manifest, lines = run(tmp_path, path)
    assert code == 0, [(s["id"], s["status"], s["reason"]) for s in manifest["steps"]]
    assert manifest["engines"]["mlx"]["command"].startswith(f"mlx_lm.server --model {model} ")
    notebook = (tmp_path / "run" / "labbook.md").read_text()
    assert f'"model": "{model}"' in notebook  # the sweep sent the path, which the server accepted


FAKE_LEMONADE = """#!{python}
# Stands in for the Lemonade CLI: `load` starts a server in the background under the model name
# and returns, `unload` stops it, as the real service loads and unloads a llama.cpp backend.
import os, signal, subprocess, sys, yaml
state = os.path.join(os.environ["TMPDIR_FOR_FAKE"], "lemonade.pid")
if sys.argv[1] == "--version":
    print("lemonade 0.0-fake")
elif sys.argv[1] == "load":
    assert sys.argv[3:] == ["--ctx-size", "8192", "--llamacpp", "rocm", "--llamacpp-args",
                            "--flash-attn on --cache-ram 0"], sys.argv
    profile = yaml.safe_load(open(os.path.join({root!r}, "harness/practice/profiles/kit.yaml")))
    profile.update(name="lemonade", check_model=True)
    profile["model"].update(id=sys.argv[2], aliases=[])
    path = os.path.join(os.environ["TMPDIR_FOR_FAKE"], "lemonade-profile.yaml")
    yaml.safe_dump(profile, open(path, "w"))
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "practice", "--profile", path, "--host",
                             os.environ["LEMONADE_HOST"], "--port", os.environ["LEMONADE_PORT"]],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    open(state, "w").write(str(proc.pid))
elif sys.argv[1] == "unload" and os.path.exists(state):
    os.kill(int(open(state).read()), signal.SIGTERM)
    os.remove(state)
"""


def test_lemonade_is_loaded_and_unloaded_through_its_cli(tmp_path, monkeypatch):
    from harness.engines.ports import port_open, wait_port_free

    install_fake(tmp_path, monkeypatch, "lemonade", FAKE_LEMONADE)
    port = free_port()
    plan = {
        "schema_version": 1,
        "name": "lemonade",
        "title": "lemonade",
        "variables": {},
        "stages": [
            {
                "id": "lemonade-rocm",
                "engine": "lemonade",
                "settings": {"port": port},
                "record": {"engine": "lemonade-rocm"},
                "steps": ["probe"],
            }
        ],
    }
    path = tmp_path / "lemonade.yaml"
    path.write_text(yaml.safe_dump(plan))
    code, manifest, _ = run(tmp_path, path)
    assert code == 0, [(s["id"], s["status"], s["reason"]) for s in manifest["steps"]]
    assert steps(manifest)["lemonade-rocm/stop"]["reason"] == "model unloaded; the service keeps its port"
    assert manifest["engines"]["lemonade-rocm"]["version"] == "lemonade 0.0-fake"
    assert '"engine": "lemonade-rocm"' in (tmp_path / "run" / "labbook.md").read_text()
    assert wait_port_free("127.0.0.1", port, 10) and not port_open("127.0.0.1", port)


def test_tabbyapi_key_comes_from_its_token_file_and_is_never_recorded(tmp_path):
    tabby = tmp_path / "tabbyAPI"
    tabby.mkdir()
    (tabby / "api_tokens.yml").write_text("api_key: s3cret-key-123\nadmin_key: admin-456\n")
    plan = {
        "schema_version": 1,
        "name": "tabby",
        "title": "tabby",
        "variables": {},
        "stages": [
            {"id": "exl3", "engine": "tabbyapi", "settings": {"tabby_dir": str(tabby)}, "steps": ["probe"]}
        ],
    }
    path = tmp_path / "tabby.yaml"
    path.write_text(yaml.safe_dump(plan))
    loaded = load_plan(str(path))
    block = loaded.blocks["exl3"]
    ctx = block_context(loaded, block, tmp_path / "run", dry_run=True)
    assert api_key_env(block, ctx.settings) == {"TABBY_API_KEY": "s3cret-key-123"}
    lines: list[str] = []
    # start.sh is missing: fails early
    Runner(loaded, tmp_path / "run", out=lines.append).execute(resume=False)
    written = "\n".join(p.read_text() for p in (tmp_path / "run").rglob("*") if p.is_file()) + "\n".join(
        lines
    )
    assert "s3cret-key-123" not in written
    (tabby / "api_tokens.yml").write_text("admin_key: only-admin\n")
    with pytest.raises(EngineError, match="holds no api_key"):
        api_key_env(block, ctx.settings)
