"""Candidate rows for similarity search over a policy's MemoryStore (:class:`CandidateIndex`),
the settings its modes take, and the indexes the policies' classes default to."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from . import ranking, similarity
from .cones import Cones
from .errors import ParamError, UnknownIdError
from .quantized import faiss_single_thread

# Store size from which the "ivf" candidate mode searches through the index, once asked for
# (`--index mode=ivf`); below it every search is the caller's exact scan. No recall goes
# through it: Izzie's recall through it lost to the exact scan at 30k rows and at the year
# (docs/performance.md: the mock's tie groups), and the opt-in recall mode was removed.
CANDIDATE_MIN_ROWS = 20_000
# Store size from which the per-claim searches of ingest go through the "ivf" index by
# default (Policy.default_index of Personal AI's findSimilarBeliefs): measured on the steady
# year, where it paid and 2,000 paid no more (docs/performance.md); the standard profiles'
# stores stay below it, so they scan exactly.
INGEST_INDEX_MIN_ROWS = 5_000
# read-only: Personal AI's class default
INGEST_INDEX: Mapping[str, Any] = MappingProxyType(
    {"mode": "ivf", "min_rows": INGEST_INDEX_MIN_ROWS}
)
CANDIDATE_MODES = ("exact", "ivf", "cones")
# the share of audited searches or decisions an approximate index may get wrong (at most
# 1% on the standard profiles, or the policy runs exact)
AUDIT_BOUND = 0.01
# The "cones" mode (exact range searches, CandidateIndex.rows_near): lists per square root of
# the store's rows, k-means rounds and training rows per list of its partition, and the
# store size from which it answers. Measured on FSRS's year store (11,917 rows, claim vectors
# of its own stream, docs/performance.md): 1 x sqrt(n) lists read 370-700 rows per search,
# 2 x 110-230 (35-46 us against the full scan's 300-680 us from 5,000 rows on), 3 x no fewer
# at a dearer training; 4 rounds partition about as well as 10 at 40% of the cost.
CONES_PER_ROOT = 2.0
CONES_NITER = 4
CONES_SAMPLE = 32
CONES_MIN_ROWS = 2_000
# A row added after training farther from every centroid than this many times the median
# angle of the training rows to theirs starts a list of its own (up to as many new lists as
# were trained): on actr's year the trained rows lie at 0.73 rad (median) from their
# centroids, 1% of them beyond 1.2; new keys' rows joining old lists widened their cones
# until a search read 4-9 lists (330-840 rows) instead of 2-4
CONES_SPAWN_FACTOR = 4.0 / 3.0
# The reference models' repetition check (a range search at reinforce_cosine): exact, by
# the cones, from CONES_MIN_ROWS rows (read-only: the class default of policies/reference.py)
REPETITION_INDEX: Mapping[str, Any] = MappingProxyType(
    {"mode": "cones", "min_rows": CONES_MIN_ROWS}
)


def check_settings(mode: str, **knobs: Any) -> None:
    """Raise the error :class:`CandidateIndex` raises for these settings (an unknown mode, a
    knob that is not an integer >= 1), without a store: a run's settings are checked before
    its stream is built."""
    if mode not in CANDIDATE_MODES:
        raise UnknownIdError(
            f"unknown candidate index mode {mode!r}; known: {', '.join(CANDIDATE_MODES)}"
        )
    for name, v in knobs.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ParamError(f"candidate index: {name}={v!r} must be an integer >= 1")


class CandidateIndex:
    """Candidate rows for similarity search over a policy's MemoryStore, for large stores.

    ``mode`` "exact" never answers (``candidates`` returns None: the caller scans the whole
    store, its exact path, unchanged). ``mode`` "ivf" answers from ``min_rows`` stored rows
    on: a faiss IndexIVFFlat over the store's embeddings, ids = store rows, kept current
    lazily before each search (new rows added, rows whose embedding changed through
    ``MemoryStore.set_embedding`` removed and added again) and retrained from scratch each
    time the store has doubled since the last training (nlist = sqrt(n), 10 k-means rounds on at
    most 64 x nlist rows drawn with the index's seed). Removed or non-retrievable rows are
    kept out by the caller's mask (a faiss IDSelectorBitmap). faiss runs single-threaded,
    and training is seeded, so the same run gives the same bytes.

    Candidates are only candidates: the caller rescores them by its own formula. The
    exactness audit (:attr:`audit`) counts, on every ``audit_every``-th search, whether the
    caller's final answer from the candidates differs from its exact answer
    (:meth:`audit_due`, :meth:`record`).

    ``mode`` "cones" answers range searches (:meth:`rows_near`) only, from ``min_rows``
    stored rows on, and exactly: the rows are partitioned around CONES_PER_ROOT x sqrt(n)
    k-means centroids (seeded, retrained from scratch when the store has doubled) and a
    search reads only the lists whose cone can hold a row reaching its threshold
    (:class:`Cones`), then rescores what it found as the full scan computes it. Nothing is
    approximate, so nothing is audited; top-k searches scan (``top_rows`` returns None).
    """

    def __init__(
        self,
        store: Any,
        mode: str = "exact",
        *,
        min_rows: int = CANDIDATE_MIN_ROWS,
        nprobe: int = 16,
        seed: int = 0,
        audit_every: int = 10,
    ) -> None:
        check_settings(mode, min_rows=min_rows, nprobe=nprobe, audit_every=audit_every)
        self.store = store
        self.mode = mode
        self.min_rows = min_rows
        self.nprobe = nprobe
        self.seed = int(seed)
        self.audit_every = audit_every
        self.audit: dict[str, int] = {
            "searches": 0,
            "checked": 0,
            "differ": 0,
            "decisions_checked": 0,
            "decisions_differ": 0,
            "trainings": 0,
        }
        self._index: Any = None
        self._cones: Cones | None = None  # mode cones, or rows_reaching's: made on demand
        self._statuses_read = 0  # mode cones: entries of the store's status log read
        # mode cones: the store's (rows, status log entries, embedding version) when the
        # partition was last brought up to date (current_cones)
        self._cones_state: tuple[int, int, int] | None = None
        self._terminal = frozenset(store.statuses.code(name) for name in store.statuses.terminal)
        self._indexed = 0  # rows 0.._indexed-1 are in the index
        self._trained_at = 0
        self._due = 0
        self._no_search_params()
        # the rows whose embedding changed since this index last read them
        self._changes: set[int] = store.track_embedding_changes() if mode != "exact" else set()

    def detach(self) -> None:
        """Stop following the store's embedding changes (an index being replaced)."""
        self.store.untrack_embedding_changes(self._changes)

    # pickling / deepcopy: faiss indexes are SWIG objects
    def __getstate__(self) -> dict[str, Any]:
        import faiss

        state = self.__dict__.copy()
        state.pop("_quantizer", None)  # a deserialized index owns its own
        for swig in ("_bitmap", "_selector", "_params", "_bitmap_mask"):  # made again
            state.pop(swig, None)
        if self._index is not None:
            state["_index"] = faiss.serialize_index(self._index)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import faiss

        if state.get("_index") is not None:
            state["_index"] = faiss.deserialize_index(state["_index"])
        self.__dict__.update(state)
        self._no_search_params()

    def _no_search_params(self) -> None:
        self._bitmap: np.ndarray | None = None
        self._selector: Any = None
        self._params: Any = None
        self._bitmap_used = 0
        self._bitmap_mask: np.ndarray | None = None  # the mask the bitmap holds

    def _search_params(self, mask: np.ndarray) -> Any:
        """faiss search parameters: ``nprobe`` and a bitmap selector of the rows ``mask``
        allows. Kept between searches, the bitmap rewritten in place: making the parameter
        objects costs ~15 us, a quarter of a range search at the year; they are made again
        only when the store outgrows the bitmap (or ``nprobe`` changed). A read-only mask
        that is the last one given (Personal AI keeps its searchable rows so) is not packed
        again."""
        import faiss

        if (
            mask is self._bitmap_mask
            and not mask.flags.writeable  # the same read-only mask: the bitmap holds it
            and self._params.nprobe == self.nprobe
        ):
            return self._params
        packed = np.packbits(mask, bitorder="little")
        buf = self._bitmap
        if buf is None or len(buf) < len(packed) or self._params.nprobe != self.nprobe:
            size = max(len(packed), 0 if buf is None else 2 * len(buf)) + 64
            buf = np.zeros(size, dtype=np.uint8)
            self._selector = faiss.IDSelectorBitmap(len(buf), faiss.swig_ptr(buf))  # bytes
            self._params = faiss.SearchParametersIVF(  # type: ignore[call-arg]
                nprobe=self.nprobe, sel=self._selector
            )
            self._bitmap, self._bitmap_used = buf, 0  # the selector reads it: kept alive
        buf[: len(packed)] = packed
        if self._bitmap_used > len(packed):  # a shorter mask than the last: no stale bits
            buf[len(packed) : self._bitmap_used] = 0
        self._bitmap_used = len(packed)
        self._bitmap_mask = mask
        return self._params

    @property
    def answered(self) -> bool:
        """Whether the index answered a search of this run (its audit then belongs in the
        run's manifest and summary)."""
        return self.audit["searches"] > 0

    @property
    def approximate(self) -> bool:
        """Whether searches now come from the faiss index (mode "ivf", store large enough):
        its answers may differ from the full scan's, so they are audited."""
        return self.mode == "ivf" and self.store.n >= self.min_rows

    def _train(self) -> None:
        import faiss

        s = self.store
        n = s.n
        nlist = max(1, int(math.sqrt(n)))
        take = min(n, 64 * nlist)
        rng = np.random.default_rng([self.seed, n])
        sample = np.sort(rng.choice(n, size=take, replace=False)) if take < n else np.arange(n)
        quantizer = faiss.IndexFlatIP(s.dim)
        index = faiss.IndexIVFFlat(quantizer, s.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = self.seed
        index.cp.niter = 10
        index.cp.min_points_per_centroid = 1  # small stores: no warning, train on what there is
        x = np.ascontiguousarray(s.embedding[sample])
        faiss_single_thread(index.train, x)
        faiss_single_thread(index.add_with_ids, np.ascontiguousarray(s.embedding), np.arange(n))
        self._index = index
        self._quantizer = quantizer  # the IVF index holds it without owning it
        self._indexed = n
        self._trained_at = n
        self._cones = None  # new centroids: partitioned again on demand
        self._changes.clear()
        self.audit["trainings"] += 1

    def sync(self) -> None:
        """Bring the index up to date with the store (see the class docstring)."""
        s = self.store
        if self._index is None or s.n >= 2 * self._trained_at:
            self._train()
            return
        # (most syncs find no change: no generator over an empty set)
        changed = sorted(r for r in self._changes if r < self._indexed) if self._changes else []
        self._changes.clear()
        if changed:
            import faiss

            self._cones = None  # copies of changed rows: partitioned again on demand

            ids = np.asarray(changed, dtype=np.int64)
            self._index.remove_ids(faiss.IDSelectorBatch(ids))
            faiss_single_thread(
                self._index.add_with_ids, np.ascontiguousarray(s.embedding[ids]), ids
            )
        if s.n > self._indexed:
            lo, hi = self._indexed, s.n
            faiss_single_thread(
                self._index.add_with_ids,
                np.ascontiguousarray(s.embedding[lo:hi]),
                np.arange(lo, hi, dtype=np.int64),
            )
            self._indexed = hi

    def candidates(self, vector: np.ndarray, k: int, mask: np.ndarray) -> np.ndarray | None:
        """Up to ``k`` rows allowed by ``mask`` with the highest inner product with
        ``vector`` by the index (best first), or None when the caller must scan exactly."""
        if not self.approximate:
            return None
        self.sync()
        self.audit["searches"] += 1
        if not mask.any() or k < 1:
            return np.zeros(0, dtype=np.int64)
        params = self._search_params(mask)
        q = np.ascontiguousarray(np.asarray(vector, dtype=np.float32)[None, :])
        _, found = faiss_single_thread(lambda: self._index.search(q, int(k), params=params))
        ids = found[0]
        out: np.ndarray = ids[ids >= 0].astype(np.int64)
        return out

    def top_rows(
        self,
        vector: np.ndarray,
        k: int,
        mask: np.ndarray,
        tiebreak: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact scan's answer from the index: ``ranking.topk(np.where(mask, E @ v,
        -inf).astype(float64), k, tiebreak)`` (float32 products held in float64, as the
        callers' scans hold them, so the tie tolerance is computed in float64 in both; ties
        to the lower row, or with ``tiebreak``, a function from rows to their tie keys, ties
        within TIE_RTOL in key order as the caller's exact scan breaks them) and those
        products, bit for bit, whenever the probed lists hold every row within SCREEN_MARGIN
        of the k-th product; None when the caller must scan (exact mode, small store).

        The k nearest candidates give the k-th product; every row above it minus the margin
        is then collected (a whole group of tied rows, which a k-nearest search would cut
        anywhere): from the same search, which asks for 2k + 4 rows, when its last row is
        under that bound, else by a range search; and :func:`similarity.rows_matvec` rescores
        them with exactly the numbers of the full product."""
        if not self.approximate:
            return None
        self.sync()
        self.audit["searches"] += 1
        E = self.store.embedding
        v = np.ascontiguousarray(np.asarray(vector, dtype=np.float32))
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if k < 1 or not mask.any():
            return empty
        params = self._search_params(mask)
        q = v[None, :]
        wide = 2 * k + 4  # nearest rows asked for: usually enough to skip the range search
        dist, found = faiss_single_thread(lambda: self._index.search(q, wide, params=params))
        got = found[0] >= 0
        nearest, nearest_ips = found[0][got].astype(np.int64), dist[0][got]
        if len(nearest) < k:  # the probed lists hold fewer than k allowed rows: scan
            sims = np.where(mask, E @ v, -np.inf).astype(np.float32)
            top = ranking.topk(sims.astype(np.float64), k, tiebreak)
            return top, sims[top]
        # the full scan's products of the first k nearest rows give the k-th; the nearest
        # rows hold every row the answer needs unless a range search must widen them
        products = similarity.rows_matvec(E, nearest[:k], v)
        kth = float(products.min())
        radius = kth - similarity.SCREEN_MARGIN
        if len(nearest) < wide or nearest_ips[-1] < radius:
            # every probed row above the radius is among the nearest (the last of them is
            # below it, or they are every allowed row of the probed lists): the range
            # search's rows, with any row exactly at the radius too (far under the k-th
            # product, it never enters the top k), and the first k
            near = nearest_ips >= radius
            near[:k] = True
            picked = nearest[near]  # the first k, then those of the others near the k-th,
            if len(picked) > k:  # which alone are rescored (a row's product is the same
                # whichever rows are rescored with it: similarity.rows_matvec)
                more = similarity.rows_matvec(E, picked[k:], v)
                products = np.concatenate((products, more))
            # ascending, so ties go to the lower row (np.unique's sort when faiss gave a
            # row twice: it costs ~10 us more per search than a stable sort of a dozen rows)
            first = np.argsort(picked, kind="stable")
            rows = picked[first]
            if len(rows) > 1 and not (rows[1:] > rows[:-1]).all():
                rows, first = np.unique(picked, return_index=True)
            sims = products[first]
        else:  # a group of rows near the k-th product larger than the search's width
            _, _, wider = faiss_single_thread(
                lambda: self._index.range_search(q, radius, params=params)
            )
            rows = np.union1d(nearest[:k], wider.astype(np.int64))  # ascending, as above
            sims = similarity.rows_matvec(E, rows, v)
        keys = None if tiebreak is None else (lambda i: tiebreak(rows[i]))
        local = ranking.topk(sims.astype(np.float64), k, keys)
        return rows[local], sims[local]

    def rows_near(
        self, vector: np.ndarray, threshold: float, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Every row allowed by ``mask`` in the probed lists whose product with ``vector`` is
        within :func:`similarity.screen_margin` under ``threshold`` or above (faiss's own
        products, screened), ascending, with its float32 product ``(E @ v)[row]`` as the
        full scan computes it, bit for bit (:func:`similarity.rows_matvec`); None when the
        caller must scan (exact mode, small store). One range search: whenever the full
        scan's best row reaches ``threshold`` and the probed lists hold it, the ``argmax``
        of these products (ties to the lower row) is that row with that product; a row
        reaches ``threshold`` here only if it does in the full scan. In mode "cones" every
        list that can hold such a row is read, so the argmax is the full scan's whenever its
        best reaches ``threshold`` (None, the caller's scan, when those lists hold more than
        half the store)."""
        if self.mode == "cones":
            if self.store.n < self.min_rows:
                return None
            return self._reaching(self.current_cones(), vector, threshold, mask, exact=False)
        if not self.approximate:
            return None
        self.sync()
        self.audit["searches"] += 1
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not mask.any():
            return empty
        v = np.ascontiguousarray(np.asarray(vector, dtype=np.float32))
        params = self._search_params(mask)
        radius = float(threshold) - similarity.screen_margin(self.store.dim)
        _, _, near = faiss_single_thread(
            lambda: self._index.range_search(v[None, :], radius, params=params)
        )
        if not len(near):
            return empty
        rows = np.unique(near.astype(np.int64)) if len(near) > 1 else near.astype(np.int64)
        return rows, similarity.rows_matvec(self.store.embedding, rows, v)

    def catch_up(self) -> None:
        """What a range search does to the index before it reads, without searching (mode
        "cones": the partition trained again, extended, rows dropped, as the store asks): a
        caller that takes a decision without the search it takes at other times keeps the
        index (its partition, its audit's trainings) as it would be had it searched."""
        if self.mode == "cones" and self.store.n >= self.min_rows:
            self.current_cones()

    def rows_reaching(
        self, vector: np.ndarray, threshold: float, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The full scan's side of :meth:`rows_near`, exact and without scanning every row:
        every row allowed by ``mask`` whose full-scan float32 product with ``vector``
        reaches ``threshold`` (and maybe some within :func:`similarity.screen_margin` under it),
        ascending, with those products bit for bit (:func:`similarity.rows_matvec`); None when
        the caller must scan (exact mode, small store). Only the lists of a partition of
        the rows around the index's centroids whose cone can hold such a row are read
        (:class:`Cones`), whichever lists a search would probe. Not counted as a search:
        this is what the audit compares the index's answer with."""
        if not self.approximate:
            return None
        self.sync()
        if self._cones is None:
            self._cones = Cones(self._index.quantizer.reconstruct_n(0, self._index.nlist))
        self._cones.cover(self.store.embedding)
        return self._reaching(self._cones, vector, threshold, mask, exact=True)

    def _reaching(
        self, cones: Cones, vector: np.ndarray, threshold: float, mask: np.ndarray, exact: bool
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`rows_reaching` through ``cones`` (covering every row); unless ``exact``
        (every list read), None when the lists to read hold more than half the store (the
        full scan costs less)."""
        v = np.ascontiguousarray(np.asarray(vector, dtype=np.float32))
        radius = float(threshold) - similarity.screen_margin(self.store.dim)
        near = cones.rows_above(v, radius, None if exact else self.store.n // 2)
        if near is None:
            return None
        return self.allowed_products(near, mask, v)

    def allowed_products(
        self, near: np.ndarray, mask: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``near`` that ``mask`` allows, ascending, with their full-scan float32
        products with ``v`` bit for bit (:func:`similarity.rows_matvec`)."""
        allowed = near[near < len(mask)]
        rows = np.sort(allowed[mask[allowed]])
        return rows, similarity.rows_matvec(self.store.embedding, rows, v)

    def current_cones(self) -> Cones:
        """Mode "cones": the partition of the store's rows, trained again from scratch when
        the store has doubled since the last training or a covered row's embedding changed
        (no policy that searches in this mode changes one), every row in it, and none in a
        terminal status: such a row is never retrievable and never leaves that status, so
        no search of retrievable rows can find it (over a decade most of a reference
        model's rows have decayed, and reading them cost more than faiss's bitmap)."""
        s, cones = self.store, self._cones
        # nothing the partition follows changed since the last call (its rows, their
        # statuses, their embeddings): as it was (Personal AI asks at each belief's turn)
        state = (s.n, len(s.status_log), s.embedding_version)
        if cones is not None and state == self._cones_state:
            return cones
        # (rows not yet covered: their new embeddings are read when they are)
        stale = cones is not None and any(r < cones.covered for r in self._changes)
        if cones is None or s.n >= 2 * self._trained_at or stale:
            centroids = self._cone_centroids()
            cones = Cones(centroids, spare=len(centroids), spawn_factor=CONES_SPAWN_FACTOR)
            self._cones, self._trained_at = cones, s.n
            self.audit["trainings"] += 1
            self._statuses_read = 0  # new lists: every terminal row of the log leaves them
        self._changes.clear()
        cones.cover(s.embedding)
        log = s.status_log
        if len(log) > self._statuses_read:
            if self._terminal:
                ended = [r for _, r, code in log[self._statuses_read :] if code in self._terminal]
                if ended:
                    cones.drop(np.asarray(ended, dtype=np.int64))
            self._statuses_read = len(log)
        self._cones_state = state
        return cones

    def _cone_centroids(self) -> np.ndarray:
        """CONES_PER_ROOT x sqrt(n) spherical k-means centroids of the store's rows:
        CONES_NITER rounds on at most CONES_SAMPLE rows per centroid drawn with the index's
        seed, single-threaded (the same bytes every run)."""
        import faiss

        s = self.store
        n = s.n
        k = max(1, min(n, int(CONES_PER_ROOT * math.sqrt(n))))  # (n < 4: one per row)
        take = min(n, CONES_SAMPLE * k)
        rng = np.random.default_rng([self.seed, n])
        sample = np.sort(rng.choice(n, size=take, replace=False)) if take < n else np.arange(n)
        kmeans = faiss.Kmeans(
            s.dim,
            k,
            niter=CONES_NITER,
            seed=self.seed,
            spherical=True,
            min_points_per_centroid=1,  # no warning when few rows per centroid
            max_points_per_centroid=CONES_SAMPLE,  # sampled above
        )
        faiss_single_thread(kmeans.train, np.ascontiguousarray(s.embedding[sample]))
        return np.asarray(kmeans.centroids)

    def audit_due(self) -> bool:
        """Whether the caller should also compute its exact answer for this search (every
        ``audit_every``-th approximate search, counted deterministically)."""
        if not self.approximate:
            return False
        self._due += 1
        return (self._due - 1) % self.audit_every == 0

    def record(self, differs: bool, decision: bool = False) -> None:
        """One audited comparison: a query's top-k (or, ``decision``, an ingest decision)
        from the candidates differed (True) from the exact one or not."""
        pre = "decisions_" if decision else ""
        self.audit[f"{pre}checked"] += 1
        self.audit[f"{pre}differ"] += int(bool(differs))

    def summary(self) -> dict[str, Any]:
        """The audit as written to a run's manifest and summary. A share of which nothing was
        audited is NaN, not 0 (every policy's recall, which scans exactly): a mean over
        runs then skips it."""
        a = self.audit
        return {
            "mode": self.mode,
            "min_rows": self.min_rows,
            "nprobe": self.nprobe,
            "audit_every": self.audit_every,
            **a,
            "query_differ_share": a["differ"] / a["checked"] if a["checked"] else math.nan,
            "decision_differ_share": (
                a["decisions_differ"] / a["decisions_checked"]
                if a["decisions_checked"]
                else math.nan
            ),
        }
