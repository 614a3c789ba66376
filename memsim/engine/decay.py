"""Decay and score formulas more than one policy uses: the one clock of every policy
(days since access), retrieval strength, and the left-to-right weighted sum of score terms.

Each vectorized kernel sits beside its scalar reference twin (``NAME_ref``, written straight
from the seed formula); tests prove them equal. Kernels never mutate their inputs; arguments
broadcast like numpy operands; results are float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .arrays import as_float64


def days_since_access(now: ArrayLike, last_access: ArrayLike, created: ArrayLike) -> np.ndarray:
    """The one clock of every policy: days since the last access, counting from creation
    until the first one (``last_access`` NaN), never negative."""
    last = as_float64(last_access)
    return np.maximum(as_float64(now) - np.where(np.isnan(last), as_float64(created), last), 0.0)


def retrieval_strength(dt: ArrayLike, stability: ArrayLike) -> np.ndarray:
    """``exp(-dt / S)``: Engram retrieval strength R(t), S the stability in days."""
    return np.exp(-as_float64(dt) / as_float64(stability))


def weighted_sum(weights: Sequence[float], columns: Sequence[ArrayLike]) -> np.ndarray:
    """``sum_i weights[i] * columns[i]``, accumulated left to right."""
    if len(weights) != len(columns):
        raise ValueError(f"weighted_sum: {len(weights)} weights but {len(columns)} columns")
    if not columns:
        return np.zeros(())
    out = float(weights[0]) * as_float64(columns[0])
    for w, c in zip(weights[1:], columns[1:]):
        out = out + float(w) * as_float64(c)
    return out


def days_since_access_ref(now: float, last_access: float, created: float) -> float:
    return max(now - (created if math.isnan(last_access) else last_access), 0.0)


def retrieval_strength_ref(dt: float, stability: float) -> float:
    return math.exp(-dt / stability)


def weighted_sum_ref(weights: Sequence[float], values: Sequence[float]) -> float:
    total = 0.0
    for i, (w, v) in enumerate(zip(weights, values)):
        total = w * v if i == 0 else total + w * v
    return total
