"""A batch's top-k searches against a store, screened in one matrix product per chunk of the
batch (:class:`BatchScreen`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ranking, similarity

# below this many rows a belief's own full scan costs less than the bounds over every row
# (Personal AI's day: 147 against 114 us per search at 902 rows, 163 against 210 at
# 1,770): the path taken when the rows a vector's shortlist lists do not settle its top-k
BATCH_SCREEN_MIN_ROWS = 1_200
# floats of one chunk's screen products (64 MiB): a large import is screened chunk by chunk
_BATCH_SCREEN_FLOATS = 1 << 24
# rows kept per vector from its chunk's product, best screens first: a top-k of up to ~this
# many live rows is settled by them alone (Personal AI's k is 5)
_SHORTLIST = 16


class _Chunk:
    """One chunk's screen products and, per vector, its shortlist: the ``_SHORTLIST``
    covered rows of the highest screens (live or not), best first, and ``outside``, a
    screen at least that of every covered row left out (-inf when none is), the gap from
    its best screen to every other (``lead_gap``) and its best row's float64 cosine once
    asked (``lead_cosines``); then the rows the store adds, with their screens and each
    vector's highest among them (``added_top``)."""

    __slots__ = (
        "first",
        "stop",
        "version",
        "products",
        "rows",
        "screens",
        "outside",
        "lead_gap",
        "lead_cosines",
        "added",
        "added_top",
    )

    def __init__(self, first: int, version: int, products: np.ndarray) -> None:
        self.first, self.stop, self.version = first, first + len(products), version
        self.products = products
        m, covered = products.shape
        keep = min(_SHORTLIST, covered)
        if covered > keep:  # [:, 0] is the (keep + 1)-th highest screen: the bound outside
            part = np.argpartition(products, covered - keep - 1, axis=1)[:, covered - keep - 1 :]
            screens = np.take_along_axis(products, part, axis=1)
            self.outside = screens[:, 0].astype(np.float64)
            part, screens = part[:, 1:], screens[:, 1:]
        else:
            part = np.broadcast_to(np.arange(covered), (m, covered))
            screens = products
            self.outside = np.full(m, -np.inf)
        order = np.argsort(-screens, axis=1, kind="stable")
        self.rows = np.take_along_axis(part, order, axis=1)
        self.screens = np.take_along_axis(screens, order, axis=1).astype(np.float64)
        # how far each vector's best screen is above every other covered row's, live or not
        # (BatchScreen.best_row's first test; -inf when no row is covered, inf when one is)
        if keep == 0:
            self.lead_gap = np.full(m, -np.inf)
        else:
            second = self.screens[:, 1] if keep > 1 else np.full(m, -np.inf)
            self.lead_gap = self.screens[:, 0] - np.maximum(second, self.outside)
        self.lead_cosines: np.ndarray | None = None  # BatchScreen.cosine, on first use
        # how many rows the store added since, and their screens (BatchScreen._added_screens),
        # and each vector's highest screen among them
        self.added = (0, np.zeros((0, m), dtype=np.float32))
        self.added_top = np.full(m, -np.inf)


def lead_cosine(
    chunk: Any, j: int, E: np.ndarray, given: np.ndarray, leads: Callable[[], np.ndarray]
) -> float:
    """A batch's :func:`similarity.exact_cosines` of vector ``j`` (as ``given``) with its best
    screen's row, computed for the whole ``chunk`` at its first ask (``leads()``: each of
    the chunk's vectors' row) and kept in ``chunk.lead_cosines``: Personal AI reads the
    cosine of the row nearly every belief reinforces, most often that one."""
    if chunk.lead_cosines is None:
        chunk.lead_cosines = similarity.exact_cosines(E[leads()], given[chunk.first : chunk.stop])
    return float(chunk.lead_cosines[j - chunk.first])


