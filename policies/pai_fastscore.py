"""Fused recall scoring: the multi-factor score, the cosine floor and top-k in one pass.

A straightforward recall over n memories computes the cosine of every row (one matrix-vector
product, bound by memory bandwidth), then a dozen full-length float64 temporaries for the
other score terms, then ``argpartition`` over all n. Only rows whose cosine clears the floor
can be returned, and an upper bound on the non-cosine terms tells which cosines cannot reach
the k-th best score, so the fused kernels here:

1. compute the cosines (``X @ q``, or ``Q @ X_chunk.T`` per chunk of rows for a batch);
2. keep the rows whose cosine clears ``max(floor, tau)`` where ``tau`` is the smallest
   cosine that could still beat the current k-th best score (the *bound* prefilter);
3. compute the exact score on those candidates only, with the very same float operations,
   in the same order, as :func:`pai_scores` (so results are bit-identical), and take top-k
   with the same tie rule as :func:`memsim.engine.ranking.topk` (equal scores: lower row
   first; :func:`pai_topk_from_cos`, which recall uses, also takes the seeded tie keys).

``pai_*`` functions implement document 000 §2 (Personal AI): ``score = w_cosine*cos +
w_importance*importance/importance_scale + w_recency*exp(-recency_rate*daysSinceAccess) +
w_stability*stability/stability_scale + w_subject*subjectMatch``, insight-type rows times
``insight_multiplier``, rows with ``cos < cosine_floor`` excluded. The constants come from
the caller's parameters (``policies.pai.PaiParams`` or any object with those attribute
names); this module names none of them. :func:`pai_scores` is the straightforward full-length
version (the operation order of ``policies.pai.recall_scores``) and
:func:`pai_score_scalar` the one-memory-at-a-time reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memsim.engine import decay
from memsim.engine.ranking import TIE_RTOL, tie_chain_bottom, topk
from policies import pai_formulas

# Slack (in cosine units) of the bound prefilter, far above float rounding of the bound.
_BOUND_SLACK = 1e-7
# Rows per chunk of the batched kernel: a (rows, dim) float32 block plus the (queries, rows)
# block of cosines stay within a few MB of cache-friendly work per BLAS call.
_BATCH_CHUNK = 16384


@dataclass(frozen=True)
class PaiColumns:
    """The store columns the §2 score reads (views, not copies). ``last_access`` is NaN for
    a row never accessed: its days since access count from ``unaccessed_from`` (the row's
    creation in 000 §2, its last update in the public code). ``subject`` holds
    small non-negative subject codes; ``insight`` marks insight-type rows; ``allowed``
    marks rows recall may return (active and embedded), None meaning all."""

    importance: np.ndarray
    stability: np.ndarray
    last_access: np.ndarray
    unaccessed_from: np.ndarray
    subject: np.ndarray
    insight: np.ndarray
    allowed: np.ndarray | None = None

    @staticmethod
    def of_store(
        store: Any,
        insight_type: int,
        allowed: np.ndarray | None = None,
        unaccessed_from: str = "created",
    ) -> PaiColumns:
        """The columns of a pai MemoryStore (``type == insight_type`` marks insight rows;
        ``unaccessed_from`` names the column a never-accessed row's recency counts from)."""
        return PaiColumns(
            store["importance"],
            store["stability"],
            store["last_access"],
            store[unaccessed_from],
            store["subject"],
            store["type"] == insight_type,
            allowed,
        )

    def take(self, rows: np.ndarray) -> PaiColumns:
        return PaiColumns(
            self.importance[rows],
            self.stability[rows],
            self.last_access[rows],
            self.unaccessed_from[rows],
            self.subject[rows],
            self.insight[rows],
            None if self.allowed is None else self.allowed[rows],
        )


def _days_since_access(cols: PaiColumns, now: float) -> np.ndarray:
    return decay.days_since_access(now, cols.last_access, cols.unaccessed_from)


def score_weights(p: Any) -> dict[str, float]:
    """The §2 constants of ``pai_formulas.pai_score`` / ``pai_formulas.pai_score_ref``, read off any
    object with PaiParams' attribute names."""
    return {
        "w_cos": p.w_cosine,
        "w_importance": p.w_importance,
        "w_recency": p.w_recency,
        "w_stability": p.w_stability,
        "w_subject": p.w_subject,
        "importance_scale": p.importance_scale,
        "stability_scale": p.stability_scale,
        "insight_multiplier": p.insight_multiplier,
    }


def _subject_match(subject: np.ndarray, codes: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.isin(subject, np.asarray(codes, dtype=np.int64)).astype(np.float64)


def _score_terms(
    cos64: np.ndarray, cols: PaiColumns, since: np.ndarray, match: np.ndarray, p: Any
) -> np.ndarray:
    """The §2 score: the one kernel (``pai_formulas.pai_score``), as policies.pai.recall_scores."""
    recency = np.exp(-p.recency_rate * since)
    return pai_formulas.pai_score(
        cos64,
        cols.importance,
        recency,
        cols.stability,
        match,
        **score_weights(p),
        insight=cols.insight,
    )


# -- straightforward and scalar references ----------------------------------------------------
def pai_scores(
    cos: np.ndarray, cols: PaiColumns, now: float, subject_codes: Sequence[int], p: Any
) -> np.ndarray:
    """Straightforward numpy: the score of every row, -inf where the row cannot be returned
    (below the cosine floor or not allowed). ``cos`` is any float array of length n."""
    cos64 = np.asarray(cos).astype(np.float64)
    score = _score_terms(
        cos64, cols, _days_since_access(cols, now), _subject_match(cols.subject, subject_codes), p
    )
    keep = cos64 >= p.cosine_floor
    if cols.allowed is not None:
        keep &= cols.allowed
    return np.where(keep, score, -np.inf)


def pai_topk_numpy(
    X: np.ndarray,
    q: np.ndarray,
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[int],
    p: Any,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Straightforward recall of one query: full cosines, full scores, ranking.topk."""
    scores = pai_scores(X @ q, cols, now, subject_codes, p)
    ids = topk(scores, k)
    return ids, scores[ids]


def pai_score_scalar(
    x: np.ndarray,
    q: np.ndarray,
    importance: float,
    stability: float,
    last_access: float,
    unaccessed_from: float,
    subject: int,
    insight: bool,
    allowed: bool,
    now: float,
    subject_codes: Collection[int],
    p: Any,
) -> float:
    """One memory's §2 score in plain Python (-inf when it cannot be returned), the way a
    loop over beliefs computes it; the cosine is one dot product of float32 rows."""
    cos = float(np.dot(x, q))
    if not allowed or cos < p.cosine_floor:
        return -math.inf
    since = decay.days_since_access_ref(now, last_access, unaccessed_from)
    return pai_formulas.pai_score_ref(
        cos,
        importance,
        math.exp(-p.recency_rate * since),
        stability,
        1.0 if subject in subject_codes else 0.0,
        **score_weights(p),
        insight=insight,
    )


def pai_topk_scalar(
    X: np.ndarray,
    q: np.ndarray,
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[int],
    p: Any,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Score one memory at a time, keep the best k (ties: lower row first)."""
    codes = set(int(c) for c in subject_codes)
    scored = []
    allowed = cols.allowed
    for i in range(X.shape[0]):
        s = pai_score_scalar(
            X[i],
            q,
            float(cols.importance[i]),
            float(cols.stability[i]),
            float(cols.last_access[i]),
            float(cols.unaccessed_from[i]),
            int(cols.subject[i]),
            bool(cols.insight[i]),
            True if allowed is None else bool(allowed[i]),
            now,
            codes,
            p,
        )
        if s > -math.inf:
            scored.append((-s, i))
    scored.sort()
    best = scored[:k]
    return (
        np.array([i for _, i in best], dtype=np.int64),
        np.array([-s for s, _ in best], dtype=np.float64),
    )


# -- fused kernels ---------------------------------------------------------------------------
def _below(x: float) -> np.float32:
    """The largest float32 <= x (so ``cos32 >= _below(t)`` keeps every ``cos >= t``)."""
    f = np.float32(x)
    return f if float(f) <= x else np.nextafter(f, np.float32(-np.inf))


def pai_rest_bound(cols: PaiColumns, now: float, p: Any) -> tuple[float, float] | None:
    """(R, m) with ``score <= m * w_cosine * cos + R`` for every row whose cos >= 0:
    R bounds ``multiplier * (all non-cosine terms)`` and m the multiplier. None when no
    finite bound exists (a negative weight, NaN columns, an empty store)."""
    weights = (
        p.w_cosine,
        p.w_importance,
        p.w_recency,
        p.w_stability,
        p.w_subject,
        p.insight_multiplier,
    )
    if len(cols.importance) == 0 or min(weights) < 0 or p.w_cosine <= 0:
        return None
    latest = max(float(np.max(cols.unaccessed_from)), float(np.fmax.reduce(cols.last_access)))
    mult = max(1.0, float(p.insight_multiplier))
    rest = (
        p.w_importance * (float(np.max(cols.importance)) / p.importance_scale)
        + p.w_recency * math.exp(-p.recency_rate * (now - latest))
        + p.w_stability * (float(np.max(cols.stability)) / p.stability_scale)
        + p.w_subject
    )
    if not (math.isfinite(rest) and math.isfinite(mult)):
        return None
    return mult * rest, mult


def _cos_threshold(kth: float, bound: tuple[float, float] | None, p: Any) -> float:
    """Smallest cosine that can still score above ``kth`` (never below the floor)."""
    floor = float(p.cosine_floor)
    if bound is None or not math.isfinite(kth):
        return floor
    rest, mult = bound
    tau = (kth - rest) / (mult * p.w_cosine) - _BOUND_SLACK
    # the bound holds for cos >= 0 only; a positive tau also rules out negative cosines
    return max(floor, tau) if tau > 0 else floor


def _cos_thresholds(kth: np.ndarray, bound: tuple[float, float] | None, p: Any) -> np.ndarray:
    """:func:`_cos_threshold` of every query, rounded down to float32."""
    floor = float(p.cosine_floor)
    t = np.full(len(kth), floor)
    if bound is not None:
        rest, mult = bound
        with np.errstate(invalid="ignore"):
            raw = (kth - rest) / (mult * p.w_cosine) - _BOUND_SLACK
        t = np.where(np.isfinite(raw) & (raw > 0) & (raw > floor), raw, floor)
    t32 = t.astype(np.float32)
    over = t32.astype(np.float64) > t
    t32[over] = np.nextafter(t32[over], np.float32(-np.inf))
    return t32


def _score_candidates(
    cos_c: np.ndarray, rows: np.ndarray, cols: PaiColumns, now: float, match: np.ndarray, p: Any
) -> np.ndarray:
    """Exact scores of candidate rows (-inf where not returnable), same float ops as
    pai_scores on the full arrays."""
    sub = cols.take(rows)
    cos64 = cos_c.astype(np.float64)
    score = _score_terms(cos64, sub, _days_since_access(sub, now), match, p)
    keep = cos64 >= p.cosine_floor
    if sub.allowed is not None:
        keep &= sub.allowed
    return np.where(keep, score, -np.inf)


def pai_topk_from_cos(
    cos: np.ndarray,
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[int],
    p: Any,
    k: int,
    bound: tuple[float, float] | None | str = "auto",
    tiebreak: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k rows and scores of one query from its cosine column ``cos`` (float32 or
    float64, length n): equal to ``topk(pai_scores(cos, ...), k, tiebreak)`` bit for bit,
    computing the score on floor-clearing candidates only. With many candidates, the k best
    cosines give a first k-th score and the bound prunes the candidates before exact
    scoring. ``bound`` is :func:`pai_rest_bound` (computed when "auto"; pass it when
    scoring several queries at one time, it does not depend on the query). ``tiebreak``
    (one key per row, ``MemoryStore.tie_keys``, or a function from rows to their keys, then
    called for the few rows at the cut only): scores within TIE_RTOL are tied and go in
    key order; the pruning is then undone whenever a pruned row could join the tie at the
    cut, so the answer stays exact. With the returned scores the running minimum."""
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
    if k <= 0 or len(cos) == 0:
        return empty
    floor = float(p.cosine_floor)
    cand = np.flatnonzero(cos >= (_below(floor) if cos.dtype == np.float32 else floor))
    if cols.allowed is not None and len(cand):
        cand = cand[cols.allowed[cand]]
    codes = np.asarray(subject_codes, dtype=np.int64)
    everything = cand
    pruned_below = -np.inf  # every pruned row scores under this
    if len(cand) > 8 * k + 256:
        if isinstance(bound, str):
            bound = pai_rest_bound(cols, now, p)
        if bound is not None:
            # exact scores of the k best cosines: their k-th is a lower bound of the answer's
            probe = cand[np.argpartition(-cos[cand], k - 1)[:k]]
            ps = _score_candidates(
                cos[probe], probe, cols, now, _subject_match(cols.subject[probe], codes), p
            )
            kth = float(np.min(ps))
            tau = _cos_threshold(kth, bound, p)
            if tau > floor:
                cand = cand[cos[cand] >= (_below(tau) if cos.dtype == np.float32 else tau)]
                pruned_below = kth
    if len(cand) == 0:
        return empty
    scores = _score_candidates(
        cos[cand], cand, cols, now, _subject_match(cols.subject[cand], codes), p
    )
    if tiebreak is None:
        best = topk(scores, k)
        return cand[best], scores[best]
    best = topk(scores, k, _keys_of(tiebreak, cand))
    if len(best) and np.isfinite(pruned_below):
        # the tie group at the cut reaches down to ``lo``; a pruned row (score under
        # pruned_below) could join it only if lo is within TIE_RTOL of pruned_below
        s = np.where(np.isfinite(scores), scores, -np.inf)
        lo = float(s[best[-1]])
        while True:
            below = s[(s < lo) & (s >= lo - TIE_RTOL * abs(lo))]
            if not len(below):
                break
            lo = float(below.min())
        if lo - TIE_RTOL * abs(lo) <= pruned_below:
            cand = everything
            scores = _score_candidates(
                cos[cand], cand, cols, now, _subject_match(cols.subject[cand], codes), p
            )
            best = topk(scores, k, _keys_of(tiebreak, cand))
    return cand[best], np.minimum.accumulate(scores[best])


# The screened rows a top-k reads first (k of them times this, at least SCREEN_FIRST_MIN),
# and the rows one screen returns (SCREEN_SEARCH_PER_FIRST times as many). Measured on the
# benchmarks' 1M clustered rows (benchmarks/bench_recall.py): every query needed more than
# 32 x k rows and none more than 128 x k (320 read first cost a second round on every
# query); a screen returning 2,560 rows costs 1.07x one returning 1,280, 5,120 rows 1.18x.
SCREEN_FIRST_PER_K = 128
SCREEN_FIRST_MIN = 512
SCREEN_SEARCH_PER_FIRST = 2


def pai_topk_screened(
    ranked: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]],
    exact: Callable[[np.ndarray], np.ndarray],
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[int],
    p: Any,
    k: int,
    tiebreak: Callable[[np.ndarray], np.ndarray] | None = None,
    first: int | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`pai_topk_from_cos` of the full scan's cosines, computed from a few rows.
    ``ranked(m)`` (``MemoryStore.query_screen``) gives the m rows of highest screened
    cosine, best first, ``edges`` (``edges[i]``, i = 0 .. m, at least the full scan's
    float32 cosine of every row but the first i and the stale ones) and the stale rows;
    ``exact(rows)`` gives rows' float32 cosines as the full scan computes them. The top k
    of the first i rows and the stale ones is the answer once no other row can score into
    its tie chain: the chain's bottom less TIE_RTOL, by :func:`pai_rest_bound`, needs a
    cosine above ``edges[i]`` (or every other row is under the floor). Rows read: four
    times as many until then, or None when a quarter of the store would be needed or no
    bound exists (the caller scans every row). ``first``: the rows read first (default
    from k)."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    n = len(cols.importance)
    bound = pai_rest_bound(cols, now, p)
    if bound is None:
        return None
    floor = float(p.cosine_floor)
    codes = np.asarray(subject_codes, dtype=np.int64)
    i = max(SCREEN_FIRST_PER_K * k, SCREEN_FIRST_MIN) if first is None else max(1, first)
    order, edges, stale = ranked(min(n, SCREEN_SEARCH_PER_FIRST * i))
    while 4 * i <= n:
        if i > len(order):
            order, edges, stale = ranked(min(n, SCREEN_SEARCH_PER_FIRST * i))
        head = order[:i]
        rows = np.union1d(head, stale) if len(stale) else np.sort(head)
        edge = float(edges[min(i, len(edges) - 1)])
        cos = exact(rows)
        sub = cols.take(rows)
        keys = None if tiebreak is None else (lambda idx, rows=rows: tiebreak(rows[idx]))
        top, top_scores = pai_topk_from_cos(cos, sub, now, subject_codes, p, k, bound, keys)
        if edge < floor:  # no other row clears the floor
            return rows[top], top_scores
        scores = _score_candidates(cos, rows, cols, now, _subject_match(sub.subject, codes), p)
        ok = scores[scores > -np.inf]
        if len(ok) >= k:
            kth = float(np.partition(ok, len(ok) - k)[len(ok) - k])
            lo = tie_chain_bottom(np.where(np.isfinite(scores), scores, -np.inf), kth)
            # a row scoring under this joins neither the top k nor its tie chain
            tau = _cos_threshold(lo - TIE_RTOL * abs(lo), bound, p)
            if tau > floor and edge < tau:
                return rows[top], top_scores
        i *= 4
    return None


def _keys_of(
    tiebreak: np.ndarray | Callable[[np.ndarray], np.ndarray], cand: np.ndarray
) -> np.ndarray | Callable[[np.ndarray], np.ndarray]:
    """The tie keys of the rows ``cand`` for ``topk`` over them (lazily when a function)."""
    if callable(tiebreak):
        return lambda idx: tiebreak(cand[idx])
    return tiebreak[cand]


def pai_topk(
    X: np.ndarray,
    q: np.ndarray,
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[int],
    p: Any,
    k: int,
    bound: tuple[float, float] | None | str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Fused recall of one query over the float32 matrix X: one ``X @ q`` (the bandwidth
    floor), then :func:`pai_topk_from_cos`."""
    return pai_topk_from_cos(
        X @ np.asarray(q, dtype=np.float32), cols, now, subject_codes, p, k, bound
    )


def batch_cosines(X: np.ndarray, Q: np.ndarray, chunk: int = _BATCH_CHUNK) -> np.ndarray:
    """The (queries, n) cosine matrix exactly as :func:`pai_topk_batch` computes it, chunk
    by chunk (BLAS rounding depends on the blocking: a float32 GEMM and a GEMV can differ
    in the last bit), for references and tests."""
    QT = np.ascontiguousarray(Q, dtype=np.float32).T
    n = X.shape[0]
    return np.concatenate(
        [(X[lo : min(n, lo + chunk)] @ QT).T for lo in range(0, n, chunk)]
        or [np.zeros((QT.shape[1], 0), np.float32)],
        axis=1,
    )


def pai_topk_batch(
    X: np.ndarray,
    Q: np.ndarray,
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[Sequence[int]],
    p: Any,
    k: int,
    chunk: int = _BATCH_CHUNK,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fused recall of a batch of independent queries (rows of Q, each with its subject
    codes), state unchanged between them: per chunk of rows one matrix-matrix product
    (compute-bound BLAS, ``X_chunk @ Q.T``), then the floor/bound prefilter per query against
    its running k-th best score, exact scores of the survivors and a vectorized merge into the
    running top-k. Equal bit for bit to ``topk(pai_scores(batch_cosines(X, Q, chunk)[b], ...))``
    for each query b (and to ``pai_topk`` up to float32 rounding of the cosines)."""
    Q = np.ascontiguousarray(Q, dtype=np.float32)
    QT = Q.T
    B = Q.shape[0]
    n = X.shape[0]
    if len(subject_codes) != B:
        raise ValueError(f"subject_codes: need one entry per query ({B}), got {len(subject_codes)}")
    if k <= 0 or n == 0 or B == 0:
        return [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)) for _ in range(B)]
    bound = pai_rest_bound(cols, now, p)
    n_subj = (
        int(
            max(
                int(np.max(cols.subject)) if n else 0,
                max((max(c) for c in subject_codes if len(c)), default=0),
            )
        )
        + 1
    )
    table = np.zeros((B, n_subj), dtype=np.float64)  # subjectMatch of (query, subject code)
    for b, codes in enumerate(subject_codes):
        codes = [c for c in codes if 0 <= c < n_subj]
        table[b, codes] = 1.0
    floor = float(p.cosine_floor)
    tau = np.full(B, _below(floor), dtype=np.float32)
    kth = np.full(B, -np.inf)
    best_q = np.zeros(0, dtype=np.int64)
    best_r = np.zeros(0, dtype=np.int64)
    best_s = np.zeros(0, dtype=np.float64)
    # reused buffers: a fresh multi-MB block per chunk would cost page faults every time
    c_buf = np.empty((min(chunk, n), B), dtype=np.float32)
    m_buf = np.empty((min(chunk, n), B), dtype=bool)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        C = np.matmul(X[lo:hi], QT, out=c_buf[: hi - lo])  # (rows, B) float32
        mask = np.greater_equal(C, tau, out=m_buf[: hi - lo])
        flat = np.flatnonzero(mask)  # 1-D: far faster than 2-D nonzero
        if len(flat) == 0:
            continue
        cos_c = C.ravel()[flat]
        rows, qi = np.divmod(flat, B)
        rows += lo
        if cols.allowed is not None:
            ok = cols.allowed[rows]
            qi, rows, cos_c = qi[ok], rows[ok], cos_c[ok]
        match = table[qi, cols.subject[rows]]
        s = _score_candidates(cos_c, rows, cols, now, match, p)
        # a new row ties with the k-th best only by losing (it has a higher index)
        keep = s > kth[qi]
        qi, rows, s = qi[keep], rows[keep], s[keep]
        if len(qi) == 0:
            continue
        all_q = np.concatenate([best_q, qi])
        all_r = np.concatenate([best_r, rows])
        all_s = np.concatenate([best_s, s])
        order = np.lexsort((all_r, -all_s, all_q))
        all_q, all_r, all_s = all_q[order], all_r[order], all_s[order]
        start = np.searchsorted(all_q, np.arange(B))
        rank = np.arange(len(all_q)) - start[all_q]
        top = rank < k
        best_q, best_r, best_s = all_q[top], all_r[top], all_s[top]
        full = np.flatnonzero(np.bincount(best_q, minlength=B) == k)
        if len(full):
            kth[full] = best_s[np.searchsorted(best_q, full, side="right") - 1]
            tau = _cos_thresholds(kth, bound, p)
    bounds = np.searchsorted(best_q, np.arange(B + 1))
    return [
        (best_r[bounds[b] : bounds[b + 1]], best_s[bounds[b] : bounds[b + 1]]) for b in range(B)
    ]


# -- elementwise kernels without full-length temporaries --------------------------------------
# Rows per block of :func:`chunked`: 8192 float64 = 64 KiB, under glibc's default mmap
# threshold, so every temporary of a block is recycled from the heap (hot in cache) instead
# of being a fresh n-long allocation whose page faults cost more than the arithmetic.
_ELEMENTWISE_CHUNK = 8192


def chunked(
    kernel: Any,
    *args: Any,
    chunk: int = _ELEMENTWISE_CHUNK,
    out: np.ndarray | None = None,
    **kwargs: Any,
) -> np.ndarray:
    """``kernel(*args, **kwargs)`` of an elementwise kernel (e.g. policies.izzie.exp_decay),
    evaluated block by block into one output: bit-identical (the same ufuncs on the same
    elements), but the temporaries are block-sized. Array arguments broadcast to one 1-D
    shape; scalars and keyword arguments pass through."""
    arrays = [np.asarray(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    if len(shape) != 1:
        return np.asarray(kernel(*args, **kwargs), dtype=np.float64)
    n = shape[0]
    parts = [np.broadcast_to(a, shape) if a.ndim else a for a in arrays]
    res = np.empty(n, dtype=np.float64) if out is None else out
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        res[lo:hi] = kernel(*(p[lo:hi] if p.ndim else p for p in parts), **kwargs)
    return res


def half_life_decay(c: Any, dt: Any, half_life: Any) -> np.ndarray:
    """``c * 0.5 ** (dt / half_life)`` as ``c * exp2(-(dt / half_life))``: libm's ``pow``
    has no vectorized loop in numpy (~15 ns per element), ``exp2`` has; equal to the
    ``pow`` form within 2 ulp (not bit for bit)."""
    c = np.asarray(c, dtype=np.float64)
    return c * np.exp2(
        -(np.asarray(dt, dtype=np.float64) / np.asarray(half_life, dtype=np.float64))
    )


def pai_topk_candidates(
    cos_c: np.ndarray,
    rows: np.ndarray,
    cols: PaiColumns,
    now: float,
    subject_codes: Sequence[int],
    p: Any,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact §2 top-k among given candidate ``rows`` (ascending, with their cosines), e.g.
    from an approximate index (faiss IVF range search): the policy's own score on the
    candidates, ties to the lower row."""
    rows = np.asarray(rows, dtype=np.int64)
    if k <= 0 or len(rows) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    scores = _score_candidates(
        np.asarray(cos_c), rows, cols, now, _subject_match(cols.subject[rows], subject_codes), p
    )
    best = topk(scores, k)
    return rows[best], scores[best]


def _pow_positive(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """``base ** exponent`` as ``exp(exponent * ln(base))`` (two SIMD loops instead of libm
    ``pow``; within a few ulp for base > 0, exact for base = 0 with exponent != 0). Where
    that form gives NaN (0 ** 0, negative bases, NaN inputs) libm ``pow`` decides."""
    base = np.asarray(base, dtype=np.float64)
    exponent = np.asarray(exponent, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.asarray(np.exp(exponent * np.log(base)))
        bad = np.isnan(out)
        if bad.any():
            b, e = np.broadcast_arrays(base, exponent)
            out[bad] = np.power(b[bad], e[bad])
    return out


def cosmo_decay_rate(
    recall_frequency: Any,
    decay_gradient: Any,
    base_rate: Any = 0.02,
    state_is_candidate: Any = False,
    confidence: Any = 1.0,
    penalty_threshold: float = 0.8,
    penalty_slope: Any = 2.0,
) -> np.ndarray:
    """policies.cosmo.cosmo_decay_rate (document 002, offline decay job) with the power
    ``recall_frequency ** decay_gradient`` taken as exp(g * ln rf) for rf > 0: equal to the
    pow form within a few ulp, several times faster (libm pow has no vector loop)."""
    rf = np.asarray(recall_frequency, dtype=np.float64)
    g = np.asarray(decay_gradient, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        rate = np.asarray(base_rate, dtype=np.float64) / (1.0 + _pow_positive(rf, g))
    conf = np.asarray(confidence, dtype=np.float64)
    cand = np.asarray(state_is_candidate, dtype=bool)
    penalty = np.where(
        conf < penalty_threshold,
        1.0 + (1.0 - conf) * np.asarray(penalty_slope, dtype=np.float64),
        0.0,
    )
    return np.where(cand, rate * penalty, rate)
