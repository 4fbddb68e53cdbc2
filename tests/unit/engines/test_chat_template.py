"""The chat template a checkpoint carries, fingerprinted where each format keeps it
(a GGUF's metadata, a Hugging Face folder's chat_template.jinja or tokenizer_config.json), so the
identity row compares template texts, not checkpoint names."""

from __future__ import annotations

import hashlib
import json

import gguf

from harness.engines.models.chat_template import fingerprint

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
SHA = hashlib.sha256(TEMPLATE.encode()).hexdigest()[:12]


def write_gguf(path, template: str | None) -> None:
    w = gguf.GGUFWriter(str(path), "qwen3")
    if template is not None:
        w.add_chat_template(template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_the_same_template_in_a_gguf_and_in_a_folder_has_one_fingerprint(tmp_path):
    write_gguf(tmp_path / "q.gguf", TEMPLATE)
    awq = tmp_path / "Qwen3-8B-AWQ"
    awq.mkdir()
    (awq / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    mlx = tmp_path / "Qwen3-8B-4bit"
    mlx.mkdir()
    (mlx / "chat_template.jinja").write_text(TEMPLATE)
    (mlx / "tokenizer_config.json").write_text(json.dumps({"chat_template": "ignored: the .jinja wins"}))
    assert fingerprint(str(tmp_path / "q.gguf")).to_dict() == {
        "sha256": SHA,
        "source": "GGUF tokenizer.chat_template",
    }
    assert fingerprint(str(awq)).to_dict() == {"sha256": SHA, "source": "tokenizer_config.json chat_template"}
    assert fingerprint(str(mlx)).to_dict() == {"sha256": SHA, "source": "chat_template.jinja"}
    named = tmp_path / "named"
    named.mkdir()
    templates = [{"name": "tool_use", "template": "x"}, {"name": "default", "template": TEMPLATE}]
    (named / "tokenizer_config.json").write_text(json.dumps({"chat_template": templates}))
    assert fingerprint(str(named)).sha256 == SHA


def test_no_template_says_why(tmp_path):
    write_gguf(tmp_path / "bare.gguf", None)
    assert fingerprint(str(tmp_path / "bare.gguf")).to_dict() == {
        "sha256": None,
        "note": f"{tmp_path / 'bare.gguf'}: no chat template (GGUF tokenizer.chat_template)",
    }
    assert str(fingerprint(str(tmp_path / "gone")).note).endswith("gone: no such file or folder here")
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf")
    assert "unreadable (not a GGUF file (bad magic))" in str(fingerprint(str(tmp_path / "junk.gguf")).note)
    assert str(fingerprint(str(tmp_path)).note).endswith("no chat_template.jinja or tokenizer_config.json)")
