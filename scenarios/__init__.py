"""Scenarios: the built-in scenario sources (scripted YAML, synthetic profiles, LoCoMo) and
suites. They reach memsim through the ``memsim.scenarios`` and ``memsim.suites`` entry points
(pyproject.toml), as a third-party source would; ``load``, ``catalog`` and ``suite`` are the
engine's dispatchers (:mod:`memsim.engine.sources`), re-exported for convenience.

    load("scripted/name-preference")                 a shipped scripted scenario
    load("my/scenario.yaml")                          your own scripted file
    load("synthetic:churn,episodes=5000", seed=3)     a synthetic profile with overrides
    load("locomo:/data/locomo10.json,sample=conv-26") a LoCoMo conversation

Scripted scenarios are fixed (``seed`` is ignored); synthetic streams depend on ``seed``;
LoCoMo streams do not. The stream's ``name`` is the spec it was loaded from.
"""

from memsim.engine.sources import catalog, load, suite

__all__ = ["load", "catalog", "suite"]
