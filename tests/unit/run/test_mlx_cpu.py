"""mlx_lm.server on MLX's CPU backend (harness/engines/mlx_cpu.py) and Track M's rehearsal choosing it
when `make mlx-cpu` has run, the imitation when it has not (harness/run/rehearsal_installs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import paths
from harness.engines import mlx_cpu
from harness.run import rehearsal_installs
from harness.run.plans import load_plan

REAL = {
    "stand_in": "mlx_lm.server itself: a rehearsal on MLX's CPU backend",
    "real": "mlx_lm.server on Metal",
    "requires": "mlx-cpu",
    "launcher": "mlx-cpu",
    "env": {"EXTRA": "1"},
    "otherwise": {"stand_in": "the practice server imitating it", "real": "x", "imitates": "mlx-lm"},
}


def test_a_stand_in_whose_install_is_here_runs_with_its_environment() -> None:
    chosen, why = rehearsal_installs.choose_stand_ins(
        {"mlx-lm": REAL}, lambda name: (None, {"HF_HUB_OFFLINE": "1"})
    )
    entry = chosen["mlx-lm"]
    assert why == {}
    assert entry["launcher"] == "mlx-cpu" and "requires" not in entry and "otherwise" not in entry
    assert entry["env"] == {"HF_HUB_OFFLINE": "1", "EXTRA": "1"}  # the overlay's own env wins


def test_a_stand_in_whose_install_is_missing_gives_way_and_says_why_in_one_line() -> None:
    chosen, why = rehearsal_installs.choose_stand_ins(
        {"mlx-lm": REAL, "other": {"stand_in": "s", "real": "r"}},
        lambda name: ("mlx_lm.server is not installed; run `make mlx-cpu`", {}),
    )
    assert chosen["other"] == {"stand_in": "s", "real": "r"}  # no requires: untouched
    assert chosen["mlx-lm"]["imitates"] == "mlx-lm" and "launcher" not in chosen["mlx-lm"]
    assert chosen["mlx-lm"]["stand_in"].endswith("(mlx_lm.server is not installed; run `make mlx-cpu`)")
    assert why == {
        "mlx-lm": "the practice server imitates it: mlx_lm.server is not installed; run `make mlx-cpu`"
    }
    assert "\n" not in why["mlx-lm"]


def test_track_m_rehearsed_without_make_mlx_cpu_keeps_the_imitation(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MLX_VENV", str(tmp_path / "absent"))
    plan = load_plan("m", rehearse_it=True, quick="smoke")
    block = plan.blocks["mlx"]
    assert block.stand_in["imitates"] == "mlx-lm" and block.launcher == "host"
    assert (
        block.settings["model"] == plan.variables["MLX_MODEL"] == str(paths.models_dir())
    )  # the shim finds it
    assert "make mlx-cpu" in plan.rehearsal.fallbacks["mlx-lm"]
    assert plan.rehearsal.notes[0].startswith("mlx-lm: the practice server imitates it: ")


def test_track_m_rehearsed_after_make_mlx_cpu_runs_the_real_server(monkeypatch, tmp_path) -> None:
    venv = tmp_path / ".venv-mlx"
    (venv / "lib").mkdir(parents=True)
    (venv / "lib" / "libmkl_rt.so.3").write_bytes(b"")
    monkeypatch.setenv("MLX_VENV", str(venv))
    monkeypatch.setattr(mlx_cpu, "install_status", lambda: None)
    plan = load_plan("m", rehearse_it=True, quick="smoke")
    assert plan.rehearsal.fallbacks == {}
    for block_id in ("mlx", "mlx-single"):
        block = plan.blocks[block_id]
        assert block.launcher == "mlx-cpu" and "imitates" not in block.stand_in
        assert "a rehearsal on MLX's CPU backend" in block.stand_in["stand_in"]
        assert block.stand_in["guards"] == ["absolute-model"]  # no darwin guard on Linux
        assert block.stand_in["env"]["LD_PRELOAD"] == str(venv / "lib" / "libmkl_rt.so.3")
        assert block.stand_in["env"]["HF_HUB_CACHE"] == str(venv / "hf-hub-cache")
        assert block.settings["server"] == str(venv / "bin" / "mlx_lm.server")
        assert block.settings["model"] == str(mlx_cpu.model_dir())
        assert block.record["backend"] == "CPU" and "MLX's CPU backend" in block.record["quant"]


def test_the_server_environment_is_offline_with_a_cache_folder_and_mkl_where_installed(tmp_path) -> None:
    env = mlx_cpu.server_env(tmp_path)
    assert env["HF_HUB_OFFLINE"] == "1" and env["HF_HUB_CACHE"] == str(tmp_path / "hf-hub-cache")
    assert "LD_PRELOAD" not in env and "reference BLAS" in mlx_cpu.blas_note(tmp_path)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libmkl_rt.so.3").write_bytes(b"")
    env = mlx_cpu.server_env(tmp_path)
    assert env["LD_PRELOAD"].endswith("libmkl_rt.so.3") and env["MKL_THREADING_LAYER"] == "SEQUENTIAL"


def test_the_command_line_is_the_engine_definitions(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MLX_VENV", str(tmp_path))
    argv = mlx_cpu.server_argv(8123, prompt_cache_size=3, model=Path("/m/gemma"))
    assert argv[0] == str(tmp_path / "bin" / "mlx_lm.server")
    joined = " ".join(argv)
    assert "--model /m/gemma" in joined and "--port 8123" in joined and "--prompt-cache-size 3" in joined


@pytest.mark.parametrize(
    ("system", "machine", "fits"),
    [
        ("Linux", "x86_64", True),
        ("Linux", "aarch64", True),
        ("Darwin", "arm64", False),
        ("Linux", "riscv64", False),
    ],
)
def test_where_mlx_cpu_can_run(system, machine, fits) -> None:
    reason = mlx_cpu.unsupported_reason(machine=machine, system=system)
    assert (reason is None) == fits
    assert mlx_cpu.wants_blas(machine) == (machine == "x86_64")


def test_through_the_shim_the_imitation_stands_in_on_both_sides(monkeypatch) -> None:
    # the harness in its container and the shim's allow-list on the host must agree on the stand-in;
    # the container cannot see .venv-mlx, so both take the imitation, and the run says why
    monkeypatch.setattr(mlx_cpu, "install_status", lambda: None)
    plan = load_plan("m", rehearse_it=True, quick="smoke", via_shim=True)
    assert plan.blocks["mlx"].stand_in["imitates"] == "mlx-lm"
    assert "host-side shim" in plan.rehearsal.fallbacks["mlx-lm"]
    assert load_plan("m", rehearse_it=True, quick="smoke").blocks["mlx"].launcher == "mlx-cpu"


def test_a_known_finding_of_the_stand_in_is_a_warn_that_says_why() -> None:
    from harness.measure import known_findings

    known = known_findings.parse(["mlx-prefix-shared=a rotating cache"])
    results = [
        ("FAIL", "mlx-prefix-shared at c=1: 0% of the prompt was served from cache (needs > 50 %)"),
        ("FAIL", "llama-prefix-shared at c=1: 0% of the prompt was served from cache (needs > 50 %)"),
        ("FAIL", "mlx-prefix-shared-2 at c=1: 0%"),  # another label that starts the same: untouched
        ("PASS", "mlx-prefix-shared: the client kept up at every level"),
    ]
    out = known_findings.apply(results, known)
    assert out[0] == ("WARN", results[0][1] + " (known for this stand-in: a rotating cache)")
    assert out[1:] == results[1:]
    for bad in ("no-equals", "=why", "label="):
        with pytest.raises(ValueError, match="LABEL=WHY"):
            known_findings.parse([bad])


def test_the_real_stand_ins_known_finding_reaches_the_check_step_and_the_imitations_does_not(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(mlx_cpu, "install_status", lambda: None)
    plan = load_plan("m", rehearse_it=True, quick="smoke")
    assert "sliding-window" in plan.rehearsal.known["mlx-prefix-shared"]
    (check,) = [s for s in plan.steps if s.kind == "check"]
    from harness.run.steps import PLAN_STEPS, Where

    where = Where(plan, tmp_path, "labbook.md")
    lines = [c.line() for c in PLAN_STEPS["check"](where, check.options)]
    assert "--known-failure 'mlx-prefix-shared=Gemma 3" in lines[0]
    monkeypatch.undo()  # the install as it is not: the imitation, which reuses the preamble
    monkeypatch.setenv("MLX_VENV", str(tmp_path / "absent"))
    assert load_plan("m", rehearse_it=True, quick="smoke").rehearsal.known == {}
