"""The chat template a checkpoint carries, fingerprinted for the engines lab's identity row ("source
checkpoint, representation, template, prompt, ..."): every engine block serves its checkpoint with
the checkpoint's own template (llama-server with ``--jinja``), so the template is the one in the
file or folder the server loaded. A GGUF holds it in its metadata (``tokenizer.chat_template``); a
Hugging Face folder (safetensors, AWQ, EXL3, MLX) in ``chat_template.jinja`` or in
``tokenizer_config.json``'s ``chat_template``. Two engines whose fingerprints match formatted the
prompt with the same template text, whatever the checkpoints are called."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harness.engines.models.gguf_header import read_header
from harness.records.engine import ChatTemplate

SHORT = 12  # hex digits of the SHA-256 shown and recorded


def _gguf(path: Path) -> tuple[str | None, str]:
    return read_header(path).fields.get("tokenizer.chat_template"), "GGUF tokenizer.chat_template"


def _folder(path: Path) -> tuple[str | None, str]:
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8"), "chat_template.jinja"
    config = path / "tokenizer_config.json"
    if not config.is_file():
        return None, "no chat_template.jinja or tokenizer_config.json"
    found = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    if isinstance(found, list):  # named templates: the one a chat request uses is "default"
        found = next((t.get("template") for t in found if t.get("name") == "default"), None)
    return (found if isinstance(found, str) else None), "tokenizer_config.json chat_template"


def fingerprint(checkpoint: str) -> ChatTemplate:
    """The digest of the checkpoint's chat template and where it was read, or no digest and a note
    saying why there is none (no such path, no template in it, unreadable)."""
    path = Path(checkpoint).expanduser()
    try:
        if path.is_dir():
            text, source = _folder(path)
        elif path.is_file():
            text, source = _gguf(path)
        else:
            return ChatTemplate(None, note=f"{checkpoint}: no such file or folder here")
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # a broken header or JSON is a ValueError
        return ChatTemplate(None, note=f"{checkpoint}: unreadable ({exc})")
    if not text:
        return ChatTemplate(None, note=f"{checkpoint}: no chat template ({source})")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:SHORT]
    return ChatTemplate(digest, source)
