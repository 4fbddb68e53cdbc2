"""A deterministic pseudo-tokeniser: stable, plausible token counts without a real vocabulary.

Words become one token each when short and one token per four characters when long;
punctuation is a token of its own; a space belongs to the word after it. English prose comes
out at roughly 1.3 tokens per word, close to real BPE vocabularies. Token ids are a stable hash
of the piece, so equal text gives equal ids in every process (Python's ``hash`` is salted and is
not used).
"""

from __future__ import annotations

import re
import zlib

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

_PIECE = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]|\s+")
_LONG = 6  # words longer than this split into chunks of four characters

# The chat template wraps each message in a few tokens of its own, as real templates do.
BOS = ["<bos>"]
MESSAGE_OPEN = "<|turn|>"
MESSAGE_CLOSE = "<|end|>"
ASSISTANT_START = ["<|turn|>", "assistant", "\n"]


def pieces(text: str) -> list[str]:
    out: list[str] = []
    for match in _PIECE.finditer(text):
        piece = match.group(0)
        word = piece.lstrip(" ")
        if word.isalpha() and len(word) > _LONG:
            lead = piece[: len(piece) - len(word)]
            chunks = [word[i : i + 4] for i in range(0, len(word), 4)]
            chunks[0] = lead + chunks[0]
            out.extend(chunks)
        else:
            out.append(piece)
    return out


def piece_id(piece: str) -> int:
    return zlib.crc32(piece.encode("utf-8")) & 0x7FFFFFFF


def encode(text: str) -> list[int]:
    return [piece_id(p) for p in pieces(text)]


def _content_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # OpenAI content parts: keep the text parts, in order.
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def encode_chat(messages: list[dict], tools: list | None = None) -> list[int]:
    """Token ids of a chat prompt after the template: what the server would prefill."""
    ids = [piece_id(t) for t in BOS]
    if tools:
        ids += encode("Tools available: " + ", ".join(_tool_names(tools)))
    for message in messages:
        ids.append(piece_id(MESSAGE_OPEN))
        ids.append(piece_id(str(message.get("role", "user"))))
        ids.append(piece_id("\n"))
        ids += encode(_content_text(message.get("content")))
        ids.append(piece_id(MESSAGE_CLOSE))
    ids += [piece_id(t) for t in ASSISTANT_START]
    return ids


def _tool_names(tools: list) -> list[str]:
    names = []
    for tool in tools:
        fn = tool.get("function", {}) if isinstance(tool, dict) else {}
        names.append(str(fn.get("name", "tool")))
    return names
