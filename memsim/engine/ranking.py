"""Ranking: top-k with its tie rule (scores within TIE_RTOL are a tie, broken by seeded keys),
the support of a top-k from bounds, and the caps of decaying quantities those bounds use.

Each kernel that has a scalar reference twin (``NAME_ref``, plain Python) sits beside it;
tests prove them equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .arrays import as_float64

# Scores equal within this relative tolerance are a tie: float32 cosines of one query against
# memories of the same fact differ only by rounding noise (up to ~2e-7, and which BLAS
# kernel handles a row depends on its position), and that noise must not decide a ranking.
TIE_RTOL = 1e-6


def tie_groups(desc: np.ndarray) -> np.ndarray:
    """Group numbers (0, 1, ...) of finite scores sorted best first: a score within TIE_RTOL
    (relative to the larger magnitude) of the one before it joins its group (single
    linkage, so grouping never depends on where a rounding grid falls)."""
    v = as_float64(desc)
    groups = np.zeros(len(v), dtype=np.int64)
    if len(v) < 2:
        return groups
    above, below = v[:-1], v[1:]
    np.cumsum(above - below > TIE_RTOL * np.maximum(np.abs(above), np.abs(below)), out=groups[1:])
    return groups


# splitmix64's constants and shifts
_U64 = np.uint64


_GOLDEN, _MIX1, _MIX2 = _U64(0x9E3779B97F4A7C15), _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB)


_SHIFT1, _SHIFT2, _SHIFT3 = _U64(30), _U64(27), _U64(31)


def mix64(keys: ArrayLike, salt: int) -> np.ndarray:
    """splitmix64 of ``keys ^ salt`` (uint64): a seeded random permutation key per item.
    Used as the tie-break of equal scores, so the order among tied rows is random but a
    pure function of (salt, item key), never of storage order. Computed on a 1-d array in
    place: array arithmetic on uint64 wraps without the overflow check numpy makes on
    scalars, so no ``np.errstate`` is needed (it cost more than the arithmetic on the few
    keys of a top-k's candidates)."""
    z = np.asarray(keys, dtype=_U64)
    shape = z.shape
    z = z.reshape(-1) ^ _U64(int(salt) & 0xFFFFFFFFFFFFFFFF)
    z += _GOLDEN
    z ^= z >> _SHIFT1
    z *= _MIX1
    z ^= z >> _SHIFT2
    z *= _MIX2
    z ^= z >> _SHIFT3
    out: np.ndarray = z.reshape(shape)[()]  # a 0-d input gives a scalar, as before
    return out


def topk(
    scores: np.ndarray,
    k: int,
    tiebreak: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first.

    Without ``tiebreak``: exact score order, ties to the lower index. With ``tiebreak`` (one
    integer key per row, e.g. :func:`mix64` of stable memory ids): scores within TIE_RTOL
    of each other are a tie (:func:`tie_groups`) and tied rows go in ascending ``tiebreak``
    order, then lower index. ``np.partition`` finds the k-th score in O(n); only the
    candidates are sorted. NaN and -inf scores are never returned (use -inf to mask rows
    out); +inf scores (a formula that overflowed to its maximum) come first, tied among
    themselves.
    ``tiebreak`` may also be a function from row indices to their keys, so the keys of a large
    array are computed for the few candidate rows only.
    """
    scores = np.asarray(scores)
    n = scores.shape[0]
    if tiebreak is not None and not callable(tiebreak):  # checked once, ties or not
        tiebreak = np.asarray(tiebreak)
        if tiebreak.shape != scores.shape:
            raise ValueError(
                f"topk: tiebreak shape {tiebreak.shape} != scores shape {scores.shape}"
            )
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if n <= _SMALL_TOPK and scores.dtype == np.float64:
        small = _topk_small(scores.tolist(), k, tiebreak)
        if small is not None:
            return small
    valid = np.isfinite(scores)
    all_valid = bool(valid.all())
    if not all_valid:
        infinite = np.flatnonzero(scores == np.inf)
        if len(infinite):
            return _infinite_first(scores, infinite, k, tiebreak)
    # invalid rows sink to the bottom (a copy only when there are some)
    s = scores if all_valid else np.where(valid, scores, -np.inf)
    if k < n:
        kth = _kth_largest(s, k)
        if not np.isfinite(kth):
            cand = np.flatnonzero(valid)
        elif tiebreak is None:
            # every row tied with the k-th score, so tie-breaking by index is exact
            cand = np.flatnonzero(s >= kth)
        else:
            cand = np.flatnonzero(s >= tie_chain_bottom(s, kth))
    else:
        cand = np.flatnonzero(valid)
    if tiebreak is None:
        order = np.lexsort((cand, -s[cand]))
        return cand[order][:k].astype(np.int64)
    if len(cand) > _ONE_TIE_FROM and _all_equal(s[cand]):
        return _least_keys_first(cand, _tie_keys(tiebreak, cand), k)
    by_score = cand[np.lexsort((cand, -s[cand]))]
    groups = tie_groups(s[by_score])
    if not len(groups) or groups[-1] == len(groups) - 1:
        # no two candidates tied: the keys cannot change the order (and are not computed)
        return by_score[:k].astype(np.int64)
    keys = _tie_keys(tiebreak, by_score)
    order = np.lexsort((by_score, keys, groups))
    return by_score[order][:k].astype(np.int64)


# from this many candidates on, topk checks whether they all hold one score (a score that
# many memories share exactly, such as Generative Agents' code variant's sum of terms at
# their maxima: ~15,000 rows of a 100,000-row store): then they are one tie group, and the k
# least keys are found by a selection instead of two sorts of every candidate
_ONE_TIE_FROM = 64


def _all_equal(v: np.ndarray) -> bool:
    return bool((v == v[0]).all())


def _least_keys_first(cand: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` candidates (ascending rows) of one tie group in :func:`topk`'s order:
    ascending key, then row; the rows at or under the k-th least key (a selection) are
    the only ones sorted."""
    if k < len(cand):
        near = np.flatnonzero(keys <= np.partition(keys, k - 1)[k - 1])
        cand, keys = cand[near], keys[near]
    return cand[np.lexsort((cand, keys))][:k].astype(np.int64)


def _where_true(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``values[mask]`` of 1-D arrays. numpy 2.4's boolean index costs ~4x ``np.compress``
    on 100,000 rows when ~1-50% of them are taken, scattered (15%: 326 against 83 us), and
    ~8x less when nearly all are."""
    if 2 * np.count_nonzero(mask) < len(mask):
        out: np.ndarray = np.compress(mask, values)
    else:
        out = values[mask]
    return out


# up to this many float64 scores, topk takes them as Python floats (the same IEEE double
# operations and comparisons, step by step): numpy's cost per call is most of a top-k of
# a candidate index's dozen rows, which Personal AI asks ~120,000 times in a steady year
_SMALL_TOPK = 32


def _topk_small(
    vals: list[float],
    k: int,
    tiebreak: np.ndarray | Callable[[np.ndarray], np.ndarray] | None,
) -> np.ndarray | None:
    """:func:`topk` of a few finite scores, the same rows in the same order by the same
    steps (the k-th score, its tie chain, candidates by score then row, tie groups, keys
    only where two candidates tie); None when a score is not finite (topk's array path
    then orders NaN and infinite scores)."""
    if not all(map(math.isfinite, vals)):
        return None
    n = len(vals)
    if k < n:
        kth = sorted(vals)[n - k]
        lo = kth
        if tiebreak is not None:  # tie_chain_bottom
            while True:
                lo_next = lo - TIE_RTOL * abs(lo)
                below = [x for x in vals if lo_next <= x < lo]
                if not below:
                    break
                lo = min(below)
        cand = [i for i, x in enumerate(vals) if x >= lo]
    else:
        cand = list(range(n))
    by_score = sorted(cand, key=lambda i: (-vals[i], i))
    if tiebreak is not None and len(by_score) > 1:
        groups, g = [0], 0
        for a, b in zip(by_score, by_score[1:]):  # tie_groups
            above, below_ = vals[a], vals[b]
            g += above - below_ > TIE_RTOL * max(abs(above), abs(below_))
            groups.append(g)
        if g != len(by_score) - 1:  # two candidates tie: their keys decide
            keys = _tie_keys(tiebreak, np.array(by_score, dtype=np.intp)).tolist()
            by_score = [r for _, _, r in sorted(zip(groups, keys, by_score))]
    return np.array(by_score[:k], dtype=np.int64)


def _kth_largest(s: np.ndarray, k: int) -> Any:
    """The k-th largest value of ``s`` (no NaN; 1 <= k < len(s)): ``np.sort(s)[-k]``, in
    O(n). A strided sample's k-th largest value is at most the answer (its k values are
    values of ``s``), so the k largest values are among the rows at or above it, ~sqrt(k n)
    of them; the answer is the k-th largest of those. A selection over every row costs more:
    ``np.argpartition`` ~6x this at 100,000 rows, ``np.partition`` as much when most rows
    hold one value (-inf, a mask)."""
    n = len(s)
    stride = max(1, int(math.sqrt(n / k)))
    if stride == 1:  # fewer than 4k rows: the sample would be every row
        return np.partition(s, n - k)[n - k]
    sample = s[::stride]  # m >= sqrt(n k) > k values
    m = len(sample)
    low = np.partition(sample, m - k)[m - k]
    # every value at or above ``low`` (above -inf: masked rows never count)
    top = _where_true(s, s >= low if low > -np.inf else s > -np.inf)
    if len(top) < k:  # fewer than k rows above -inf
        return -np.inf
    return np.partition(top, len(top) - k)[len(top) - k]


def _tie_keys(
    tiebreak: np.ndarray | Callable[[np.ndarray], np.ndarray], rows: np.ndarray
) -> np.ndarray:
    """:func:`topk`'s tie keys of ``rows``: ``tiebreak(rows)``, or ``tiebreak[rows]`` of an
    array with one key per score (its shape checked by topk)."""
    if callable(tiebreak):
        return np.asarray(tiebreak(rows))
    keys: np.ndarray = tiebreak[rows]
    return keys


def _infinite_first(
    scores: np.ndarray,
    infinite: np.ndarray,
    k: int,
    tiebreak: np.ndarray | Callable[[np.ndarray], np.ndarray] | None,
) -> np.ndarray:
    """:func:`topk` of scores that hold +inf at rows ``infinite``: those rows first, as one
    tie (ascending ``tiebreak`` key, then lower index), then the best of the finite rest.
    Dropping them instead, as scores that are not finite, would never recall a memory whose
    score overflowed to the formula's maximum."""
    if tiebreak is not None:
        keys = _tie_keys(tiebreak, infinite)
        infinite = infinite[np.lexsort((infinite, keys))]
    if len(infinite) >= k:
        return infinite[:k].astype(np.int64)
    finite_rest = scores.copy()  # the caller's scores stay as they are
    finite_rest[infinite] = -np.inf
    rest = topk(finite_rest, k - len(infinite), tiebreak)
    return np.concatenate((infinite, rest)).astype(np.int64)


def tie_chain_bottom(s: np.ndarray, kth: float) -> float:
    """The lowest score chained to ``kth`` by gaps within TIE_RTOL (the rows at or above it
    are :func:`topk`'s candidates when ties are broken by key)."""
    lo = kth
    while True:
        lo_next = lo - TIE_RTOL * abs(lo)
        below = s[(s < lo) & (s >= lo_next)]
        if not len(below):
            return lo
        lo = below.min()


def topk_support(
    bound: np.ndarray,
    exact: Callable[[np.ndarray], np.ndarray],
    k: int,
    first: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose scores :func:`topk` (ties broken by key) reads, and those scores, for
    scores known through ``bound`` (per row, at least the score as ``exact`` computes it,
    rounding included) and ``exact(rows)`` (the scores of those rows), evaluating ``exact``
    on as few rows as the bounds allow: first the ``first`` (default 2k) highest bounds (then
    twice as many more while fewer than k of the scores found are ones topk returns, i.e.
    not NaN or -inf), then every row whose bound reaches the tie chain of the k-th score
    found so far (a bound of +inf where that score is +inf), until none is left, which is
    known without a pass over the rows when the highest bound left out of the first ``first``
    is under it or the chain reaches no lower than the last pass did; never a row bounded by
    -inf (its score is -inf or NaN). Every other row scores below that chain, so ``topk`` of
    a vector holding these scores and -inf elsewhere is ``topk`` of all the scores, bit for
    bit (with any tiebreak)."""
    if k <= 0:  # topk returns nothing
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    b = np.asarray(bound)
    if len(b) and np.isnan(b.max()):  # the max is NaN where a bound is: no mask otherwise
        b = np.where(np.isnan(b), np.inf, b)  # a copy
    known: np.ndarray | None = None  # rows evaluated, as a mask (after the first round only)
    seen: list[np.ndarray] = []  # the rows evaluated, round by round
    found: list[np.ndarray] = []  # and their scores

    def highest(rows: np.ndarray, m: int) -> np.ndarray:  # the m highest bounds of rows
        return rows[np.argpartition(-b[rows], m - 1)[:m]] if 0 < m < len(rows) else rows

    m = max(2 * k if first is None else int(first), k)
    # the rows above the (m + 1)-th highest bound (topk's O(n) selection), which every row
    # not evaluated stays at or under (a row bounded by -inf is never evaluated: it never
    # scores above it, so topk never returns it)
    rest = float(_kth_largest(b, m + 1)) if m + 1 < len(b) else -np.inf
    if rest == np.inf:  # more than m rows bounded by +inf: the m of them topk takes
        todo = topk(b, m)
    elif rest > -np.inf:  # the rows above the (m + 1)-th highest bound, and rows at it up
        # to m in all (one pass over the rows for both)
        at_or_above = np.flatnonzero(b >= rest)
        above = b[at_or_above] > rest
        todo = at_or_above[above]
        if len(todo) < m:  # the first m rows at or above hold the first m - len(todo) at it
            head = at_or_above[:m]
            todo = np.union1d(todo, head[~above[:m]][: m - len(todo)])
    else:
        todo = np.flatnonzero(b > rest)
    covered: float | None = None  # every row bounded at or above it is evaluated or todo
    while len(todo):
        seen.append(todo)
        found.append(exact(todo))
        vals = np.concatenate(found) if len(found) > 1 else found[0]
        ok = vals[vals > -np.inf]  # the scores topk returns (not NaN, not -inf)
        reach = None
        if len(ok) >= k:
            lo = tie_chain_bottom(vals, float(np.partition(ok, len(ok) - k)[len(ok) - k]))
            # the k-th is +inf: only a row whose bound is +inf can tie it (inf - inf is NaN)
            reach = lo - TIE_RTOL * abs(lo) if np.isfinite(lo) else lo
            # no row left out can reach the tie chain: no pass over the rows
            if rest < reach or (covered is not None and reach >= covered):
                break
        if known is None:
            known = np.zeros(len(b), dtype=bool)
            for rows in seen:
                known[rows] = True
        else:
            known[todo] = True
        if reach is None:
            # fewer than k of them: the next highest bounds, twice as many as the last time
            m *= 2
            todo = highest(np.flatnonzero(~known & (b > -np.inf)), m)
            continue
        todo = np.flatnonzero(b >= reach)
        todo = todo[~known[todo]]
        covered = reach
    if not seen:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = np.concatenate(seen)
    # rows are distinct, so any sort orders them alike; the stable one (timsort) takes the
    # ascending runs of the rounds after the first in O(rows)
    order = np.argsort(rows, kind="stable")
    return rows[order].astype(np.int64), np.concatenate(found)[order]


# A quantity that only falls between a row's uses (a recency decay ** hours, a retrieval
# strength exp(-t / S)) computed at an earlier time, with room for its formula's rounding
# (well under 1 ulp, far under this relative and absolute slack), bounds it as computed at
# every later time until the row is used again: a topk_support bound of its term.
CAP_SLACK = 2.0**-40


CAP_TINY = 2.0**-1000


class DecayCaps:
    """Per store row, at least the value of a quantity that only falls between the row's
    uses, at every time from the last refresh to ``refresh_days`` after it: the quantity
    at the refresh with slack (CAP_SLACK relative, CAP_TINY absolute), or ``top`` (its
    largest value) with slack for a row used (:meth:`used`) or added since. Every row is
    refreshed when asked at a time outside that window (a looser cap only has
    topk_support evaluate more rows exactly, never changes its answer). The owner tells it
    of every use; a quantity changed any other way needs :meth:`reset`."""

    def __init__(self, top: float, refresh_days: float = 1.0) -> None:
        self.any = float(top) * (1.0 + CAP_SLACK)
        self.refresh_days = float(refresh_days)
        self.reset()

    def reset(self) -> None:
        """Forget every cap: the next :meth:`at` refreshes every row."""
        self._caps = np.zeros(0)
        self._known = 0
        self._at = math.nan

    def at(self, now: float, n: int, values: Callable[[float], np.ndarray]) -> np.ndarray:
        """The caps of rows 0 .. n - 1 at ``now`` (kept: read, never written); ``values(now)``
        gives the quantity of those rows at ``now`` as a new float64 array (at a refresh)."""
        if n < self._known:  # (a store does not shrink: another store's caps)
            self.reset()
        if n > len(self._caps):  # room for the rows added, doubling
            grown = np.empty(max(n, 2 * len(self._caps)))
            grown[: self._known] = self._caps[: self._known]
            self._caps = grown
        self._caps[self._known : n] = self.any
        self._known = n
        if not self._at <= now <= self._at + self.refresh_days:
            caps = values(now)
            caps *= 1.0 + CAP_SLACK
            caps += CAP_TINY
            self._caps[:n] = caps
            self._at = now
        return self._caps[:n]

    def used(self, rows: np.ndarray) -> None:
        """``rows`` were used: their quantity is back at its top."""
        rows = np.asarray(rows)
        self._caps[rows[rows < self._known]] = self.any


def batch_topk(scores: np.ndarray, k: int, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Row-wise :func:`topk` of a (q, n) score matrix: (q, k) int64 ids best first, ties to
    the lower index, padded with -1 where a row has fewer than k scores topk returns. With
    ``tiebreak`` ((q, n) or (n,) integer keys) each row is ``topk(row, k, tiebreak_row)``.

    One ``argpartition`` over the whole matrix; rows whose k-th score is tied with rows
    outside the partition (or that lack k finite scores) are redone exactly by ``topk``.
    """
    scores = np.asarray(scores)
    if scores.ndim != 2:
        raise ValueError(f"batch_topk: scores must be (q, n), got shape {scores.shape}")
    q, n = scores.shape
    k = max(0, int(k))
    out = np.full((q, k), -1, dtype=np.int64)
    if k == 0 or q == 0 or n == 0:
        return out
    s = np.where(np.isnan(scores), -np.inf, scores)  # +inf stays: topk ranks it first
    if tiebreak is not None:
        tb = np.broadcast_to(np.asarray(tiebreak), (q, n))
        for row in range(q):
            ids = topk(s[row], k, tb[row])
            out[row, : len(ids)] = ids
        return out
    kk = min(k, n)
    if kk < n:
        part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
    else:
        part = np.broadcast_to(np.arange(n), (q, n))
    ps = np.take_along_axis(s, part, axis=1)
    kth = ps.min(axis=1)
    exact = np.isfinite(kth) & ((s >= kth[:, None]).sum(axis=1) == kk)
    if exact.any():
        p, v = part[exact], ps[exact]
        # sort each row by (-score, id): lexsort on the flattened rows keeps rows apart
        rows = np.repeat(np.arange(p.shape[0]), kk)
        order = (
            np.lexsort((p.ravel(), -v.ravel(), rows)).reshape(p.shape[0], kk)
            - (np.arange(p.shape[0]) * kk)[:, None]
        )
        out[exact, :kk] = np.take_along_axis(p, order, axis=1)
    for r in np.flatnonzero(~exact):
        ids = topk(s[r], k)
        out[r, : len(ids)] = ids
    return out


def topk_ref(scores: Sequence[float], k: int) -> list[int]:
    """Full stable sort by descending score (+inf first), NaN and -inf left out, first k."""
    kept = [i for i, s in enumerate(scores) if s > -math.inf]  # NaN compares False
    return sorted(kept, key=lambda i: (-scores[i], i))[: max(0, k)]


def batch_topk_ref(scores: Sequence[Sequence[float]], k: int) -> list[list[int]]:
    k = max(0, k)
    return [(ids + [-1] * k)[:k] for ids in (topk_ref(row, k) for row in scores)]
