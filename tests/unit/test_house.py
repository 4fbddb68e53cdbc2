"""The house rules of docs/architecture.md, checked on the source: a warning for a module of
``harness/`` past 600 lines, no import circle between the modules of ``harness/run/``, none at all
at import time anywhere in the package, the layers' import rules, and purity per module: a module
marked ``PURE = True`` touches no network, file, clock, process or Locust. Every import counts: at
the top, inside a function or under ``TYPE_CHECKING``, absolute or relative."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

WARN_LINES = 600  # past this a module is likely two concepts: named in a warning, not split by size
MAX_LINES = 1000  # a ceiling far above, so a module cannot grow unseen while its warning scrolls by
# The floors of the house, bottom up (docs/architecture.md, "Packages"): a package imports only the
# floors below its own. The modules at the top of harness/ are the ground floor; they import each other.
FLOORS = (
    ("", "errors", "paths", "signals", "safe_text", "words", "lab", "bounds", "schema_facts"),
    ("machine",),
    ("records",),
    ("measure",),
    ("workloads",),
    ("endpoints",),
    ("energy", "exporter"),
    ("sizing",),
    ("engines",),
    ("options",),
    ("load", "report", "practice", "export"),
    ("run", "compare"),
    ("cli", "__main__"),
)
FLOOR = {package: n for n, packages in enumerate(FLOORS) for package in packages}
# energy's pure modules: numbers and records in, figures and lines out. They import only core, errors
# and each other, and they are all of energy that the report may import (it reads no device).
ENERGY_PURE = frozenset(
    ["harness.energy"]  # the package's face: the words --telemetry takes
    + [
        f"harness.energy.{m}"
        for m in ("arithmetic", "readings", "record_part", "tables", "engine_tables", "report_section")
    ]
)
# The one import across the run/report line that is left: the plan's report step writes the report
# in the runner's own process (there is no `harness report` command to run it as a step).
RUN_TO_REPORT = {("harness.run.runner", "harness.report.run_report")}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module (harness.run.plans)
    target: str  # the harness module it imports (harness.run.rehearsal)
    line: int
    when: str  # "top", "function" or "type-checking"


def modules(root: Path = ROOT) -> dict[str, Path]:
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
    """The package of the harness a module belongs to (``run`` for harness.engines.launchers.host)."""
    return module.split(".")[1] if module.count(".") else ""


def broken_rules(edges: tuple[Import, ...]) -> list[str]:
    """Each import that breaks a layer rule, in words."""
    found = []
    for e in edges:
        source, target = layer(e.source), layer(e.target)
        if e.source in ENERGY_PURE and target == "energy" and e.target not in ENERGY_PURE:
            found.append(
                f"{e.source} imports {e.target} (line {e.line}): energy's pure parts import no outside world"
            )
        if source == target or (FLOOR.get(source) == FLOOR.get(target) == 0):
            continue
        if source not in FLOOR or target not in FLOOR:
            unknown = source if source not in FLOOR else target
            found.append(f"{e.source} imports {e.target} (line {e.line}): put {unknown} on a floor (FLOORS)")
        elif (source, target) == ("__main__", "cli"):
            continue  # python -m harness is the command line
        elif FLOOR[target] >= FLOOR[source]:
            found.append(
                f"{e.source} imports {e.target} (line {e.line}): {source} (floor {FLOOR[source]}) imports"
                f" only the floors below it, and {target} is on floor {FLOOR[target]}"
            )
        if (source, target) == ("run", "report") and (e.source, e.target) not in RUN_TO_REPORT:
            found.append(f"{e.source} imports {e.target} (line {e.line}): run does not import report")
        if (source, target) == ("report", "energy") and e.target not in ENERGY_PURE:
            found.append(
                f"{e.source} imports {e.target} (line {e.line}): report imports only energy's pure parts"
            )
    return found


# What a module marked pure may not import, nor any module below it, by what it reaches: the
# network, files and the terminal, the clock, processes, and Locust with what it patches or drives.
# Randomness (random, secrets) is allowed.
OUTSIDE = frozenset(
    {"socket", "http", "urllib.request", "requests", "ssl", "select", "selectors", "huggingface_hub"}
    | {"os", "pathlib", "shutil", "tempfile", "glob", "io", "sys", "fcntl", "ctypes", "gguf", "rich"}
    | {"time", "platform", "resource", "signal", "threading", "asyncio", "multiprocessing", "subprocess"}
    | {"locust", "gevent", "uvloop", "psutil", "docker", "pynvml", "flask", "matplotlib", "prometheus_client"}
    | {"importlib.resources", "pkgutil.get_data"}
)
# Attributes that read or write a file, or read the wall clock (``read_bytes`` only as Path's, with
# no argument: engine_compare.read_bytes(fmt) is arithmetic).
OUTSIDE_ATTRIBUTES = frozenset(
    {"read_text", "write_text", "write_bytes", "now", "utcnow", "today", "get_data"}
)
# The one pure module that reads package data: the lab profile, the same bytes on every run like
# the code beside it (harness/data/lab.yaml and its schema), so pure checks can quote the course.
PACKAGE_DATA = {"harness.lab": "uses .get_data"}


def marked_pure(tree: ast.Module) -> bool:
    """Whether a module says ``PURE = True`` at its top level (read without importing it)."""
    return any(
        isinstance(n, ast.Assign)
        and any(getattr(t, "id", "") == "PURE" for t in n.targets)
        and isinstance(n.value, ast.Constant)
        and n.value.value is True
        for n in tree.body
    )


def outside_uses(tree: ast.Module) -> list[str]:
    """What a module touches of the outside world, in words with the line: an import from
    ``OUTSIDE``, a call of ``open()``, a file read or written, the clock read."""
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            hits = [".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in OUTSIDE]
            found += [f"imports {hits[0]} (line {node.lineno})"] if hits else []
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "open":
            found.append(f"calls open() (line {node.lineno})")
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "read_bytes" and not node.args:
            found.append(f"uses .read_bytes (line {node.lineno})")
        if isinstance(node, ast.Attribute) and node.attr in OUTSIDE_ATTRIBUTES:
            found.append(f"uses .{node.attr} (line {node.lineno})")
    return list(dict.fromkeys(found))


def impure(root: Path = ROOT) -> list[str]:
    """Each way a module marked pure is not, in words: what it touches, or a harness module it
    imports that is not marked pure itself."""
    known = modules(root)
    trees = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in known.items()}
    pure = {name for name, tree in trees.items() if marked_pure(tree)}
    found = [
        f"{name} is marked pure but {use}"
        for name in sorted(pure)
        for use in outside_uses(trees[name])
        if not (name in PACKAGE_DATA and use.startswith(PACKAGE_DATA[name]))
    ]
    for e in imports(root):
        if e.source in pure and e.target not in pure:
            found.append(f"{e.source} is marked pure but imports {e.target} (line {e.line}), which is not")
    return found


def test_modules_past_600_lines_are_named_and_none_is_past_1000():
    """A long module is a question (is it still one concept?), asked as a warning; the ceiling
    stops a module growing without end while its warning scrolls by."""
    sizes = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in modules().values()
    }
    for path, n in sorted(sizes.items()):
        if n > WARN_LINES:
            warnings.warn(f"{path} has {n} lines (over {WARN_LINES}): is it still one concept?", stacklevel=1)
    over = {path: n for path, n in sizes.items() if n > MAX_LINES}
    assert over == {}, f"split these where a concept divides them (at most {MAX_LINES} lines): {over}"


def test_a_module_marked_pure_touches_no_outside_world():
    found = impure()
    assert not found, "modules marked PURE = True that are not:\n" + "\n".join(found)


# Packages that are pure through and through: a module added there is checked like the rest.
PURE_PACKAGES = ("measure",)


def test_every_module_of_the_pure_packages_is_marked_pure():
    """measure/ computes from samples and records only: a module added there is checked, not by luck."""
    unmarked = [
        name
        for name, path in modules().items()
        if layer(name) in PURE_PACKAGES and not marked_pure(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert unmarked == [], f"mark these PURE = True (or move them out of {PURE_PACKAGES}): {unmarked}"


def test_no_two_packages_import_each_other():
    """Each pair of packages has one direction at most, so the house draws with no upward arrow."""
    pairs = {(layer(e.source), layer(e.target)) for e in imports() if layer(e.source) != layer(e.target)}
    both = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs})
    assert both == [], f"these packages import each other: {both}"


def test_no_import_circle_between_the_modules_of_run():
    inside = [
        e for e in imports() if e.source.startswith("harness.run.") and e.target.startswith("harness.run.")
    ]
    found = cycle(inside)
    assert found is None, f"import circle in harness/run: {shown(found)}"


def test_no_import_circle_anywhere_at_import_time():
    """Outside run, a circle only for the type checker is left alone (practice.app and
    practice.sinks)."""
    found = cycle([e for e in imports() if e.when != "type-checking"])
    assert found is None, f"import circle: {shown(found)}"


def test_report_never_imports_run():
    found = [e for e in imports() if layer(e.source) == "report" and layer(e.target) == "run"]
    assert found == [], "report imports run: " + "; ".join(shown([e]) for e in found)


def test_the_layers_import_only_downwards():
    broken = broken_rules(imports())
    assert not broken, "imports against docs/architecture.md's layers:\n" + "\n".join(broken)


def test_the_code_cites_no_tracker_issue():
    """A comment, message, page or test says what it means; which issue asked for it is the
    commit's history."""
    cited = re.compile(r"\b[Ii]ssue [0-9]+")
    folders = ("harness", "scripts", "locustfiles", "docs", "tests", "images", "compose", ".ci")
    texts = (".py", ".json", ".yaml", ".sh", ".js", ".html", ".md", ".txt", ".env", ".toml")
    paths = [ROOT / name for name in ("README.md", "Makefile", "pyproject.toml")] + [
        path
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and (path.suffix in texts or path.name in ("Dockerfile", "run"))
    ]
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in paths
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if cited.search(line)
    ]
    assert found == [], "say what these mean instead of citing an issue: " + ", ".join(found)


