"""A batch's range searches through a cones :class:`CandidateIndex`, screened a chunk of the
batch at a time (:class:`BatchReach`)."""

from __future__ import annotations

import math

import numpy as np

from . import similarity
from .batch_screen import lead_cosine
from .candidate_index import CandidateIndex
from .cones import Cones

# vectors a BatchReach screens at a time: a batch's later vectors meet the rows its earlier
# ones added through their own products at each turn (Personal AI adds at most a row per
# vector), so a chunk bounds that work as well as its screens' memory
_REACH_CHUNK = 512
# vectors whose limit check a _ReachChunk settles at once while the cones stay as they are
# (they change when the store adds a row: on Personal AI's day 240 once per ~14 beliefs)
_WITHIN_BLOCK = 64


class BatchReach:
    """A batch's range searches through a :class:`CandidateIndex` in mode "cones" (Personal
    AI's reinforcement check over a day's beliefs, decided in order): :meth:`rows_near`
    answers for vector ``j`` at its turn what ``index.rows_near(vectors[j], threshold,
    mask)`` would answer then: None exactly when it would (a store under ``min_rows``; the
    lists to read holding more than half the store, judged by the cones as they are at the
    turn, with their training at the same turns), else every allowed row whose full-scan
    product reaches ``threshold``, ascending, with those products bit for bit
    (:func:`similarity.rows_matvec`), maybe with rows within the screen's margin under it, as
    the index's own answer may hold some: what a decision read off the rows reaching the
    threshold needs, whichever rows under it come along.

    One search at a time reads every list its cone can reach, each one cold (~15 us a list
    on Personal AI's day 240, where one reads ~4 of ~150). A batch reads each list once for
    a chunk of its vectors: their products with the centroids in one matrix product, then
    per list one product with the chunk's vectors that reach it, for the rows stored when
    the chunk is screened; a row the store adds after is multiplied once with the chunk's
    vectors still to come, and the limit check is made for a block of them at once, again
    whenever the cones' lists change. Any BLAS product of unit vectors is within
    :func:`similarity.screen_margin` of the full scan's, so the screens keep every row the
    index's own search keeps (the same thresholds: the cones' bound with its rounding slack,
    and the rows' screen), and the products returned are the full scan's own. A stored
    embedding changed since a chunk was screened (``MemoryStore.embedding_version``)
    screens it again."""

    def __init__(self, index: CandidateIndex, vectors: np.ndarray, threshold: float) -> None:
        self.index = index
        self.given = vectors  # as given, for float64 cosines (cosine)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.threshold = float(threshold)
        self._chunk: _ReachChunk | None = None
        # each vector's similarity.settled_gap (its norm as given, summed in float64: a caller
        # summing it in another order differs by ~1e-13 relative, which the factor covers)
        given = np.asarray(vectors, dtype=np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", given, given))
        self.gaps = similarity.settled_gap(index.store.dim, norms) * (1.0 + 1e-9)

    def rows_near(self, j: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``index.rows_near(vectors[j], threshold, mask)`` at vector ``j``'s turn, as the
        class docstring says."""
        idx = self.index
        if idx.mode != "cones":
            return idx.rows_near(self.vectors[j], self.threshold, mask)
        s = idx.store
        if s.n < idx.min_rows:
            return None
        cones = idx.current_cones()  # (trained and covered at the turn one at a time is)
        v = self.vectors[j]
        radius = self.threshold - similarity.screen_margin(s.dim)
        chunk = self._screened(j, cones, radius)
        i = j - chunk.first
        if not chunk.within(i, cones, radius, s.n // 2):
            # the lists to read as the index reads them: past the limit, it answers None
            if cones.reaching(v, radius, s.n // 2) is None:
                return None
        return idx.allowed_products(chunk.near(i, s.embedding), mask, v)

    def lead(self, j: int, mask: np.ndarray) -> int | None:
        """The row whose full-scan product with vector ``j`` leads, at its turn, every other
        allowed row's in ``rows_near(j, mask)``'s answer and the threshold by more than
        :func:`similarity.settled_gap` of the vector's norm, read off the screens where they
        settle it (no product computed): -1 when that answer holds no row; None when the
        index would answer None or the screens do not settle it (the caller then asks
        :meth:`rows_near`, which decides). Personal AI's reinforcement check reads no more
        than this on most of a day's beliefs."""
        idx = self.index
        s = idx.store
        if idx.mode != "cones" or s.n < idx.min_rows:
            return None
        cones = idx.current_cones()  # (trained and covered at the turn one at a time is)
        radius = self.threshold - similarity.screen_margin(s.dim)
        chunk = self._screened(j, cones, radius)
        i = j - chunk.first
        if not chunk.within(i, cones, radius, s.n // 2):
            return None
        return chunk.lead(i, s.embedding, mask, float(self.gaps[j]), self.threshold)

    def cosine(self, j: int, row: int) -> float:
        """``similarity.exact_cosines`` of ``row`` with vector ``j`` as given (float64): for the
        row of each vector's best screen, computed for its chunk at once (Personal AI reads
        the cosine of the row nearly every belief reinforces, most often that one)."""
        chunk, s = self._chunk, self.index.store
        E = s.embedding
        version = s.embedding_version
        if chunk is not None and chunk.first <= j < chunk.stop and chunk.version == version:
            i = j - chunk.first
            at = chunk.bounds[i]
            if at < chunk.bounds[i + 1] and chunk.hit_rows[at] == row:
                rows, bounds = chunk.rows, chunk.bounds[:-1]

                def firsts() -> np.ndarray:  # (a vector with no row: any row, never read)
                    out: np.ndarray = rows[np.minimum(bounds, len(rows) - 1)]
                    return out

                return lead_cosine(chunk, j, E, self.given, firsts)
        return similarity.exact_cosine(E, row, self.given[j])

    def _screened(self, j: int, cones: Cones, radius: float) -> _ReachChunk:
        """The chunk of vectors from ``j`` on screened against the stored rows through
        ``cones``, kept while it covers ``j`` and no embedding changed."""
        version = self.index.store.embedding_version
        chunk = self._chunk
        if chunk is None or not chunk.first <= j < chunk.stop or chunk.version != version:
            stop = min(len(self.vectors), j + _REACH_CHUNK)
            chunk = self._chunk = _ReachChunk(self.vectors, j, stop, cones, radius, version)
        return chunk


class _ReachChunk:
    """A :class:`BatchReach` chunk: vectors ``first`` .. ``stop`` - 1 screened against the
    ``covered`` rows stored then, through ``cones``: their products with the centroids
    (``centroid_products``, ``norms``) and, per vector, the rows whose screens reach the
    radius minus the rows' margin in the lists its cone reaches (``rows`` by ``bounds``)."""

    __slots__ = (
        "first",
        "stop",
        "version",
        "cones",
        "lists",
        "covered",
        "norms",
        "centroid_products",
        "rows",
        "V",
        "floor",
        "seen",
        "seen_from",
        "later",
        "bounds",
        "hit_rows",
        "hit_screens",
        "lead_cosines",
        "margins",
        "_within_thr",
        "_within_limit",
        "_within_from",
        "_within_ok",
    )

    def __init__(
        self, vectors: np.ndarray, first: int, stop: int, cones: Cones, radius: float, version: int
    ) -> None:
        self.first, self.stop, self.version = first, stop, version
        # (the cones cover every stored row: the caller brought them up to date)
        self.cones, self.lists, self.covered = cones, cones.lists, cones.covered
        V = vectors[first:stop]
        self.norms = np.sqrt(np.einsum("ij,ij->i", V, V, dtype=np.float64))
        self.centroid_products = V @ cones.centroids32[: self.lists].T
        # vector i may find a row of list l only if its product with the centroid reaches
        # l's threshold (as Cones.reaching; the threshold's slack covers any BLAS rounding);
        # a failed embedding's vector (zeros: an infinite threshold times 0) reaches none
        with np.errstate(invalid="ignore"):
            needed = cones.list_thresholds(radius) * self.norms[:, None]
        reach = self.centroid_products >= needed
        who, where = np.nonzero(reach)
        order = np.argsort(where, kind="stable")
        who, where = who[order], where[order]
        starts = np.flatnonzero(np.diff(where, prepend=-1))
        ends = np.append(starts[1:], len(where))
        floor = radius - similarity.SCREEN_MARGIN
        hit_rows, hit_vectors = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        hit_screens = [np.zeros(0, dtype=np.float32)]
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            lst = int(where[lo])
            k = int(cones.size[lst])
            if not k:
                continue
            readers = who[lo:hi]
            screens = cones.vectors[lst][:k] @ V[readers].T  # (rows of the list, readers)
            at_row, at_reader = np.nonzero(screens >= floor)
            hit_rows.append(cones.ids[lst][at_row])
            hit_vectors.append(readers[at_reader])
            hit_screens.append(screens[at_row, at_reader])
        rows, owners = np.concatenate(hit_rows), np.concatenate(hit_vectors)
        screens = np.concatenate(hit_screens)
        order = np.lexsort((-screens, owners))  # each vector's rows, best screen first
        rows, screens = rows[order], screens[order]
        # vector i's rows are rows[bounds[i] : bounds[i + 1]], best screen first (also as
        # Python numbers, with their screens, for :meth:`lead`)
        self.rows = rows
        self.bounds = np.searchsorted(owners[order], np.arange(len(V) + 1)).tolist()
        self.hit_rows, self.hit_screens = rows.tolist(), screens.tolist()
        # each vector's float64 cosine with its best screen's row (BatchReach.cosine)
        self.lead_cosines: np.ndarray | None = None
        self.margins = similarity.screen_margins(V.shape[1], self.norms)
        # rows the store adds after the screen: each compared once with the vectors from
        # ``seen_from`` on (:meth:`near`), the hits (row, screen) kept per vector in ``later``
        self.V, self.floor = V, floor
        self.seen, self.seen_from = self.covered, 0
        self.later: dict[int, list[tuple[int, float]]] = {}
        # the limit check of vectors _within_from .. on (:meth:`within`), with the cones'
        # thresholds (a new array whenever their lists change) and limit it was made with
        self._within_thr: np.ndarray | None = None
        self._within_limit, self._within_from = -1, 0
        self._within_ok = np.zeros(0, dtype=bool)

    def near(self, i: int, E: np.ndarray) -> np.ndarray:
        """The rows vector ``i`` may find in ``E`` (the store's embeddings now): the rows its
        screen found and, of the rows added since, those whose product with it reaches the
        screen's floor. Each added row is multiplied once with the chunk's vectors from
        ``i`` on, in one product; a vector before those (asked out of turn) by its own."""
        found = self.rows[self.bounds[i] : self.bounds[i + 1]]
        if i < self.seen_from:
            added = E[self.covered :] @ self.V[i]
            later = self.covered + np.flatnonzero(added >= self.floor)
            return np.concatenate((found, later))
        extra = self._added(i, E)
        if not extra:
            return found
        return np.concatenate((found, np.asarray([r for r, _ in extra], dtype=np.int64)))

    def _added(self, i: int, E: np.ndarray) -> list[tuple[int, float]]:
        """(row, screen) of the rows added since the screen whose screen with vector ``i``
        (in turn: ``i`` >= ``seen_from``) reaches the floor; the rows added since the last
        call are multiplied with the vectors from ``i`` on at once."""
        n = len(E)
        if n > self.seen:
            products = E[self.seen : n] @ self.V[i:].T  # (rows added, vectors from i)
            at_row, at_vector = np.nonzero(products >= self.floor)
            hits = products[at_row, at_vector].tolist()
            for r, w, sc in zip((self.seen + at_row).tolist(), (i + at_vector).tolist(), hits):
                self.later.setdefault(w, []).append((r, sc))
            self.seen, self.seen_from = n, i
        return self.later.get(i, [])

    def lead(self, i: int, E: np.ndarray, mask: np.ndarray, gap: float, above: float) -> int | None:
        """Vector ``i``'s row (in turn) that the screens show leads every other allowed row
        it may find (:meth:`near`) and ``above`` by more than ``gap`` plus both screens'
        rounding: then its full-scan product leads theirs and ``above`` by more than
        ``gap``; -1 when it may find no allowed row; None when the screens do not settle it,
        the vector is not finite, or it is asked out of turn (its added rows not kept)."""
        margin = float(self.margins[i])
        if not math.isfinite(margin) or i < self.seen_from:
            return None
        row, best, second = -1, -math.inf, -math.inf
        lo, hi = self.bounds[i], self.bounds[i + 1]
        for r, sc in zip(self.hit_rows[lo:hi], self.hit_screens[lo:hi]):  # best first
            if mask[r]:
                if row < 0:
                    row, best = r, sc
                else:
                    second = sc
                    break
        for r, sc in self._added(i, E):
            if mask[r]:
                if sc > best:
                    row, best, second = r, sc, best
                else:
                    second = max(second, sc)
        if row < 0:
            return -1
        if best - margin - max(second + margin, above) > gap:
            return row
        return None

    def within(self, i: int, cones: Cones, radius: float, limit: int) -> bool:
        """Whether the lists vector ``i``'s search reads through ``cones`` now surely hold
        at most ``limit`` rows (then the index answers): the lists its screened centroid
        products reach, with the thresholds and sizes of now, lowered by both products'
        rounding, hold no more. False when that does not settle it, or the cones were
        trained again or grew lists since the screen (the caller then asks them)."""
        if cones is not self.cones or cones.lists != self.lists:
            return False
        thr = cones.list_thresholds(radius)
        at = i - self._within_from
        stale = thr is not self._within_thr or limit != self._within_limit
        if stale or not 0 <= at < len(self._within_ok):
            # the cones changed since (or i not checked yet): the next block of vectors at once
            stop = min(len(self.norms), i + _WITHIN_BLOCK)
            norms, slack = self.norms[i:stop, None], 2.0 * self.margins[i:stop, None]
            with np.errstate(invalid="ignore"):  # a failed embedding's zeros, as in __init__
                reach = self.centroid_products[i:stop] >= thr * norms - slack
            held = reach.astype(np.int64) @ cones.size[: self.lists]
            self._within_thr, self._within_limit, self._within_from = thr, limit, i
            self._within_ok, at = held <= limit, 0
        return bool(self._within_ok[at])
