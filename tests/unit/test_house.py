"""The house rules of docs/architecture.md, checked on the source (issue 36, item 4): no module of
``harness/`` over 400 lines, no import circle between the modules of ``harness/run/``, none at all
at import time anywhere in the package, and the layers' import rules. Every import counts: at the
top, inside a function or under ``TYPE_CHECKING``, absolute or relative."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

MAX_LINES = 400
# Which packages of the harness a layer must never import (docs/architecture.md, "Packages").
NEVER = {
    "io": ("load", "run", "report", "cli", "practice"),
    "load": ("run", "report", "cli", "practice"),
    "run": ("load", "cli", "practice"),
    "report": ("run", "load", "cli", "practice"),
    "practice": ("load", "run", "report", "cli"),
    "sizing": ("load", "report", "cli", "practice"),
    "engines": ("load", "report", "cli", "practice"),
}
# The one import across the run/report line that is left: the plan's report step writes the report
# in the runner's own process (there is no `harness report` command to run it as a step).
RUN_TO_REPORT = {("harness.run.runner", "harness.report.run_report")}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module (harness.run.plans)
    target: str  # the harness module it imports (harness.run.rehearsal)
    line: int
    when: str  # "top", "function" or "type-checking"


def modules(root: Path) -> dict[str, Path]:
    """Every module under ``root/harness`` by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((root / "harness").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _statements(node: ast.AST, when: str = "top"):
    """Each import statement under ``node`` with where it stands: inside a function, in the body of
    ``if TYPE_CHECKING:`` (whatever encloses it), or at the top."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, when
        elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for inner in child.body:
                yield from _statements(ast.Module([inner], []), "type-checking")
            for inner in child.orelse:
                yield from _statements(ast.Module([inner], []), when)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _statements(child, "function" if when == "top" else when)
        else:
            yield from _statements(child, when)


def _targets(node: ast.Import | ast.ImportFrom, package: str, known: dict[str, Path]) -> list[str]:
    """The harness modules one import statement loads (``from a import b`` is a.b where b is a module)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the importing module's package, up level - 1 packages
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parent + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    found = []
    for name in names:
        while name and name not in known:  # import harness.run.plans.x: the module is harness.run.plans
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


@functools.lru_cache(maxsize=None)
def imports(root: Path = ROOT) -> tuple[Import, ...]:
    """Every import of a harness module by a harness module, with where it stands."""
    known = modules(root)
    out = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, when in _statements(tree):
            for target in _targets(node, package, known):
                if target != name:
                    out.append(Import(name, target, node.lineno, when))
    return tuple(out)


def cycle(edges: list[Import] | tuple[Import, ...]) -> list[Import] | None:
    """One import circle among ``edges`` (the imports in order, back to the first module), or None."""
    graph: dict[str, list[Import]] = {}
    for e in edges:
        graph.setdefault(e.source, []).append(e)
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[Import] = []

    def visit(module: str) -> list[Import] | None:
        state[module] = 1
        for e in graph.get(module, []):
            if state.get(e.target) == 1:  # back to a module on the path: the circle is from there
                return path[next(i for i, p in enumerate(path) if p.source == e.target) :] + [e]
            if e.target not in state:
                path.append(e)
                found = visit(e.target)
                if found:
                    return found
                path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def shown(chain: list[Import]) -> str:
    return " -> ".join(
        [chain[0].source] + [f"{e.target} (line {e.line} of {e.source}, {e.when})" for e in chain]
    )


def layer(module: str) -> str:
    """The package of the harness a module belongs to (``run`` for harness.run.launchers.host)."""
    return module.split(".")[1] if module.count(".") else ""


def broken_rules(edges: tuple[Import, ...]) -> list[str]:
    """Each import that breaks a layer rule, in words."""
    found = []
    for e in edges:
        source, target = layer(e.source), layer(e.target)
        if source == "core" and target not in ("core", "errors"):
            found.append(f"{e.source} imports {e.target} (line {e.line}): core imports only core and errors")
        if target in NEVER.get(source, ()):
            found.append(f"{e.source} imports {e.target} (line {e.line}): {source} never imports {target}")
        if target == "cli" and source not in ("cli", "entry"):
            found.append(f"{e.source} imports {e.target} (line {e.line}): only the entry point imports cli")
        if (source, target) == ("run", "report") and (e.source, e.target) not in RUN_TO_REPORT:
            found.append(f"{e.source} imports {e.target} (line {e.line}): run does not import report")
    return found


def test_no_module_of_the_harness_is_over_400_lines():
    over = {
        str(p.relative_to(ROOT)): n
        for p in modules(ROOT).values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert over == {}, f"split these where a concept divides them (at most {MAX_LINES} lines): {over}"


def test_no_import_circle_between_the_modules_of_run():
    inside = [
        e for e in imports() if e.source.startswith("harness.run.") and e.target.startswith("harness.run.")
    ]
    found = cycle(inside)
    assert found is None, f"import circle in harness/run: {shown(found)}"


def test_no_import_circle_anywhere_at_import_time():
    """Outside run, a circle only for the type checker is left alone (core.levels and
    core.workload_stats, practice.app and practice.sinks)."""
    found = cycle([e for e in imports() if e.when != "type-checking"])
    assert found is None, f"import circle: {shown(found)}"


def test_report_never_imports_run():
    found = [e for e in imports() if layer(e.source) == "report" and layer(e.target) == "run"]
    assert found == [], "report imports run: " + "; ".join(shown([e]) for e in found)


def test_the_layers_import_only_downwards():
    broken = broken_rules(imports())
    assert not broken, "imports against docs/architecture.md's layers:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    "files, broken",
    [
        (
            {
                "run/a.py": "from harness.run import b\n",
                "run/b.py": "def f():\n    from harness.run.c import x\n",
                "run/c.py": "from . import a\n",
            },
            "harness.run.a -> harness.run.b (line 1 of harness.run.a, top) -> harness.run.c (line 2 of "
            "harness.run.b, function) -> harness.run.a (line 1 of harness.run.c, top)",
        ),
        ({"core/a.py": "import harness.io.x\n", "io/x.py": ""}, "core imports only core and errors"),
        ({"report/a.py": "from harness.run.b import c\n", "run/b.py": ""}, "report never imports run"),
        ({"sizing/a.py": "from harness.load import b\n", "load/b.py": ""}, "sizing never imports load"),
        ({"engines/a.py": "import harness.cli.b\n", "cli/b.py": ""}, "engines never imports cli"),
        ({"io/a.py": "from harness.cli.b import c\n", "cli/b.py": ""}, "only the entry point imports cli"),
    ],
)
def test_the_checks_catch_what_they_are_for(tmp_path, files, broken):
    """The checks themselves, on a made-up package: a circle through a function-level and a
    relative import is found with its path; a layer rule broken is named."""
    for name, text in {"__init__.py": "", "run/__init__.py": "", **files}.items():
        path = tmp_path / "harness" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(text)
    edges = imports(tmp_path)
    found = cycle(edges)
    assert broken in (shown(found) if found else "; ".join(broken_rules(edges)))
