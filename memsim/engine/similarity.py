"""Similarity of stored embeddings with a vector: float32 products bit for bit as the full scan
computes them (of a few rows, of recurring vectors), the float32 screen's margin, and exact
float64 cosines where the screen cannot decide.
"""

from __future__ import annotations

from typing import overload

import numpy as np

from . import ranking

# A float32 dot product of two unit vectors of dimension d is off from the exact value by at
# most about d x 2**-24 (2.3e-5 at d = 384, the worst case of the summation bound); screening
# with four times that, then deciding in float64, decides exactly as float64 alone.
SCREEN_MARGIN = 1e-4


def screen_margin(dim: int) -> float:
    """How far under a threshold a float32 screen of unit-vector dot products (any BLAS
    product: matrix-vector or matrix-matrix) must keep rows so that no row whose float64
    cosine reaches the threshold is lost."""
    return max(SCREEN_MARGIN, 4.0 * dim * 2.0**-24)


def screen_margins(dim: int, norms: np.ndarray) -> np.ndarray:
    """:func:`screen_margin` of screens of unit rows with vectors of norms ``norms``: a
    vector longer than 1 widens its rounding bound in proportion (NaN norms stay NaN)."""
    return screen_margin(dim) * np.maximum(1.0, np.asarray(norms, dtype=np.float64))


@overload
def settled_gap(dim: int, norms: float) -> float: ...


@overload
def settled_gap(dim: int, norms: np.ndarray) -> np.ndarray: ...


def settled_gap(dim: int, norms: float | np.ndarray) -> float | np.ndarray:
    """How far apart two float32 products (or screens) of a vector of norm ``norms`` with
    unit rows must be for their order to be the full scan's, untied, and their float64
    cosines' alike: each is within :func:`screen_margin` (times the norm) of its product and
    of its cosine, and products within TIE_RTOL of each other are a tie. A Python float
    gives a float (the same double: a search one at a time asks for one, some 100,000 times
    a year)."""
    scale = (
        max(norms, 1.0)  # as np.maximum: a NaN norm (first) stays NaN
        if isinstance(norms, float)
        else np.maximum(1.0, np.asarray(norms, dtype=np.float64))
    )
    return 2.0 * (screen_margin(dim) * scale) + 2.0 * ranking.TIE_RTOL * scale


