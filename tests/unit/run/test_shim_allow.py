"""The shim's allow-list and its pure parts, in-process: the allow-list a plan gives, the command
line the shim builds from it (flag for flag the harness's own reading of the engine definition),
the value checks, the bind address rule, and the shim file itself (the standard library only)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from harness.errors import ConfigError
from harness.run.context import block_context
from harness.engines.command_line import engine_argv
from harness.run.launcher_table import make_launcher
from harness.engines.launchers.shim import ShimLauncher
from harness.run.plans import load_plan
from harness.run.shim_allow import allow_list, request_settings, via_shim
from tests.conftest import ROOT

SHIM_FILE = ROOT / "shim" / "harness_shim.py"
_spec = importlib.util.spec_from_file_location("harness_shim", SHIM_FILE)
shim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shim)


def _plan(tmp_path: Path, blocks: list[dict]) -> Path:
    stages = [{"record": {}, "steps": [], **b} for b in blocks]
    raw = {
        "schema_version": 1,
        "name": "t",
        "title": "t",
        "machine": None,
        "variables": {"ACCELERATOR": "cpu"},
        "sweep": {},
        "stages": stages,
    }
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


LLAMA = {"id": "llama", "engine": "llama-server-cpu-shim", "settings": {"llama_server": "/opt/llama-server"}}


def test_the_allow_list_fixes_the_program_and_declares_only_the_shim_settings(tmp_path):
    plan = load_plan(str(_plan(tmp_path, [LLAMA, {"id": "practice", "engine": "practice-shim"}])))
    data = allow_list(plan, "/lib")
    assert data["schema_version"] == shim.ALLOW_SCHEMA and data["library"] == "/lib"
    llama = data["engines"]["llama-server-cpu-shim"]
    assert llama["argv_head"] == ["/opt/llama-server"] and llama["fixed"]["alias"] == "gemma-3-270m"
    assert set(llama["settings"]) == {
        "model",
        "port",
        "slots",
        "ctx_per_slot",
        "cache_type",
        "cache_ram",
        "swa_full",
        "threads",
    }
    assert not {"host", "shim_url", "shim_token_file", "llama_server", "ctx_total"} & set(llama["settings"])
    assert not {"host", "shim_url", "shim_token_file", "ctx_total"} & set(llama["fixed"])
    assert data["engines"]["practice-shim"]["argv_head"] == [sys.executable]
    assert shim._spec_problem(llama) is None
    # the preflight's device check, fixed here: llama-server's own listing, nothing for the others
    assert llama["devices_argv"] == ["/opt/llama-server", "--list-devices"]
    assert data["engines"]["practice-shim"]["devices_argv"] is None


def test_the_shim_builds_the_command_line_the_engine_definition_gives(tmp_path):
    plan = load_plan(str(_plan(tmp_path, [LLAMA, {"id": "practice", "engine": "practice-shim"}])))
    data = allow_list(plan)
    for block in plan.blocks.values():
        ctx = block_context(plan, block, tmp_path / "run")
        spec = data["engines"][block.engine.name]
        sent = request_settings(block, ctx.settings)
        fills = {"host": "172.17.0.1", "log": "/shim/engine.log"}
        argv, _, port, _ = shim.build_argv(spec, sent, fills)
        want = engine_argv(
            block.engine, {**ctx.settings, **{k: v for k, v in fills.items() if k in spec["fills"]}}
        )
        # The program is the allow-list's (the harness leaves `auto` to the host); every flag is the same.
        assert argv[0] == spec["argv_head"][0] != "auto" and argv[1:] == want[1:] and port == ctx.port
        launcher = make_launcher(ctx)
        assert isinstance(launcher, ShimLauncher) and launcher.settings == sent and launcher.pid is None
    # A declared setting that empties a flag group leaves the group out, as the harness does.
    argv, *_ = shim.build_argv(
        data["engines"]["llama-server-cpu-shim"],
        {
            **request_settings(
                plan.blocks["llama"], block_context(plan, plan.blocks["llama"], tmp_path).settings
            ),
            "swa_full": False,
        },
        {"host": "h"},
    )
    assert "--swa-full" not in argv and "--threads" not in argv


def test_a_block_changing_a_setting_the_shim_cannot_is_refused(tmp_path):
    variant = {
        "id": "alias2",
        "engine": "llama-server-cpu-shim",
        "base": "llama",
        "settings": {"alias": "other"},
    }
    plan = load_plan(str(_plan(tmp_path, [LLAMA, variant])))
    with pytest.raises(ConfigError, match="changes alias of engine llama-server-cpu-shim.*shim.settings"):
        allow_list(plan)
    slots = {"id": "slots2", "engine": "llama-server-cpu-shim", "base": "llama", "settings": {"slots": 2}}
    assert list(allow_list(load_plan(str(_plan(tmp_path, [LLAMA, slots]))))["engines"]) == [
        "llama-server-cpu-shim"
    ]


def test_a_plan_without_a_shim_block_has_nothing_to_allow():
    with pytest.raises(ConfigError, match="no block whose engine says launcher: shim"):
        allow_list(load_plan("cpu"))


def test_the_cpu_shim_plan_runs_every_engine_through_the_shim():
    plan = load_plan("cpu-shim")
    assert {b.launcher for b in plan.blocks.values()} == {"shim"}
    assert plan.variables["SHIM_HOST"] == "127.0.0.1"  # the container run sets host.docker.internal


@pytest.mark.parametrize(
    ("value", "rule", "why"),
    [
        ("kit;id", {"kind": "word"}, "plain word"),
        ("$(id)", {"kind": "word"}, "plain word"),
        ("`id`", {"kind": "word"}, "plain word"),
        ("a/b", {"kind": "word"}, "plain word"),
        (True, {"kind": "word"}, "plain word"),
        ("7", {"kind": "int", "min": 8}, "outside"),
        (3.5, {"kind": "int"}, "whole number"),
        (True, {"kind": "int"}, "whole number"),
        ("q2", {"kind": "choice", "choices": ["f16"]}, "one of"),
        ("true", {"kind": "bool"}, "true or false"),
        (None, {"kind": "int"}, "required"),
    ],
)
def test_values_are_checked_by_their_kind(value, rule, why):
    with pytest.raises(shim.Refused, match=why):
        shim.check_value("x", value, rule, "/lib")


def test_good_values_pass_as_their_kind(tmp_path):
    assert shim.check_value("x", "12", {"kind": "int", "min": 1, "max": 20}, "/") == 12
    assert shim.check_value("x", None, {"kind": "int", "null": True}, "/") is None
    assert shim.check_value("x", "q8_0", {"kind": "choice", "choices": ["f16", "q8_0"]}, "/") == "q8_0"
    (tmp_path / "m.gguf").write_text("x")
    assert shim.check_value("x", "m.gguf", {"kind": "path"}, str(tmp_path)) == str(
        (tmp_path / "m.gguf").resolve()
    )
    assert shim.check_value("x", str(tmp_path / "m.gguf"), {"kind": "path"}, str(tmp_path)).endswith("m.gguf")
    with pytest.raises(shim.Refused, match="does not exist"):
        shim.check_value("x", "n.gguf", {"kind": "path"}, str(tmp_path))


def test_the_bind_address_rule():
    assert shim.choose_bind("auto", False, system="Darwin", gateway=lambda: None) == "127.0.0.1"
    assert shim.choose_bind("auto", False, system="Linux", gateway=lambda: "172.17.0.1") == "172.17.0.1"
    with pytest.raises(SystemExit, match="no Docker bridge"):
        shim.choose_bind("auto", False, system="Linux", gateway=lambda: None)
    for everywhere in ("0.0.0.0", "::"):
        with pytest.raises(SystemExit, match="listens on every network"):
            shim.choose_bind(everywhere, False)
        assert shim.choose_bind(everywhere, True) == everywhere
    with pytest.raises(SystemExit, match="not an IP address"):
        shim.choose_bind("localhost; id", False)


def test_the_shim_is_one_file_of_the_standard_library_only():
    tree = ast.parse(SHIM_FILE.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names and names <= set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)
    assert "__future__" not in names  # annotations are kept out: the lint's vermin checks 3.9


def test_via_shim_moves_every_engine_with_a_shim_section(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/Users/you")
    monkeypatch.setenv("HARNESS_SHIM_URL", "http://host.docker.internal:8790")
    plan = load_plan("m")
    assert via_shim(plan, "host.docker.internal") == list(plan.blocks)
    assert {b.launcher for b in plan.blocks.values()} == {"shim"}
    data = allow_list(plan)
    assert set(data["engines"]) == {"llama-server", "llama-server-control", "mlx-lm"}
    assert data["engines"]["llama-server"]["argv_head"] == ["/Users/you/llama.cpp/build/bin/llama-server"]
    assert data["engines"]["mlx-lm"]["argv_head"] == ["mlx_lm.server"]  # the shim finds it on PATH
    ctx = block_context(plan, plan.blocks["mlx"], tmp_path)
    launcher = make_launcher(ctx)
    assert isinstance(launcher, ShimLauncher) and launcher.shim_url == "http://host.docker.internal:8790"
    assert ctx.health_url == "http://host.docker.internal:8081/health"  # where the harness reaches it
    assert launcher.settings == {
        "model": "/Users/you/models/mlx-community/Qwen3-8B-4bit",
        "port": 8081,
        "prompt_cache_size": 10,
        "loglevel": "INFO",
    }
    with pytest.raises(ConfigError, match="no engine with a shim section"):
        via_shim(load_plan("cpu"))


def test_powermetrics_is_allowed_only_when_asked_and_by_its_program_only(tmp_path, monkeypatch):
    plan = load_plan(str(_plan(tmp_path, [LLAMA])))
    assert "powermetrics" not in allow_list(plan)
    data = allow_list(plan, powermetrics=True)
    assert data["powermetrics"] == {"argv_head": ["powermetrics"]}  # the shim finds it on its PATH
    assert shim._power_problem(data["powermetrics"]) is None
    assert shim._power_problem({"argv_head": ["/usr/bin/powermetrics"]}) is None
    for bad in (["powermetrics"], {"argv_head": ["/bin/sh"]}, {"argv_head": ["powermetrics", "-i", "9"]}):
        assert shim._power_problem(bad)
    path = tmp_path / "allow.json"
    path.write_text(json.dumps({**data, "powermetrics": {"argv_head": ["sh"]}}))
    with pytest.raises(SystemExit, match="powermetrics: its program 'sh' must be powermetrics"):
        shim.load_allow_list(str(path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no powermetrics on it
    path.write_text(json.dumps(data))
    missing = shim.Power(shim.load_allow_list(str(path))["powermetrics"])
    assert missing.refusal()[0] == 503 and "not on this host's PATH" in missing.refusal()[1]


def test_the_power_route_refuses_in_order_not_allowed_then_not_root(monkeypatch):
    assert shim.Power(None).refusal()[0] == 403
    assert "not in this shim's allow-list" in shim.Power(None).refusal()[1]
    allowed = shim.Power({"argv_head": ["/usr/bin/powermetrics"]})
    monkeypatch.setattr(shim.os, "geteuid", lambda: 501)
    assert allowed.refusal() == (
        403,
        "powermetrics needs root and this shim runs as uid 501; start the shim with sudo (docs/telemetry.md)",
    )
    with pytest.raises(shim.ShimError, match="needs root") as refused:
        allowed.sample(500)
    assert refused.value.status == 403
    assert shim._sudo_owner() is None  # not root: the token stays its own user's
    monkeypatch.setattr(shim.os, "geteuid", lambda: 0)
    assert allowed.refusal() is None
    monkeypatch.setenv("SUDO_UID", "501")
    monkeypatch.setenv("SUDO_GID", "20")
    assert shim._sudo_owner() == (501, 20)


@pytest.mark.parametrize(
    "query, window",
    [("", 500), ("interval_ms=100", 100), ("interval_ms=5000", 5000), ("interval_ms=250&x=1", 250)],
)
def test_the_power_window_is_bounded(query, window):
    assert shim.power_window(query) == window


@pytest.mark.parametrize(
    "query",
    ["interval_ms=99", "interval_ms=5001", "interval_ms=", "interval_ms=-5", "interval_ms=1&interval_ms=2"],
)
def test_a_power_window_out_of_bounds_is_refused(query):
    with pytest.raises(shim.Refused, match="100 to 5000"):
        shim.power_window(query)
