"""The floors of the house (docs/architecture.md): the engine imports nothing above it, and
no policy is named in engine or workbench code (policies arrive through the registry)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memsim.engine import registry

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "memsim" / "engine"
WORKBENCH = ROOT / "memsim" / "workbench"
FORBIDDEN = ("policies", "scenarios", "memsim.workbench")


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
