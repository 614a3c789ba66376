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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine.arrays import as_float64
from memsim.engine.errors import ParamError
from memsim.engine.events import Claim
from memsim.engine.params import Params, param

from .reference import REVIEW_DOC, ReferencePolicy


def fsrs_retrievability(elapsed: ArrayLike, stability: ArrayLike, w20: float) -> np.ndarray:
    """FSRS-6 ``R = (1 + F * t / S) ^ -w20``, ``F = 0.9 ^ (-1 / w20) - 1``."""
    decay = -float(w20)
    factor = 0.9 ** (1.0 / decay) - 1.0
    x = np.asarray(factor * as_float64(elapsed) / as_float64(stability))
    x += 1.0
    return as_float64(np.power(x, decay, out=x))


def fsrs_review_good(
    stability: ArrayLike, difficulty: ArrayLike, elapsed: ArrayLike, w: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """One FSRS-6 review rated Good of cards with (stability, difficulty) after ``elapsed``
    whole days: short-term stability when elapsed < 1, else the recall-stability update;
    difficulty by mean reversion (Good's delta is 0). Returns (stability, difficulty), as the
    ``fsrs`` package's Scheduler.review_card (clamps S >= 0.001, 1 <= D <= 10)."""
    S, D, t = np.broadcast_arrays(
        as_float64(stability), as_float64(difficulty), as_float64(elapsed)
    )
    R = fsrs_retrievability(t, S, w[20])
    # S * (1 + e^w8 * (11 - D) * S^-w9 * (e^((1 - R) * w10) - 1))
    g = np.subtract(1.0, R, out=R)
    g *= w[10]
    np.exp(g, out=g)
    g -= 1.0
    g *= np.power(S, -w[9])
    g *= np.subtract(11.0, D)
    g *= math.e ** w[8]
    g += 1.0
    S2 = np.multiply(S, g, out=g)
    short = t < 1
    if short.any():  # same day: S * max(e^(w17 * (G - 3 + w18)) * S^-w19, 1)
        Ss = S[short]
        S2[short] = Ss * np.maximum(math.e ** (w[17] * (0 + w[18])) * Ss ** -w[19], 1.0)
    np.maximum(S2, 0.001, out=S2)
    d0_easy = w[4] - math.e ** (w[5] * (4 - 1)) + 1
    D2 = w[7] * d0_easy + (1 - w[7]) * D  # Good: delta difficulty -w6 * (3 - 3) = 0
    return as_float64(S2), as_float64(np.clip(D2, 1.0, 10.0))


def fsrs_retrievability_ref(elapsed: float, stability: float, w20: float) -> float:
    factor: float = 0.9 ** (1 / -w20) - 1
    r: float = (1 + factor * elapsed / stability) ** -w20
    return r


def fsrs_review_good_ref(
    stability: float, difficulty: float, elapsed: float, w: Sequence[float]
) -> tuple[float, float]:
    if elapsed < 1:
        s = stability * max(math.e ** (w[17] * (0 + w[18])) * stability ** -w[19], 1.0)
    else:
        r = fsrs_retrievability_ref(elapsed, stability, w[20])
        s = stability * (
            1
            + math.e ** w[8]
            * (11 - difficulty)
            * stability ** -w[9]
            * (math.e ** ((1 - r) * w[10]) - 1)
        )
    d0_easy = w[4] - math.e ** (w[5] * 3) + 1
    d = w[7] * d0_easy + (1 - w[7]) * difficulty
    return max(s, 0.001), min(max(d, 1.0), 10.0)


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
    return min(max(w[4] - math.e ** (w[5] * (GOOD - 1)) + 1, 1.0), 10.0)


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
        S, D = fsrs_review_good(
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
        return fsrs_retrievability(
            self._elapsed(now, s.at("last_review", rows)),
            s.at("stability", rows),
            self.params.w[20],
        )
