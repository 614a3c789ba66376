"""Vector indexes for recall: exact numpy search and faiss (flat, HNSW, IVF).

All indexes score by inner product of unit rows (= cosine). Rows get ids 0..n-1 in the
order they are added, which matches MemoryStore row ids when a policy adds every stored
embedding. ``search`` takes an optional boolean ``mask`` over the rows: masked-out rows are
never returned (statuses that are not retrievable, a kind filter, ...).

Results: ``(sims (q, k) float32, ids (q, k) int64)``, best first, padded with ``-inf`` /
``-1`` when fewer than k rows qualify.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .errors import ParamError, UnknownIdError, VectorError
from .quantized import faiss_single_thread
from .ranking import batch_topk
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
    :func:`memsim.engine.ranking.batch_topk` (ties go to the lower id)."""

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

    def add(self, vectors: np.ndarray) -> None:
        v = np.ascontiguousarray(as_unit_vectors(vectors, self.dim, "index vectors"))
        if len(v) == 0:
            return
        self._n += len(v)
        if self._pending is not None:
            self._pending.append(v)
            if self._pending.n >= self.knobs["min_train"]:
                allv = np.ascontiguousarray(self._pending.view)
                faiss_single_thread(self._index.train, allv)
                faiss_single_thread(self._index.add, allv)
                self._pending = None
            return
        faiss_single_thread(self._index.add, v)

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