# The course's own numbering: a lab task, a part or lab page, a seed page, a track by its letter.
COURSE_WORDS = re.compile(
    r"\bTask [0-9]+|\bpart-[0-9]+|\bPart [0-9]+|\blab [0-9]+|\bseed [0-9]+|\bTrack [SNXM]\b"
)


def test_the_code_names_what_it_computes_not_the_course():
    """Modules, functions and messages say what they compute; where they quote the course (a lab's
    id, a task's title, a threshold, a remedy) they read it from the lab profile, data/lab.yaml."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder, pattern in (("harness", "*.py"), ("harness/schemas", "*.json"), ("scripts", "*.py"))
        for path in sorted((ROOT / folder).rglob(pattern))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COURSE_WORDS.search(line)
    ]
    assert found == [], "say what these compute, or read the course from data/lab.yaml: " + ", ".join(found)


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
        (
            {"measure/a.py": "import harness.load.x\n", "load/x.py": ""},
            "measure.a imports harness.load.x (line 1): measure (floor",
        ),
        (
            {"report/a.py": "from harness.run.b import c\n", "run/b.py": ""},
            "report.a imports harness.run.b (line 1): report (floor",
        ),
        (
            {"sizing/a.py": "from harness.load import b\n", "load/b.py": ""},
            "sizing.a imports harness.load.b (line 1): sizing (floor",
        ),
        (
            {"engines/a.py": "import harness.cli.b\n", "cli/b.py": ""},
            "engines.a imports harness.cli.b (line 1): engines (floor",
        ),
        (
            {"load/a.py": "from harness.report import b\n", "report/b.py": ""},
            "imports only the floors below it, and report is on floor",
        ),
        ({"kit/a.py": "from harness.measure import b\n", "measure/b.py": ""}, "put kit on a floor"),
        (
            {"measure/a.py": '"""A."""\n\nimport time\n\nPURE = True\n'},
            "harness.measure.a is marked pure but imports time",
        ),
        (
            {"measure/a.py": "PURE = True\nfrom harness.measure import b\n", "measure/b.py": "x = 1\n"},
            "harness.measure.a is marked pure but imports harness.measure.b (line 2), which is not",
        ),
        ({"report/a.py": "PURE = True\ndef f(p):\n    return p.read_text()\n"}, "uses .read_text (line 3)"),
        ({"report/a.py": "from datetime import datetime\nPURE = True\nx = datetime.now()\n"}, "uses .now"),
        ({"report/a.py": "import pkgutil\nPURE = True\nx = pkgutil.get_data('a', 'b')\n"}, "uses .get_data"),
        (
            {"energy/tables.py": "from harness.energy import meter\n", "energy/meter.py": ""},
            "import no outside world",
        ),
        (
            {"energy/meter.py": "import harness.load.users\n", "load/users.py": ""},
            "energy.meter imports harness.load.users (line 1): energy (floor",
        ),
        (
            {"report/a.py": "from harness.energy.sampler import x\n", "energy/sampler.py": ""},
            "only energy's pure",
        ),
        (
            {"options/a.py": "def f():\n    from harness.load import b\n", "load/b.py": ""},
            "options.a imports harness.load.b (line 2): options (floor",
        ),
    ],
)
def test_the_checks_catch_what_they_are_for(tmp_path, files, broken):
    """The checks themselves, on a made-up package: a circle through a function-level and a
    relative import is found with its path; a layer rule broken is named; a module marked pure
    that imports the clock, imports an unmarked module, reads a file or reads the time is named."""
    for name, text in {"__init__.py": "", "run/__init__.py": "", **files}.items():
        path = tmp_path / "harness" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(text)
    edges = imports(tmp_path)
    found = cycle(edges)
    assert broken in (shown(found) if found else "; ".join(broken_rules(edges) + impure(tmp_path)))


def test_the_drawing_in_docs_architecture_is_the_source_today():
    """docs/architecture.md's house and module list are printed by scripts/draw_house.py; a
    package or import that moved without `make house` shows here."""
    spec = importlib.util.spec_from_file_location("draw_house", ROOT / "scripts" / "draw_house.py")
    assert spec is not None and spec.loader is not None
    draw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draw)
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert page == draw.filled(page), "docs/architecture.md's drawing is stale: run `make house`"