def exact_cosines(embeddings: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Float64 dot products of each row with ``vector`` (or, given one vector per row, of
    each row with its own), each row summed on its own (a BLAS matrix-vector product rounds
    a row differently depending on the other rows, so a subset and the whole store would
    disagree in the last bit)."""
    a = np.asarray(embeddings, dtype=np.float64)
    out: np.ndarray = (a * np.asarray(vector, dtype=np.float64)).sum(axis=1)
    return out


def exact_cosine(embeddings: np.ndarray, row: int, vector: np.ndarray) -> float:
    """:func:`exact_cosines` of one stored row (``embeddings[row]``) with ``vector``."""
    return float(exact_cosines(embeddings[row : row + 1], vector)[0])


def rows_at_least(
    embeddings: np.ndarray,
    rows: np.ndarray,
    vector: np.ndarray,
    threshold: float,
    screen: np.ndarray | None = None,
) -> np.ndarray:
    """The ``rows`` of unit ``embeddings`` whose :func:`exact_cosines` with ``vector`` are
    ``>= threshold``, in their order, without converting every row to float64: a float32
    screen (``screen``, the rows' float32 products with ``vector`` if the caller has them,
    from any BLAS product; else computed here) decides every row more than
    :func:`screen_margin` away from the threshold, on either side (its rounding is within
    the margin), and only the rows within it are computed in float64."""
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return rows
    if screen is None:
        v32 = np.asarray(vector, dtype=np.float32)
        # a scan of every row is cheaper than gathering most of them first
        whole = 4 * len(rows) > len(embeddings)
        screen = (embeddings @ v32)[rows] if whole else embeddings[rows] @ v32
    margin = screen_margin(embeddings.shape[1])
    kept = screen >= threshold - margin
    rows, screen = rows[kept], screen[kept]
    sure = screen >= threshold + margin
    if not sure.all():
        unsure = np.flatnonzero(~sure)
        sure[unsure] = exact_cosines(embeddings[rows[unsure]], vector) >= threshold
    out: np.ndarray = rows[sure]
    return out


# OpenBLAS's float32 matrix-vector product computes each aligned block of 4 rows the same
# way wherever the block sits, and the last n % 4 rows after a block the same way; so the
# products of a few rows can be recomputed bit for bit without scanning the matrix
# (tests/engine/test_kernels.py checks this property of the BLAS in use).
MATVEC_BLOCK = 4


# up to this many rows, rows_matvec multiplies each row's block (a repeated block costs less
# than np.unique's sort of a few rows)
_FEW_ROWS = 32


# up to this many rows in full blocks (a candidate index's range search finds one or two),
# each row's block is multiplied as a slice of the matrix, without gathering a copy
_SLICED_ROWS = 4


def rows_matvec(embeddings: np.ndarray, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``(embeddings @ vector)[rows]`` bit for bit (float32), at the cost of ``len(rows)``
    aligned blocks instead of the whole matrix: what a candidate index needs to rescore its
    candidates with exactly the numbers of the full scan."""
    E = embeddings
    v = np.asarray(vector, dtype=np.float32)
    rows = np.asarray(rows, dtype=np.int64)
    n, b = len(E), MATVEC_BLOCK
    end = (n // b) * b
    out = np.empty(len(rows), dtype=np.float32)
    if 0 < len(rows) <= _SLICED_ROWS and int(rows.max()) < end:
        for i, r in enumerate(rows.tolist()):  # the same block as below, so the same numbers
            lo = r - r % b
            out[i] = (E[lo : lo + b] @ v)[r - lo]
        return out
    inner = rows < end
    if inner.any():
        body = rows[inner]
        if len(body) <= _FEW_ROWS:  # each row's own block (shared blocks repeated): no sort
            blocks, where = body // b, np.arange(len(body))
        else:
            blocks, where = np.unique(body // b, return_inverse=True)
        idx = (blocks[:, None] * b + np.arange(b)).ravel()
        vals = (E[idx] @ v).reshape(-1, b)
        out[inner] = vals[where, body % b]
    if not inner.all():
        out[~inner] = _tail_products(E, v, rows[~inner])
    return out


def _tail_products(E: np.ndarray, v: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(E @ v)[rows]`` of rows after the last full block of MATVEC_BLOCK rows, which the
    full scan computes on its own path: recomputed with the full block before them."""
    n = len(E)
    lo = max(0, (n // MATVEC_BLOCK) * MATVEC_BLOCK - MATVEC_BLOCK)
    tail: np.ndarray = (E[lo:n] @ v)[rows - lo]
    return tail


class PackedRows:
    """``(E @ v)[rows]`` bit for bit (float32), at the cost of ``len(rows)`` rows instead of
    the whole matrix: a policy whose searchable rows are a small share of its store
    (forgotten rows stay in the store) scans those only.

    The rows are copied once into a packed matrix and kept between calls: rows asked for the
    first time are appended, rows no longer asked for stay until they are a fifth of the
    packed matrix (then it is rebuilt from the rows asked for), and the owner reports changed
    embeddings (:meth:`changed`). The BLAS property this relies on (tests/engine/test_kernels.py
    checks it for the BLAS in use): a row's product inside a full block of MATVEC_BLOCK rows
    does not depend on the block's other rows or on its place in the block; so the packed
    matrix is multiplied in full blocks, and the rows after the store's last full block,
    which the full scan computes on its own path, are recomputed with the block before them
    (:func:`_tail_products`, as in :func:`rows_matvec`)."""

    # below this many rows a plain full product is as cheap as the bookkeeping
    MIN_ROWS = 4096

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._drop()

    def _drop(self) -> None:
        self._packed = np.zeros((0, self.dim), dtype=np.float32)
        self._held = 0  # packed positions in use
        self._where = np.full(0, -1, dtype=np.int64)  # packed position of each row, or -1

    def changed(self, embeddings: np.ndarray, rows: np.ndarray) -> None:
        """Rows whose embedding the owner replaced: refresh their packed copies."""
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[rows < len(self._where)]
        pos = self._where[rows]
        held = pos >= 0
        self._packed[pos[held]] = embeddings[rows[held]]

    def at(self, embeddings: np.ndarray, vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(embeddings @ vector)[rows]`` as float32, bit for bit."""
        E = embeddings
        v = np.asarray(vector, dtype=np.float32)
        rows = np.asarray(rows, dtype=np.int64)
        n, b = len(E), MATVEC_BLOCK
        # more than half the rows: in full (Personal AI's 39% of 12,178 rows at the year:
        # 82 us packed against 247 us in full)
        if n < self.MIN_ROWS or 2 * len(rows) > n:
            if n >= self.MIN_ROWS:
                self._drop()  # no copy of most of the matrix kept
            full: np.ndarray = (E @ v)[rows]
            return full
        end = (n // b) * b
        inner = rows < end
        all_inner = bool(inner.all())
        body = rows if all_inner else rows[inner]
        self._hold(E, body, end)
        held = self._held + (-self._held) % b  # whole blocks (the rest: finite padding)
        out = np.empty(len(rows), dtype=np.float32)
        out[inner] = (self._packed[:held] @ v)[self._where[body]]
        if not all_inner:
            out[~inner] = _tail_products(E, v, rows[~inner])
        return out

    def products(
        self, embeddings: np.ndarray, vector: np.ndarray, mask: np.ndarray, fill: float = -np.inf
    ) -> np.ndarray:
        """``np.where(mask, embeddings @ vector, fill)`` as float32, bit for bit."""
        E = embeddings
        if len(E) < self.MIN_ROWS:
            return np.where(mask, E @ np.asarray(vector, dtype=np.float32), np.float32(fill))
        rows = np.flatnonzero(mask)
        out = np.full(len(E), fill, dtype=np.float32)
        out[rows] = self.at(E, vector, rows)
        return out

    def _hold(self, E: np.ndarray, rows: np.ndarray, end: int) -> None:
        """Make the packed matrix hold every one of ``rows`` (all below ``end``)."""
        b = MATVEC_BLOCK
        if len(self._where) < end:
            grown = np.full(max(end, 2 * len(self._where)), -1, dtype=np.int64)
            grown[: len(self._where)] = self._where
            self._where = grown
        # a quarter more rows held than asked for (rows forgotten since): rebuild, one copy
        # of the rows asked for, as cheap as one product, at most every few forgetting rounds
        if 4 * self._held > 5 * len(rows) + 4 * b:
            self._where[:] = -1
            self._held = 0
        new = rows[self._where[rows] < 0]
        if not len(new):
            return
        new = np.unique(new)
        k, m = self._held, len(new)
        need = k + m + (-(k + m)) % b
        if need > len(self._packed):
            grown_p = np.zeros((max(need, 2 * len(self._packed)), E.shape[1]), np.float32)
            grown_p[:k] = self._packed[:k]
            self._packed = grown_p
        self._packed[k : k + m] = E[new]
        self._where[new] = np.arange(k, k + m)
        self._held = k + m


class _Kept:
    """One vector's kept products: ``products[:valid]`` are the full scan's (``valid`` a
    multiple of MATVEC_BLOCK), except rows changed after the first ``seen`` changes."""

    __slots__ = ("products", "valid", "seen")

    def __init__(self, seen: int) -> None:
        self.products = np.zeros(0, dtype=np.float32)
        self.valid = 0
        self.seen = seen


class RecurringScans:
    """``(E @ v)[rows]`` bit for bit (float32) for vectors that come back, each vector's
    products kept between calls so that a call computes only the rows added or changed
    since that vector's last one. Query vectors come back: the mock LLM's steady year asks
    10,000 queries with 149 distinct vectors (a query vector holds the asked keys' blocks),
    so its recall scanned the store 10,000 times for 149 scans' worth of products.

    Exact by the BLAS property :class:`PackedRows` relies on (tests/engine/test_kernels.py checks
    it): a full block of MATVEC_BLOCK rows gets the same products wherever it sits, so the
    kept products of the full blocks stay the full scan's as the store grows; the rows
    after the store's last full block are recomputed per call (:func:`_tail_products`), and
    rows whose embedding the owner replaced (:meth:`changed`, one log for every vector) with
    :func:`rows_matvec`.
    At most ``max_entries`` vectors are kept (least recently used first out), each in room
    for at most a quarter more rows than the store had at its last growth: about 5/8 of
    the embedding matrix's bytes at most, whatever the store's size."""

    # the change log is compacted past this many entries
    LOG_LIMIT = 256

    def __init__(self, dim: int) -> None:
        self.max_entries = max(8, dim // 2)
        self._kept: dict[bytes, _Kept] = {}  # insertion order = use order, oldest first
        # rows whose embedding changed, in order; change i is _log[i - _log_start]
        self._log: list[np.ndarray] = []
        self._log_start = 0
        # vectors asked through :meth:`recurring` lately, not kept (oldest first)
        self._asked: dict[bytes, None] = {}

    def recurring(self, vector: np.ndarray) -> bool:
        """Whether ``vector``'s products are kept, or it was asked here among the last
        ``max_entries`` vectors: a vector that comes back is worth one full scan, kept; one
        seen once may go through a cheaper screen (MemoryStore.query_screen)."""
        key = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
        if key in self._kept:
            return True
        if key in self._asked:  # asked again: kept from now on
            del self._asked[key]
            return True
        self._asked[key] = None
        while len(self._asked) > self.max_entries:
            del self._asked[next(iter(self._asked))]
        return False

    def changed(self, rows: np.ndarray) -> None:
        """Rows whose embedding the owner replaced: logged once (not per kept vector),
        recomputed at each vector's next call."""
        self._log.append(np.asarray(rows, dtype=np.int64))
        if len(self._log) > self.LOG_LIMIT:
            self._compact()

    def _compact(self) -> None:
        """Drop the changes every kept vector has seen; if the log is still long (a vector
        long unused), merge it into one array: a vector that had seen part of it recomputes
        those rows again, the same numbers."""
        end = self._log_start + len(self._log)
        first = min((k.seen for k in self._kept.values()), default=end)
        del self._log[: first - self._log_start]
        self._log_start = first
        if len(self._log) > self.LOG_LIMIT // 2:
            self._log = [np.unique(np.concatenate(self._log))]
            for k in self._kept.values():
                k.seen = self._log_start

    def at(
        self, embeddings: np.ndarray, vector: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """``(embeddings @ vector)[rows]`` as a new float32 array, bit for bit (every row
        when ``rows`` is None)."""
        E = embeddings
        v = np.ascontiguousarray(vector, dtype=np.float32)
        n = len(E)
        end = (n // MATVEC_BLOCK) * MATVEC_BLOCK
        kept = self._bring_up_to_date(E, v, end)
        if rows is None:
            out = np.empty(n, dtype=np.float32)
            out[:end] = kept.products[:end]
            if end < n:
                out[end:] = _tail_products(E, v, np.arange(end, n))
            return out
        rows = np.asarray(rows, dtype=np.int64)
        inner = rows < end
        if inner.all():
            got: np.ndarray = kept.products[rows]
            return got
        out = np.empty(len(rows), dtype=np.float32)
        out[inner] = kept.products[rows[inner]]
        out[~inner] = _tail_products(E, v, rows[~inner])
        return out

    def _bring_up_to_date(self, E: np.ndarray, v: np.ndarray, end: int) -> _Kept:
        """The vector's kept products, valid up to ``end`` (rows in full blocks)."""
        key = v.tobytes()
        logged = self._log_start + len(self._log)
        kept = self._kept.pop(key, None)
        if kept is None:
            kept = _Kept(seen=logged)  # nothing kept yet, so nothing stale
            while len(self._kept) >= self.max_entries:
                del self._kept[next(iter(self._kept))]
        self._kept[key] = kept  # the most recently used last
        if kept.seen < logged:
            rows = np.unique(np.concatenate(self._log[kept.seen - self._log_start :]))
            rows = rows[rows < kept.valid]
            if len(rows):
                kept.products[rows] = rows_matvec(E, rows, v)
            kept.seen = logged
        if kept.valid < end:
            if len(kept.products) < end:  # a quarter more: growth copies stay few and cheap
                grown = np.empty(end + end // 4, dtype=np.float32)
                grown[: kept.valid] = kept.products[: kept.valid]
                kept.products = grown
            # whole blocks from a block boundary: each block's products as the full scan's
            kept.products[kept.valid : end] = E[kept.valid : end] @ v
            kept.valid = end
        return kept
