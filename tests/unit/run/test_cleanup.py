"""harness cleanup's removal of one checkpoint, which never reaches outside the model library."""

from __future__ import annotations

import json

from harness.run import cleanup


def test_remove_one_checkpoint_only_inside_the_library(tmp_path):
    library = tmp_path / "models"
    ckpt = library / "Qwen" / "Qwen3-8B"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(b"x" * 1000)
    log = tmp_path / "cleanup.jsonl"
    rec = cleanup.remove_checkpoint(ckpt, library, log)
    assert rec["bytes"] == 1000 and not ckpt.exists() and (library / "Qwen").exists()
    assert json.loads(log.read_text())["removed"] == str(ckpt.resolve())
    try:
        cleanup.remove_checkpoint(tmp_path, library, log)
    except ValueError as exc:
        assert "is not inside the model library" in str(exc)
    else:
        raise AssertionError("removing something outside the library must be refused")


def test_a_compose_engine_left_running_is_removed_with_its_whole_project(monkeypatch):
    calls = []

    def run(argv, **_):
        calls.append(argv)
        out = "c1\nc2\n" if argv[:2] == ["docker", "ps"] else ""
        return type("Done", (), {"stdout": out, "returncode": 0})()

    monkeypatch.setattr(cleanup.subprocess, "run", run)
    up = "up -d --no-deps --no-build llama-cpu"
    command = f"PORT=8080 docker-compose -p run-7 -f compose.yaml --profile llama-cpu {up}"
    assert cleanup._remove_compose_project(command) == "compose project run-7: 2 container(s) removed"
    assert calls[0][-1] == "label=com.docker.compose.project=run-7"
    assert calls[1] == ["docker", "rm", "-f", "c1", "c2"]


def test_what_each_install_made_with_its_size_and_its_remover(tmp_path):
    """harness cleanup's list: each install's products from the table, sized, with
    the command that removes exactly that; what is absent or cannot be told here said so."""
    home = tmp_path / "home"
    (home / "venv" / "lib").mkdir(parents=True)
    (home / "venv" / "lib" / "torch.so").write_bytes(b"x" * 3000)
    library = tmp_path / "models"
    (library / "Qwen" / "Qwen3-8B-AWQ").mkdir(parents=True)
    (library / "Qwen" / "Qwen3-8B-AWQ" / "model.safetensors").write_bytes(b"w" * 500)
    entries = [
        {
            "made_by": "make x",
            "what": "an environment",
            "path": "${HOME}/venv",
            "remove": "rm -r ${HOME}/venv",
        },
        {"made_by": "make y", "what": "gone", "path": "${HOME}/nothing", "remove": "rm -r ${HOME}/nothing"},
        {"made_by": "make images", "what": "an image", "image": "llm-harness/harness"},
        {"made_by": "make images", "what": "no tag", "image": "llm-harness/none"},
        {
            "made_by": "make models",
            "what": "formats",
            "library": True,
            "remove": "rm -r ${LIBRARY}/<owner>/<repo>",
        },
        {
            "made_by": "track-x",
            "what": "Lemonade's copy",
            "lemonade": "user.M",
            "remove": "lemonade delete user.M",
        },
    ]
    variables = {"HOME": str(home), "CHECKOUT": str(tmp_path), "LIBRARY": str(library)}
    tags = {"llm-harness/harness": [("llm-harness/harness:local", 500_000_000)], "llm-harness/none": []}
    rows = cleanup.installs_made(library, entries, variables, tags=tags.get)
    got = [(r["where"], r["bytes"], r["remove"], r["present"]) for r in rows]
    assert got == [
        (str(home / "venv"), 3000, f"rm -r {home / 'venv'}", True),
        (str(home / "nothing"), None, f"rm -r {home / 'nothing'}", False),
        ("llm-harness/harness:local", 500_000_000, "docker image rm llm-harness/harness:local", True),
        ("llm-harness/none", None, "docker image rm llm-harness/none:<tag>", False),
        (str(library / "Qwen" / "Qwen3-8B-AWQ"), 500, f"rm -r {library / 'Qwen' / 'Qwen3-8B-AWQ'}", True),
        ("lemonade: user.M", None, "lemonade delete user.M", None),
    ]
    assert rows[4]["note"] == "AWQ 4-bit, Qwen's own conversion (vLLM)"
    no_docker = cleanup.installs_made(library, entries[2:3], variables, tags=lambda repo: None)
    assert (no_docker[0]["present"], no_docker[0]["note"]) == (None, "no Docker engine here")


def test_the_install_table_names_every_make_target_that_installs(monkeypatch, tmp_path):
    """The table is valid, and its rows for Track N come from the plan's lab.env (or the environment)."""
    entries = cleanup.load_installs()
    made_by = {e["made_by"].split(" (")[0] for e in entries}
    assert {"make setup", "make llama-cpu", "make vllm-cpu", "make images", "make image-vllm-cpu"} <= made_by
    monkeypatch.delenv("VLLM_VENV", raising=False)
    monkeypatch.setenv("TABBY_DIR", str(tmp_path / "tabby"))
    found = cleanup.install_variables(tmp_path)
    assert found["VLLM_VENV"] == f"{found['HOME']}/vllm/.venv" and found["TABBY_DIR"] == str(
        tmp_path / "tabby"
    )
    rows = cleanup.installs_made(tmp_path, [e for e in entries if "path" in e], found, tags=lambda r: [])
    removers = {r["remove"] for r in rows}
    assert f"rm -r {found['VLLM_VENV']}" in removers and f"rm -r {tmp_path / 'tabby'}" in removers
