"""A compact int8 copy of a store's unit embeddings (:class:`QuantizedScreen`) whose scan finds,
for a vector, a few rows that hold every row the float32 full scan can rank high: an exact
top-k then rescores only those rows with the full scan's own numbers
(:func:`similarity.rows_matvec`), at a quarter of the bytes read.

Bound. Each row x is stored as integer codes z (|z_j| <= 127) with one scale S for the whole
copy, so ``x = z / S + r`` with the residual r measured when the row is encoded (clipping
included). faiss scans the codes (``IndexScalarQuantizer``, QT_8bit_direct_signed: a code
decodes to itself) with the vector rounded to codes as well, so the vector is given as
codes: ``v = w / T + s`` (T its own scale, s measured). For the full scan's float32 product
``c = fl(x . v)`` and the scan's ``a = fl(z . w)``:

    c <= x . v + screen_margin(d) * max(1, |v|)              (the full scan's rounding)
    x . v = (z . w) / (S T) + (z / S) . s + r . v
    (z . w) <= a + screen_margin(d) * |z| |w|                 (the scan's rounding)

with ``|z / S| <= 1 + |r|`` and ``|w / T| <= |v| + |s|``. So every row the scan ranks at or
under the m-th computed product ``a_m`` has ``c <= a_m / (S T) + slack``, slack the sum of
those terms with the largest |r| of the copy: :meth:`QuantizedScreen.ranked`'s edges."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .similarity import screen_margin

# Store size from which a query vector not seen lately goes through the screen instead of
# a full scan (MemoryStore.query_screen). Personal AI's screened top 10 against one BLAS
# thread's X @ q on the benchmarks' clustered rows (20 queries each, copy built untimed):
# 1.88x at 20,000 rows, 0.97x at 50,000, 0.69x at 100,000, 0.38x at 300,000, 0.22x at
# 1,000,000; from 100,000 rows it pays by a clear margin for the copy's memory (a quarter
# of the embeddings').
SCREEN_MIN_ROWS = 100_000
# the largest code of QT_8bit_direct_signed that keeps |z| symmetric
CODE_MAX = 127
_NONE = np.zeros(0, dtype=np.int64)
# relative room for the float64 arithmetic of the edge itself (far above its rounding)
EDGE_SLACK = 1e-9


class QuantizedScreen:
    """The int8 copy of a store's embeddings (rows 0 .. n-1, appended as the store grows).

    Rows whose embedding the owner replaced (:meth:`changed`) are returned by every
    :meth:`ranked` until the copy is rebuilt (their codes are stale, so no bound holds for
    them); the copy is rebuilt from scratch when those are more than a sixteenth of the
    rows, or the store has doubled since the last build (the scale S is the build's)."""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self._index: Any = None
        self._scale = 1.0
        self._n = 0  # rows encoded
        self._built_at = 0
        self._residual = 0.0  # the largest |r| of the rows encoded
        self._stale: set[int] = set()

    def changed(self, rows: np.ndarray) -> None:
        """Rows whose embedding the owner replaced."""
        if self._index is not None:
            self._stale.update(int(r) for r in np.asarray(rows).tolist() if r < self._n)

    def _build(self, embeddings: np.ndarray) -> None:
        import faiss

        self._index = faiss.IndexScalarQuantizer(
            self.dim, faiss.ScalarQuantizer.QT_8bit_direct_signed, faiss.METRIC_INNER_PRODUCT
        )
        top = float(np.abs(embeddings).max()) if len(embeddings) else 1.0
        self._scale = CODE_MAX / top if top > 0 else 1.0
        self._n = 0
        self._residual = 0.0
        self._stale = set()
        self._built_at = len(embeddings)

    def _encode(self, rows: np.ndarray) -> None:
        """Append ``rows`` (the store's next rows) to the copy, measuring their residuals."""
        chunk = 8192  # (float64 temporaries of a few MB)
        for lo in range(0, len(rows), chunk):
            x = rows[lo : lo + chunk]
            z = np.clip(np.rint(x * np.float32(self._scale)), -CODE_MAX, CODE_MAX)
            codes = self._index.sa_encode(z.astype(np.float32))
            faiss_single_thread(self._index.add_sa_codes, codes)
            # the residual of the codes as the scan decodes them
            decoded = self._index.sa_decode(codes).astype(np.float64)
            r = x.astype(np.float64) - decoded / self._scale
            self._residual = max(self._residual, float(np.sqrt((r * r).sum(axis=1)).max()))
        self._n += len(rows)

    def sync(self, embeddings: np.ndarray) -> None:
        """Bring the copy up to date with the store's ``embeddings``."""
        n = len(embeddings)
        if (
            self._index is None
            or n < self._n
            or n >= 2 * max(1, self._built_at)
            or 16 * len(self._stale) > self._n
        ):
            self._build(embeddings)
        if self._n < n:
            self._encode(embeddings[self._n : n])

    def ranked(
        self, embeddings: np.ndarray, vector: np.ndarray, m: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, edges, stale)``: the ``m`` rows of highest screened product, best first;
        ``edges[i]`` (i = 0 .. m), at least the full scan's float32 product
        ``(embeddings @ vector)[row]`` of every row but ``rows[:i]`` and ``stale``;
        ``stale``, the rows changed since the copy was built, which no edge bounds. Every
        row, unbounded (+inf) but by all of them (-inf), when ``m`` reaches the store's size
        or the vector has no finite largest component."""
        self.sync(embeddings)
        n = self._n
        m = max(0, min(int(m), n))
        v = np.asarray(vector, dtype=np.float64).reshape(-1)
        top = float(np.abs(v).max()) if len(v) else 0.0
        if m >= n or not (math.isfinite(top) and top > 0):
            edges = np.full(n + 1, math.inf)
            edges[n] = -math.inf
            return np.arange(n, dtype=np.int64), edges, _NONE
        # the vector in codes too (faiss's byte path would round it so): v = w / T + s
        scale_v = CODE_MAX / top
        w = np.clip(np.rint(v * scale_v), -CODE_MAX, CODE_MAX)
        s = v - w / scale_v
        found, rows = faiss_single_thread(
            self._index.search, w.astype(np.float32).reshape(1, -1), m
        )
        norm, off = float(np.sqrt(v @ v)), float(np.sqrt(s @ s))
        margin, r = screen_margin(self.dim), self._residual
        # x.v = (z/S).(w/T) + (z/S).s + r.v, |z/S| <= 1 + |r|, and the two scans' rounding
        slack = (
            margin * max(1.0, norm) + r * norm + (1.0 + r) * off + margin * (1.0 + r) * (norm + off)
        )
        products = found[0].astype(np.float64)
        edges = np.append(products, products[-1]) / (self._scale * scale_v) + slack
        edges += EDGE_SLACK * (np.abs(edges) + 1.0)
        stale = np.fromiter(sorted(self._stale), dtype=np.int64, count=len(self._stale))
        return rows[0].astype(np.int64), edges, stale

    def nbytes(self) -> int:
        return 0 if self._index is None else self._n * self.dim


def faiss_single_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a faiss function with one OpenMP thread (deterministic, and polite on a shared
    machine), restoring the thread count after."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        return fn(*args)
    finally:
        faiss.omp_set_num_threads(threads)
