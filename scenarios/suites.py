"""Named suites: lists of scenario specs that ``memsim compare --suite NAME`` runs.

``standard``: every shipped scripted scenario, each synthetic profile at its default size
(2,000-4,000 episodes: all policies finish in minutes on two cores), and, when a LoCoMo
file is given, one stream per LoCoMo sample (the dataset's own per-conversation protocol).
``quick``: the scripted scenarios and one small synthetic stream (smoke runs).
"""
from __future__ import annotations

from memsim.errors import UnknownIdError

from . import scripted
from .synthetic import PROFILES

SUITES = {
    "standard": "every scripted scenario, the synthetic profiles, LoCoMo per sample (with a path)",
    "quick": "every scripted scenario and a small steady synthetic stream",
    "scripted": "every scripted scenario",
    "synthetic": "the synthetic profiles at their default size",
}


def suite(name: str, *, locomo_path: str | None = None) -> list[str]:
    if name not in SUITES:
        raise UnknownIdError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    specs: list[str] = []
    if name in ("standard", "quick", "scripted"):
        specs += [f"scripted/{n}" for n in scripted.names()]
    if name in ("standard", "synthetic"):
        specs += [f"synthetic:{p}" for p in PROFILES]
    if name == "quick":
        specs.append("synthetic:steady,episodes=400,queries=40,facts=40,horizon=60")
    if locomo_path and name in ("standard",):
        from .locomo import sample_ids
        specs += [f"locomo:{locomo_path},sample={s}" for s in sample_ids(locomo_path)]
    return specs
