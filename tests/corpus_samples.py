"""The corpus of real outputs (tests/corpus): each sample is a YAML header (its public source, what
it is, which reader reads it, the facts read by eye) between two ``---`` lines, then the body as
posted. This module finds and splits them; tests/unit/test_corpus.py runs the readers on them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Sample:
    path: Path
    header: dict
    body: str

    @property
    def reader(self) -> str:
        return str(self.header["reader"])

    @property
    def expect(self) -> dict:
        return self.header.get("expect") or {}

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"


def split(text: str) -> tuple[dict, str]:
    """The header and the body of one sample file (the body starts on the line after the second ``---``)."""
    first, sep, rest = text.partition("---\n")
    if first.strip() or not sep:
        raise ValueError("a corpus sample starts with a '---' line")
    head, sep, body = rest.partition("\n---\n")
    if not sep:
        raise ValueError("a corpus sample's header ends with a '---' line")
    return yaml.safe_load(head), body


def samples(reader: str | None = None) -> list[Sample]:
    """Every sample in the corpus, or those of one reader."""
    found = []
    for path in sorted(CORPUS.glob("*/*")):
        if path.name.endswith(".md"):
            continue
        header, body = split(path.read_text(encoding="utf-8"))
        sample = Sample(path, header, body)
        if reader is None or sample.reader == reader:
            found.append(sample)
    return found
