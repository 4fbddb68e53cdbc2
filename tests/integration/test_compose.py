"""compose/compose.yaml, validated offline: the Compose specification's JSON Schema for every
track's env file, the invariants every engine service must keep, the flags each engine states,
and the Locust master/worker services run for real as processes (this machine has no Docker
engine) against the practice server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.engines import compose_files
from harness.engines import command_line as engine_defs
from harness.run.plans import load_plan
from harness.records.notebook import read_records
from harness.run.context import block_context
from harness.run.launcher_table import make_launcher
from tests.conftest import ROOT, free_port

SCHEMA = ROOT / ".venv" / "compose_spec.json"
ENV_FILES = sorted((ROOT / "compose" / "env").glob("*.env"))
TRACK_SERVICES = {
    "track-s": ["llama-cuda", "vllm", "trtllm"],
    "track-n": ["llama-cuda", "vllm-upstream", "tabbyapi"],
    "track-x": ["llama-vulkan", "llama-rocm", "vllm-rocm"],
    "cpu": ["llama-cpu", "practice", "locust-master", "locust-worker"],
}
ENGINE_SERVICES = [
    "llama-cpu",
    "llama-cuda",
    "llama-vulkan",
    "llama-rocm",
    "vllm",
    "vllm-upstream",
    "vllm-rocm",
    "vllm-cpu",
    "trtllm",
    "tabbyapi",
    "practice",
]


def doc_for(env_file: Path, **extra) -> dict:
    return compose_files.load(env={**compose_files.read_env_file(env_file), **extra})


def schema() -> dict:
    if not SCHEMA.is_file():
        pytest.fail(
            f"{SCHEMA} is missing: run `make test` (it fetches it) or "
            "`python scripts/fetch_compose_schema.py .venv/compose_spec.json`"
        )
    return compose_files.load_schema(SCHEMA)


@pytest.mark.parametrize("env_file", ENV_FILES, ids=lambda p: p.stem)
def test_every_profile_validates_against_the_compose_spec(env_file):
    doc = doc_for(env_file)
    assert compose_files.profiles(doc) == sorted(
        [
            "llama-cpu",
            "llama-cuda",
            "llama-vulkan",
            "llama-rocm",
            "vllm",
            "vllm-upstream",
            "vllm-rocm",
            "vllm-cpu",
            "trtllm",
            "tabbyapi",
            "practice",
            "locust",
        ]
    )
    for profile in compose_files.profiles(doc):
        active = {"services": compose_files.services_for(doc, profile)}
        assert compose_files.schema_problems(active, schema()) == [], profile


def test_the_schema_check_can_fail():
    doc = doc_for(ROOT / "compose/env/track-s.env")
    doc["services"]["vllm"]["ports"] = [{"published": "8000", "bogus": True}]
    doc["services"]["vllm"]["restart_policy"] = "always"
    found = compose_files.schema_problems(doc, schema())
    assert any("bogus" in p for p in found) and any("restart_policy" in p for p in found)


def test_invariants_of_every_service():
    doc = doc_for(ROOT / "compose/env/track-s.env")
    for name, svc in doc["services"].items():
        assert all(p.startswith("127.0.0.1:") for p in svc.get("ports", [])), name
        assert all(
            v.endswith(":ro") for v in svc.get("volumes", []) if ":/models" in v or "/app/models" in v
        ), name
        assert svc["healthcheck"]["test"][0] == "CMD", name
        assert all("KEY" not in k for k in svc.get("environment", {})), (
            f"{name}: no API key in the environment"
        )
    for name in ENGINE_SERVICES:
        svc = doc["services"][name]
        assert svc["ports"] and all(p.startswith("127.0.0.1:") for p in svc["ports"]), name
        model_mounts = [v for v in svc.get("volumes", []) if "/models" in v.split(":")[1]]
        assert all(v.endswith(":ro") for v in model_mounts), name
        test = svc["healthcheck"]["test"]
        assert test[0] == "CMD" and "health" in " ".join(test), name
        if name.startswith(("vllm", "trtllm")):
            assert test[1] == "python3", f"{name}: its image has no curl; use python3"
        if name in ("vllm-upstream", "vllm-rocm"):  # their images' entrypoint is the server itself
            assert svc["entrypoint"] == ["/usr/bin/env"] and svc["command"][:2] == ["vllm", "serve"]
    for name in ("vllm", "vllm-upstream", "trtllm", "tabbyapi", "llama-cuda"):
        device = doc["services"][name]["deploy"]["resources"]["reservations"]["devices"][0]
        assert device["capabilities"] == ["gpu"] and device["driver"] == "nvidia"
    rocm = doc["services"]["llama-rocm"]
    assert rocm["devices"] == ["/dev/kfd", "/dev/dri"] and all(g.isdigit() for g in rocm["group_add"])
    trt = doc["services"]["trtllm"]
    assert trt["ipc"] == "host" and trt["ulimits"] == {"memlock": -1, "stack": 67108864}


@pytest.mark.parametrize("track, services", TRACK_SERVICES.items())
def test_each_track_pins_its_images(track, services):
    doc = doc_for(ROOT / f"compose/env/{track}.env")
    for name in services:
        image = doc["services"][name]["image"]
        assert ":" in image and not image.endswith(":latest") and "pin-" not in image, (
            f"{track}: {name} {image}"
        )


def test_engine_services_state_every_setting_and_follow_the_variables():
    doc = doc_for(ROOT / "compose/env/track-s.env", SLOTS="8", CTX_TOTAL="32768", CACHE_TYPE="q8_0")
    cmd = doc["services"]["llama-cuda"]["command"]
    flags = dict(zip(cmd, cmd[1:], strict=False))
    assert (flags["--parallel"], flags["--ctx-size"], flags["--cache-type-k"], flags["--cache-type-v"]) == (
        "8",
        "32768",
        "q8_0",
        "q8_0",
    )
    # The container's flags are the host engine's, in the same order (paths and host aside).
    plan = load_plan("s")

    def settings(block_id: str) -> dict:
        return block_context(plan, plan.blocks[block_id], Path("/tmp/compose-check"), dry_run=True).settings

    host_argv = engine_defs.engine_argv(plan.blocks["llama"].engine, settings("llama"))
    assert [a for a in cmd if a.startswith("--")] == [a for a in host_argv if a.startswith("--")]
    vllm = doc_for(ROOT / "compose/env/track-s.env")["services"]["vllm"]["command"]
    container = engine_defs.engine_argv(plan.blocks["vllm"].engine, settings("vllm"))
    assert vllm == container
    trt = doc["services"]["trtllm"]["command"]
    trt_engine = engine_defs.engine_argv(plan.blocks["trtllm"].engine, settings("trtllm"))
    assert trt == trt_engine


@pytest.mark.skipif(
    shutil.which("docker-compose") is None,
    reason="docker-compose is not installed (the JSON Schema check above covers the same ground)",
)
@pytest.mark.parametrize("env_file", ENV_FILES, ids=lambda p: p.stem)
def test_docker_compose_config_accepts_every_profile(env_file):
    for profile in (
        "llama-cpu",
        "llama-cuda",
        "llama-vulkan",
        "vllm",
        "vllm-upstream",
        "vllm-rocm",
        "vllm-cpu",
        "trtllm",
        "tabbyapi",
        "locust",
    ):
        done = subprocess.run(
            [
                "docker-compose",
                "-p",
                "llm-harness",
                "-f",
                str(ROOT / "compose/compose.yaml"),
                "--env-file",
                str(env_file),
                "--profile",
                profile,
                "config",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"{profile}: {done.stderr}"


def test_every_build_context_is_in_git():
    """Compose v1 checks every service's build path whatever the profile (`run` and `up` refused
    with 'build path ... does not exist' on a clean clone when the vLLM context was a gathered,
    ignored folder), so each must be a folder a clean clone has."""
    doc = compose_files.load(ROOT / "compose/compose.yaml", {})
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    tracked = set(listed.stdout.split())
    contexts = {
        name: (ROOT / "compose" / spec["build"]["context"]).resolve()
        for name, spec in doc["services"].items()
        if isinstance(spec.get("build"), dict)
    }
    assert {"vllm-cpu", "llama-cpu"} <= set(contexts)
    for name, folder in contexts.items():
        rel = folder.relative_to(ROOT).as_posix()
        inside = [f for f in tracked if rel in (".", "") or f.startswith(rel + "/")]
        assert folder.is_dir() and inside, f"{name}: build context {rel} is not a folder in git"
        dockerfile = folder / spec_dockerfile(doc["services"][name])
        assert dockerfile.resolve().relative_to(ROOT).as_posix() in tracked, f"{name}: {dockerfile}"


def spec_dockerfile(spec: dict) -> str:
    return spec["build"].get("dockerfile", "Dockerfile")


def test_dockerfiles_are_multi_stage_and_pinned():
    for path in (ROOT / "images/harness/Dockerfile", ROOT / "images/llama-rocm/Dockerfile"):
        text = path.read_text()
        froms = [line for line in text.splitlines() if line.startswith("FROM ")]
        assert len(froms) >= 2, f"{path}: single stage"
        args = dict(
            line[4:].split("=", 1) for line in text.splitlines() if line.startswith("ARG ") and "=" in line
        )
        base = next(v for k, v in args.items() if k.endswith("_IMAGE"))
        assert ":" in base and not base.endswith(":latest"), f"{path}: base image {base} not pinned"
    harness = (ROOT / "images/harness/Dockerfile").read_text()
    assert harness.index("COPY pyproject.toml") < harness.index("COPY harness ")  # dependency layer first


def _service_process(svc: dict, env: dict, cwd: Path, log: Path) -> subprocess.Popen:
    """Run a compose service's command and environment as a process here (the image's /app is the
    repository root; `locust` is this interpreter's)."""
    argv = [sys.executable, "-m", "locust", *svc["command"][1:]]
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env={**os.environ, **{k: str(v) for k, v in svc["environment"].items()}, **env},
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )


