"""The shim's security, each check by a test that fails without it: the token (none, wrong), the
allow-list (an engine not in it, a setting not declared), the values (shell words, '..', a path
outside the model library), the bind address, the token file's mode, one log line per request,
and every engine it started gone when it stops."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port
from tests.integration.shim.conftest import SHIM, SYSTEM_PYTHON, start_shim, write_allow, write_plan


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie of ours is gone for every purpose but the table
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("token", [None, "wrong-token"])
@pytest.mark.parametrize("path", ["/v1/health", "/v1/engines", "/v1/host", "/v1/engines/practice-shim/start"])
def test_without_the_token_every_route_answers_401_and_starts_nothing(shim, token, path):
    import requests

    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    method = requests.post if path.endswith("/start") else requests.get
    r = method(shim.url + path, json={"settings": {"port": free_port()}}, headers=headers, timeout=10)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
    assert shim.get("/v1/engines/practice-shim").json()["running"] is False
    # The right token does answer, so the 401 was the token's doing.
    assert shim.get("/v1/health").status_code == 200


def test_an_engine_not_in_the_allow_list_is_403(shim):
    for name in ("sh", "vllm", "practice", "llama-server"):  # encoded names: test_shim_hostile
        r = shim.post(f"/v1/engines/{name}/start", {"settings": {}})
        assert r.status_code == 403, name
        assert "allow-list" in r.json()["error"]
    assert shim.get("/v1/engines/nope").status_code == 403


def test_a_setting_not_declared_is_400(shim):
    # python and the binary are fixed by the allow-list; host is the shim's own bind address.
    for setting in ({"python": "/bin/sh"}, {"llama_server": "/bin/sh"}, {"host": "0.0.0.0"}, {"argv": ["x"]}):
        name = "llama-server-cpu-shim" if "llama_server" in setting else "practice-shim"
        r = shim.post(f"/v1/engines/{name}/start", {"settings": {"port": free_port(), **setting}})
        assert r.status_code == 400, setting
        assert "not declared" in r.json()["error"]
    # A body with anything beside settings (a command, say) is refused too.
    r = shim.post("/v1/engines/practice-shim/start", {"settings": {}, "argv": ["/bin/sh"]})
    assert r.status_code == 400


@pytest.mark.parametrize(
    "value", ["kit;touch /tmp/x", "$(id)", "`id`", "kit && id", "kit|id", "a b", "../kit"]
)
def test_shell_words_in_a_value_are_400(shim, value):
    r = shim.post("/v1/engines/practice-shim/start", {"settings": {"profile": value, "port": free_port()}})
    assert r.status_code == 400, value
    assert "not a plain word" in r.json()["error"]
    assert shim.get("/v1/engines/practice-shim").json()["running"] is False


def test_a_path_outside_the_library_is_400(shim, library, tmp_path):
    outside = tmp_path / "outside.gguf"
    outside.write_bytes(b"GGUF")  # it exists: only the library check refuses it
    port = free_port()
    for model in (str(outside), "../outside.gguf", f"{library}/../outside.gguf", "/etc/hostname"):
        r = shim.post("/v1/engines/llama-server-cpu-shim/start", {"settings": {"model": model, "port": port}})
        assert r.status_code == 400, model
        assert "library" in r.json()["error"] or "'..'" in r.json()["error"]
    (library / "link.gguf").symlink_to(outside)  # a link out of the library is outside too
    r = shim.post(
        "/v1/engines/llama-server-cpu-shim/start", {"settings": {"model": "link.gguf", "port": port}}
    )
    assert r.status_code == 400 and "outside the model library" in r.json()["error"]
    for model in ("model.gguf;id", "$(id).gguf", "`id`.gguf"):
        r = shim.post("/v1/engines/llama-server-cpu-shim/start", {"settings": {"model": model, "port": port}})
        assert r.status_code == 400 and "not a plain path" in r.json()["error"], model


def test_numbers_and_choices_are_checked(shim):
    port = free_port()
    for bad in ({"slots": 0}, {"slots": "4; id"}, {"cache_type": "f32"}, {"port": 80}, {"swa_full": "yes"}):
        body = {"settings": {"model": "model.gguf", "port": port, **bad}}
        r = shim.post("/v1/engines/llama-server-cpu-shim/start", body)
        assert r.status_code == 400, bad


def test_one_log_line_per_request_and_never_the_token(shim):
    before = len(shim.log_lines())
    shim.get("/v1/health")
    shim.get("/v1/engines", token="wrong")
    shim.post("/v1/engines/sh/start")
    lines = shim.logged("", 3, after=before)  # every line
    assert len(lines) == 3
    assert [line.split()[2:5] for line in lines] == [
        ["GET", "/v1/health", "200"],
        ["GET", "/v1/engines", "401"],
        ["POST", "/v1/engines/sh/start", "403"],
    ]
    assert shim.token not in (shim.state / "shim.log").read_text()


def test_the_token_file_is_0600_even_over_an_older_file(tmp_path, library):
    state = tmp_path / "state"
    state.mkdir()
    (state / "token").write_text("old\n")
    os.chmod(state / "token", 0o644)
    plan = write_plan(tmp_path, [{"id": "practice", "engine": "practice-shim"}])
    s = start_shim(write_allow(tmp_path, plan, library), state, library)
    try:
        assert stat.S_IMODE((state / "token").stat().st_mode) == 0o600
        assert s.token != "old" and len(s.token) >= 32
    finally:
        s.stop()


def test_it_never_binds_every_address_unless_asked(tmp_path, library):
    plan = write_plan(tmp_path, [{"id": "practice", "engine": "practice-shim"}])
    allow = write_allow(tmp_path, plan, library)
    for address in ("0.0.0.0", "::"):
        done = subprocess.run(
            [
                SYSTEM_PYTHON,
                str(SHIM),
                "serve",
                "--allow",
                str(allow),
                "--library",
                str(library),
                "--bind",
                address,
                "--port",
                str(free_port()),
                "--state-dir",
                str(tmp_path / "s"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode != 0 and "listens on every network" in done.stderr, address
        assert not (tmp_path / "s" / "token").exists()  # refused before it wrote a token
    # Bound to 127.0.0.1 it answers there and nowhere else (127.0.0.2 is this host's too).
    s = start_shim(allow, tmp_path / "state", library)
    try:
        with socket.socket() as probe:
            probe.settimeout(1)
            assert probe.connect_ex(("127.0.0.2", s.port)) != 0
        assert s.get("/v1/health").json()["bind"] == "127.0.0.1"
    finally:
        s.stop()


def test_the_engine_it_started_is_gone_after_it_stops(tmp_path, library):
    plan = write_plan(tmp_path, [{"id": "practice", "engine": "practice-shim"}])
    s = start_shim(write_allow(tmp_path, plan, library), tmp_path / "state", library)
    port = free_port()
    try:
        r = s.post("/v1/engines/practice-shim/start", {"settings": {"profile": "kit", "port": port}})
        assert r.status_code == 200, r.text
        pid = r.json()["pid"]
        assert r.json()["argv"][-2:] == [
            "--log-file",
            str(tmp_path / "state" / "engines" / "practice-shim.log"),
        ]
        deadline = time.monotonic() + 120  # a hang's deadline: the engine's start on a loaded machine
        while not _port_open(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _port_open(port) and not _gone(pid)
        status = s.get("/v1/engines/practice-shim").json()
        assert status["running"] and status["rss_mb"] > 10
        again = s.post("/v1/engines/practice-shim/start", {"settings": {"profile": "kit", "port": port}})
        assert again.status_code == 409 and "already running" in again.json()["error"]
    finally:
        assert s.stop() == 0
    assert _gone(pid) and not _port_open(port)
    assert "stopped practice-shim (port free: True)" in (tmp_path / "state" / "stdout.txt").read_text()


def test_stop_stops_it_and_says_the_port_is_free(shim):
    port = free_port()
    r = shim.post("/v1/engines/practice-shim/start", {"settings": {"profile": "kit", "port": port}})
    pid = r.json()["pid"]
    deadline = time.monotonic() + 120  # a hang's deadline: the engine's start on a loaded machine
    while not _port_open(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    done = shim.post("/v1/engines/practice-shim/stop").json()
    assert done["stopped"] and done["port_free"] and _gone(pid)
    log = shim.get("/v1/engines/practice-shim/log?offset=0")
    assert log.status_code == 200  # stopped: nothing of it is kept running, the route still answers
    assert shim.get("/v1/engines/practice-shim").json()["running"] is False


def test_a_library_that_is_no_folder_or_a_broken_allow_list_is_one_line(tmp_path):
    bad = tmp_path / "allow.json"
    bad.write_text('{"schema_version": 1, "engines": {"x": {"argv_head": ["bin/sh", "-c"]}}}')
    done = subprocess.run(
        [
            SYSTEM_PYTHON,
            str(SHIM),
            "serve",
            "--allow",
            str(bad),
            "--library",
            str(tmp_path),
            "--bind",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--state-dir",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0 and "must be an absolute path" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    missing = subprocess.run(
        [SYSTEM_PYTHON, str(SHIM), "serve", "--allow", str(tmp_path / "none.json")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert missing.returncode != 0 and "harness shim-allow" in missing.stderr
    assert Path(SHIM).read_text().count("import ") < 40  # one file, the standard library only (see lint)


def test_a_program_not_on_path_is_listed_but_not_started(tmp_path, library):
    allow = tmp_path / "allow.json"
    spec = {
        "argv_head": ["no-such-engine-h25"],
        "args": [["--port", "{port}"]],
        "settings": {"port": {"kind": "int", "min": 1024, "max": 65535}},
        "port": "{port}",
        "health": "/health",
    }
    allow.write_text(json.dumps({"schema_version": 1, "engines": {"ghost": spec}}))
    s = start_shim(allow, tmp_path / "state", library)
    try:
        listed = s.get("/v1/engines").json()["engines"]["ghost"]
        assert "not on this host's PATH" in listed["missing"]
        r = s.post("/v1/engines/ghost/start", {"settings": {"port": free_port()}})
        assert r.status_code == 503 and "no-such-engine-h25 is not on this host's PATH" in r.json()["error"]
    finally:
        s.stop()


def test_a_refused_request_with_a_body_leaves_the_connection_in_step(shim):
    import requests

    with requests.Session() as session:  # one kept-alive connection for all three
        bad = session.post(
            shim.url + "/v1/engines/practice-shim/start",
            json={"settings": {"profile": "x" * 5000}},
            headers={"Authorization": "Bearer wrong"},
            timeout=10,
        )
        assert bad.status_code == 401
        good = session.get(shim.url + "/v1/health", headers=shim.auth(), timeout=10)
        assert good.status_code == 200 and good.json()["ok"] is True
        big = session.post(
            shim.url + "/v1/engines/practice-shim/start",
            data=b"{" + b" " * 70000 + b"}",
            headers=shim.auth(),
            timeout=10,
        )
        assert big.status_code == 400 and "Content-Length" in big.json()["error"]
