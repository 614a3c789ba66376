"""Worked examples of the seed documents, as each policy's claims module registers them.

A policy's claims module (``PolicySpec.claims``, e.g. policies/izzie_claims.py) calls
:func:`register_claim`:

    register_claim(id="izzie.preference_30d_strength", policy="izzie", document="003_...txt",
                   section="§Memory Strength Calculation",
                   statement="... strength = 0.9 x 0.74 = 0.67",
                   documented=0.67, measure=lambda: ..., formula=lambda: 0.9 * math.exp(-0.3),
                   tol=0.005, note="the document rounds the decay factor first")

``documented`` is the number the document states (None when it states none: the row then
records what the formula implies, e.g. a finding); ``measure()`` runs the implementation
(usually :func:`memsim.engine.curve.curve`); ``formula()`` evaluates the document's formula
in plain math. Each disagreement has a ``kind`` (KINDS): the document's number against its
own closed form; a number that only disagrees under a reading the project does not use by
default (e.g. Cosmo's compounding nightly job); or the document contradicting itself (two
of its statements cannot both hold). The claims table (memsim.workbench.studies.claims) evaluates
every registered claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KIND_FORMULA = "number vs formula"
KIND_READING = "non-default reading"
KIND_SELF = "self-contradiction"
KINDS = (KIND_FORMULA, KIND_READING, KIND_SELF)


@dataclass(frozen=True)
class DocClaim:
    """One worked example of a seed document (see the module docstring)."""

    id: str
    policy: str
    document: str
    section: str
    statement: str
    documented: float | None
    measure: Callable[[], float]
    formula: Callable[[], float]
    tol: float
    note: str = ""
    kind: str = KIND_FORMULA  # what a disagreement is (KINDS); shown only when it disagrees

    def __post_init__(self) -> None:
        if not self.id or not isinstance(self.id, str):
            raise ValueError(f"claim id must be a non-empty string, got {self.id!r}")
        if not (self.tol >= 0):
            raise ValueError(f"claim {self.id}: tol must be >= 0, got {self.tol!r}")
        if not callable(self.measure) or not callable(self.formula):
            raise ValueError(f"claim {self.id}: measure and formula must be callables")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {KINDS}, got {self.kind!r}")

    def agrees(self, implementation: float) -> bool | None:
        """Does the document's stated number match the implementation (None: no number)?"""
        if self.documented is None or implementation is None or math.isnan(implementation):
            return None
        if math.isinf(self.documented) or math.isinf(implementation):
            return self.documented == implementation
        return abs(self.documented - implementation) <= self.tol


CLAIMS: list[DocClaim] = []


def register_claim(*args: Any, **kwargs: Any) -> DocClaim:
    """Register a DocClaim (or build one from DocClaim's arguments). Re-registering an id
    replaces the old claim, so re-importing a module does not duplicate rows."""
    claim = (
        args[0]
        if len(args) == 1 and not kwargs and isinstance(args[0], DocClaim)
        else DocClaim(*args, **kwargs)
    )
    for i, c in enumerate(CLAIMS):
        if c.id == claim.id:
            CLAIMS[i] = claim
            return claim
    CLAIMS.append(claim)
    return claim
