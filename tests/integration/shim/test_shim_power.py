"""Apple silicon's power through the host-side shim: the real shim, started as the
learner starts it, runs a fake ``powermetrics`` placed first on its PATH
(tests/fixtures/telemetry/bin/powermetrics: the manual's options, property-list samples of the
documented keys, NUL-separated), and the harness reads power through it (``harness telemetry
--telemetry powermetrics`` with HARNESS_SHIM_URL). The refusals: not allow-listed, a shim not
running as root (run as ``nobody`` through setpriv when the tests run as root), a bad token; a
powermetrics that fails or floods. Never a figure where there is no sample."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.io.telemetry import powermetrics
from tests.conftest import FIXTURES, ROOT
from tests.integration.shim.conftest import SHIM, start_shim, write_allow, write_plan

FAKE_BIN = FIXTURES / "telemetry" / "bin"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the shim runs powermetrics only as root")
NOBODY = 65534


def fake_env(folder: Path, **extra: str) -> dict:
    """The shim's environment: the fake powermetrics first on PATH, writing what it ran to ``folder``."""
    return {"PATH": f"{FAKE_BIN}:{os.environ['PATH']}", "FAKE_POWERMETRICS_DIR": str(folder), **extra}


def options(args: list[str]) -> dict:
    """A command's options (its words after the program) as {option: value}."""
    return dict(zip(args[::2], args[1::2], strict=True))


def runs_of(folder: Path) -> list[list[str]]:
    log = folder / "argv.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def harness_telemetry(shim, token_file: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HARNESS_SHIM_URL": shim.url, "HARNESS_SHIM_TOKEN_FILE": str(token_file)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "telemetry", "--telemetry", "powermetrics", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def power_shim(tmp_path_factory):
    """A root shim whose allow-list names powermetrics, started as by sudo (SUDO_UID: nobody)."""
    if os.geteuid() != 0:
        pytest.skip("the shim runs powermetrics only as root")
    tmp = tmp_path_factory.mktemp("power")
    library = tmp / "models"
    library.mkdir()
    (library / "model.gguf").write_bytes(b"GGUF")
    plan = write_plan(tmp, [{"id": "practice", "engine": "practice-shim"}])
    allow = write_allow(tmp, plan, library, ("--powermetrics",))
    fake = tmp / "fake"
    fake.mkdir()
    env = fake_env(fake, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY))
    s = start_shim(allow, tmp / "state", library, env=env)
    s.fake = fake
    yield s
    s.stop()


@ROOT_ONLY
def test_a_root_shim_answers_one_sample_of_the_window_asked(power_shim):
    assert json.loads((power_shim.state.parent / "allow.json").read_text())["powermetrics"] == {
        "argv_head": ["powermetrics"]
    }
    assert "harness_shim: powermetrics: GET /v1/power" in (power_shim.state / "stdout.txt").read_text()
    before = len(runs_of(power_shim.fake))
    reply = power_shim.get("/v1/power?interval_ms=200")
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    argv = answer["argv"]
    assert argv[0] == str(FAKE_BIN / "powermetrics")  # found on the shim's PATH when it started
    asked = powermetrics.command(200, 1)  # the harness's own command: the same options and values
    assert len(argv) == len(asked) and options(argv[1:]) == options(asked[1:])
    assert runs_of(power_shim.fake)[before:] == [argv[1:]]  # exactly what the shim ran
    [sample] = powermetrics.parse(answer["output"].encode())
    assert 0.2e9 <= sample["elapsed_ns"] < 5e9 and answer["seconds"] >= 0.2
    assert powermetrics.reading(sample, 1.0).power_w == pytest.approx(42.918)
    assert power_shim.logged(" GET /v1/power 200 ", 1)
    assert power_shim.token not in (power_shim.state / "shim.log").read_text()


@ROOT_ONLY
@pytest.mark.parametrize(
    "query", ["interval_ms=99", "interval_ms=5001", "interval_ms=abc", "interval_ms=1&interval_ms=2"]
)
def test_a_window_out_of_bounds_is_refused_before_anything_runs(power_shim, query):
    before = len(runs_of(power_shim.fake))
    reply = power_shim.get(f"/v1/power?{query}")
    assert reply.status_code == 400
    assert reply.json()["error"] == "interval_ms must be one whole number of milliseconds, 100 to 5000"
    assert len(runs_of(power_shim.fake)) == before


@ROOT_ONLY
def test_the_token_file_of_a_shim_started_by_sudo_is_its_users(power_shim):
    info = (power_shim.state / "token").stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (NOBODY, NOBODY, 0o600)


