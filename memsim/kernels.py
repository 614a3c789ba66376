"""Vectorized scoring kernels: pure functions over numpy arrays.

Each kernel has a scalar reference twin in :mod:`memsim.kernels_ref`, written straight from
the seed formula; tests prove them equal. Kernels never mutate their inputs.
"""
from __future__ import annotations

import numpy as np


def topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest finite scores, best first; ties go to the lower index.

    ``argpartition`` finds the candidates in O(n); only those are sorted. NaN and -inf
    scores are never returned (use -inf to mask rows out).
    """
    scores = np.asarray(scores)
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    valid = np.isfinite(scores)
    if k < n:
        # partition on a copy where invalid rows sink to the bottom
        s = np.where(valid, scores, -np.inf)
        part = np.argpartition(-s, k - 1)[:k]
        kth = s[part].min()
        # include every row tied with the k-th score so tie-breaking by index is exact
        cand = np.flatnonzero(s >= kth) if np.isfinite(kth) else np.flatnonzero(valid)
    else:
        cand = np.flatnonzero(valid)
    order = np.lexsort((cand, -scores[cand]))
    out = cand[order][:k]
    return out.astype(np.int64)
