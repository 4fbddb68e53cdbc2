"""Markdown pieces for the run report, and its HTML twin: one self-contained file.

``table`` writes a real Markdown table (never inside a code fence), ``absent`` the one line that
stands for a part of the report that has nothing to show and says why. ``to_html`` renders the
same Markdown with markdown-it-py and embeds every local image as a base64 PNG, so the HTML file
can be opened anywhere or attached to a message without its ``charts/`` folder."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from markdown_it import MarkdownIt
from tabulate import tabulate

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #1b1b1b; }
table { border-collapse: collapse; display: block; overflow-x: auto; font-size: 0.85rem;
        margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #c8c8c8; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
code { background: #f4f4f4; padding: 0 0.2rem; font-size: 0.85em; word-break: break-all; }
img { max-width: 100%; height: auto; border: 1px solid #e0e0e0; }
h1, h2, h3 { line-height: 1.2; }
"""


def cell(value) -> str:
    """A value as one Markdown table cell: text, ``—`` for nothing, pipes and newlines escaped."""
    text = "—" if value is None or value == "" else str(value)
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def table(headers: list[str], rows: list[list]) -> str:
    """A GitHub-flavoured Markdown table; cells are used as given (numbers already formatted)."""
    return tabulate(
        [[cell(v) for v in row] for row in rows],
        headers=[cell(h) for h in headers],
        tablefmt="github",
        disable_numparse=True,
    )


def absent(what: str, why: str) -> list[str]:
    """The one line standing for an empty part of the report, with its reason."""
    return [f"_{what}: {why}._", ""]


def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _embed(src: str, base: Path) -> str | None:
    """A local PNG under ``base`` as a data URI; None for anything else or a missing file."""
    if "://" in src or src.startswith("data:"):
        return None
    path = (base / src).resolve()
    if path.suffix.lower() != ".png" or not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def to_html(markdown_text: str, base: Path, title: str) -> str:
    """The report as one HTML page, the images under ``base`` embedded; an image whose file is
    missing keeps its alt text and says the file was not found."""
    md = _renderer()
    tokens = md.parse(markdown_text)
    for token in tokens:
        for child in token.children or []:
            if child.type != "image":
                continue
            src = str(child.attrGet("src") or "")
            data = _embed(src, base)
            if data is None and "://" not in src:
                child.attrSet("alt", f"{child.content} (chart file {src} was not found)")
            if data is not None:
                child.attrSet("src", data)
    body = md.renderer.render(tokens, md.options, {})
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"{body}</body>\n</html>\n"
    )
