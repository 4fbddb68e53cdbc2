"""Seed fidelity, round four: each item against the seed pages' own words."""

from __future__ import annotations

from harness.report.identity import HEAD, identity_rows
from harness.run.plans import load_plan
from tests.conftest import fake_measurement


def test_vllm_single_user_record_carries_the_labs_awq_label():
    """Engines lab, serve-vllm.sh's compare-engines line: --quant "AWQ 4-bit, group size 128"."""
    plan = load_plan("track-n")
    assert plan.blocks["vllm-single"].record["quant"] == "AWQ 4-bit, group size 128"


def test_identity_row_has_a_chat_template_column():
    """Engines lab: the identity row names source checkpoint, representation, template, prompt, ..."""
    assert HEAD[:4] == ["Engine", "Checkpoint", "Representation", "Chat template"]
    rec = {"model": "Qwen3-8B-AWQ", "quant": "AWQ 4-bit, group size 128", "prompt_tag": True}
    base = {"model": "Qwen3-8B", "quant": "Q4_K_M", "prompt_tag": True}
    rows = identity_rows(["llama.cpp", "vllm"], {"llama.cpp": {"long": base}, "vllm": {"long": rec}})
    assert rows[0][3] == "Qwen3-8B's own"
    assert rows[1][3] == "Qwen3-8B-AWQ's own *"  # another checkpoint's template is a difference


def test_track_m_32gb_gets_a_fit_verdict_from_hw_memsize(monkeypatch, capsys):
    """Serving lab: fits = weights + KV pool (+ buffers) <= usable memory; m4-max has no memory in the
    machine table (it comes in several sizes), so this Mac's hw.memsize decides (32 GiB here)."""
    from harness.cli import main
    from harness.sizing import machines

    asked = []

    def run(argv):
        asked.append(argv)
        return "34359738368" if argv == ["sysctl", "-n", "hw.memsize"] else None

    monkeypatch.setattr(machines, "_run", run)
    argv = [
        "predict",
        "--model",
        "qwen3-8b",
        "--slots",
        "32",
        "--ctx-per-slot",
        "4096",
        "--machine",
        "m4-max",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ["sysctl", "-n", "hw.memsize"] in asked
    assert "usable memory: hw.memsize 34.4 GB (sysctl, this Mac's memory)" in out
    assert "before compute buffers against 34.3597 GB usable -> fits" in out
    monkeypatch.setattr(machines, "_run", lambda argv: None)  # off a Mac: said, and no verdict
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "no fit verdict: give --usable-gb" in out and "-> fits" not in out


def test_track_n_measures_its_environments_after_tabbyapis_first_start_not_in_the_preflight():
    """Engines lab Task 7: the two environments' sizes once the installs and TabbyAPI's first start
    (it installs PyTorch and ExLlamaV3) have made them; the preflight, before either, no longer says
    "not there yet"."""
    plan = load_plan("track-n")
    kinds = [s.id for s in plan.steps]
    env = kinds.index("environments")
    assert env > kinds.index("exllamav3/start") and env > kinds.index("install")
    assert env > kinds.index("preflight")


def test_the_environments_step_records_the_sizes_and_the_report_shows_them(tmp_path, monkeypatch):
    import json

    import yaml

    from harness.run.runner import Runner

    venv = tmp_path / "vllm-env"
    (venv / "lib").mkdir(parents=True)
    (venv / "lib" / "torch.so").write_bytes(b"x" * 1500)
    plan = {
        "schema_version": 1,
        "name": "envs",
        "title": "envs",
        "variables": {"ENV_DIRS": f"{venv} {tmp_path / 'tabby' / 'venv'}"},
        "stages": ["environments", "report"],
    }
    path = tmp_path / "envs.yaml"
    path.write_text(yaml.safe_dump(plan))
    lines: list[str] = []
    assert Runner(load_plan(str(path)), tmp_path / "run", out=lines.append).execute(resume=False) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    step = next(s for s in manifest["steps"] if s["id"] == "environments")
    texts = [(f["level"], f["text"]) for f in step["result"]["findings"]]
    assert texts[0] == ("PASS", f"{venv}: 0.0 GB")
    # after the first starts, an environment still missing is a warning, not "not there yet"
    missing = f"{tmp_path / 'tabby' / 'venv'}: not there after the installs and first starts"
    assert texts[1] == ("WARN", missing)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Python environments" in report and f"- PASS: {venv}: 0.0 GB" in report


def test_identity_row_compares_recorded_template_fingerprints_not_names():
    """Where measure --checkpoint recorded the template's SHA-256, the same text read
    from a GGUF and from an AWQ folder is no difference; another text is."""
    gguf_t = {"sha256": "f24189f08c85", "source": "GGUF tokenizer.chat_template"}
    base = {"model": "Qwen3-8B-Q4_K_M", "quant": "Q4_K_M", "prompt_tag": True, "chat_template": gguf_t}
    same = {**base, "model": "Qwen3-8B-AWQ", "quant": "AWQ 4-bit, group size 128"}
    same["chat_template"] = {"sha256": "f24189f08c85", "source": "tokenizer_config.json chat_template"}
    other = {**same, "chat_template": {"sha256": "0123456789ab", "source": "chat_template.jinja"}}
    speed = {"llama.cpp": {"long": base}, "vllm": {"long": same}, "mlx-lm": {"long": other}}
    rows = identity_rows(["llama.cpp", "vllm", "mlx-lm"], speed)
    assert rows[0][3] == "sha256 f24189f08c85 (GGUF tokenizer.chat_template)"
    assert rows[1][3] == "sha256 f24189f08c85 (tokenizer_config.json chat_template)"  # no *
    assert rows[2][3] == "sha256 0123456789ab (chat_template.jinja) *"
    assert rows[1][1] == "Qwen3-8B-AWQ *"  # the checkpoint still differs


def test_measure_records_the_checkpoints_template_and_the_plan_passes_it(tmp_path, monkeypatch, capsys):
    import json

    from harness.cli import main

    fake_measurement(monkeypatch)
    folder = tmp_path / "Qwen3-8B-AWQ"
    folder.mkdir()
    (folder / "chat_template.jinja").write_text("{{ messages }}")
    book = tmp_path / "labbook.md"
    argv = ["measure", "--engine", "vllm", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    assert main([*argv, "--checkpoint", str(folder), "--backend", "CUDA", "--labbook", str(book)]) == 0
    recs = [json.loads(line) for line in book.read_text().splitlines() if line.startswith("{")]
    assert recs[1]["chat_template"] == {"sha256": "f24189f08c85", "source": "chat_template.jinja"}
    assert "vllm chat template: f24189f08c85 (chat_template.jinja)" in capsys.readouterr().out
    # the plan hands measure the file or folder each host engine loaded (harness/run/steps.py
    # _checkpoint_of): tests/integration/test_dry_runs.py holds every track's measure lines with it
