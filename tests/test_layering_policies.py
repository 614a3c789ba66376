"""Policies and scenarios stand on the engine alone, and the engine's modules import one
another without a cycle (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_architecture import ROOT, import_cycles, import_graph, imported_modules

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


def test_engine_modules_import_one_another_without_a_cycle():
    graph = import_graph(ROOT, ("memsim",))
    engine = {
        m: {t for t in targets if t.startswith("memsim.engine.")}
        for m, targets in graph.items()
        if m.startswith("memsim.engine.")
    }
    assert len(engine) > 5, "no engine modules found"
    cycles = import_cycles(engine)
    assert not cycles, "engine import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    ("source", "above"),
    [
        ("from memsim.workbench.studies.claims import register_claim", True),
        ("def f():\n    from memsim.workbench.studies.curves import main_curve", True),
        ("import importlib\nimportlib.import_module('memsim.workbench.runs.execution')", True),
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
