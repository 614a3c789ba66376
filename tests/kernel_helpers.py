"""Kernels and scalar twins only the tests use: a masked top-k, the plain cosine scan, and
min-max normalization over the last axis (Generative Agents' ``normalize_dict_floats``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine import ranking
from memsim.engine.arrays import as_float64
from policies import generative_agents


def masked_topk(scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """:func:`memsim.engine.ranking.topk` over the rows where ``mask`` is True (others are
    never returned)."""
    scores = np.asarray(scores)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != scores.shape:
        raise ValueError(f"masked_topk: mask shape {mask.shape} != scores shape {scores.shape}")
    return ranking.topk(np.where(mask, scores, -np.inf), k)


def scores_matvec(embeddings: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``E @ q`` in float32 for E (n, d) and q (d,) or (d, m): the plain cosine scan every
    recall pays (the memory-bandwidth floor benchmarks compare against)."""
    E = np.asarray(embeddings, dtype=np.float32)
    qv = np.asarray(queries, dtype=np.float32)
    return E @ qv


def minmax_normalize(x: ArrayLike) -> np.ndarray:
    """``(x - min) / (max - min)`` over the last axis; 0.5 everywhere when max == min (as
    Generative Agents' released ``normalize_dict_floats``)."""
    v = as_float64(x)
    if v.shape[-1] == 0:
        return v.copy()
    if v.ndim == 1:
        return generative_agents.minmax_normalize_between(v, v.min(), v.max())
    lo = v.min(axis=-1, keepdims=True)
    span = v.max(axis=-1, keepdims=True) - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        return as_float64(np.where(span == 0, 0.5, (v - lo) / np.where(span == 0, 1.0, span)))


def masked_topk_ref(scores: Sequence[float], mask: Sequence[bool], k: int) -> list[int]:
    return [i for i in ranking.topk_ref([s if m else -math.inf for s, m in zip(scores, mask)], k)]


def scores_matvec_ref(embeddings: Sequence[Sequence[float]], query: Sequence[float]) -> list[float]:
    """One query vector; the kernel's (d, m) form is m of these side by side."""
    return [math.fsum(e * q for e, q in zip(row, query)) for row in embeddings]