def test_locust_master_and_workers_run_as_composed(tmp_path, practice):
    server = practice("kit")
    master_port, web_port = free_port(), free_port()
    doc = doc_for(ROOT / "compose/env/cpu.env", TARGET=server.root, USERS="6", RUN_TIME="6s", WORKERS="2")
    master, worker = doc["services"]["locust-master"], doc["services"]["locust-worker"]
    assert master["environment"]["LOCUST_HOST"] == server.root
    labbook = tmp_path / "labbook.md"
    here = {
        "LOCUST_LABBOOK": str(labbook),
        "LOCUST_MASTER_BIND_PORT": str(master_port),
        "LOCUST_MASTER_NODE_HOST": "127.0.0.1",
        "LOCUST_MASTER_NODE_PORT": str(master_port),
        "LOCUST_WEB_PORT": str(web_port),
        "LOCUST_MAX_TOKENS": "16",
    }
    m = _service_process(master, here, ROOT, tmp_path / "master.txt")
    workers = [_service_process(worker, here, ROOT, tmp_path / f"worker{i}.txt") for i in range(2)]
    try:
        assert m.wait(120) == 0, (tmp_path / "master.txt").read_text()[-3000:]
    finally:
        for p in [m, *workers]:
            if p.poll() is None:
                p.terminate()
                p.wait(20)
    out = (tmp_path / "master.txt").read_text()
    (rec,) = read_records(labbook, "level", select=lambda o: o.get("label") == "locust").records
    samples = (tmp_path / "labbook.samples.jsonl").read_text().splitlines()
    assert rec["requests"] == len(samples) > 6 and rec["completed"] >= rec["requests"] - 6
    assert rec["concurrency"] == 6 and rec["ttft_s"]["p50"] is not None
    served = [
        line for line in server.metrics().splitlines() if line.startswith("llamacpp:tokens_predicted_total")
    ]
    assert float(served[0].split()[-1]) >= rec["output_tokens"] > 0  # the samples' tokens were really served
    assert f"({len(samples)} exact samples)" in out


