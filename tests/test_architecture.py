"""The floors of the house (docs/architecture.md): the engine imports nothing above it; the
workbench's floors import only floors below them; policies/ and scenarios/ import only the
engine from memsim; no module of memsim/, benchmarks/, policies/ or scenarios/ is part of an
import cycle; no module of memsim/ imports another's private name; and no policy is named in
engine or workbench code (policies arrive through the registry)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memsim.engine import registry

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "memsim" / "engine"
WORKBENCH = ROOT / "memsim" / "workbench"
FORBIDDEN = ("policies", "scenarios", "memsim.workbench")
# The workbench's floors, lowest first: a module imports only from its own floor or below.
FLOORS = ("runs", "stats", "studies", "present", "cli")
# Packages whose modules take part in the cycle check.
CYCLE_PACKAGES = ("memsim", "benchmarks", "policies", "scenarios")
# Packages that stand on the engine alone.
ON_ENGINE = ("policies", "scenarios")


def _sources(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module an import statement names, anywhere in the file (inside functions too);
    relative imports resolved against the file's package."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join(base + ((node.module,) if node.module else ()))
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            out.append((node.lineno, str(node.args[0].value)))
    return out


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _annotation_only_lines(path: Path) -> set[int]:
    """Lines of the file's ``if TYPE_CHECKING:`` blocks: imports for annotations, never run."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports when run (anywhere in the file, not
    under ``if TYPE_CHECKING:``). A name imported from a module (``from a.b import c``)
    counts as an import of ``a.b.c`` when that is a module, else of ``a.b``."""
    files = {_module_name(p, root): p for pkg in packages for p in _sources(root / pkg)}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        skipped = _annotation_only_lines(path)
        for line, name in imported_modules(path, root):
            if line in skipped:
                continue
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _floor(module: str) -> int | None:
    """The floor of a workbench module (its index in FLOORS); None outside the workbench."""
    prefix = "memsim.workbench."
    if not module.startswith(prefix):
        return None
    top = module[len(prefix) :].split(".")[0]
    return FLOORS.index(top) if top in FLOORS else -1


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a workbench module from a floor above its own, and every workbench
    module on no declared floor."""
    bad = []
    for module, targets in sorted(graph.items()):
        own = _floor(module)
        if own is None:
            continue
        if own < 0:
            bad.append(f"{module} is on no floor of {FLOORS}")
            continue
        for target in sorted(targets):
            floor = _floor(target)
            if floor is not None and floor > own:
                bad.append(f"{module} ({FLOORS[own]}) imports {target} ({FLOORS[floor]})")
    return bad


def _is_private(name: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in name.split("."))


def _private_imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every private name (a part starting with an underscore; dunders such as
    ``__version__`` are public) an import statement of the file names, inside functions too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if _is_private(a.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            out += [
                (node.lineno, f"{module}:{a.name}")
                for a in node.names
                if _is_private(module.strip(".")) or _is_private(a.name)
            ]
    return out


def _forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def test_engine_imports_nothing_above_it():
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {m}"
        for p in _sources(ENGINE)
        for line, m in imported_modules(p)
        if _forbidden(m)
    ]
    assert _sources(ENGINE), "no engine sources found"
    assert not bad, "the engine imports upward:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "source",
    [
        "import policies.pai",
        "from scenarios import scripted",
        "def f():\n    from memsim.workbench import api",
        "def f():\n    from ..workbench.api import run",
        "import importlib\nimportlib.import_module('policies')",
    ],
)
def test_the_import_check_sees_every_kind_of_import(tmp_path, source):
    path = tmp_path / "memsim" / "engine" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    modules = [m for _, m in imported_modules(path, tmp_path)]
    assert any(_forbidden(m) for m in modules), (source, modules)


def test_no_import_cycle_in_the_product():
    graph = import_graph(ROOT, CYCLE_PACKAGES)
    assert "memsim.workbench.cli.main" in graph and "benchmarks.report" in graph
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_workbench_floors_import_only_downward():
    graph = import_graph(ROOT, ("memsim",))
    assert any(_floor(m) == len(FLOORS) - 1 for m in graph), "no cli modules found"
    bad = _upward_imports(graph)
    assert not bad, f"the workbench's floors are {' < '.join(FLOORS)}:\n" + "\n".join(bad)


def test_no_module_imports_another_modules_private_name():
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in _sources(ROOT / "memsim")
        for line, name in _private_imports(p)
    ]
    assert not bad, "a private name stays in its module:\n" + "\n".join(bad)


