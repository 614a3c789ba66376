"""Policies and scenarios stand on the engine alone, and the engine's modules import one
another without a cycle (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_architecture import ENGINE, ROOT, imported_modules

LAYERS_ON_ENGINE = ("policies", "scenarios")


def _above_the_engine(module: str) -> bool:
    """A memsim module outside memsim.engine (memsim itself included: its lazy API reaches
    the workbench)."""
    if module != "memsim" and not module.startswith("memsim."):
        return False
    return not (module == "memsim.engine" or module.startswith("memsim.engine."))


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", LAYERS_ON_ENGINE)
def test_policies_and_scenarios_import_only_the_engine_from_memsim(folder):
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {m}"
        for p in _sources(folder)
        for line, m in imported_modules(p)
        if _above_the_engine(m)
    ]
    assert _sources(folder), f"no sources found in {folder}/"
    assert not bad, f"{folder}/ imports memsim above the engine:\n" + "\n".join(bad)


def _type_checking_lines(path: Path) -> set[int]:
    """Lines of the file's ``if TYPE_CHECKING:`` blocks: imports for annotations only, never
    run, so no import cycle."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _engine_graph() -> dict[str, set[str]]:
    """Engine module -> the engine modules it imports when run (anywhere in the file, inside
    functions too; not the imports for annotations only)."""
    names = {p.stem for p in ENGINE.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name in names:
        found = set()
        path = ENGINE / f"{name}.py"
        typing_only = _type_checking_lines(path)
        for line, m in imported_modules(path):
            if line in typing_only:
                continue
            parts = m.split(".")
            if parts[:2] == ["memsim", "engine"] and len(parts) > 2 and parts[2] in names:
                found.add(parts[2])
        graph[name] = found - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_engine_modules_import_one_another_without_a_cycle():
    graph = _engine_graph()
    assert len(graph) > 5, "no engine modules found"
    cycle = _cycle(graph)
    assert cycle is None, "engine import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(
    ("source", "above"),
    [
        ("from memsim.workbench.claims import register_claim", True),
        ("def f():\n    from memsim.workbench.curves import curve", True),
        ("import importlib\nimportlib.import_module('memsim.workbench.api')", True),
        ("import memsim", True),
        ("from memsim.engine.claims import register_claim", False),
        ("from memsim.engine import ranking", False),
        ("import numpy", False),
    ],
)
def test_the_check_sees_every_kind_of_import(tmp_path, source, above):
    path = tmp_path / "policies" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    modules = [m for _, m in imported_modules(path, tmp_path)]
    assert any(_above_the_engine(m) for m in modules) == above, (source, modules)


def test_imports_for_annotations_only_are_no_cycle(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING\nimport a\nif TYPE_CHECKING:\n    import b\n"
        "    from c import d\n"
    )
    assert _type_checking_lines(path) == {4, 5}


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
