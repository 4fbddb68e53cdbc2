"""The README stays a few screens long and every page it points to exists and is linked: a new
user's first hour. Every measured time keeps its date and command on one page,
docs/measurements.md, and every link to a section or row of a page finds it. The prose rules hold
(scripts/check_docs.py) and the reference pages match the code (scripts/reference.py)."""

from __future__ import annotations

import importlib.util
import re

from tests.conftest import ROOT


def script(name: str):
    """A module of scripts/, imported by path (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


README = (ROOT / "README.md").read_text(encoding="utf-8")
# pages another branch adds before it merges (none now: every page is in this tree)
MERGED_LATER: set[str] = set()


def links(text: str) -> set[str]:
    return {m.split("#", 1)[0] for m in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in m}


def test_the_readme_fits_on_a_few_screens_and_names_the_two_commands():
    assert len(README.splitlines()) <= 200
    for command in ("make demo", "make test", "harness sweep --base-url", "harness summarise --label"):
        assert command in README, command


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves():
    linked = links(README)
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, sorted(pages - linked)
    missing = {link for link in linked if not (ROOT / link).exists()} - MERGED_LATER
    assert not missing, sorted(missing)


def test_links_between_docs_pages_resolve():
    for page in [ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")]:
        for link in links(page.read_text(encoding="utf-8")):
            target = (page.parent / link).resolve()
            assert target.exists() or f"docs/{link}" in MERGED_LATER, f"{page.name}: {link}"


def anchors(text: str) -> set[str]:
    """The fragments a page answers to on GitHub: each heading's slug (its text without tags,
    lower case, punctuation dropped, spaces as hyphens, a repeat numbered) and each id="..."."""
    found = set(re.findall(r'id="([^"]+)"', text))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *$", re.sub(r"```.*?```", "", text, flags=re.S), re.M):
        slug = re.sub(r"[^\w\- ]", "", re.sub(r"<[^>]+>", "", heading).lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def test_every_link_to_a_section_or_row_finds_it():
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target, fragment in re.findall(r"\]\(([^)\s#]*)#([^)\s]+)\)", text):
            linked = (page.parent / target).resolve() if target else page
            if linked.suffix == ".md" and fragment not in anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{page.name}: {target}#{fragment}")
    assert not broken, broken


def test_every_measurement_keeps_its_date_and_command():
    lines = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8").splitlines()
    # A row longer than a table row may be is split: its later lines leave the first cell empty,
    # or, in a table whose rows carry anchors, carry no anchor of their own.
    rows: list[str] = []
    anchored = False
    for i, line in enumerate(lines):
        if not line.startswith("|") or line.startswith("|---"):
            anchored = False if not line.startswith("|") else anchored
            continue
        if i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            continue  # a header
        first = line.split("|")[1].strip()
        if rows and (not first or (anchored and 'id="' not in first)):
            rows[-1] += " " + line
        else:
            rows.append(line)
            anchored = anchored or 'id="' in first
    assert len(rows) > 60, len(rows)
    no_date = [row[:80] for row in rows if not re.search(r"\b20\d\d-\d\d-\d\d\b", row)]
    no_command = [row[:80] for row in rows if not re.search(r"`[^`]+`", row)]
    assert not no_date, no_date
    assert not no_command, no_command
    assert "## CI and make test" in lines, "the section the lead fills with new timings"


def test_every_command_and_old_spelling_is_in_the_commands_page():
    """Each ``harness`` subcommand has a section in docs/reference/commands.md: the set-up things as
    ``harness setup THING``, and their old top-level spellings named as such."""
    import argparse

    from harness.cli import build_parser

    page = (ROOT / "docs" / "reference" / "commands.md").read_text(encoding="utf-8")
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    (things,) = [a for a in sub.choices["setup"]._actions if isinstance(a, argparse._SubParsersAction)]
    old = {name for name, p in sub.choices.items() if p.get_default("renamed")}
    assert old == set(things.choices)
    missing = (
        [f"harness {name}" for name in sorted(set(sub.choices) - old) if f"### `harness {name}" not in page]
        + [
            f"harness setup {name}"
            for name in sorted(things.choices)
            if f"### `harness setup {name}" not in page
        ]
        + [f"harness {name} (old spelling)" for name in sorted(old) if f"| `harness {name}` |" not in page]
    )
    assert missing == [], missing


def test_the_reference_pages_match_the_code(monkeypatch):
    reference = script("reference")
    for name in reference.ENV_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    stale = [
        name
        for name, build in reference.PAGES.items()
        if (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8") != build().rstrip("\n") + "\n"
    ]
    assert not stale, f"stale: {stale}; run `make reference` and commit the pages"


def test_every_page_keeps_the_prose_rules():
    """Median sentence at most 20 words, table rows at most 300 characters, no timing outside
    docs/measurements.md, and each glossary word linked where it first appears."""
    assert script("check_docs").problems() == []


def test_the_glossary_link_goes_to_a_words_first_use():
    check = script("check_docs")
    terms = {"crowd": "crowd", "TTFT": "ttft"}
    text = "A `crowd` in code. The crowd grows; a crowd waits. TTFT rises. The [TTFT](x.md) links elsewhere."
    fixed = check.link_first_uses(text, terms, "glossary.md")
    assert fixed.count("](glossary.md#crowd)") == 1 and "The [crowd](glossary.md#crowd) grows" in fixed
    assert "[TTFT](glossary.md#ttft) rises" in fixed
    assert check.first_unlinked(fixed, terms) == []


def test_a_long_table_row_continues_on_rows_of_its_own():
    check = script("check_docs")
    long = (
        '| <a id="x"></a>a build | ' + "took a while on two cores, " * 12 + "| 2026-12-06 | load 3 | "
        "`make llama-cpu BUILD_JOBS=2 with a long command line that runs on and on and on` |"
    )
    rows = check.split_row(long)
    assert len(rows) > 1 and all(len(r) <= check.ROW_MAX for r in rows)
    assert all(check._cells(r)[0] == "" for r in rows[1:])  # later rows leave the name's cell empty
    words = " ".join(" ".join(check._cells(r)) for r in rows).replace("` `", " ").split()
    assert sorted(words) == sorted(" ".join(check._cells(long)).split())  # nothing lost, nothing added