# Each planted violation: the files written under a fresh root, and the check that sees it.
PLANTED = {
    "cycle at module level": (
        {"memsim/a.py": "from memsim import b", "memsim/b.py": "import memsim.a"},
        "cycle",
    ),
    "cycle through an in-function import": (
        {
            "memsim/a.py": "from . import b",
            "memsim/b.py": "def f():\n    from .c import g",
            "memsim/c.py": "def g():\n    from memsim.a import x",
        },
        "cycle",
    ),
    "cycle through a name imported from a module": (
        {
            "benchmarks/a.py": "from benchmarks.b import run",
            "benchmarks/b.py": "import benchmarks.a",
        },
        "cycle",
    ),
    "runs imports studies": (
        {"memsim/workbench/runs/x.py": "def f():\n    from ..studies import sweep"},
        "floor",
    ),
    "stats imports present": (
        {
            "memsim/workbench/stats.py": "from memsim.workbench.present.style import palette",
            "memsim/workbench/present/style.py": "palette = {}",
        },
        "floor",
    ),
    "a module on no floor": ({"memsim/workbench/elsewhere.py": "x = 1"}, "floor"),
    "a private name": ({"memsim/workbench/cli/x.py": "from ..runs.execution import _y"}, "private"),
    "a private name inside a function": (
        {"memsim/engine/x.py": "def f():\n    from memsim.engine.y import _z"},
        "private",
    ),
    "a private module": ({"memsim/engine/x.py": "import memsim.engine._kernels"}, "private"),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_each_check_catches_a_planted_violation(tmp_path, case):
    files, check = PLANTED[case]
    for name, text in {"memsim/workbench/studies/sweep.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if check == "cycle":
        assert import_cycles(import_graph(tmp_path, CYCLE_PACKAGES)), case
    elif check == "floor":
        assert _upward_imports(import_graph(tmp_path, ("memsim",))), case
    else:
        found = [x for p in _sources(tmp_path / "memsim") for x in _private_imports(p, tmp_path)]
        assert found, case


def test_the_checks_pass_a_clean_tree(tmp_path):
    files = {
        "memsim/workbench/runs/execution.py": "import memsim.engine.runner",
        "memsim/workbench/stats.py": "from .runs.execution import run",
        "memsim/workbench/cli/main.py": "from __future__ import annotations\n"
        "def f():\n    from ..stats import x",
        "memsim/engine/runner.py": "from .kernels import __version__",
        "benchmarks/a.py": "import memsim.workbench.stats",
        "memsim/engine/kernels.py": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .runner import Trace",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    graph = import_graph(tmp_path, CYCLE_PACKAGES)
    assert graph["memsim.workbench.stats"] == {"memsim.workbench.runs.execution"}
    assert not import_cycles(graph) and not _upward_imports(graph)
    assert not [x for p in _sources(tmp_path / "memsim") for x in _private_imports(p, tmp_path)]


def _above_the_engine(module: str) -> bool:
    """A memsim module outside memsim.engine (memsim itself included: its lazy API reaches
    the workbench)."""
    if module != "memsim" and not module.startswith("memsim."):
        return False
    return not (module == "memsim.engine" or module.startswith("memsim.engine."))


@pytest.mark.parametrize("folder", ON_ENGINE)
def test_policies_and_scenarios_import_only_the_engine_from_memsim(folder):
    sources = _sources(ROOT / folder)
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {m}"
        for p in sources
        for line, m in imported_modules(p)
        if _above_the_engine(m)
    ]
    assert sources, f"no sources found in {folder}/"
    assert not bad, f"{folder}/ imports memsim above the engine:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("source", "above"),
    [
        ("from memsim.workbench.studies.claims import register_claim", True),
        ("def f():\n    from memsim.workbench.cli.curve import run", True),
        ("import importlib\nimportlib.import_module('memsim.workbench.runs.execution')", True),
        ("import memsim", True),
        ("from memsim.engine.claims import register_claim", False),
        ("from memsim.engine import ranking", False),
        ("import numpy", False),
    ],
)
def test_the_policy_check_sees_every_kind_of_import(tmp_path, source, above):
    path = tmp_path / "policies" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    modules = [m for _, m in imported_modules(path, tmp_path)]
    assert any(_above_the_engine(m) for m in modules) == above, (source, modules)


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """String constants of a module, docstrings excepted (they may show examples)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_no_policy_id_is_written_in_engine_or_workbench_code():
    ids = {s.id for s in registry.specs()}
    assert {"pai", "keep-all"} <= ids
    names = ids | {s.full_id for s in registry.specs()}
    bad = [
        f"{p.relative_to(ROOT)}:{line} names policy {value!r}"
        for folder in (ENGINE, WORKBENCH)
        for p in _sources(folder)
        for line, value in _string_literals(p)
        if value in names
    ]
    assert not bad, "policy ids belong in policies/ and the registry:\n" + "\n".join(bad)