def test_the_compose_engine_runs_the_same_command_as_the_container_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/home/you")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(
        "schema_version: 1\nname: c\ntitle: compose\nvariables: {}\nstages:\n"
        "  - {id: vllm, engine: vllm-compose, steps: [probe]}\n"
        "  - {id: seqs8, engine: vllm-compose, base: vllm, settings: {max_seqs: 8}, steps: "
        "[probe]}\n"
    )
    plan = load_plan(str(plan_file))
    for block in plan.blocks.values():
        ctx = block_context(plan, block, tmp_path, dry_run=True)
        lau = make_launcher(ctx)
        assert lau.service_spec()["command"] == [
            "vllm",
            *engine_defs.engine_argv(block.engine, ctx.settings)[1:],
        ]
        assert lau.service_spec()["volumes"][0] == "/home/you/models:/models:ro"
    assert "--max-num-seqs 8" in " ".join(lau.service_spec()["command"])
    assert " MODELS_DIR=/home/you/models " in lau.command()
    assert "--profile vllm up -d --no-deps --no-build vllm" in lau.command()


REHEARSAL = ROOT / "compose" / "rehearsal.yaml"


@pytest.mark.parametrize("service", ["vllm", "trtllm"])
def test_the_rehearsal_merge_removes_only_what_the_stand_in_needs(service, tmp_path):
    """compose.yaml with compose/rehearsal.yaml merged after it: the device reservation gone (a
    null removes it, which Compose v1 cannot do from a later file), the schema still holds, and
    the service's command is compose.yaml's own; `docker-compose config` takes the merged file."""
    env = compose_files.read_env_file(ROOT / "compose/env/track-s.env")
    before = compose_files.load(env=env)["services"][service]
    after = compose_files.load(env=env, overrides=(REHEARSAL,))["services"][service]
    assert "deploy" in before and "deploy" not in after
    assert after["command"] == before["command"] and after["ports"] == before["ports"]
    assert {k for k in before if before[k] != after.get(k)} <= {"deploy", "healthcheck", "ulimits"}
    active = {"services": {service: after}}
    assert compose_files.schema_problems(active, schema()) == []
    merged = compose_files.write_merged(
        compose_files.COMPOSE_FILE, (REHEARSAL,), tmp_path / f"{service}.yaml"
    )
    if shutil.which("docker-compose"):
        done = subprocess.run(
            ["docker-compose", "-p", "llm-harness", "-f", str(merged), "--env-file",
             str(ROOT / "compose/env/track-s.env"), "--profile", service, "config"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        resolved = yaml.safe_load(done.stdout)["services"][service]
        assert "deploy" not in resolved and resolved["command"][0] == before["command"][0]


THREADS = {"LLAMA_ARG_THREADS": "1", "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
@pytest.mark.parametrize(
    ("service", "names", "override"),
    [
        ("llama-cpu", ["LLAMA_ARG_THREADS"], None),
        ("vllm-cpu", ["OMP_NUM_THREADS", "VLLM_CPU_OMP_THREADS_BIND"], None),
        ("vllm", ["OMP_NUM_THREADS", "VLLM_CPU_OMP_THREADS_BIND"], REHEARSAL),
    ],
)
def test_the_callers_thread_settings_reach_the_cpu_engines_containers(service, names, override, tmp_path):
    """The CPU engines' thread settings go into their containers where the caller sets them (the
    tests and CI's rehearsal lanes run each engine on one thread), and stay unset where the caller
    leaves them unset, so the engine keeps its own default (the rehearsal's vLLM its `auto` binding)."""
    compose = ROOT / "compose/compose.yaml"
    if override:
        compose = compose_files.write_merged(
            compose_files.COMPOSE_FILE, (override,), tmp_path / "merged.yaml"
        )
    caller = {k: v for k, v in os.environ.items() if k not in THREADS}

    def environment(env: dict) -> dict:
        done = subprocess.run(
            ["docker-compose", "-p", "llm-harness", "-f", str(compose), "--env-file",
             str(ROOT / "compose/env/cpu.env"), "--profile", service, "config"],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return yaml.safe_load(done.stdout)["services"][service].get("environment") or {}

    # `config` prints a name with no value as null: Compose then leaves it out of the container
    unset = environment(caller)
    bind = {"VLLM_CPU_OMP_THREADS_BIND": "auto"} if override else {}
    assert {n: unset.get(n) for n in names} == {n: bind.get(n) for n in names}
    passed = environment({**caller, **THREADS})
    assert {n: passed.get(n) for n in names} == {n: THREADS[n] for n in names}
