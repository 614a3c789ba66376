"""FSRS-6 (Free Spaced Repetition Scheduler, version 6) as an assistant-memory policy.

Source: open-spaced-repetition, the ``fsrs`` package (6.3.2, pinned) and its algorithm
description (github.com/open-spaced-repetition/fsrs4anki/wiki/The-Algorithm, FSRS-6):

- retrievability ``R(t, S) = (1 + F * t / S) ^ -w20``, ``F = 0.9 ^ (-1 / w20) - 1``, with t
  whole days since the last review (the package floors elapsed time to days);
- first review rated Good: ``S0 = w2``, ``D0 = w4 - e^(w5 * (G - 1)) + 1``;
- later Good review: same day (t < 1) the short-term stability
  ``S * max(e^(w17 * (G - 3 + w18)) * S^-w19, 1)``, else the recall stability
  ``S * (1 + e^w8 * (11 - D) * S^-w9 * (e^((1 - R) * w10) - 1))``; difficulty by mean
  reversion towards ``D0(Easy)`` with weight w7; S >= 0.001, 1 <= D <= 10.

memsim choices (docs/policies/fsrs.md): every review is rated Good (an assistant never sees
a failed recall); the creating episode is the first review, each reinforcement and retrieval
another (policies/reference.py); a memory is forgotten when R < ``forget_below``; ranking is
cosine x R.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from memsim.engine import kernels
from memsim.engine.errors import ParamError
from memsim.engine.events import Claim
from memsim.engine.params import Params, param

from .reference import REVIEW_DOC, ReferencePolicy

# fsrs 6.3.2 fsrs/scheduler.py DEFAULT_PARAMETERS (copied so the policy runs without it)
DEFAULT_W = (
    0.212,
    1.2931,
    2.3065,
    8.2956,
    6.4133,
    0.8334,
    3.0194,
    0.001,
    1.8722,
    0.1666,
    0.796,
    1.4835,
    0.0614,
    0.2629,
    1.6483,
    0.6014,
    1.8729,
    0.5425,
    0.0912,
    0.0658,
    0.1542,
)
GOOD = 3  # fsrs Rating.Good


@dataclass(frozen=True)
class FSRSParams(Params):
    w: tuple[float, ...] = param(
        DEFAULT_W, lo=0.0, doc="fsrs 6.3.2 scheduler.DEFAULT_PARAMETERS (w0..w20, FSRS-6)"
    )
    whole_days: bool = param(
        True, doc="fsrs 6.3.2 Scheduler: elapsed time is (now - last_review).days (floored)"
    )
    forget_below: float = param(
        0.5, lo=0.0, hi=1.0, doc="memsim choice: decay job forgets when R < this (0: never)"
    )
    reinforce_cosine: float = param(0.85, lo=-1.0, hi=1.0, doc=REVIEW_DOC)
    retrieval_is_review: bool = param(True, doc=REVIEW_DOC)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.w) != 21:
            raise ParamError(f"FSRSParams.w has {len(self.w)} values; FSRS-6 needs 21")
        for i in (0, 1, 2, 3, 20):
            if not self.w[i] > 0:
                raise ParamError(f"FSRSParams.w[{i}]={self.w[i]!r} must be > 0")


def initial_difficulty(w: tuple[float, ...]) -> float:
    """FSRS-6 D0(Good), clamped to [1, 10] (fsrs Scheduler._initial_difficulty)."""
    return min(max(w[4] - np.e ** (w[5] * (GOOD - 1)) + 1, 1.0), 10.0)


class FSRS(ReferencePolicy):
    """FSRS-6 with every review rated Good. See the module docstring."""

    Params: ClassVar[type[Params]] = FSRSParams
    params: FSRSParams

    def setup(self) -> None:
        s = self.store
        s.add_column("stability", np.float64, 0.0)
        s.add_column("difficulty", np.float64, 0.0)
        s.add_column("last_review", np.float64, 0.0)
        s.add_column("reviews", np.int64, 0)

    def _elapsed(self, now: float, last: np.ndarray) -> np.ndarray:
        dt = np.maximum(now - last, 0.0)
        # the small epsilon guards float days (e.g. 10.000000000001 - 0.0000000000001)
        return np.floor(dt + 1e-9) if self.params.whole_days else dt

    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        w = self.params.w
        return {
            "stability": max(w[GOOD - 1], 0.001),
            "difficulty": initial_difficulty(w),
            "last_review": now,
            "reviews": 1,
        }

    def _review(self, rows: np.ndarray, now: float) -> None:
        s = self.store
        S, D = kernels.fsrs_review_good(
            s["stability"][rows],
            s["difficulty"][rows],
            self._elapsed(now, s["last_review"][rows]),
            self.params.w,
        )
        s["stability"][rows] = S
        s["difficulty"][rows] = D
        s["last_review"][rows] = now
        s["reviews"][rows] += 1

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        s = self.store
        return kernels.fsrs_retrievability(
            self._elapsed(now, s.at("last_review", rows)),
            s.at("stability", rows),
            self.params.w[20],
        )
