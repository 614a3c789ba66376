"""Ebisu 2 (Beta prior on recall at a half-life) as an assistant-memory policy.

Source: the ``ebisu`` package 2.2.0 (pinned; fasiha.github.io/ebisu): a memory's model is
(alpha, beta, t): recall probability at time t after the last review ~ Beta(alpha, beta);
``predictRecall(model, dt, exact=True) = B(alpha + dt / t, beta) / B(alpha, beta)``;
``updateRecall(model, successes=1, total=1, dt)`` is the Bayesian update after a successful
quiz (rebalanced so t stays near the half-life). ``defaultModel(t)`` is (3, 3, t).

memsim choices (docs/policies/ebisu.md): the initial half-life (1 day), that every
reinforcement and retrieval is a successful quiz (policies/reference.py), the smallest
elapsed time of a quiz, forgetting when predicted recall < ``forget_below``, ranking cosine x
predicted recall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from memsim.engine import kernels
from memsim.engine.events import Claim
from memsim.engine.params import Params, param

from .reference import REVIEW_DOC, ReferencePolicy


@dataclass(frozen=True)
class EbisuParams(Params):
    half_life: float = param(
        1.0, lo=0.0, lo_open=True, doc="ebisu 2.2.0 defaultModel(t): initial half-life, days"
    )
    alpha: float = param(3.0, lo=0.0, lo_open=True, doc="ebisu 2.2.0 defaultModel alpha=3.0")
    beta: float = param(3.0, lo=0.0, lo_open=True, doc="ebisu 2.2.0 defaultModel beta=alpha")
    min_elapsed: float = param(
        1.0 / 1440.0,
        lo=0.0,
        lo_open=True,
        doc="memsim choice: a quiz at the moment of the last review counts as 1 minute later",
    )
    forget_below: float = param(
        0.05, lo=0.0, hi=1.0, doc="memsim choice: decay job forgets when recall < this (0: never)"
    )
    reinforce_cosine: float = param(0.85, lo=-1.0, hi=1.0, doc=REVIEW_DOC)
    retrieval_is_review: bool = param(True, doc=REVIEW_DOC)


class Ebisu(ReferencePolicy):
    """Ebisu 2: successful quizzes only. See the module docstring."""

    Params: ClassVar[type[Params]] = EbisuParams
    params: EbisuParams

    def setup(self) -> None:
        s = self.store
        s.add_column("alpha", np.float64, 0.0)
        s.add_column("beta", np.float64, 0.0)
        s.add_column("t", np.float64, 0.0)  # the model's time (half-life after rebalancing)
        s.add_column("last_review", np.float64, 0.0)

    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        p = self.params
        return {"alpha": p.alpha, "beta": p.beta, "t": p.half_life, "last_review": now}

    def _review(self, rows: np.ndarray, now: float) -> None:
        import ebisu  # the package is the update (a scalar Bayesian update per quiz)

        s = self.store
        for r in rows.tolist():
            dt = max(now - float(s["last_review"][r]), self.params.min_elapsed)
            model = (float(s["alpha"][r]), float(s["beta"][r]), float(s["t"][r]))
            a, b, t = ebisu.updateRecall(model, 1, 1, dt)
            s["alpha"][r], s["beta"][r], s["t"][r] = float(a), float(b), float(t)
            s["last_review"][r] = now

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        s = self.store
        dt = np.maximum(now - s.at("last_review", rows), 0.0)
        return kernels.ebisu_predict_recall(
            s.at("alpha", rows), s.at("beta", rows), s.at("t", rows), dt
        )
