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
