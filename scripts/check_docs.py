#!/usr/bin/env python3
"""The prose rules of README.md, CONTRIBUTING.md and docs/, checked (make lint, .ci/run):

- the median prose sentence of each page is at most 20 words, counted as
  shared/tools/sentences.py counts it (code blocks, tables and headings left out);
- no table row is longer than 300 characters;
- no timing "N s here" outside docs/measurements.md (a page links the row there instead);
- each word of the glossary is linked to docs/glossary.md where it first appears on a page.

    .venv/bin/python scripts/check_docs.py          # one line per problem, exit 1 if any
    .venv/bin/python scripts/check_docs.py --fix    # link each word's first use, split long table rows
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
# Pages whose glossary links are left to their owner, each with why (the other rules hold).
NO_GLOSSARY_LINKS: dict[str, str] = {}
TIMING = re.compile(
    r"\b\d[\d.,]*(?:\s*(?:to|-)\s*\d[\d.,]*)?\s*(?:s|ms|min|minutes?|seconds?|hours?|h)\b"
    r"(?:\s+\d[\d.,]*\s*s\b)?\s+here\b"
)


def pages(root: Path = ROOT) -> list[Path]:
    found = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in found if p.exists()]


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


ATOM = re.compile(r"<a [^>]*></a>\S*|\[[^\]]*\]\([^)]*\)\S*|`[^`]*`\S*|\S+")


def _cells(line: str) -> list[str]:
    """A table row's cells; a `|` inside inline code or escaped stays in its cell."""
    parts, cur, code, i, inner = [], "", False, 0, line.strip()[1:-1]
    while i < len(inner):
        ch = inner[i]
        if ch == "\\" and i + 1 < len(inner):
            cur += inner[i : i + 2]
            i += 2
            continue
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    return [*parts, cur.strip()]


def _atoms(text: str, width: int):
    """Words, links and code spans; a code span wider than ``width`` is cut at its spaces."""
    for atom in ATOM.findall(text):
        m = re.match(r"`([^`]*)`(\S*)$", atom)
        if m and len(atom) > width and " " in m.group(1):
            cur = ""
            for word in m.group(1).split(" "):
                if cur and len(cur) + len(word) + 3 > width:
                    yield f"`{cur}`"
                    cur = word
                else:
                    cur = f"{cur} {word}" if cur else word
            yield f"`{cur}`{m.group(2)}"
        else:
            yield atom


def _wrap(text: str, width: int) -> list[str]:
    out, cur = [], ""
    for atom in _atoms(text, width):
        if cur and len(cur) + 1 + len(atom) > width:
            out.append(cur)
            cur = atom
        else:
            cur = f"{cur} {atom}" if cur else atom
    return [*out, cur] if cur else out or [""]


def split_row(line: str, limit: int = ROW_MAX - 5) -> list[str]:
    """A table row too long to read, as rows that continue it: the later rows leave the cells
    that are done empty. A short first cell (a measurement's name) stays whole."""
    cells = _cells(line)
    widths = [len(c) for c in cells]
    while sum(widths) + 3 * len(cells) + 1 > limit:
        widest = max(widths)
        widths = [w - 5 if w == widest else w for w in widths]
    if len(cells[0]) <= 60 and widths[0] < len(cells[0]):
        for _ in range(len(cells[0]) - widths[0]):
            j = max(range(1, len(widths)), key=lambda k: widths[k])
            widths[j] -= 1
        widths[0] = len(cells[0])
    wrapped = [_wrap(c, w) for c, w in zip(cells, widths, strict=True)]
    depth = max(len(w) for w in wrapped)
    return ["| " + " | ".join(w[n] if n < len(w) else "" for w in wrapped) + " |" for n in range(depth)]


def split_long_rows(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        lines.extend(split_row(line) if line.startswith("|") and len(line) > ROW_MAX else [line])
    return "\n".join(lines)


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
        if name not in ("docs/glossary.md", *NO_GLOSSARY_LINKS) and not name.startswith("docs/reference/"):
            for term, start, _ in first_unlinked(text, terms):
                line = text.count("\n", 0, start) + 1
                out.append(f"{name}:{line}: '{term}' first appears without a link to the glossary")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--fix", action="store_true", help="link each word's first use to the glossary; split long table rows"
    )
    args = parser.parse_args(argv)
    if args.fix:
        terms = glossary_terms()
        for page in pages():
            name = str(page.relative_to(ROOT))
            if name in ("docs/glossary.md", *NO_GLOSSARY_LINKS) or name.startswith("docs/reference/"):
                continue
            text = page.read_text(encoding="utf-8")
            fixed = split_long_rows(link_first_uses(text, terms, glossary_path(page)))
            if fixed != text:
                page.write_text(fixed, encoding="utf-8")
    found = problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