@ROOT_ONLY
def test_the_harness_reads_power_through_the_shim(power_shim):
    before, ran = len(power_shim.log_lines()), len(runs_of(power_shim.fake))
    done = harness_telemetry(
        power_shim, power_shim.state / "token", "--seconds", "1.2", "--interval", "0.3", "--json"
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["found"] == [{"source": "powermetrics", "device": "Apple silicon (the shim's host)"}]
    assert out["absent"] == {}
    [source] = out["reading"]["sources"]
    assert source["method"] == "power-integrated" and source["readings"] >= 2
    assert source["mean_power_w"] == pytest.approx(42.918)  # the fixture's combined_power, in W
    assert source["utilisation_pct"]["max"] == pytest.approx(96.9)
    # a 100 ms probe when the source opened, then one 500 ms sample for each of the sampler's reads
    windows = [options(argv)["--sample-rate"] for argv in runs_of(power_shim.fake)[ran:]]
    assert windows == ["100"] + ["500"] * source["readings"]
    assert len(power_shim.logged(" GET /v1/power 200 ", len(windows), after=before)) == len(windows)


@ROOT_ONLY
@pytest.mark.parametrize(
    "mode, why",
    [
        ("fail", "it exited 1: powermetrics must be invoked as the superuser"),
        ("flood", "it wrote more than 1048576 bytes for one sample"),
    ],
)
def test_a_powermetrics_that_fails_or_floods_gives_no_figure(power_shim, mode, why):
    (power_shim.fake / "mode").write_text(mode)
    try:
        reply = power_shim.get("/v1/power?interval_ms=100")
    finally:
        (power_shim.fake / "mode").unlink()
    assert reply.status_code == 502
    assert reply.json() == {"error": f"powermetrics gave no sample: {why}"}


@ROOT_ONLY
def test_a_bad_token_is_refused_and_runs_nothing(power_shim, tmp_path):
    before = len(runs_of(power_shim.fake))
    assert power_shim.get("/v1/power", token="not-the-token").status_code == 401
    wrong = tmp_path / "token"
    wrong.write_text("not-the-token\n")
    done = harness_telemetry(power_shim, wrong, "--seconds", "0")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        f"harness telemetry: --telemetry powermetrics: powermetrics: the shim at {power_shim.url} answered "
        "HTTP 401: a bearer token is required (the shim's token file) (--telemetry auto reads what is here)"
    )
    missing = harness_telemetry(power_shim, tmp_path / "absent", "--seconds", "0")
    assert missing.returncode == 2 and "cannot read the shim's token file" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert len(runs_of(power_shim.fake)) == before


def test_a_shim_whose_allow_list_lacks_powermetrics_refuses(shim, tmp_path):
    reply = shim.get("/v1/power")
    assert reply.status_code == 403
    reason = (
        "powermetrics is not in this shim's allow-list; write it with `harness shim-allow PLAN "
        "--powermetrics` (make shim SHIM_POWERMETRICS=1) and start the shim again"
    )
    assert reply.json() == {"error": reason}
    done = harness_telemetry(shim, shim.state / "token", "--seconds", "0")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"harness telemetry: --telemetry powermetrics: powermetrics: the shim at {shim.url} answered "
        f"HTTP 403: {reason} (--telemetry auto reads what is here)"
    )
    auto = subprocess.run(
        [sys.executable, "-m", "harness.cli", "telemetry", "--seconds", "0"],
        cwd=ROOT,
        env={
            **os.environ,
            "HARNESS_SHIM_URL": shim.url,
            "HARNESS_SHIM_TOKEN_FILE": str(shim.state / "token"),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        auto.returncode == 0 and f"    powermetrics: the shim at {shim.url} answered HTTP 403" in auto.stdout
    )


def test_a_shim_not_running_as_root_refuses(tmp_path):
    """As root, the shim is started as nobody (setpriv) from a folder nobody can read; as a user,
    it is simply that user."""
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("no setpriv here to start the shim as another user")
        prefix = (setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
    top = Path(tempfile.mkdtemp(prefix="shim-power-"))
    try:
        top.chmod(0o755)
        library = top / "models"
        library.mkdir()
        (library / "model.gguf").write_bytes(b"GGUF")
        plan = write_plan(tmp_path, [{"id": "practice", "engine": "practice-shim"}])
        allow = write_allow(tmp_path, plan, library, ("--powermetrics",))
        script = top / "harness_shim.py"
        shutil.copy(allow, top / "allow.json")
        shutil.copy(SHIM, script)
        state, fake = top / "state", top / "fake"
        state.mkdir()
        fake.mkdir()
        if prefix:
            for folder in (state, fake):
                os.chown(folder, NOBODY, NOBODY)
        uid = NOBODY if prefix else os.geteuid()
        s = start_shim(top / "allow.json", state, library, env=fake_env(fake), prefix=prefix, script=script)
        try:
            reply = s.get("/v1/power")
            assert reply.status_code == 403
            assert reply.json() == {
                "error": f"powermetrics needs root and this shim runs as uid {uid}; start the shim with "
                "sudo (docs/telemetry.md)"
            }
            assert runs_of(fake) == []  # refused before anything ran
        finally:
            s.stop()
    finally:
        shutil.rmtree(top, ignore_errors=True)
