"""Every port the lab uses is checked free before each engine starts: a
listener on another block's port stops the run before anything starts, in one line naming the
port, its holder and the block it belongs to. A service's port (Lemonade's, held by its service
all along) is not one of them."""

from __future__ import annotations

import json
import socket

import yaml

from harness.run.plans import load_plan
from harness.run.runner import Runner
from harness.run.startup import lab_ports
from tests.conftest import free_port


def write(tmp_path, ports: tuple[int, int], lemonade_port: int):
    spec = {
        "schema_version": 1,
        "name": "ports",
        "title": "two servers and a service",
        "variables": {},
        "stages": [
            {"id": "first", "engine": "practice", "settings": {"port": ports[0]}, "steps": ["probe"]},
            {"id": "second", "engine": "practice", "settings": {"port": ports[1]}, "steps": ["probe"]},
            {"id": "lemon", "engine": "lemonade", "settings": {"port": lemonade_port}, "steps": ["probe"]},
        ],
    }
    path = tmp_path / "ports.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load_plan(str(path))


def test_the_labs_ports_are_its_servers_not_a_service(tmp_path):
    a, b, lemon = free_port(), free_port(), free_port()
    found = lab_ports(write(tmp_path, (a, b), lemon), tmp_path)
    assert found == {("127.0.0.1", a): ["first"], ("127.0.0.1", b): ["second"]}


def test_a_busy_port_of_a_later_block_stops_the_first_start_naming_it(tmp_path):
    a, b = free_port(), free_port()
    plan = write(tmp_path, (a, b), free_port())
    lines: list[str] = []
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", b))
        holder.listen()
        code = Runner(plan, tmp_path / "run", out=lines.append).execute(resume=False)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    start = next(s for s in manifest["steps"] if s["id"] == "first/start")
    assert code == 1 and start["status"] == "failed"
    reason = start["reason"]
    assert reason.startswith(f"port {b} is already in use by ") and "(pid " in reason
    assert "the lab's port for second" in reason and "stop it first" in reason
    assert "first" not in manifest["engines"]  # nothing was started
    assert sum("FAIL  first/start" in x for x in lines) == 1


def test_the_port_of_an_optional_block_that_cannot_run_here_is_not_checked(tmp_path):
    a, v = free_port(), free_port()
    spec = {
        "schema_version": 1,
        "name": "ports-opt",
        "title": "a server and a missing optional vLLM",
        "variables": {},
        "stages": [
            {"id": "first", "engine": "practice", "settings": {"port": a}, "steps": ["probe"]},
            {
                "id": "vllm",
                "engine": "vllm",
                "optional": True,
                "settings": {"vllm_bin": str(tmp_path / "no" / "vllm"), "port": v},
                "steps": ["probe"],
            },
        ],
    }
    path = tmp_path / "opt.yaml"
    path.write_text(yaml.safe_dump(spec))
    with socket.socket() as holder:  # someone else's server on the port vLLM would have used
        holder.bind(("127.0.0.1", v))
        holder.listen()
        code = Runner(load_plan(str(path)), tmp_path / "run", out=lambda _: None).execute(resume=False)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    got = {s["id"]: s["status"] for s in manifest["steps"]}
    assert code == 0 and got["first/probe"] == "passed" and got["vllm/start"] == "skipped", got
