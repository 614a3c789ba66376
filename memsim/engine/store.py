"""MemoryStore: one row per memory, structure-of-arrays (numpy columns).

The store is the single authority on what a policy remembers. Core columns every policy
has: ``created``, ``updated``, ``last_access`` (NaN until first accessed), ``access_count``,
``status`` (small int code, names declared by the policy), ``kind`` (code, e.g. episode /
belief), and the unit-norm float32 ``embedding`` matrix. A policy registers its own columns
(alpha, beta, salience, stability, ...) with :meth:`add_column`.

Provenance is the set of episode ids each memory came from, kept through reinforcement,
merges and syntheses; it only grows (:meth:`add`, :meth:`add_provenance`). Every status
change and provenance addition is logged with its time, so metrics can reconstruct exactly
what was remembered at any moment.

Rows are never deleted (statuses do that), so a row index is a stable memory id.
Arrays grow by amortized doubling; column views returned by ``store[name]`` are only valid
until the next insert.
"""

from __future__ import annotations

import functools
import hashlib
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import islice, repeat
from typing import Any, TypeVar

import numpy as np

from . import decay
from .errors import PolicyContractError, VectorError
from .quantized import SCREEN_MIN_ROWS, QuantizedScreen
from .ranking import mix64
from .similarity import PackedRows, RecurringScans, rows_matvec

CORE_COLUMNS: dict[str, tuple[Any, Any]] = {
    "created": (np.float64, np.nan),
    "updated": (np.float64, np.nan),
    "last_access": (np.float64, np.nan),
    "access_count": (np.int64, 0),
    "status": (np.int8, 0),
    "kind": (np.int8, 0),
    # identity of a memory for tie-breaks: a hash of (provenance at creation, text), so it
    # does not depend on the row a memory happens to occupy (see tie_keys)
    "tie_id": (np.uint64, 0),
}


@dataclass(frozen=True)
class Statuses:
    """A policy's status vocabulary. The first name is the status of a new memory unless
    said otherwise. ``terminal`` statuses are never left; ``retrievable`` ones may be
    returned by recall (everything else counts as lost for the needed-but-forgotten metric)."""

    names: tuple[str, ...]
    terminal: frozenset[str] = frozenset()
    retrievable: frozenset[str] = frozenset({"active"})

    def __post_init__(self) -> None:
        unknown = (set(self.terminal) | set(self.retrievable)) - set(self.names)
        if unknown:
            raise ValueError(f"statuses {sorted(unknown)} are not among {self.names}")
        if set(self.terminal) & set(self.retrievable):
            raise ValueError("a terminal status cannot be retrievable")

    @functools.cached_property
    def terminal_codes(self) -> frozenset[int]:
        """The codes of the terminal statuses (set_status checks every row against them)."""
        return frozenset(self.code(n) for n in self.terminal)

    @functools.cached_property
    def retrievable_codes(self) -> frozenset[int]:
        """The codes of the retrievable statuses (the runner checks every answer's rows)."""
        return frozenset(self.code(n) for n in self.retrievable)

    def code(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"unknown status {name!r}; known: {', '.join(self.names)}") from None

    def codes(self, names: Iterable[str]) -> np.ndarray:
        return np.array([self.code(n) for n in names], dtype=np.int8)


def as_unit_vectors(vectors: Any, dim: int, what: str = "embedding") -> np.ndarray:
    """Validate and L2-normalize a (n, dim) or (dim,) array to float32 unit rows.

    Raises VectorError naming the row and the problem for NaN, inf or zero-norm rows.
    """
    arr, norms = _rows_and_norms(vectors, dim, what)
    return _unit_rows(arr, norms, np.empty(arr.shape, dtype=np.float32))


# up to this many rows, _rows_and_norms checks the norms as Python floats
_FEW_NORMS = 16