class BatchScreen:
    """A batch's vectors (a day's claims, in the order they are decided) compared with the
    store in one matrix product per chunk of them, so that each one's search, when its turn
    comes, reads only the rows that product cannot rule out (the day-batched
    comparison). :meth:`top_rows` gives the full scan's answer bit for bit, whatever the
    decisions before it did to the store: rows added since the chunk's product are always
    compared, the mask is the one at the search, and a stored embedding changed since
    (``MemoryStore.embedding_version``) makes the product again.

    The product's entries are float32 screens of the full scan's products (a matrix-matrix
    product rounds differently from the scan's matrix-vector one, by less than
    ``similarity.screen_margin``), so each row's screen plus the margin bounds its product.
    First the vector's shortlist (its chunk's best screens): when its live rows' screens,
    with those of the rows added since, are apart by more than twice the margin (and the
    tie tolerance) down to the k-th and from everything after it, their order is the full
    scan's top-k, with no product computed (:meth:`best_row`: the first row alone, read
    without gathering the listed rows where it is apart from every other row). Else
    the exact products (``similarity.rows_matvec``, the scan's own numbers) of the listed rows
    within reach of the k-th screen, where no other row can join the k-th product's tie
    chain. Else, from BATCH_SCREEN_MIN_ROWS rows, ``ranking.topk_support`` computes exactly
    the rows whose bounds over the whole store reach that chain."""

    def __init__(self, store: Any, vectors: np.ndarray) -> None:
        self.store = store
        self.given = vectors  # as given, for float64 cosines (cosine)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", self.vectors, self.vectors, dtype=np.float64))
        self.margins = similarity.screen_margins(store.dim, norms)
        # two screens settle an order when they are further apart than this: each is within
        # the margin of its product, and products within TIE_RTOL are a tie
        self.apart = similarity.settled_gap(store.dim, norms)
        self.finite = np.asarray(np.isfinite(self.vectors).all(axis=1))
        self._chunk: _Chunk | None = None

    def _chunk_of(self, j: int) -> _Chunk:
        """The chunk whose product covers vector ``j`` (made again when the store's
        embeddings changed since)."""
        chunk, version = self._chunk, self.store.embedding_version
        if chunk is None or not chunk.first <= j < chunk.stop or chunk.version != version:
            n = self.store.n
            stop = min(len(self.vectors), j + max(1, _BATCH_SCREEN_FLOATS // max(n, 1)))
            products = self.vectors[j:stop] @ self.store.embedding.T  # (vectors, rows)
            chunk = self._chunk = _Chunk(j, version, products)
        return chunk

    def _added_screens(self, chunk: _Chunk) -> tuple[int, np.ndarray]:
        """How many rows the store added since the chunk's product (rows ``covered`` on),
        and their screens with the chunk's vectors (rows, vectors; the array may be longer):
        each added row is compared with them once, when a search first meets it."""
        count, screens = chunk.added
        covered, n = chunk.products.shape[1], self.store.n
        start = covered + count
        if n > start:
            if n - covered > len(screens):  # room for them, doubling
                grown = np.empty((2 * (n - covered), screens.shape[1]), dtype=np.float32)
                grown[:count] = screens[:count]
                screens = grown
            np.matmul(
                self.store.embedding[start:n],
                self.vectors[chunk.first : chunk.stop].T,
                out=screens[count : n - covered],
            )
            np.maximum(
                chunk.added_top, screens[count : n - covered].max(axis=0), out=chunk.added_top
            )
            count = n - covered
            chunk.added = (count, screens)
        return count, screens

    def _listed(
        self, j: int, mask: np.ndarray, chunk: _Chunk, reach: int
    ) -> list[tuple[float, int]]:
        """(screen, row) of vector ``j``'s live listed rows, best first: its shortlist's, and
        of the rows added since the product those within ``apart`` of the ``reach``-th
        listed screen or above it. Every live row left out screens under that mark, or at
        most ``outside`` (the shortlist's), so it cannot change a top-``reach``."""
        i = j - chunk.first
        rows, screens = chunk.rows[i], chunk.screens[i]
        live = mask[rows]
        cand = list(zip(screens[live].tolist(), rows[live].tolist()))
        count, added = self._added_screens(chunk)  # rows added since, with their own screens
        floor = cand[reach - 1][0] - self.apart[j] if len(cand) >= reach else -math.inf
        if count and chunk.added_top[i] >= floor:  # (else none of them reaches the mark)
            covered = chunk.products.shape[1]
            near = np.flatnonzero(added[:count, i] >= floor)
            near = near[mask[covered + near]]
            if len(near):
                cand += zip(added[near, i].tolist(), (covered + near).tolist())
                cand.sort(reverse=True)
        return cand

    def best_row(self, j: int, mask: np.ndarray) -> int | None:
        """The row of vector ``j``'s highest product among the live rows when its screen is
        apart from every other's by more than their rounding (so it is first in the full
        scan's top-k, and first by any other rounding of the same products, float64
        included); None when the screens do not settle it."""
        if not self.finite[j]:
            return None
        chunk = self._chunk_of(j)
        i = j - chunk.first
        # the first listed row live, every other covered row and every added one (live or
        # not) apart under it: settled without gathering the listed rows
        apart = self.apart[j]
        if chunk.lead_gap[i] > apart:
            row = int(chunk.rows[i, 0])
            self._added_screens(chunk)  # (the added rows' highest screens up to date)
            if mask[row] and chunk.added_top[i] < chunk.screens[i, 0] - apart:
                return row
        top = self._shortlisted(j, 1, self._listed(j, mask, chunk, 1), chunk)
        return int(top[0]) if top is not None and len(top) else None

    def cosine(self, j: int, row: int) -> float:
        """``similarity.exact_cosines`` of ``row`` with vector ``j`` as given (float64): for the
        row of each vector's best screen, computed for the whole chunk at once (Personal AI
        reads the cosine of nearly every vector's best row)."""
        chunk = self._chunk_of(j)
        E = self.store.embedding
        if not chunk.rows.shape[1] or row != chunk.rows[j - chunk.first, 0]:
            return similarity.exact_cosine(E, row, self.given[j])
        return lead_cosine(chunk, j, E, self.given, lambda: chunk.rows[:, 0])

    def _shortlisted(
        self, j: int, k: int, cand: list[tuple[float, int]], chunk: _Chunk
    ) -> np.ndarray | None:
        """The full scan's top-k rows for vector ``j`` read off its listed rows ``cand``
        (:meth:`_listed`), or None when their screens do not settle them."""
        outside = float(chunk.outside[j - chunk.first])
        if len(cand) < k and outside != -math.inf:  # fewer live rows than k listed
            return None
        apart = float(self.apart[j])
        # each of the k best apart from the next, the k-th from the best after it, listed
        # or not (an inf - inf or a NaN compares False: not settled)
        after = max(outside, cand[k][0]) if len(cand) > k else outside
        ahead = [c[0] for c in cand[:k]] + [after]
        for x, y in zip(ahead, ahead[1:]):
            if not x - y > apart:
                return None
        return np.array([c[1] for c in cand[:k]], dtype=np.int64)

    def _listed_support(
        self,
        j: int,
        k: int,
        cand: list[tuple[float, int]],
        chunk: _Chunk,
        tiebreak: Callable[[np.ndarray], np.ndarray] | None,
    ) -> np.ndarray | None:
        """The full scan's top-k rows for vector ``j`` from the exact products (the scan's
        own numbers, ``similarity.rows_matvec``) of its listed rows ``cand`` (:meth:`_listed`)
        within reach of the k-th screen, or None when a row not computed could join the
        k-th product's tie chain (a row left out of the shortlist among them)."""
        margin, apart = self.margins[j], self.apart[j]
        # every live row not computed screens at most ``out``: its product is under
        # out + margin (those the listing left out screen under the k-th minus apart too)
        out = float(chunk.outside[j - chunk.first])
        if len(cand) < k:
            if out != -math.inf:
                return None
            near = [r for _, r in cand]
        else:
            reach = cand[k - 1][0] - apart  # the k-th product is at least the k-th screen's
            near = [r for sc, r in cand if sc >= reach]  # minus the margin
            out = max(out, reach)
        rows = np.array(sorted(near), dtype=np.int64)  # topk's ties without keys go low
        products = similarity.rows_matvec(self.store.embedding, rows, self.vectors[j])
        products = products.astype(np.float64)
        at = ranking.topk(products, k, None if tiebreak is None else lambda r: tiebreak(rows[r]))
        if len(at) == k and out > -math.inf:  # the k-th product's tie chain stays above them
            kth = np.partition(products, len(products) - k)[len(products) - k]
            bottom = ranking.tie_chain_bottom(products, float(kth))
            if not bottom - ranking.TIE_RTOL * abs(bottom) > out + margin:
                return None
        top: np.ndarray = rows[at]
        return top

    def top_rows(
        self,
        j: int,
        k: int,
        mask: np.ndarray,
        tiebreak: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray | None:
        """``ranking.topk(np.where(mask, E @ v, -inf).astype(float64), k, tiebreak)`` for
        vector ``j`` of the batch (``tiebreak``: rows to their tie keys), bit for bit; None
        where the shortlist does not settle it below BATCH_SCREEN_MIN_ROWS rows, where the
        caller's own scan is the cheaper."""
        s = self.store
        n = s.n
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        chunk = self._chunk_of(j)
        if self.finite[j]:  # (a NaN screen would not order the listed rows)
            cand = self._listed(j, mask, chunk, k)
            settled = self._shortlisted(j, k, cand, chunk)
            if settled is None:
                settled = self._listed_support(j, k, cand, chunk, tiebreak)
            if settled is not None:
                return settled
        if n < BATCH_SCREEN_MIN_ROWS:
            return None
        screen = chunk.products[j - chunk.first]
        covered = len(screen)
        E, v = s.embedding, self.vectors[j]
        bound = np.full(n, -np.inf)
        np.add(screen, self.margins[j], out=bound[:covered], where=mask[:covered])
        added = covered + np.flatnonzero(mask[covered:])  # rows added since: their products
        bound[added] = similarity.rows_matvec(E, added, v)
        full: list[np.ndarray] = []

        def exact(rows: np.ndarray) -> np.ndarray:
            # many rows near the k-th product (a vector at ~0 with most rows): the whole
            # product, once, costs less than their blocks
            if full or 8 * len(rows) > n:
                if not full:
                    full.append(E @ v)
                products: np.ndarray = full[0][rows]
            else:
                products = similarity.rows_matvec(E, rows, v)
            return products.astype(np.float64)

        rows, scores = ranking.topk_support(bound, exact, k)
        keys = None if tiebreak is None else (lambda i: tiebreak(rows[i]))
        top: np.ndarray = rows[ranking.topk(scores, k, keys)]
        return top
