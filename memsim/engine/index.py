"""Vector indexes for recall: exact numpy search and faiss (flat, HNSW, IVF).

All indexes score by inner product of unit rows (= cosine). Rows get ids 0..n-1 in the
order they are added, which matches MemoryStore row ids when a policy adds every stored
embedding. ``search`` takes an optional boolean ``mask`` over the rows: masked-out rows are
never returned (statuses that are not retrievable, a kind filter, ...).

Results: ``(sims (q, k) float32, ids (q, k) int64)``, best first, padded with ``-inf`` /
``-1`` when fewer than k rows qualify.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from . import kernels
from .errors import ParamError, UnknownIdError, VectorError
from .kernels import batch_topk
from .store import as_unit_vectors


@runtime_checkable
class VectorIndex(Protocol):
    dim: int

    def add(self, vectors: np.ndarray) -> None:
        """Append unit rows (m, dim); they get the next ids in order."""

    def search(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows per query: (sims (q, k) float32, ids (q, k) int64), best first."""

    def __len__(self) -> int: ...


def _queries(queries: Any, dim: int) -> np.ndarray:
    q = np.asarray(queries, dtype=np.float32)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[1] != dim:
        raise VectorError(
            f"index search: queries must have shape (q, {dim}), got {np.shape(queries)}"
        )
    if not np.isfinite(q).all():
        raise VectorError("index search: a query has a NaN or infinite value")
    return np.ascontiguousarray(q)


def _mask(mask: Any, n: int) -> np.ndarray | None:
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.dtype != bool or m.shape != (n,):
        raise VectorError(
            f"index search: mask must be a boolean array of shape ({n},), got {m.dtype} {m.shape}"
        )
    return m


