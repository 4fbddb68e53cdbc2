"""Reading an input file a person names (a trace, a lengths file), bounded: the path must be a
regular file (``os.stat`` first, so a FIFO, a directory or ``/dev/zero`` is refused before it is
opened), at most ``limit`` bytes are read, and the text must be UTF-8 without NUL bytes. Every
refusal is one ConfigError line naming the option and the path. A prompt file is read whole by
``load_prompt_file`` and parsed by ``harness.workloads.prompts``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.workloads.prompts import prompts_from_jsonl
from harness.errors import ConfigError


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def read_text(flag: str, path: str, limit: int, what: str) -> str:
    """The text of ``path`` (``what`` says what the file should hold, for the refusal's advice)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ConfigError(
            f"{flag}: cannot read {path} ({exc.strerror or type(exc).__name__}); give {what}"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a pipe or a device)"
        raise ConfigError(f"{flag}: {path} is {kind}; give {what}")
    if info.st_size > limit:
        raise ConfigError(
            f"{flag}: {path} holds {info.st_size:,} bytes, past the {_size(limit)} read; give {what}"
        )
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # a file that grew since the stat is still cut here
    except OSError as exc:
        raise ConfigError(
            f"{flag}: cannot read {path} ({exc.strerror or type(exc).__name__}); give {what}"
        ) from None
    if len(data) > limit:
        raise ConfigError(f"{flag}: {path} holds more than the {_size(limit)} read; give {what}")
    if b"\x00" in data:
        raise ConfigError(f"{flag}: {path} is binary (it holds NUL bytes); give {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{flag}: {path} is not UTF-8 text (byte {exc.start}); give {what}") from None


def load_prompt_file(path: str | Path, count: int) -> list[str]:
    """The prompts of a JSONL prompt file (``harness.workloads.prompts.prompts_from_jsonl``), cycled
    to ``count``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--prompt-file {path} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        raise ConfigError(
            f"--prompt-file {path} is not readable UTF-8 JSONL ({exc}); give one object per line"
        ) from None
    return prompts_from_jsonl(text, str(path), count)
