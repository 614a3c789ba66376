"""Personal AI's formulas (policies/pai.py, document 000): the §2 multi-factor recall score
and the half-life decay of effective confidence.

Each vectorized kernel sits beside its scalar reference twin (``NAME_ref``, plain Python);
tests prove them equal.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine import decay
from memsim.engine.arrays import as_float64


def half_life_decay(c: ArrayLike, dt: ArrayLike, half_life: ArrayLike) -> np.ndarray:
    """``c * 0.5 ** (dt / half_life)``: PAI effective confidence (half_life = 30 * stability)."""
    return as_float64(c) * np.power(0.5, as_float64(dt) / as_float64(half_life))


def pai_score(
    cos: ArrayLike,
    importance: ArrayLike,
    recency: ArrayLike,
    stability: ArrayLike,
    subject_match: ArrayLike,
    *,
    w_cos: float = 0.50,
    w_importance: float = 0.20,
    w_recency: float = 0.10,
    w_stability: float = 0.05,
    w_subject: float = 0.15,
    importance_scale: float = 10.0,
    stability_scale: float = 5.0,
    insight: ArrayLike | None = None,
    insight_multiplier: float = 1.0,
) -> np.ndarray:
    """PAI multi-factor recall score (000 §2): ``0.50 cos + 0.20 importance/10 + 0.10 recency
    + 0.05 stability/5 + 0.15 subject_match``, times ``insight_multiplier`` where ``insight``
    is true. The terms are added left to right (the operation order every caller relies on
    for bit-identical scores)."""
    score = decay.weighted_sum(
        (w_cos, w_importance, w_recency, w_stability, w_subject),
        (
            cos,
            as_float64(importance) / importance_scale,
            recency,
            as_float64(stability) / stability_scale,
            subject_match,
        ),
    )
    if insight is None:
        return score
    return np.where(insight, score * insight_multiplier, score)


def half_life_decay_ref(c: float, dt: float, half_life: float) -> float:
    factor: float = 0.5 ** (dt / half_life)
    return c * factor


def pai_score_ref(
    cos: float,
    importance: float,
    recency: float,
    stability: float,
    subject_match: float,
    *,
    w_cos: float = 0.50,
    w_importance: float = 0.20,
    w_recency: float = 0.10,
    w_stability: float = 0.05,
    w_subject: float = 0.15,
    importance_scale: float = 10.0,
    stability_scale: float = 5.0,
    insight: bool = False,
    insight_multiplier: float = 1.0,
) -> float:
    score = (
        w_cos * cos
        + w_importance * (importance / importance_scale)
        + w_recency * recency
        + w_stability * (stability / stability_scale)
        + w_subject * subject_match
    )
    return score * insight_multiplier if insight else score
