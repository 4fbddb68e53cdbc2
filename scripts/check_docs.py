#!/usr/bin/env python3
"""The prose rules of README.md, CONTRIBUTING.md and docs/, checked (make lint, .ci/run):

- the median prose sentence of each page is at most 20 words, counted as
  shared/tools/sentences.py counts it (code blocks, tables and headings left out);
- no table row is longer than 300 characters;
- no timing "N s here" outside docs/measurements.md (a page links the row there instead);
- each word of the glossary is linked to docs/glossary.md where it first appears on a page.

    .venv/bin/python scripts/check_docs.py          # one line per problem, exit 1 if any
    .venv/bin/python scripts/check_docs.py --fix    # link each word's first use to the glossary
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEDIAN_MAX = 20
ROW_MAX = 300
# Pages the rules leave alone for now, each with why.
EXEMPT = {"docs/architecture.md": "the lead redraws it after the package move"}
TIMING = re.compile(
    r"\b\d[\d.,]*(?:\s*(?:to|-)\s*\d[\d.,]*)?\s*(?:s|ms|min|minutes?|seconds?|hours?|h)\b"
    r"(?:\s+\d[\d.,]*\s*s\b)?\s+here\b"
)


def pages(root: Path = ROOT) -> list[Path]:
    found = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in found if p.exists() and str(p.relative_to(root)) not in EXEMPT]


def sentences(text: str) -> list[str]:
    """Prose sentences, exactly as shared/tools/sentences.py splits them."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("|", "#", "<", "    ")):
            continue
        s = re.sub(r"^[-*+] |^\d+\. ", "", s)
        s = re.sub(r"`[^`]*`", "X", s)
        s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
        out.append(s)
    prose = " ".join(out)
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(`\"])", prose)
    return [p for p in parts if len(p.split()) >= 3]


def median_words(text: str) -> float | None:
    counts = [len(s.split()) for s in sentences(text)]
    return statistics.median(counts) if counts else None


def glossary_terms(root: Path = ROOT) -> dict[str, str]:
    """Each glossary word (its `### ` heading) and its anchor."""
    text = (root / "docs" / "glossary.md").read_text(encoding="utf-8")
    terms = {}
    for heading in re.findall(r"^### +(.+?) *$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        terms[heading] = slug
    return terms


def _pattern(term: str) -> re.Pattern:
    words = r"\s+".join(re.escape(w) for w in term.split())
    flags = 0 if term.isupper() else re.I
    return re.compile(rf"(?<![\w/.-]){words}(?:s|es)?(?![\w/-]|\.\w)", flags)


def _masked(text: str) -> list[tuple[int, int]]:
    """Spans where a word is not prose: code, headings, HTML, link targets."""
    spans = [m.span() for m in re.finditer(r"```.*?```|<!--.*?-->", text, re.S)]
    for pattern in (r"`[^`]*`", r"^#.*$", r"<[^>\n]+>", r"\]\([^)\s]*\)", r"https?://\S+"):
        spans += [m.span() for m in re.finditer(pattern, text, re.M)]
    return spans


def _links(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(1), m.end(1), m.group(2)) for m in re.finditer(r"\[([^\]]*)\]\(([^)\s]*)\)", text)]


def first_unlinked(text: str, terms: dict[str, str]) -> list[tuple[str, int, int]]:
    """(term, start, end) of each term whose first prose use on the page is not a glossary link."""
    masked = _masked(text)
    links = _links(text)
    found = []
    for term in terms:
        for m in _pattern(term).finditer(text):
            if any(a <= m.start() < b for a, b in masked):
                continue
            inside = [url for a, b, url in links if a <= m.start() < b]
            if inside:
                if "glossary.md" in inside[0]:
                    break  # its first use is linked
                continue  # inside another link's text: the next use is the first that can be linked
            found.append((term, m.start(), m.end()))
            break
    return found


def link_first_uses(text: str, terms: dict[str, str], to: str) -> str:
    """``text`` with each term's first unlinked use made a link to the glossary at ``to``."""
    for term, start, end in sorted(first_unlinked(text, terms), key=lambda t: -t[1]):
        text = f"{text[:start]}[{text[start:end]}]({to}#{terms[term]}){text[end:]}"
    return text


def glossary_path(page: Path, root: Path = ROOT) -> str:
    """The glossary's address as a link from ``page``."""
    return os.path.relpath(root / "docs" / "glossary.md", page.parent)


def problems(root: Path = ROOT) -> list[str]:
    out = []
    terms = glossary_terms(root)
    for page in pages(root):
        name = str(page.relative_to(root))
        text = page.read_text(encoding="utf-8")
        median = median_words(text)
        if median is not None and median > MEDIAN_MAX:
            out.append(f"{name}: median sentence {median:.0f} words (at most {MEDIAN_MAX})")
        for n, line in enumerate(text.splitlines(), 1):
            if line.startswith("|") and len(line) > ROW_MAX:
                out.append(f"{name}:{n}: a table row of {len(line)} characters (at most {ROW_MAX})")
        if name != "docs/measurements.md":
            for m in TIMING.finditer(re.sub(r"```.*?```", "", text, flags=re.S)):
                out.append(f"{name}: a timing outside docs/measurements.md: {m.group(0)!r}")
        if name != "docs/glossary.md" and not name.startswith("docs/reference/"):
            for term, start, _ in first_unlinked(text, terms):
                line = text.count("\n", 0, start) + 1
                out.append(f"{name}:{line}: '{term}' first appears without a link to the glossary")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="link each word's first use to the glossary")
    args = parser.parse_args(argv)
    if args.fix:
        terms = glossary_terms()
        for page in pages():
            name = str(page.relative_to(ROOT))
            if name == "docs/glossary.md" or name.startswith("docs/reference/"):
                continue
            text = page.read_text(encoding="utf-8")
            fixed = link_first_uses(text, terms, glossary_path(page))
            if fixed != text:
                page.write_text(fixed, encoding="utf-8")
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
