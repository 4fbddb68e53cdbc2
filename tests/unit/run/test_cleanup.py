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