def _rows_and_norms(vectors: Any, dim: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The (n, dim) float32 or float64 rows of ``vectors`` and their float64 norms, every
    norm finite and non-zero (else VectorError naming the row and the problem)."""
    arr = np.asarray(vectors)
    if arr.dtype != np.float32 and arr.dtype != np.float64:
        arr = np.asarray(vectors, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise VectorError(f"{what}: expected shape (n, {dim}), got {np.shape(vectors)}")
    # np.linalg.norm(arr, axis=1)'s numbers (float32 rows taken in float64, as converted)
    # without its copy; a row with a NaN or infinite value has a norm that is not finite,
    # so the rows are searched only then
    norms = np.sqrt(np.add.reduce(np.multiply(arr, arr, dtype=np.float64), axis=1))
    # a NaN or inf norm makes their sum so (a few rows' summed as Python floats, cheaper)
    few = norms.tolist() if len(norms) <= _FEW_NORMS else None
    if not math.isfinite(sum(few) if few is not None else float(norms.sum())):
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise VectorError(
                f"{what} row {i} has a NaN or infinite value: {arr[i][~np.isfinite(arr[i])][:3]}"
            )
    if 0.0 in few if few is not None else (norms == 0).any():
        i = int(np.flatnonzero(norms == 0)[0])
        raise VectorError(f"{what} row {i} has zero norm: it cannot be compared by cosine")
    return arr, norms


def _unit_rows(arr: np.ndarray, norms: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``arr / norms`` row by row into the float32 ``out``: divided in float64 and rounded
    once, the numbers of ``(arr.astype(float64) / norms).astype(float32)``."""
    np.divide(arr, norms[:, None], out=out, dtype=np.float64)
    return out


def _any_of(col: np.ndarray, codes: tuple[int, ...]) -> np.ndarray:
    """``np.isin(col, codes)`` by one comparison per code (np.isin costs ~30x more on the
    few codes a status or kind vocabulary has, and masks are taken per event)."""
    m = np.zeros(len(col), dtype=bool)
    for c in codes:
        m |= col == c
    return m


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _identity_text(ordered_provenance: Sequence[str], text: str) -> str:
    """What a memory's identity hashes: its provenance at creation (sorted) and text."""
    return "\x1f".join(ordered_provenance) + "\x1e" + text


def _identities(ordered_provenance: Sequence[Sequence[str]], texts: Sequence[str]) -> np.ndarray:
    """uint64 identity of each memory: ``_hash64`` of its :func:`_identity_text`, the digests
    read as one little-endian array."""
    empty = hashlib.blake2b(digest_size=8)  # copied per memory: cheaper than a new one
    digests = []
    for p, t in zip(ordered_provenance, texts):
        h = empty.copy()
        h.update(_identity_text(p, t).encode("utf-8"))
        digests.append(h.digest())
    return np.frombuffer(b"".join(digests), dtype="<u8")


def _appended(
    rows: np.ndarray, room: np.ndarray | None, more: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """``rows`` then ``more``, and the array they are the head of: written after ``rows`` in
    ``room`` (the array ``rows`` is the head of, or None) where it has space, else in a new
    one with as much space again. Appending a few rows costs those rows, not a copy of all
    of them (``rows_with`` of a store that grows by a few rows per event and is asked per
    query). Rows handed out before are never written: only the space past them is."""
    n, m = len(rows), len(more)
    if not m:  # (the changed rows all outside the set: nothing to copy)
        return rows, room
    if room is None or n + m > len(room):
        room = np.empty(max(2 * (n + m), 64), dtype=np.int64)
        room[:n] = rows
    room[n : n + m] = more
    return room[: n + m], room


class MemoryStore:
    """Columnar memory table with provenance and a change log. See module docstring."""

    def __init__(
        self, dim: int, statuses: Statuses, kinds: Sequence[str] = ("memory",), capacity: int = 64
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = int(dim)
        self.statuses = statuses
        self.kinds = tuple(kinds)
        self.n = 0
        self._cap = max(1, int(capacity))
        self._cols: dict[str, np.ndarray] = {}
        self._defaults: dict[str, Any] = {}
        for name, (dtype, default) in CORE_COLUMNS.items():
            self._new_column(name, dtype, default)
        self._emb = np.zeros((self._cap, self.dim), dtype=np.float32)
        self.text: list[str] = _Texts()  # written through set_text, which counts its bytes
        self._text_bytes = np.zeros(self._cap, dtype=np.int64)  # each text's UTF-8 bytes
        self.claim: list[Any] = []  # the Claim (or None) each memory states
        self.provenance: list[set[str]] = []
        # (time, row, new status code); (time, row, episode id)
        self.status_log: list[tuple[float, int, int]] = []
        self.provenance_log: list[tuple[float, int, str]] = []
        self._code_cache: dict[tuple[str, Any], tuple[int, ...]] = {}
        # per candidate index over the store, the rows whose embedding changed since it last
        # read them (track_embedding_changes): each index empties its own set
        self._change_sets: list[set[int]] = []
        self.embedding_version = 0  # counts set_embedding calls (a batch's screen checks it)
        # rows per status code, kept by add and set_status (the status column's only writers)
        self._status_counts = [0] * len(statuses.names)
        self._packed = PackedRows(self.dim)
        self._queries = RecurringScans(self.dim)
        self._screen = QuantizedScreen(self.dim)
        self._row_logs: dict[int, _RowLog] = {}  # provenance_of's ordered logs
        # rows added with log_provenance=False whose entries wait for log_in_order
        self._unlogged: dict[int, tuple[float, list[str]]] = {}

    # -- columns -------------------------------------------------------------
    def _new_column(self, name: str, dtype: Any, default: Any) -> None:
        arr = np.empty(self._cap, dtype=dtype)
        arr[:] = default
        self._cols[name] = arr
        self._defaults[name] = default

    def add_column(self, name: str, dtype: Any, default: Any) -> None:
        """Register a policy column (e.g. ``alpha``) with the value new rows take."""
        if name in self._cols:
            raise ValueError(f"column {name!r} already exists")
        self._new_column(name, dtype, default)
        self._cols[name][: self.n] = default

    def at(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Column ``name`` (``rows`` None: the view ``store[name]``) or its ``rows`` only:
        what an element-wise formula needs to give the same numbers for a few rows."""
        return self[name] if rows is None else self._cols[name][: self.n][rows]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self._cols)

    def __getitem__(self, name: str) -> np.ndarray:
        """A writable view of column ``name`` over the rows that exist."""
        return self._cols[name][: self.n]

    @property
    def embedding(self) -> np.ndarray:
        return self._emb[: self.n]

    def __len__(self) -> int:
        return self.n

    # -- growth --------------------------------------------------------------
    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` rows in total now, so a bulk load of known size never
        holds two copies of the embedding matrix (doubling growth would peak at ~1.5x)."""
        self._reserve(max(0, int(rows) - self.n))

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        if need <= self._cap:
            return
        cap = self._cap
        while cap < need:
            cap *= 2
        for name, arr in self._cols.items():
            grown = np.empty(cap, dtype=arr.dtype)
            grown[: self.n] = arr[: self.n]
            grown[self.n :] = self._defaults[name]
            self._cols[name] = grown
        emb = np.zeros((cap, self.dim), dtype=np.float32)
        emb[: self.n] = self._emb[: self.n]
        self._emb = emb
        text_bytes = np.zeros(cap, dtype=np.int64)
        text_bytes[: self.n] = self._text_bytes[: self.n]
        self._text_bytes = text_bytes
        self._cap = cap

    def add(
        self,
        now: float,
        embeddings: Any,
        *,
        texts: Sequence[str],
        claims: Sequence[Any],
        provenance: Sequence[Iterable[str]],
        status: str | None = None,
        kind: str | Sequence[str] | None = None,
        log_provenance: bool = True,
        **columns: Any,
    ) -> np.ndarray:
        """Append rows; returns their ids. ``kind``: one for every row or one per row.
        ``columns`` give values (scalar or per row) for registered columns; unnamed columns
        take their defaults. Embeddings are validated and normalized (a NaN or zero vector
        raises VectorError). ``log_provenance=False``: each row's provenance entries wait
        for :meth:`log_in_order`, so a caller that adds a batch's rows at once can log them
        where adding one episode at a time would have (between other rows' entries)."""
        vecs, norms = _rows_and_norms(embeddings, self.dim, "embedding")
        m = len(vecs)
        if not (len(texts) == len(claims) == len(provenance) == m):
            raise ValueError("texts, claims and provenance must have one entry per embedding")
        if kind is None or isinstance(kind, str):
            kind_codes: Any = self.kind_code(kind) if kind else 0  # (kinds[0]'s code)
        elif len(kind) == m:
            code_of = {name: code for code, name in enumerate(self.kinds)}
            kind_codes = [code_of.get(k) for k in kind]
            if None in kind_codes:
                kind_codes = [self.kind_code(k) for k in kind]  # raises, naming the kind
        else:
            raise ValueError(f"{len(kind)} kinds for {m} rows: give one kind or one per row")
        for name in columns:
            if name not in self._cols or name in ("status", "kind"):
                raise KeyError(f"unknown or reserved column {name!r}")
        code = self.statuses.code(status) if status else 0  # (names[0]'s code)
        self._reserve(m)
        lo, hi = self.n, self.n + m
        # the rows past n hold every column's default (a column and new room are made so), so
        # only the columns given are written; a failed write puts the defaults back
        cols = self._cols
        try:
            cols["created"][lo:hi] = now
            cols["updated"][lo:hi] = now
            cols["status"][lo:hi] = code
            cols["kind"][lo:hi] = kind_codes
            for name, value in columns.items():
                cols[name][lo:hi] = value
        except BaseException:
            for name, arr in cols.items():
                arr[lo:hi] = self._defaults[name]
            raise
        _unit_rows(vecs, norms, self._emb[lo:hi])
        self.n = hi
        self._counts()[code] += m
        at, rows = float(now), range(lo, hi)
        self.text.extend(texts)
        self._text_bytes[lo:hi] = [_utf8_length(t) for t in texts]
        self.claim.extend(claims)
        provs = [set(p) for p in provenance]
        orders = [sorted(p) for p in provs]  # one sort for the identity and the log
        self.provenance.extend(provs)
        self.status_log.extend(zip(repeat(at), rows, repeat(code)))
        if log_provenance:
            self.provenance_log.extend((at, row, e) for row, o in zip(rows, orders) for e in o)
        else:
            self._unlogged.update(zip(rows, zip(repeat(at), orders)))
        if m == 1:  # (one memory, its identity without an array)
            cols["tie_id"][lo] = _hash64(_identity_text(orders[0], texts[0]))
        else:
            cols["tie_id"][lo:hi] = _identities(orders, texts)
        return np.arange(lo, hi)

    def tie_keys(self, salt: str, rows: np.ndarray | None = None) -> np.ndarray:
        """One uint64 per row: a seeded random permutation key (``salt`` names the ranking,
        e.g. run seed and query id) that depends on each memory's identity (provenance at
        creation and text), never on its row, so permuting insertion order permutes the
        keys with the rows. Passed as ``tiebreak`` to memsim.engine.ranking.topk. ``rows``:
        the keys of those rows only (the same numbers)."""
        ids = self["tie_id"] if rows is None else self["tie_id"][rows]
        return mix64(ids, _hash64(salt))

    def set_embedding(self, rows: Any, vectors: Any) -> None:
        """Replace the embeddings of ``rows`` (a refreshed description), validated and
        normalized like new rows: a NaN or zero vector raises VectorError."""
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        vecs = as_unit_vectors(vectors, self.dim)
        if len(vecs) != len(rows):
            raise ValueError(f"{len(rows)} rows but {len(vecs)} vectors")
        if len(rows) and (rows.min() < 0 or rows.max() >= self.n):
            raise IndexError(f"rows {rows.tolist()} outside 0..{self.n - 1}")
        self._emb[rows] = vecs
        self.embedding_version += 1
        self._packed.changed(self._emb, rows)
        self._queries.changed(rows)
        self._screen.changed(rows)
        sets = self._change_sets
        if sets:  # (each candidate index's set; the rows listed once for all of them)
            changed = rows.tolist()
            for changes in sets:
                changes.update(changed)

    def products(self, vector: Any, mask: np.ndarray, fill: float = -np.inf) -> np.ndarray:
        """``np.where(mask, embedding @ vector, fill)`` in float32, bit for bit, scanning
        only the ``mask`` rows (similarity.PackedRows): the cosine scan of a policy whose
        searchable rows are a small share of its store."""
        return self._packed.products(self.embedding, vector, mask, fill)

    def products_at(self, vector: Any, rows: np.ndarray) -> np.ndarray:
        """``(embedding @ vector)[rows]`` in float32, bit for bit, at the cost of ``rows``
        (similarity.PackedRows): :meth:`products` without the store-long array, for a policy
        that ranks its searchable rows only."""
        return self._packed.at(self.embedding, vector, rows)

    def query_products(self, vector: Any, rows: np.ndarray | None = None) -> np.ndarray:
        """``(embedding @ vector)[rows]`` (every row when ``rows`` is None) in float32, bit
        for bit, for a query's vector: query vectors come back, so each one's products are
        kept between calls and a call computes only the rows added or changed since
        (similarity.RecurringScans). Ingest-time vectors (a new claim's) go through
        :meth:`products` / :meth:`products_at`: they do not come back."""
        return self._queries.at(self.embedding, vector, rows)

    def query_screen(
        self, vector: Any
    ) -> Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]] | None:
        """For a query vector in a store of at least SCREEN_MIN_ROWS rows whose products
        are not kept (nor asked lately: :meth:`query_products` keeps a vector that comes
        back), ``ranked(m)``: the m rows of highest screened product, best first, with
        bounds on the float32 product of the rows after them (quantized.QuantizedScreen
        .ranked, an int8 copy of the embeddings: a quarter of their bytes); their exact
        products are :meth:`products_of`. None otherwise: the caller scans
        (:meth:`query_products`)."""
        if self.n < SCREEN_MIN_ROWS:
            return None
        v = np.ascontiguousarray(vector, dtype=np.float32)
        if self._queries.recurring(v):
            return None
        return lambda m: self._screen.ranked(self.embedding, v, m)

    def products_of(self, vector: Any, rows: np.ndarray) -> np.ndarray:
        """``(embedding @ vector)[rows]`` in float32, bit for bit, for a few rows asked once
        (similarity.rows_matvec: nothing kept)."""
        return rows_matvec(self.embedding, rows, vector)

    def __getstate__(self) -> dict[str, Any]:
        # copies and pickles leave the caches behind (rebuilt on demand)
        state = self.__dict__.copy()
        state["_packed"] = PackedRows(self.dim)
        state["_queries"] = RecurringScans(self.dim)
        state["_screen"] = QuantizedScreen(self.dim)
        state["_row_logs"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # (a store pickled before these were kept)
        state.setdefault("embedding_version", 0)
        state.setdefault("_change_sets", [])
        state.setdefault("_screen", QuantizedScreen(state["dim"]))
        if "_text_bytes" not in state:
            state["text"] = _Texts(state["text"])
            state["_text_bytes"] = np.zeros(state["_cap"], dtype=np.int64)
            state["_text_bytes"][: len(state["text"])] = list(map(_utf8_length, state["text"]))
        self.__dict__.update(state)

    def set_text(self, row: int, text: str) -> None:
        """Rewrite memory ``row``'s text (a summary refreshed, a node renamed)."""
        if not isinstance(text, str):
            raise TypeError(f"set_text: row {row}'s text must be a str, got {text!r}")
        list.__setitem__(self.text, row, text)
        self._text_bytes[range(self.n)[row]] = _utf8_length(text)

    def track_embedding_changes(self) -> set[int]:
        """A set that collects the rows :meth:`set_embedding` changes from now on, for one
        candidate index, which empties it as it catches up (each index its own: a store
        searched through two, as Personal AI's is, must not let one take the other's)."""
        changes: set[int] = set()
        self._change_sets.append(changes)
        return changes

    def untrack_embedding_changes(self, changes: set[int]) -> None:
        """Stop collecting into ``changes`` (a set :meth:`track_embedding_changes` gave to an
        index now replaced): set_embedding no longer pays for it."""
        sets = self._change_sets
        sets[:] = [c for c in sets if c is not changes]

    # -- statuses and provenance ---------------------------------------------
    def kind_code(self, name: str) -> int:
        try:
            return self.kinds.index(name)
        except ValueError:
            raise KeyError(f"unknown kind {name!r}; known: {', '.join(self.kinds)}") from None

    def status_of(self, row: int) -> str:
        return self.statuses.names[int(self._cols["status"][row])]

    def set_status(self, rows: Any, status: str, now: float) -> None:
        """Change the status of ``rows`` (logged). Leaving a terminal status is a bug."""
        if not (isinstance(rows, list) and all(type(r) is int for r in rows)):
            rows = np.atleast_1d(np.asarray(rows, dtype=np.int64)).tolist()
        # (a list of Python ints, a policy's few rows per event, is taken as it is)
        code = self.statuses.code(status)
        st = self._cols["status"]
        terminal, counts = self.statuses.terminal_codes, self._counts()
        for r in rows:
            old = int(st[r])
            if old == code:
                continue
            if old in terminal:
                raise PolicyContractError(
                    f"memory {r} is {self.statuses.names[old]!r}, a terminal status; "
                    f"it cannot become {status!r}"
                )
            st[r] = code
            counts[old] -= 1
            counts[code] += 1
            self.status_log.append((float(now), r, code))

    def log_in_order(self, entries: Iterable[int | tuple[int, Iterable[str]]], now: float) -> None:
        """Provenance entries in the order of ``entries``, each a row added with
        ``add(..., log_provenance=False)`` (the entries ``add`` would have logged for it,
        once) or (row, episode ids): ``add_provenance(row, episode ids, now)``."""
        unlogged, log = self._unlogged, self.provenance_log
        for entry in entries:
            if isinstance(entry, tuple):
                self.add_provenance(entry[0], entry[1], now)
            else:
                at, order = unlogged.pop(entry)
                for e in order:
                    log.append((at, entry, e))

    def add_provenance(self, row: int, episode_ids: Iterable[str], now: float) -> None:
        prov = self.provenance[row]
        log = self._row_logs.get(row)
        for e in sorted(set(episode_ids) - prov):
            prov.add(e)
            self.provenance_log.append((float(now), int(row), e))
            if log is not None:
                log.episodes.append(e)

    def provenance_of(self, rows: Iterable[int]) -> tuple[ProvenanceSnapshot, ...]:
        """Each row's provenance now, as a snapshot that stays what it was while the row's
        provenance grows: the first ``len`` episodes of the row's ordered log, which the
        store keeps from the row's first snapshot on. A trace recording the provenance of
        every query's answer then holds one small object per state of a memory, not a copy
        of its set (memories that gather every source's provenance, Cosmo's storylines,
        would make those copies grow quadratically with the stream)."""
        logs: dict[int, _RowLog] = self.__dict__.setdefault("_row_logs", {})
        out = []
        for r in rows:
            log = logs.get(r)
            if log is None:
                log = logs[r] = _RowLog(sorted(self.provenance[r]))
            out.append(log.snapshot())
        return tuple(out)

    def mask(
        self, statuses: Iterable[str] | None = None, kinds: Iterable[str] | None = None
    ) -> np.ndarray:
        """Boolean mask of rows with one of ``statuses`` (default: retrievable) and ``kinds``."""
        return self._member(slice(0, self.n), *self._mask_codes(statuses, kinds))

    def mask_at(
        self,
        rows: np.ndarray,
        statuses: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None,
    ) -> np.ndarray:
        """``self.mask(statuses, kinds)[rows]`` at the cost of ``rows``, not the store."""
        return self._member(np.asarray(rows, dtype=np.int64), *self._mask_codes(statuses, kinds))

    def _mask_codes(
        self, statuses: Iterable[str] | None, kinds: Iterable[str] | None
    ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        names = self.statuses.retrievable if statuses is None else statuses
        codes = self._codes("s", names, self.statuses.code)
        return codes, None if kinds is None else self._codes("k", kinds, self.kind_code)

    def _member(
        self, rows: Any, codes: tuple[int, ...], kind_codes: tuple[int, ...] | None
    ) -> np.ndarray:
        """Whether each of ``rows`` has one of the status ``codes`` and ``kind_codes``."""
        m = _any_of(self._cols["status"][rows], codes)
        if kind_codes is not None:
            m &= _any_of(self._cols["kind"][rows], kind_codes)
        return m

    def _codes(self, what: str, names: Iterable[str], code: Any) -> tuple[int, ...]:
        """The distinct codes of ``names`` (cached: masks are taken per event)."""
        key = (what, names if isinstance(names, (tuple, frozenset)) else tuple(names))
        cache = self.__dict__.setdefault("_code_cache", {})  # (a store pickled before it)
        got: tuple[int, ...] | None = cache.get(key)
        if got is None:
            got = tuple(sorted({int(code(n)) for n in key[1]}))
            cache[key] = got
        return got

    def retrievable(self) -> np.ndarray:
        return self.mask()

    def rows_with(
        self, statuses: Iterable[str] | None = None, kinds: Iterable[str] | None = None
    ) -> np.ndarray:
        """``np.flatnonzero(self.mask(statuses, kinds))`` (read-only), kept between calls and
        brought up to date from the status log (complete: every status change is logged; a
        row's kind is set once, when it is added), so a call costs the rows whose status
        changed since the last one, not the store: what a policy that looks up its few live
        rows per event among many gone ones needs."""
        key = self._mask_codes(statuses, kinds)
        cache = self.__dict__.setdefault("_rows_with", {})  # (a store pickled before it)
        log = self.status_log
        got = cache.get(key)
        room = None  # the array ``rows`` is the head of, with room for rows to come
        if got is None or got[1] > len(log):
            rows = np.flatnonzero(self._member(slice(0, self.n), *key))
        elif got[1] == len(log):
            rows, _, room = got  # (a copy of the store holds a writable copy of it)
        else:
            rows, seen, room = got
            changed = self.rows_logged(seen)
            inside = self._member(changed, *key)
            if not len(rows) or changed[0] > rows[-1]:  # new rows only: none held yet
                rows, room = _appended(rows, room, changed[inside])
            else:  # out with the rows held that left, in with the others inside
                at = np.searchsorted(rows, changed)
                held = at < len(rows)
                held[held] = rows[at[held]] == changed[held]
                keep = np.ones(len(rows), dtype=bool)
                keep[at[held & ~inside]] = False
                rows, joined = rows[keep], changed[inside & ~held]
                if len(rows) and len(joined) and joined[0] < rows[-1]:  # (a row come back)
                    rows = np.insert(rows, np.searchsorted(rows, joined), joined)
                else:  # none, or rows added since: after every row held (a steady store)
                    rows = np.concatenate((rows, joined))
                room = None
        rows.flags.writeable = False
        cache[key] = (rows, len(log), room)
        return rows

    def rows_logged(self, since: int) -> np.ndarray:
        """The rows of the status log's entries from entry ``since`` on, ascending, each once:
        every row added or whose status changed since a caller read the log up to there
        (what :meth:`rows_with`, :meth:`kept_mask` and a policy's own state kept from the
        log look at again)."""
        log = self.status_log
        return np.unique(np.array([r for _, r, _ in log[since:]], dtype=np.int64))

    def kept_mask(
        self, statuses: Iterable[str] | None = None, kinds: Iterable[str] | None = None
    ) -> np.ndarray:
        """``self.mask(statuses, kinds)`` as a new array, copied from one kept between calls
        and brought up to date from the status log as :meth:`rows_with` is (the rows added
        and the rows whose status changed since the last call are looked at again): a call
        costs a copy of the mask, not the comparisons over every row, for a policy that
        masks its store per query while rows are added between queries."""
        key = self._mask_codes(statuses, kinds)
        cache = self.__dict__.setdefault("_kept_masks", {})  # (a store pickled before it)
        log = self.status_log
        got = cache.get(key)
        if got is None or got[1] > len(log) or got[2] > self.n:
            buf = np.zeros(max(64, self.n), dtype=bool)
            buf[: self.n] = self._member(slice(0, self.n), *key)
        else:
            buf, seen, _ = got
            if seen < len(log):  # (every added row is logged, with its first status)
                if self.n > len(buf):  # room for the rows added, doubling
                    grown = np.zeros(max(self.n, 2 * len(buf)), dtype=bool)
                    grown[: len(buf)] = buf
                    buf = grown
                changed = self.rows_logged(seen)
                buf[changed] = self._member(changed, *key)
        cache[key] = (buf, len(log), self.n)
        out: np.ndarray = buf[: self.n].copy()
        return out

    def count(self, statuses: Iterable[str] | None = None) -> int:
        """Rows with one of ``statuses`` (default: retrievable): from the counts ``add`` and
        ``set_status`` keep, not a pass over the store (the runner counts after every
        batch). :meth:`status_log_mismatch` finds a status written around them."""
        counts = self._counts()
        return sum(counts[c] for c in self._mask_codes(statuses, None)[0])

    def _counts(self) -> list[int]:
        counts: list[int] | None = self.__dict__.get("_status_counts")
        if counts is None:  # a store pickled before they were kept
            st = self._cols["status"][: self.n]
            counts = np.bincount(st, minlength=len(self.statuses.names)).tolist()
            self._status_counts = counts
        return counts

    def status_log_mismatch(self) -> tuple[int, int, int] | None:
        """The first row whose status in the column is not its last logged one, as (row,
        code in the column, last logged code or -1), or None: a status written to the column
        without set_status (which the log, the metrics and :meth:`count` all miss)."""
        logged = np.full(self.n, -1, dtype=np.int64)
        for _, row, code in self.status_log:
            logged[row] = code
        st = self["status"]
        wrong = np.flatnonzero(logged != st)
        if not len(wrong):
            return None
        r = int(wrong[0])
        return r, int(st[r]), int(logged[r])

    def days_since_access(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """Days since each row's (or each of ``rows``') last access, counting from creation
        until its first one (never negative)."""
        return decay.days_since_access(now, self.at("last_access", rows), self.at("created", rows))

    def rows_from(self, episode_id: str) -> np.ndarray:
        """Rows whose provenance contains ``episode_id`` (a linear scan: user actions only)."""
        return np.array(
            [i for i, p in enumerate(self.provenance) if episode_id in p], dtype=np.int64
        )

    def stored_bytes(self) -> tuple[int, int]:
        """(vector bytes, text bytes) of the retrievable memories: their embedding rows as
        kept (rows x dim x itemsize) and their texts in UTF-8 (read now: a policy may
        rewrite a text in place)."""
        mask = self.mask()
        vectors = int(np.count_nonzero(mask)) * self.dim * self._emb.itemsize
        # each text's bytes were counted when it was written (add, set_text): a run asks
        # after every query batch, and counting the whole store each time grew as its square
        return vectors, int(self._text_bytes[: self.n][mask].sum())

    def nbytes(self) -> int:
        """Bytes held by the numeric columns and embeddings (capacity included)."""
        return int(self._emb.nbytes + sum(a.nbytes for a in self._cols.values()))


_T = TypeVar("_T")
_UTF8 = operator.methodcaller("encode", "utf-8", "surrogatepass")


def _utf8_length(text: str) -> int:
    # an ASCII text's length is its byte count (str.isascii reads a flag)
    return len(text) if text.isascii() else len(_UTF8(text))


class _Texts(list):  # type: ignore[type-arg]
    """The store's texts, a list read as any other; a text is rewritten through
    ``MemoryStore.set_text``, which keeps the store's count of its bytes."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError("a store's texts are rewritten with MemoryStore.set_text(row, text)")

    def __delitem__(self, index: Any) -> None:
        raise TypeError("a store's texts are never deleted (a memory's status says it is gone)")


class _RowLog:
    """One row's episodes in the order they joined its provenance (from its first
    snapshot on), with a position map built as membership is asked."""

    __slots__ = ("episodes", "_where", "_last")

    def __init__(self, episodes: list[str]) -> None:
        self.episodes = episodes
        self._where: dict[str, int] = {}
        self._last: ProvenanceSnapshot | None = None

    def snapshot(self) -> ProvenanceSnapshot:
        n = len(self.episodes)
        if self._last is None or len(self._last) != n:
            self._last = ProvenanceSnapshot(self, n)
        return self._last

    def positions(self, upto: int) -> dict[str, int]:
        """Where each episode joined, for at least the first ``upto`` (an episode joins a
        row at most once, so the map only ever extends)."""
        where = self._where
        for i in range(len(where), upto):
            where[self.episodes[i]] = i
        return where

    def __getstate__(self) -> tuple[list[str]]:
        return (self.episodes,)  # the map and the last snapshot are caches

    def __setstate__(self, state: tuple[list[str]]) -> None:
        (self.episodes,) = state
        self._where = {}
        self._last = None


class ProvenanceSnapshot(AbstractSet[str]):
    """A memory's provenance as it was when it held ``len`` episodes: a read-only set (it
    compares equal to the frozenset of the same episodes) over the first ``len`` entries of
    the row's ordered log, so a snapshot costs no copy of the set."""

    __slots__ = ("_log", "_size")

    def __init__(self, log: _RowLog, size: int) -> None:
        self._log = log
        self._size = size

    def __contains__(self, episode: object) -> bool:
        if not isinstance(episode, str):
            return False
        i = self._log.positions(self._size).get(episode)
        return i is not None and i < self._size

    def isdisjoint(self, other: Iterable[Any]) -> bool:
        # the metrics ask this per returned memory and relevant unit: the map's keys are
        # this snapshot when it holds exactly its entries, and a C-level test then
        where, size = self._log.positions(self._size), self._size
        if len(where) == size:
            return where.keys().isdisjoint(other)
        for episode in other:
            i = where.get(episode)
            if i is not None and i < size:
                return False
        return True

    def __iter__(self) -> Iterator[str]:
        return islice(self._log.episodes, self._size)

    def __len__(self) -> int:
        return self._size

    def __hash__(self) -> int:
        return hash(frozenset(self))

    def __repr__(self) -> str:
        return f"ProvenanceSnapshot({sorted(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return ProvenanceSnapshot, (self._log, self._size)

    @classmethod
    def _from_iterable(cls, it: Iterable[_T]) -> frozenset[_T]:
        # set operations (``p - other``) give plain frozensets
        return frozenset(it)
