"""Every harness module named outside Python files resolves: the shell scripts, the Makefile, CI's
script, the Dockerfiles and the Compose files name modules as strings (``from harness.engines import
vllm_cpu``, ``python -m harness.cli``), which no import check and no rename script sees. A moved
module left one behind once, and CI then skipped the vLLM image's tests instead of failing."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [
        *ROOT.glob("scripts/*.sh"),
        ROOT / "Makefile",
        ROOT / ".ci" / "run",
        *ROOT.glob("images/**/Dockerfile*"),
        *ROOT.glob("compose/**/*.y*ml"),
        *ROOT.glob("shim/*.sh"),
    ]
)
FROM_IMPORT = re.compile(r"from (harness(?:\.\w+)*) import ([\w, ]+)")
MODULE = re.compile(r"(?:-m|import) (harness(?:\.\w+)*)")


def named(text: str) -> list[tuple[str, str | None]]:
    """Each (module, name) a text names; name None where it names the module alone."""
    found: list[tuple[str, str | None]] = []
    for module, names in FROM_IMPORT.findall(text):
        found += [(module, n.split()[0]) for n in names.split(",") if n.strip()]
    found += [(m, None) for m in MODULE.findall(text)]
    return found


def test_the_pattern_finds_both_spellings() -> None:
    text = "python -c 'from harness.engines import vllm_cpu as v'; $PY -m harness.cli.entry track"
    assert named(text) == [("harness.engines", "vllm_cpu"), ("harness.cli.entry", None)]


def test_the_files_are_there() -> None:
    assert ROOT / "scripts" / "build-images.sh" in FILES and ROOT / ".ci" / "run" in FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_a_file_names_imports(path: Path) -> None:
    missing = []
    for module, name in named(path.read_text(encoding="utf-8", errors="replace")):
        try:
            found = importlib.import_module(module)
        except ImportError as e:
            missing.append(f"{module} ({e})")
            continue
        if name and not hasattr(found, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{path.relative_to(ROOT)} names modules that do not import: {missing}"


PATH_NAMED = re.compile(r"harness/[a-z_]+(?:/[a-z_]+)*\.py")
# Where a path is named as today's: code, scripts, tests and the docs (measurements.md is history,
# with the paths of its day).
TEXTS = [
    *ROOT.glob("harness/**/*.py"),
    *ROOT.glob("scripts/*"),
    *ROOT.glob("tests/**/*.py"),
    *ROOT.glob("locustfiles/*.py"),
    *(p for p in ROOT.glob("docs/**/*.md") if p.name != "measurements.md"),
    ROOT / "README.md",
    ROOT / "Makefile",
    ROOT / ".ci" / "run",
]


def test_every_module_path_named_in_code_and_docs_is_there() -> None:
    gone = {
        f"{path.relative_to(ROOT)}: {named_path}"
        for path in TEXTS
        if path.is_file()
        for named_path in PATH_NAMED.findall(path.read_text(encoding="utf-8", errors="replace"))
        if not (ROOT / named_path).is_file()
    }
    assert not gone, f"paths named that are not in the tree: {sorted(gone)}"