def _empty(q: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((q, k), -np.inf, dtype=np.float32), np.full((q, k), -1, dtype=np.int64)


class _Rows:
    """A growable float32 matrix (amortized doubling)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.n = 0
        self._buf = np.zeros((16, dim), dtype=np.float32)

    def append(self, rows: np.ndarray) -> None:
        need = self.n + len(rows)
        if need > len(self._buf):
            cap = len(self._buf)
            while cap < need:
                cap *= 2
            grown = np.zeros((cap, self.dim), dtype=np.float32)
            grown[: self.n] = self._buf[: self.n]
            self._buf = grown
        self._buf[self.n : need] = rows
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self._buf[: self.n]


class ExactIndex:
    """Exact inner-product search in numpy: one matrix product for all queries, top-k by
    :func:`memsim.engine.kernels.batch_topk` (ties go to the lower id)."""

    kind = "exact"

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParamError(f"ExactIndex: dim must be an integer >= 1, got {dim!r}")
        self.dim = dim
        self._rows = _Rows(dim)

    def __len__(self) -> int:
        return self._rows.n

    def add(self, vectors: np.ndarray) -> None:
        v = as_unit_vectors(vectors, self.dim, "index vectors")
        self._rows.append(v)

    @property
    def vectors(self) -> np.ndarray:
        return self._rows.view

    def nbytes(self) -> int:
        return int(self._rows._buf.nbytes)

    def search(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        q = _queries(queries, self.dim)
        n = len(self)
        m = _mask(mask, n)
        k = max(0, int(k))
        sims_out, ids_out = _empty(len(q), k)
        if n == 0 or k == 0 or len(q) == 0:
            return sims_out, ids_out
        E = self._rows.view
        if m is not None and m.sum() * 2 < n:
            # sparse mask: score only the allowed rows (ids stay increasing, so ties agree)
            rows = np.flatnonzero(m)
            if len(rows) == 0:
                return sims_out, ids_out
            sims = q @ E[rows].T
            local = batch_topk(sims, k)
            ok = local >= 0
            ids_out[ok] = rows[local[ok]]
            sims_out[ok] = np.take_along_axis(sims, np.where(ok, local, 0), axis=1)[ok]
            return sims_out, ids_out
        sims = q @ E.T
        if m is not None:
            sims[:, ~m] = -np.inf
        ids = batch_topk(sims, k)
        ok = ids >= 0
        ids_out[ok] = ids[ok]
        sims_out[ok] = np.take_along_axis(sims, np.where(ok, ids, 0), axis=1)[ok]
        return sims_out, ids_out


class FaissIndex:
    """faiss inner-product index: ``kind`` "flat" (exact), "hnsw" or "ivf".

    Knobs: HNSW ``M`` (32), ``ef_construction`` (80), ``ef_search`` (64); IVF ``nlist``
    (100), ``nprobe`` (8), ``min_train`` (39 * nlist, faiss's advice). An IVF index needs
    training: until ``min_train`` vectors have arrived it answers by exact search over
    them, then trains its coarse quantizer on all of them and switches to IVF.

    Masks become a faiss ``IDSelectorBitmap`` in the search parameters, so masked rows
    are never returned (HNSW may then return fewer than k rows when the mask is very
    selective: the graph walk only visits so many nodes). Training and adding run with one
    OpenMP thread, so the index built from the same vectors is identical on every run
    (HNSW construction is order dependent under threads); searches use all threads.
    Ties between equal scores come back in faiss's order, not necessarily lower id first.
    """

    KNOBS: ClassVar[dict[str, dict[str, int | None]]] = {
        "flat": {},
        "hnsw": {"M": 32, "ef_construction": 80, "ef_search": 64},
        "ivf": {"nlist": 100, "nprobe": 8, "min_train": None},
    }

    def __init__(self, dim: int, kind: str = "hnsw", **knobs: Any) -> None:
        import faiss  # imported here so memsim works without faiss for the exact index

        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParamError(f"FaissIndex: dim must be an integer >= 1, got {dim!r}")
        if kind not in self.KNOBS:
            raise UnknownIdError(
                f"unknown faiss index kind {kind!r}; known: {', '.join(self.KNOBS)}"
            )
        unknown = sorted(set(knobs) - set(self.KNOBS[kind]))
        if unknown:
            raise ParamError(
                f"faiss-{kind} index has no knob {unknown[0]!r}; "
                f"known: {', '.join(self.KNOBS[kind]) or '(none)'}"
            )
        cfg: dict[str, Any] = {**self.KNOBS[kind], **knobs}
        for name, value in cfg.items():
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ParamError(
                    f"faiss-{kind} index: knob {name}={value!r} must be an integer >= 1"
                )
        if kind == "ivf" and cfg["min_train"] is None:
            cfg["min_train"] = 39 * cfg["nlist"]
        if kind == "ivf" and cfg["min_train"] < cfg["nlist"]:
            raise ParamError(
                f"faiss-ivf index: min_train={cfg['min_train']} must be >= nlist={cfg['nlist']}"
            )
        self.dim = dim
        self.kind = f"faiss-{kind}"
        self._kind = kind
        self.knobs = cfg
        self._n = 0
        self._pending: _Rows | None = _Rows(dim) if kind == "ivf" else None
        self._index = self._build(faiss)

    def _build(self, faiss: Any) -> Any:  # faiss module in, a faiss index out
        cfg, ip = self.knobs, faiss.METRIC_INNER_PRODUCT
        if self._kind == "flat":
            return faiss.IndexFlatIP(self.dim)
        if self._kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, cfg["M"], ip)
            index.hnsw.efConstruction = cfg["ef_construction"]
            index.hnsw.efSearch = cfg["ef_search"]
            return index
        self._quantizer = faiss.IndexFlatIP(self.dim)
        return faiss.IndexIVFFlat(self._quantizer, self.dim, cfg["nlist"], ip)

    def __len__(self) -> int:
        return self._n

    def __getstate__(self) -> dict[str, Any]:
        import faiss

        state = self.__dict__.copy()
        state["_index"] = faiss.serialize_index(self._index)
        state.pop("_quantizer", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import faiss

        state["_index"] = faiss.deserialize_index(state["_index"])
        self.__dict__.update(state)

    @property
    def trained(self) -> bool:
        return self._pending is None

    def _single_thread(self, fn: Callable[..., object], *args: Any) -> None:
        import faiss

        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            fn(*args)
        finally:
            faiss.omp_set_num_threads(threads)

    def add(self, vectors: np.ndarray) -> None:
        v = np.ascontiguousarray(as_unit_vectors(vectors, self.dim, "index vectors"))
        if len(v) == 0:
            return
        self._n += len(v)
        if self._pending is not None:
            self._pending.append(v)
            if self._pending.n >= self.knobs["min_train"]:
                allv = np.ascontiguousarray(self._pending.view)
                self._single_thread(self._index.train, allv)
                self._single_thread(self._index.add, allv)
                self._pending = None
            return
        self._single_thread(self._index.add, v)

    def nbytes(self) -> int:
        import faiss

        pending = self._pending._buf.nbytes if self._pending is not None else 0
        return int(faiss.serialize_index(self._index).nbytes + pending)

    def search(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        q = _queries(queries, self.dim)
        m = _mask(mask, self._n)
        k = max(0, int(k))
        if self._n == 0 or k == 0 or len(q) == 0 or (m is not None and not m.any()):
            return _empty(len(q), k)
        if self._pending is not None:  # untrained IVF: exact search over what has arrived
            exact = ExactIndex(self.dim)
            exact._rows = self._pending
            return exact.search(q, k, m)
        params: Any = None
        bitmap = None
        if m is not None:
            bitmap = np.packbits(m, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))  # bytes
        else:
            sel = None
        if self._kind == "hnsw":
            # faiss's bundled stubs lack SearchParametersHNSW
            params = faiss.SearchParametersHNSW(  # type: ignore[attr-defined]
                efSearch=max(self.knobs["ef_search"], k)
            )
        elif self._kind == "ivf":
            # faiss's bundled stubs lack the nprobe keyword of SearchParametersIVF
            params = faiss.SearchParametersIVF(nprobe=self.knobs["nprobe"])  # type: ignore[call-arg]
        elif sel is not None:
            params = faiss.SearchParameters()
        if sel is not None:
            params.sel = sel
        kk = min(k, self._n)
        sims, ids = self._index.search(q, kk, params=params)
        del bitmap  # kept alive until the search returned
        sims_out, ids_out = _empty(len(q), k)
        ok = ids >= 0
        ids_out[:, :kk][ok] = ids[ok]
        sims_out[:, :kk][ok] = sims[ok]
        return sims_out, ids_out


INDEX_KINDS = ("exact", "faiss-flat", "faiss-hnsw", "faiss-ivf")


def make_index(kind: str, dim: int, **knobs: Any) -> VectorIndex:
    """An empty index of ``kind`` (one of INDEX_KINDS) for ``dim``-dimensional unit rows."""
    if kind == "exact":
        if knobs:
            raise ParamError(f"exact index takes no knobs, got {', '.join(sorted(knobs))}")
        return ExactIndex(dim)
    if kind in INDEX_KINDS:
        return FaissIndex(dim, kind.removeprefix("faiss-"), **knobs)
    raise UnknownIdError(f"unknown index kind {kind!r}; known: {', '.join(INDEX_KINDS)}")


# -- candidate index over a MemoryStore (issue 16) ------------------------------------------

# Store size from which the "ivf" candidate mode searches through the index; below it every
# search is the caller's exact scan. On the steady synthetic stream the index lost to the
# exact scan at 30k rows and at the year for Izzie (docs/performance.md: the mock's tie
# groups), so for recall the mode is opt-in and this is only where it starts once asked for.
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
# the share of audited searches or decisions an approximate index may get wrong (issue 16:
# at most 1% on the standard profiles, or the policy runs exact)
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
    (:class:`_Cones`), then rescores what it found as the full scan computes it. Nothing is
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
        self._cones: _Cones | None = None  # mode cones, or rows_reaching's: made on demand
        self._statuses_read = 0  # mode cones: entries of the store's status log read
        # mode cones: the store's (rows, status log entries, embedding version) when the
        # partition was last brought up to date (_current_cones)
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
        _single_thread(index.train, x)
        _single_thread(index.add_with_ids, np.ascontiguousarray(s.embedding), np.arange(n))
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
            _single_thread(self._index.add_with_ids, np.ascontiguousarray(s.embedding[ids]), ids)
        if s.n > self._indexed:
            lo, hi = self._indexed, s.n
            _single_thread(
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
        _, found = _single_thread(lambda: self._index.search(q, int(k), params=params))
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
        """The exact scan's answer from the index: ``kernels.topk(np.where(mask, E @ v,
        -inf).astype(float64), k, tiebreak)`` (float32 products held in float64, as the
        callers' scans hold them, so the tie tolerance is computed in float64 in both; ties
        to the lower row, or with ``tiebreak``, a function from rows to their tie keys, ties
        within TIE_RTOL in key order as the caller's exact scan breaks them) and those
        products, bit for bit, whenever the probed lists hold every row within SCREEN_MARGIN
        of the k-th product; None when the caller must scan (exact mode, small store).

        The k nearest candidates give the k-th product; every row above it minus the margin
        is then collected (a whole group of tied rows, which a k-nearest search would cut
        anywhere): from the same search, which asks for 2k + 4 rows, when its last row is
        under that bound, else by a range search; and :func:`kernels.rows_matvec` rescores
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
        dist, found = _single_thread(lambda: self._index.search(q, wide, params=params))
        got = found[0] >= 0
        nearest, nearest_ips = found[0][got].astype(np.int64), dist[0][got]
        if len(nearest) < k:  # the probed lists hold fewer than k allowed rows: scan
            sims = np.where(mask, E @ v, -np.inf).astype(np.float32)
            top = kernels.topk(sims.astype(np.float64), k, tiebreak)
            return top, sims[top]
        # the full scan's products of the first k nearest rows give the k-th; the nearest
        # rows hold every row the answer needs unless a range search must widen them
        products = kernels.rows_matvec(E, nearest[:k], v)
        kth = float(products.min())
        radius = kth - kernels.SCREEN_MARGIN
        if len(nearest) < wide or nearest_ips[-1] < radius:
            # every probed row above the radius is among the nearest (the last of them is
            # below it, or they are every allowed row of the probed lists): the range
            # search's rows, with any row exactly at the radius too (far under the k-th
            # product, it never enters the top k), and the first k
            near = nearest_ips >= radius
            near[:k] = True
            picked = nearest[near]  # the first k, then those of the others near the k-th,
            if len(picked) > k:  # which alone are rescored (a row's product is the same
                # whichever rows are rescored with it: kernels.rows_matvec)
                more = kernels.rows_matvec(E, picked[k:], v)
                products = np.concatenate((products, more))
            # ascending, so ties go to the lower row (np.unique's sort when faiss gave a
            # row twice: it costs ~10 us more per search than a stable sort of a dozen rows)
            first = np.argsort(picked, kind="stable")
            rows = picked[first]
            if len(rows) > 1 and not (rows[1:] > rows[:-1]).all():
                rows, first = np.unique(picked, return_index=True)
            sims = products[first]
        else:  # a group of rows near the k-th product larger than the search's width
            _, _, wider = _single_thread(lambda: self._index.range_search(q, radius, params=params))
            rows = np.union1d(nearest[:k], wider.astype(np.int64))  # ascending, as above
            sims = kernels.rows_matvec(E, rows, v)
        keys = None if tiebreak is None else (lambda i: tiebreak(rows[i]))
        local = kernels.topk(sims.astype(np.float64), k, keys)
        return rows[local], sims[local]

    def rows_near(
        self, vector: np.ndarray, threshold: float, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Every row allowed by ``mask`` in the probed lists whose product with ``vector`` is
        within :func:`kernels.screen_margin` under ``threshold`` or above (faiss's own
        products, screened), ascending, with its float32 product ``(E @ v)[row]`` as the
        full scan computes it, bit for bit (:func:`kernels.rows_matvec`); None when the
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
            return self._reaching(self._current_cones(), vector, threshold, mask, exact=False)
        if not self.approximate:
            return None
        self.sync()
        self.audit["searches"] += 1
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not mask.any():
            return empty
        v = np.ascontiguousarray(np.asarray(vector, dtype=np.float32))
        params = self._search_params(mask)
        radius = float(threshold) - kernels.screen_margin(self.store.dim)
        _, _, near = _single_thread(
            lambda: self._index.range_search(v[None, :], radius, params=params)
        )
        if not len(near):
            return empty
        rows = np.unique(near.astype(np.int64)) if len(near) > 1 else near.astype(np.int64)
        return rows, kernels.rows_matvec(self.store.embedding, rows, v)

    def catch_up(self) -> None:
        """What a range search does to the index before it reads, without searching (mode
        "cones": the partition trained again, extended, rows dropped, as the store asks): a
        caller that takes a decision without the search it takes at other times keeps the
        index (its partition, its audit's trainings) as it would be had it searched."""
        if self.mode == "cones" and self.store.n >= self.min_rows:
            self._current_cones()

    def rows_reaching(
        self, vector: np.ndarray, threshold: float, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The full scan's side of :meth:`rows_near`, exact and without scanning every row:
        every row allowed by ``mask`` whose full-scan float32 product with ``vector``
        reaches ``threshold`` (and maybe some within :func:`kernels.screen_margin` under it),
        ascending, with those products bit for bit (:func:`kernels.rows_matvec`); None when
        the caller must scan (exact mode, small store). Only the lists of a partition of
        the rows around the index's centroids whose cone can hold such a row are read
        (:class:`_Cones`), whichever lists a search would probe. Not counted as a search:
        this is what the audit compares the index's answer with."""
        if not self.approximate:
            return None
        self.sync()
        if self._cones is None:
            self._cones = _Cones(self._index.quantizer.reconstruct_n(0, self._index.nlist))
        self._cones.cover(self.store.embedding)
        return self._reaching(self._cones, vector, threshold, mask, exact=True)

    def _reaching(
        self, cones: _Cones, vector: np.ndarray, threshold: float, mask: np.ndarray, exact: bool
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`rows_reaching` through ``cones`` (covering every row); unless ``exact``
        (every list read), None when the lists to read hold more than half the store (the
        full scan costs less)."""
        v = np.ascontiguousarray(np.asarray(vector, dtype=np.float32))
        radius = float(threshold) - kernels.screen_margin(self.store.dim)
        near = cones.rows_above(v, radius, None if exact else self.store.n // 2)
        if near is None:
            return None
        return self._allowed_products(near, mask, v)

    def _allowed_products(
        self, near: np.ndarray, mask: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``near`` that ``mask`` allows, ascending, with their full-scan float32
        products with ``v`` bit for bit (:func:`kernels.rows_matvec`)."""
        allowed = near[near < len(mask)]
        rows = np.sort(allowed[mask[allowed]])
        return rows, kernels.rows_matvec(self.store.embedding, rows, v)

    def _current_cones(self) -> _Cones:
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
            cones = _Cones(centroids, spare=len(centroids), spawn_factor=CONES_SPAWN_FACTOR)
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
        _single_thread(kmeans.train, np.ascontiguousarray(s.embedding[sample]))
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
        audited is NaN, not 0 (Izzie's ingest, the reference models' recall): a mean over
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


# Angles (radians) the cone bound gives away to the rounding of arccos of float64 products
# of float32 unit vectors (off by ~1e-7 at most): far more than that, far less than matters.
_CONE_ANGLE_SLACK = 1e-6
# What a query's float32 products with the unit centroids may be off from the exact ones:
# summation error of at most dim x 2**-24 x sum |u_i q_i| <= 2.3e-5 at 384 dimensions for unit
# vectors, and the centroids' rounding to float32; the threshold a product is compared with
# is lowered by this much (a list read for nothing now and then, never one skipped wrongly).
_CONE_PRODUCT_SLACK = 1e-4
# rows put into their lists at a time (_Cones.cover)
_COVER_ROWS = 4096


class _Cones:
    """The store's rows partitioned around unit centroids, each row in its nearest
    centroid's list (any partition would do: only speed depends on it), with per list the
    largest angle between the centroid and a row of it, and the list's rows copied
    contiguously. A row x of a list with centroid u and largest angle A, and a unit query q,
    have angle(x, q) >= angle(q, u) - A (the triangle inequality of angles), so
    x . q <= cos(max(0, angle(q, u) - A)): a list whose bound stays under a threshold holds
    no row reaching it and is not read. Equivalently, with the angles on the left at most
    pi: a list can hold a row reaching r only if q . u >= cos(A + arccos r), a threshold per
    list and r computed once (until the list grows), so a query costs one product with the
    centroids and a comparison.

    With ``spare`` > 0, a row farther from every centroid than ``spawn_factor`` x the median
    angle of the first rows covered (those the centroids were trained on) is the centroid
    of a new list, up to ``spare`` new lists: rows unlike any the centroids were trained on
    would otherwise widen a list's cone until most queries read it."""

    def __init__(self, centroids: np.ndarray, spare: int = 0, spawn_factor: float = 0.0) -> None:
        c = np.asarray(centroids, dtype=np.float64)
        m, dim = c.shape
        cap = m + spare
        self.centroids = np.zeros((cap, dim))
        self.centroids[:m] = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-300)
        self.centroids32 = self.centroids.astype(np.float32)
        self.lists = int(m)  # centroids in use: the first ones of the arrays
        self.spawn_factor = spawn_factor
        self.spawn_angle = math.inf  # set by the first cover when spare > 0
        self._thresholds: dict[float, np.ndarray] = {}  # per radius, until cover() adds rows
        self.covered = 0  # rows 0..covered-1 are in the lists
        self.size = np.zeros(cap, dtype=np.int64)
        self.ids = [np.zeros(0, dtype=np.int64) for _ in range(cap)]
        self.vectors = [np.zeros((0, dim), dtype=np.float32) for _ in range(cap)]
        self.widest = np.zeros(cap)  # largest angle of a row of each list (0: empty)
        self.owner = np.zeros(0, dtype=np.int64)  # each covered row's list (-1: dropped)

    def drop(self, rows: np.ndarray) -> None:
        """Take covered ``rows`` out of their lists for good (a list's widest angle stays:
        still a bound)."""
        rows = np.unique(rows[rows < self.covered])
        rows = rows[self.owner[rows] >= 0]
        if not len(rows):
            return
        lists = np.unique(self.owner[rows])
        self.owner[rows] = -1
        for lst in lists.tolist():
            k = int(self.size[lst])
            keep = self.owner[self.ids[lst][:k]] >= 0
            m = int(keep.sum())
            self.ids[lst][:m] = self.ids[lst][:k][keep]
            self.vectors[lst][:m] = self.vectors[lst][:k][keep]
            self.size[lst] = m
        self._thresholds.clear()  # emptied lists are never read

    def cover(self, E: np.ndarray) -> None:
        """Put the rows added to ``E`` since the last call into their lists (a few thousand
        at a time: a decade's store, covered at once, made float64 temporaries of ~0.5 GB)."""
        for lo in range(self.covered, len(E), _COVER_ROWS):
            self._cover(E, min(lo + _COVER_ROWS, len(E)))

    def _cover(self, E: np.ndarray, hi: int) -> None:
        """Put rows ``covered`` .. ``hi`` - 1 of ``E`` into their lists."""
        lo = self.covered
        X = E[lo:hi]
        X64 = X.astype(np.float64)
        X64 /= np.linalg.norm(X64, axis=1, keepdims=True)
        cos = X64 @ self.centroids[: self.lists].T
        if self.lists < len(self.size) and self._spawn(X64, cos.max(axis=1)):
            cos = X64 @ self.centroids[: self.lists].T
        owner = np.argmax(cos, axis=1)
        angle = np.arccos(np.clip(cos[np.arange(len(X)), owner], -1.0, 1.0))
        if len(self.owner) < hi:
            grown = np.full(max(hi, 2 * len(self.owner)), -1, dtype=np.int64)
            grown[: len(self.owner)] = self.owner
            self.owner = grown
        self.owner[lo:hi] = owner
        for lst in np.unique(owner).tolist():
            mine = np.flatnonzero(owner == lst)
            k, m = int(self.size[lst]), len(mine)
            # a quarter more room when full: at FSRS's year the copies take 19.1 MiB for 17.5
            # MiB of rows (doubling took 29.3); a list holds ~100 rows, so its more frequent
            # copies cost little
            if k + m > len(self.ids[lst]):
                cap = max(len(self.ids[lst]) + len(self.ids[lst]) // 4, k + m, 8)
                ids = np.empty(cap, dtype=np.int64)
                ids[:k] = self.ids[lst][:k]
                vecs = np.empty((cap, X.shape[1]), dtype=np.float32)
                vecs[:k] = self.vectors[lst][:k]
                self.ids[lst], self.vectors[lst] = ids, vecs
            self.ids[lst][k : k + m] = lo + mine
            self.vectors[lst][k : k + m] = X[mine]
            self.size[lst] = k + m
            self.widest[lst] = max(self.widest[lst], float(angle[mine].max()))
        self.covered = hi
        self._thresholds.clear()  # wider lists: their thresholds again on demand

    def _spawn(self, X64: np.ndarray, nearest_cos: np.ndarray) -> bool:
        """Make each of the unit rows ``X64`` farther than the spawn angle from every
        centroid (those made here included) the centroid of a new list, in row order,
        while spare lists last; whether any was made."""
        angle = np.arccos(np.clip(nearest_cos, -1.0, 1.0))
        if self.covered == 0:  # the rows the centroids were trained on set the angle
            self.spawn_angle = self.spawn_factor * float(np.median(angle))
        first = self.lists
        for r in np.flatnonzero(angle > self.spawn_angle).tolist():
            if self.lists == len(self.size):
                break
            x = X64[r]
            made = self.centroids[first : self.lists] @ x
            if len(made) and math.acos(min(1.0, float(made.max()))) <= self.spawn_angle:
                continue  # near a list made from an earlier row of these
            self.centroids[self.lists] = x
            self.centroids32[self.lists] = x
            self.lists += 1
        return self.lists > first

    def _threshold(self, radius: float) -> np.ndarray:
        """Per list, the product with a unit query under which no row of the list reaches
        ``radius`` (float32-safe: lowered by _CONE_PRODUCT_SLACK); +inf for an empty list,
        -inf where the cone's angle reaches pi (every query may find a row)."""
        thr = self._thresholds.get(radius)
        if thr is None:
            widest, size = self.widest[: self.lists], self.size[: self.lists]
            angle = math.acos(min(1.0, max(-1.0, radius))) + widest + _CONE_ANGLE_SLACK
            thr = np.where(angle < math.pi, np.cos(angle), -np.inf)
            thr = np.where(size > 0, thr - _CONE_PRODUCT_SLACK, np.inf)
            self._thresholds[radius] = thr
        return thr

    def reaching(self, v: np.ndarray, radius: float, limit: int | None) -> np.ndarray | None:
        """The lists whose cone can hold a row whose product with unit float32 ``v`` reaches
        ``radius`` (a product with each centroid against its list's threshold); None when
        they hold more than ``limit`` rows."""
        norm = float(np.linalg.norm(v.astype(np.float64)))
        products = self.centroids32[: self.lists] @ v
        reach = np.flatnonzero(products >= self._threshold(radius) * norm)
        if limit is not None and int(self.size[reach].sum()) > limit:
            return None
        return reach

    def rows_above(
        self, v: np.ndarray, radius: float, limit: int | None = None
    ) -> np.ndarray | None:
        """A superset of the rows whose product with unit ``v`` reaches ``radius`` plus
        rounding (every row the bound cannot rule out, screened by its float32 product
        within :data:`kernels.SCREEN_MARGIN` under ``radius``), in no particular order; None
        when the lists to read hold more than ``limit`` rows."""
        v = np.asarray(v, dtype=np.float32)
        reach = self.reaching(v, radius, limit)
        if reach is None:
            return None
        found = [np.zeros(0, dtype=np.int64)]
        for lst in reach.tolist():
            k = int(self.size[lst])
            products = self.vectors[lst][:k] @ v
            hit = np.flatnonzero(products >= radius - kernels.SCREEN_MARGIN)
            if len(hit):
                found.append(self.ids[lst][hit])
        return np.concatenate(found)


def _single_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a faiss function with one OpenMP thread (deterministic, and polite on a shared
    machine), restoring the thread count after."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        return fn(*args)
    finally:
        faiss.omp_set_num_threads(threads)


# below this many rows a belief's own full scan costs less than the bounds over every row
# (Personal AI's day, stop 43: 147 against 114 us per search at 902 rows, 163 against 210 at
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


def _lead_cosine(
    chunk: Any, j: int, E: np.ndarray, given: np.ndarray, leads: Callable[[], np.ndarray]
) -> float:
    """A batch's :func:`kernels.exact_cosines` of vector ``j`` (as ``given``) with its best
    screen's row, computed for the whole ``chunk`` at its first ask (``leads()``: each of
    the chunk's vectors' row) and kept in ``chunk.lead_cosines``: Personal AI reads the
    cosine of the row nearly every belief reinforces, most often that one."""
    if chunk.lead_cosines is None:
        chunk.lead_cosines = kernels.exact_cosines(E[leads()], given[chunk.first : chunk.stop])
    return float(chunk.lead_cosines[j - chunk.first])


class BatchScreen:
    """A batch's vectors (a day's claims, in the order they are decided) compared with the
    store in one matrix product per chunk of them, so that each one's search, when its turn
    comes, reads only the rows that product cannot rule out (issue 16's day-batched
    comparison). :meth:`top_rows` gives the full scan's answer bit for bit, whatever the
    decisions before it did to the store: rows added since the chunk's product are always
    compared, the mask is the one at the search, and a stored embedding changed since
    (``MemoryStore.embedding_version``) makes the product again.

    The product's entries are float32 screens of the full scan's products (a matrix-matrix
    product rounds differently from the scan's matrix-vector one, by less than
    ``kernels.screen_margin``), so each row's screen plus the margin bounds its product.
    First the vector's shortlist (its chunk's best screens): when its live rows' screens,
    with those of the rows added since, are apart by more than twice the margin (and the
    tie tolerance) down to the k-th and from everything after it, their order is the full
    scan's top-k, with no product computed (:meth:`best_row`: the first row alone, read
    without gathering the listed rows where it is apart from every other row). Else
    the exact products (``kernels.rows_matvec``, the scan's own numbers) of the listed rows
    within reach of the k-th screen, where no other row can join the k-th product's tie
    chain. Else, from BATCH_SCREEN_MIN_ROWS rows, ``kernels.topk_support`` computes exactly
    the rows whose bounds over the whole store reach that chain."""

    def __init__(self, store: Any, vectors: np.ndarray) -> None:
        self.store = store
        self.given = vectors  # as given, for float64 cosines (cosine)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", self.vectors, self.vectors, dtype=np.float64))
        self.margins = kernels.screen_margins(store.dim, norms)
        # two screens settle an order when they are further apart than this: each is within
        # the margin of its product, and products within TIE_RTOL are a tie
        self.apart = kernels.settled_gap(store.dim, norms)
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
        """``kernels.exact_cosines`` of ``row`` with vector ``j`` as given (float64): for the
        row of each vector's best screen, computed for the whole chunk at once (Personal AI
        reads the cosine of nearly every vector's best row)."""
        chunk = self._chunk_of(j)
        E = self.store.embedding
        if not chunk.rows.shape[1] or row != chunk.rows[j - chunk.first, 0]:
            return kernels.exact_cosine(E, row, self.given[j])
        return _lead_cosine(chunk, j, E, self.given, lambda: chunk.rows[:, 0])

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
        own numbers, ``kernels.rows_matvec``) of its listed rows ``cand`` (:meth:`_listed`)
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
        products = kernels.rows_matvec(self.store.embedding, rows, self.vectors[j])
        products = products.astype(np.float64)
        at = kernels.topk(products, k, None if tiebreak is None else lambda r: tiebreak(rows[r]))
        if len(at) == k and out > -math.inf:  # the k-th product's tie chain stays above them
            kth = np.partition(products, len(products) - k)[len(products) - k]
            bottom = kernels.tie_chain_bottom(products, float(kth))
            if not bottom - kernels.TIE_RTOL * abs(bottom) > out + margin:
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
        """``kernels.topk(np.where(mask, E @ v, -inf).astype(float64), k, tiebreak)`` for
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
        bound[added] = kernels.rows_matvec(E, added, v)
        full: list[np.ndarray] = []

        def exact(rows: np.ndarray) -> np.ndarray:
            # many rows near the k-th product (a vector at ~0 with most rows): the whole
            # product, once, costs less than their blocks
            if full or 8 * len(rows) > n:
                if not full:
                    full.append(E @ v)
                products: np.ndarray = full[0][rows]
            else:
                products = kernels.rows_matvec(E, rows, v)
            return products.astype(np.float64)

        rows, scores = kernels.topk_support(bound, exact, k)
        keys = None if tiebreak is None else (lambda i: tiebreak(rows[i]))
        top: np.ndarray = rows[kernels.topk(scores, k, keys)]
        return top


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
    (:func:`kernels.rows_matvec`), maybe with rows within the screen's margin under it, as
    the index's own answer may hold some: what a decision read off the rows reaching the
    threshold needs, whichever rows under it come along.

    One search at a time reads every list its cone can reach, each one cold (~15 us a list
    on Personal AI's day 240, where one reads ~4 of ~150). A batch reads each list once for
    a chunk of its vectors: their products with the centroids in one matrix product, then
    per list one product with the chunk's vectors that reach it, for the rows stored when
    the chunk is screened; a row the store adds after is multiplied once with the chunk's
    vectors still to come, and the limit check is made for a block of them at once, again
    whenever the cones' lists change. Any BLAS product of unit vectors is within
    :func:`kernels.screen_margin` of the full scan's, so the screens keep every row the
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
        # each vector's kernels.settled_gap (its norm as given, summed in float64: a caller
        # summing it in another order differs by ~1e-13 relative, which the factor covers)
        given = np.asarray(vectors, dtype=np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", given, given))
        self.gaps = kernels.settled_gap(index.store.dim, norms) * (1.0 + 1e-9)

    def rows_near(self, j: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``index.rows_near(vectors[j], threshold, mask)`` at vector ``j``'s turn, as the
        class docstring says."""
        idx = self.index
        if idx.mode != "cones":
            return idx.rows_near(self.vectors[j], self.threshold, mask)
        s = idx.store
        if s.n < idx.min_rows:
            return None
        cones = idx._current_cones()  # (trained and covered at the turn one at a time is)
        v = self.vectors[j]
        radius = self.threshold - kernels.screen_margin(s.dim)
        chunk = self._screened(j, cones, radius)
        i = j - chunk.first
        if not chunk.within(i, cones, radius, s.n // 2):
            # the lists to read as the index reads them: past the limit, it answers None
            if cones.reaching(v, radius, s.n // 2) is None:
                return None
        return idx._allowed_products(chunk.near(i, s.embedding), mask, v)

    def lead(self, j: int, mask: np.ndarray) -> int | None:
        """The row whose full-scan product with vector ``j`` leads, at its turn, every other
        allowed row's in ``rows_near(j, mask)``'s answer and the threshold by more than
        :func:`kernels.settled_gap` of the vector's norm, read off the screens where they
        settle it (no product computed): -1 when that answer holds no row; None when the
        index would answer None or the screens do not settle it (the caller then asks
        :meth:`rows_near`, which decides). Personal AI's reinforcement check reads no more
        than this on most of a day's beliefs."""
        idx = self.index
        s = idx.store
        if idx.mode != "cones" or s.n < idx.min_rows:
            return None
        cones = idx._current_cones()  # (trained and covered at the turn one at a time is)
        radius = self.threshold - kernels.screen_margin(s.dim)
        chunk = self._screened(j, cones, radius)
        i = j - chunk.first
        if not chunk.within(i, cones, radius, s.n // 2):
            return None
        return chunk.lead(i, s.embedding, mask, float(self.gaps[j]), self.threshold)

    def cosine(self, j: int, row: int) -> float:
        """``kernels.exact_cosines`` of ``row`` with vector ``j`` as given (float64): for the
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

                return _lead_cosine(chunk, j, E, self.given, firsts)
        return kernels.exact_cosine(E, row, self.given[j])

    def _screened(self, j: int, cones: _Cones, radius: float) -> _ReachChunk:
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
        self, vectors: np.ndarray, first: int, stop: int, cones: _Cones, radius: float, version: int
    ) -> None:
        self.first, self.stop, self.version = first, stop, version
        # (the cones cover every stored row: the caller brought them up to date)
        self.cones, self.lists, self.covered = cones, cones.lists, cones.covered
        V = vectors[first:stop]
        self.norms = np.sqrt(np.einsum("ij,ij->i", V, V, dtype=np.float64))
        self.centroid_products = V @ cones.centroids32[: self.lists].T
        # vector i may find a row of list l only if its product with the centroid reaches
        # l's threshold (as _Cones.reaching; the threshold's slack covers any BLAS rounding);
        # a failed embedding's vector (zeros: an infinite threshold times 0) reaches none
        with np.errstate(invalid="ignore"):
            needed = cones._threshold(radius) * self.norms[:, None]
        reach = self.centroid_products >= needed
        who, where = np.nonzero(reach)
        order = np.argsort(where, kind="stable")
        who, where = who[order], where[order]
        starts = np.flatnonzero(np.diff(where, prepend=-1))
        ends = np.append(starts[1:], len(where))
        floor = radius - kernels.SCREEN_MARGIN
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
        self.margins = kernels.screen_margins(V.shape[1], self.norms)
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

    def within(self, i: int, cones: _Cones, radius: float, limit: int) -> bool:
        """Whether the lists vector ``i``'s search reads through ``cones`` now surely hold
        at most ``limit`` rows (then the index answers): the lists its screened centroid
        products reach, with the thresholds and sizes of now, lowered by both products'
        rounding, hold no more. False when that does not settle it, or the cones were
        trained again or grew lists since the screen (the caller then asks them)."""
        if cones is not self.cones or cones.lists != self.lists:
            return False
        thr = cones._threshold(radius)
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
