"""Named suites: lists of scenario specs that ``memsim compare --suite NAME`` runs, registered
through the ``memsim.suites`` entry points (see pyproject.toml).

``standard``: every shipped scripted scenario, each synthetic profile at its default size
(2,000-4,000 episodes: all policies finish in minutes on two cores), and, when a LoCoMo
file is given, one stream per LoCoMo sample (the dataset's own per-conversation protocol).
``quick``: the scripted scenarios and one small synthetic stream (smoke runs).
"""

from __future__ import annotations

from . import scripted
from .synthetic import PROFILES


def _scripted() -> list[str]:
    return [f"scripted/{n}" for n in scripted.names()]


def _synthetic() -> list[str]:
    return [f"synthetic:{p}" for p in PROFILES]


def standard(locomo_path: str | None = None) -> list[str]:
    """every scripted scenario, the synthetic profiles, LoCoMo per sample (with a path)"""
    specs = _scripted() + _synthetic()
    if locomo_path:
        from .locomo import sample_ids

        specs += [f"locomo:{locomo_path},sample={s}" for s in sample_ids(locomo_path)]
    return specs


def quick(locomo_path: str | None = None) -> list[str]:
    """every scripted scenario and a small steady synthetic stream"""
    return _scripted() + ["synthetic:steady,episodes=400,queries=40,facts=40,horizon=60"]


def scripted_suite(locomo_path: str | None = None) -> list[str]:
    """every scripted scenario"""
    return _scripted()


def synthetic_suite(locomo_path: str | None = None) -> list[str]:
    """the synthetic profiles at their default size"""
    return _synthetic()
