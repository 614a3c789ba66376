"""Vectorized scoring kernels: pure functions over numpy arrays.

Each kernel has a scalar reference twin in :mod:`memsim.engine.kernels_ref`, written straight from
the seed formula; tests prove them equal. Kernels never mutate their inputs. Arguments
broadcast like numpy operands; results are float64 unless said otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _f(x: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(x, dtype=np.float64)


# -- decay curves ----------------------------------------------------------------------


def exp_decay(x0: ArrayLike, rate: ArrayLike, dt: ArrayLike) -> np.ndarray:
    """``x0 * exp(-rate * dt)``: Izzie strength, Cosmo salience (closed form of the nightly
    multiplicative job), PAI recency (rate 0.023). The expression's steps in its own shapes,
    each written over the array before it where the shape allows (the same bits, NaN signs
    included): each fresh array of a million rows is 8 MB of pages to fault in."""
    x, r, d = _f(x0), _f(rate), _f(dt)
    if not np.broadcast_shapes(x.shape, r.shape, d.shape):
        return x * np.exp(-r * d)
    z = np.negative(r, out=np.empty(r.shape))
    z = np.multiply(z, d, out=z) if z.shape == np.broadcast_shapes(z.shape, d.shape) else z * d
    np.exp(z, out=z)
    if z.shape == np.broadcast_shapes(x.shape, z.shape):
        return np.multiply(x, z, out=z)
    out: np.ndarray = x * z
    return out


def days_since_access(now: ArrayLike, last_access: ArrayLike, created: ArrayLike) -> np.ndarray:
    """The one clock of every policy: days since the last access, counting from creation
    until the first one (``last_access`` NaN), never negative."""
    last = _f(last_access)
    return np.maximum(_f(now) - np.where(np.isnan(last), _f(created), last), 0.0)


def half_life_decay(c: ArrayLike, dt: ArrayLike, half_life: ArrayLike) -> np.ndarray:
    """``c * 0.5 ** (dt / half_life)``: PAI effective confidence (half_life = 30 * stability)."""
    return _f(c) * np.power(0.5, _f(dt) / _f(half_life))


def beta_mean(alpha: ArrayLike, beta: ArrayLike) -> np.ndarray:
    """``alpha / (alpha + beta)``: Engram belief confidence (Beta posterior mean)."""
    a = _f(alpha)
    return a / (a + _f(beta))


def retrieval_strength(dt: ArrayLike, stability: ArrayLike) -> np.ndarray:
    """``exp(-dt / S)``: Engram retrieval strength R(t), S the stability in days."""
    return np.exp(-_f(dt) / _f(stability))


def stability_update(
    stability: ArrayLike, hours_since_last: ArrayLike, cap: ArrayLike, bonus: ArrayLike = 0.1
) -> np.ndarray:
    """``min(cap, S * (1 + bonus * ln(1 + hours / 24)))``: Engram spaced-repetition bonus
    on each retrieval (bonus 0.1, cap 365 days in the seed)."""
    grown = _f(stability) * (1.0 + _f(bonus) * np.log1p(_f(hours_since_last) / 24.0))
    return np.minimum(_f(cap), grown)


def hyperbolic_salience(
    confidence: ArrayLike,
    times_accessed: ArrayLike,
    dt: ArrayLike,
    half_life: ArrayLike,
    offset: ArrayLike = 0.0,
) -> np.ndarray:
    """``confidence * ln(times_accessed + 1) / (dt / half_life + 1)``: Kernle salience.

    The seed writes ``log``; Kernle is Python, where ``math.log`` is the natural log, so
    we use ln. (Any base only rescales salience against the forgetting threshold.) Note
    the formula gives 0 for a memory never accessed. ``offset`` is added to the log term
    (``ln(n + 1) + offset``; 0 in the document).
    """
    return (
        _f(confidence)
        * (np.log(_f(times_accessed) + 1.0) + _f(offset))
        / (_f(dt) / _f(half_life) + 1.0)
    )


def cosmo_decay_rate(
    recall_frequency: ArrayLike,
    decay_gradient: ArrayLike,
    base_rate: ArrayLike = 0.02,
    state_is_candidate: ArrayLike = False,
    confidence: ArrayLike = 1.0,
    penalty_threshold: float = 0.8,
    penalty_slope: ArrayLike = 2.0,
) -> np.ndarray:
    """Cosmo's nightly decay rate (002 §Candidate Semantics / Offline decay job).

    ``base_rate / (1 + recall_frequency ** decay_gradient)``; for candidates with
    ``confidence < penalty_threshold`` times ``1 + (1 - confidence) * penalty_slope``; for
    candidates at or above the threshold 0 (no decay until first retrieval). With
    recall_frequency 0 and a negative gradient the power is +inf and the rate 0 (the limit).
    """
    rf, g = _f(recall_frequency), _f(decay_gradient)
    with np.errstate(divide="ignore", over="ignore"):
        rate = _f(base_rate) / (1.0 + np.power(rf, g))
    conf = _f(confidence)
    cand = np.asarray(state_is_candidate, dtype=bool)
    penalty = np.where(conf < penalty_threshold, 1.0 + (1.0 - conf) * _f(penalty_slope), 0.0)
    return np.where(cand, rate * penalty, rate)


# -- score combinations -----------------------------------------------------------------


def weighted_sum(weights: Sequence[float], columns: Sequence[ArrayLike]) -> np.ndarray:
    """``sum_i weights[i] * columns[i]``, accumulated left to right."""
    if len(weights) != len(columns):
        raise ValueError(f"weighted_sum: {len(weights)} weights but {len(columns)} columns")
    if not columns:
        return np.zeros(())
    out = float(weights[0]) * _f(columns[0])
    for w, c in zip(weights[1:], columns[1:]):
        out = out + float(w) * _f(c)
    return out


def pai_score(
    cos: ArrayLike,
    importance: ArrayLike,
    recency: ArrayLike,
    stability: ArrayLike,
    subject_match: ArrayLike,
    *,
    w_cos: float = 0.50,
    w_importance: float = 0.20,
    w_recency: float = 0.10,
    w_stability: float = 0.05,
    w_subject: float = 0.15,
    importance_scale: float = 10.0,
    stability_scale: float = 5.0,
    insight: ArrayLike | None = None,
    insight_multiplier: float = 1.0,
) -> np.ndarray:
    """PAI multi-factor recall score (000 §2): ``0.50 cos + 0.20 importance/10 + 0.10 recency
    + 0.05 stability/5 + 0.15 subject_match``, times ``insight_multiplier`` where ``insight``
    is true. The terms are added left to right (the operation order every caller relies on
    for bit-identical scores)."""
    score = weighted_sum(
        (w_cos, w_importance, w_recency, w_stability, w_subject),
        (
            cos,
            _f(importance) / importance_scale,
            recency,
            _f(stability) / stability_scale,
            subject_match,
        ),
    )
    if insight is None:
        return score
    return np.where(insight, score * insight_multiplier, score)


# -- top-k --------------------------------------------------------------------------------


# Scores equal within this relative tolerance are a tie: float32 cosines of one query against
# memories of the same fact differ only by rounding noise (up to ~2e-7, and which BLAS
# kernel handles a row depends on its position), and that noise must not decide a ranking.
TIE_RTOL = 1e-6


def tie_groups(desc: np.ndarray) -> np.ndarray:
    """Group numbers (0, 1, ...) of finite scores sorted best first: a score within TIE_RTOL
    (relative to the larger magnitude) of the one before it joins its group (single
    linkage, so grouping never depends on where a rounding grid falls)."""
    v = _f(desc)
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


def masked_topk(scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """:func:`topk` over the rows where ``mask`` is True (others are never returned)."""
    scores = np.asarray(scores)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != scores.shape:
        raise ValueError(f"masked_topk: mask shape {mask.shape} != scores shape {scores.shape}")
    return topk(np.where(mask, scores, -np.inf), k)


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


def scores_matvec(embeddings: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``E @ q`` in float32 for E (n, d) and q (d,) or (d, m): the plain cosine scan every
    recall pays (the memory-bandwidth floor benchmarks compare against)."""
    E = np.asarray(embeddings, dtype=np.float32)
    qv = np.asarray(queries, dtype=np.float32)
    return E @ qv


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
    return 2.0 * (screen_margin(dim) * scale) + 2.0 * TIE_RTOL * scale


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
# (tests/test_kernels.py checks this property of the BLAS in use).
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
    embeddings (:meth:`changed`). The BLAS property this relies on (tests/test_kernels.py
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

    Exact by the BLAS property :class:`PackedRows` relies on (tests/test_kernels.py checks
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


# -- reference memory models (issue 14) ----------------------------------------------------


# Rows per block of the ACT-R kernels: a block's (m, rows) temporaries stay in cache, where
# full-size temporaries cost more in page faults than the arithmetic does.
_ACTR_BLOCK = 4096


def _actr_blocks(times: ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """(times as (n, m) float64, result of n, m): the last axis holds a row's presentations
    (a 1-D ``times`` is one row)."""
    t = _f(times)
    t2 = t.reshape(int(np.prod(t.shape[:-1])), t.shape[-1]) if t.ndim else t.reshape(1, 1)
    return t2, np.empty(t2.shape[0]), t2.shape[1]


def _present_sum(terms: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Sum of each column of (m, rows) ``terms`` with NaN (no presentation) as 0, in
    presentation order like the scalar twin's ``sum``."""
    np.fmax(terms[0], 0.0, out=out)
    for j in range(1, terms.shape[0]):
        np.fmax(terms[j], 0.0, out=terms[j])
        out += terms[j]
    return out


def actr_activation(
    times: ArrayLike, now: ArrayLike, decay: ArrayLike = 0.5, min_age: ArrayLike = 0.0
) -> np.ndarray:
    """ACT-R base-level activation ``B = ln(sum_j (now - t_j) ^ -d)`` (Anderson & Schooler
    1991) per row of ``times`` (n, m), NaN-padded presentation times; ages are floored at
    ``min_age``. A row with no presentation gets -inf. d must be > 0. ``now``, ``decay`` and
    ``min_age`` are scalars (one clock and one decay for the store)."""
    t, res, m = _actr_blocks(times)
    now_, d, floor = float(_f(now)), float(_f(decay)), float(_f(min_age))
    n = len(t)
    if m == 0:
        return np.full(np.shape(times)[:-1], -np.inf)
    buf = np.empty((m, min(n, _ACTR_BLOCK)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for lo in range(0, n, _ACTR_BLOCK):
            hi = min(n, lo + _ACTR_BLOCK)
            age = buf[:, : hi - lo]
            np.subtract(now_, t[lo:hi].T, out=age)  # NaN stays NaN through every step
            np.maximum(age, floor, out=age)
            if d == 0.5:  # sqrt and a division: several times faster than pow
                np.sqrt(age, out=age)
                np.divide(1.0, age, out=age)
            else:
                np.power(age, -d, out=age)
            np.log(_present_sum(age, res[lo:hi]), out=res[lo:hi])
    return res.reshape(np.shape(times)[:-1])


def actr_activation_counted(
    times: np.ndarray,
    counts: np.ndarray,
    now: float,
    decay: float = 0.5,
    min_age: float = 0.0,
) -> np.ndarray:
    """:func:`actr_activation` of the (n, m) NaN-padded ``times`` bit for bit, where row i
    holds its presentations in its first ``counts[i]`` columns (NaN after them), at the cost
    of the presentations instead of n x m (see :func:`_actr_grouped`)."""
    t = np.asarray(times, dtype=np.float64)
    c = np.asarray(counts, dtype=np.int64)
    if t.shape[1] == 0:
        return np.full(len(c), -np.inf)

    def block(rows: np.ndarray, w: int) -> np.ndarray:
        return np.ascontiguousarray(t[rows, :w].T)

    return _actr_grouped(c, block, now, decay, min_age)


def actr_activation_segments(
    pool: np.ndarray,
    start: np.ndarray,
    counts: np.ndarray,
    now: float,
    decay: float = 0.5,
    min_age: float = 0.0,
) -> np.ndarray:
    """:func:`actr_activation` bit for bit of rows whose presentations are stored one after
    the other: row i's are ``pool[start[i] : start[i] + counts[i]]``, in order (memory
    O(presentations) instead of a rows x widest-row matrix)."""
    pool_ = np.asarray(pool, dtype=np.float64)
    st = np.asarray(start, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)

    def block(rows: np.ndarray, w: int) -> np.ndarray:
        [out], _ = _segment_blocks((pool_,), (np.nan,), st, c, rows, w)
        return out

    return _actr_grouped(c, block, now, decay, min_age)


# a call's rows are one group while padding them to the widest row costs at most
# _ONE_GROUP_FACTOR x their presentations + _ONE_GROUP_CELLS cells (the padding adds exact
# zeros to each row's sum): padding pays for a few groups' numpy calls, not for a share of
# the work. Chosen on actr's and actr-spacing's own calls by benchmarks/bench_actr_groups.py
# (docs/performance.md: 4 x + 4096 made the kernel calls of actr's year 1.54x slower)
_ONE_GROUP_FACTOR = 1
_ONE_GROUP_CELLS = 16384
# a row with at least this many presentations is a group of its own, which the segment
# kernels read straight from its contiguous segment: no mask, no gather (a year's ranking
# sums ~5,000 presentations of each of its top rows: ten such rows ~30 -> ~15 ns a
# presentation). Chosen by benchmarks/bench_actr_groups.py with the rule above.
_ALONE_FROM = 512


def _count_groups(c: np.ndarray) -> Iterator[np.ndarray]:
    """The rows with at least one presentation, grouped by the power of two at or above their
    count (1 -> 0, 2 -> 1, 3..4 -> 2, ...), each group in row order: a group is evaluated
    over its own widest row's columns only, so the work is O(presentations). Few rows (a
    ranking's candidates) are one group where padding them costs less than the groups'
    numpy calls; a row of ``_ALONE_FROM`` presentations or more is a group of its own."""
    has = np.flatnonzero(c > 0)
    ch = c[has]  # their counts, gathered once (every kernel call comes through here)
    alone = ch >= _ALONE_FROM
    if alone.any():
        lone = has[alone]
        for i in range(len(lone)):
            yield lone[i : i + 1]
        has, ch = has[~alone], ch[~alone]
    if not len(has):
        return
    if len(has) * int(ch.max()) <= _ONE_GROUP_FACTOR * int(ch.sum()) + _ONE_GROUP_CELLS:
        yield has  # padding costs less than the numpy calls of one group per count class
        return
    cls = np.ceil(np.log2(ch)).astype(np.int64)
    order = np.argsort(cls, kind="stable")
    starts = np.flatnonzero(np.r_[True, cls[order][1:] != cls[order][:-1]])
    for lo, hi in zip(starts, [*starts[1:], len(order)], strict=True):
        yield has[order[lo:hi]]


def _segment_blocks(
    pools: tuple[np.ndarray, ...],
    fills: tuple[float, ...],
    start: np.ndarray,
    counts: np.ndarray,
    rows: np.ndarray,
    w: int,
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """For ``rows`` whose values are stored one after the other in each of ``pools`` (row
    i's at ``start[i] : start[i] + counts[i]``), a fresh (w, rows) C-contiguous block per
    pool, column i row i's values in order and that pool's fill after them, and the mask of
    the values present (None: all are). A lone row as wide as the block is a copy of its
    segment: no mask, no gather."""
    if len(rows) == 1 and int(counts[rows[0]]) == w:
        at = int(start[rows[0]])
        return [p[at : at + w].reshape(w, 1).copy() for p in pools], None
    present, at_ = _segment_places(start, counts, rows, w)
    blocks = []
    for p, fill in zip(pools, fills, strict=True):
        out = np.full(present.shape, fill)
        out[present] = p[at_]
        blocks.append(out)
    return blocks, present


def _segment_places(
    start: np.ndarray, counts: np.ndarray, rows: np.ndarray, w: int
) -> tuple[np.ndarray, np.ndarray]:
    """For ``rows`` whose values are stored one after the other (row i's at
    ``start[i] : start[i] + counts[i]`` of a pool), the (w, rows) mask of the presentations
    each row has and their places in the pool, column by column in presentation order."""
    j = np.arange(w)[:, None]
    present = j < counts[rows]
    return present, (start[rows] + j)[present]


def _actr_grouped(
    c: np.ndarray,
    block: Callable[[np.ndarray, int], np.ndarray],
    now: float,
    decay: float,
    min_age: float,
) -> np.ndarray:
    """The padded kernel's activation, group by group: rows are grouped by the power of two
    at or above their count, and each group is evaluated over its own widest row's columns
    only (``block(rows, w)``: the (w, rows) C-contiguous times of those rows, column j their
    j-th presentations, NaN past a row's count). Every element goes through the same
    operations as in :func:`actr_activation`, and each row's terms are summed in presentation
    order (running sums down the block: ``np.add.reduce`` may sum pairwise), the padded
    kernel's extra columns being exact zeros."""
    res = np.full(len(c), -np.inf)  # no presentation: ln(0), as in the padded kernel
    now_, d, floor = float(now), float(decay), float(min_age)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for rows in _count_groups(c):
            age = block(rows, int(c[rows].max()))  # (w, rows), a fresh array
            np.subtract(now_, age, out=age)
            np.maximum(age, floor, out=age)
            if d == 0.5:
                np.sqrt(age, out=age)
                np.divide(1.0, age, out=age)
            else:
                np.power(age, -d, out=age)
            np.fmax(age, 0.0, out=age)
            # running sums down the columns, strictly in order (a reduction may sum pairwise)
            np.add.accumulate(age, axis=0, out=age)
            total = age[-1].copy()
            np.log(total, out=total)
            res[rows] = total
    return res


def _floored_log_ages(age: np.ndarray, floor: float) -> None:
    """``ln(max(age, floor))`` in place, NaN (no presentation) as ln(1) = 0 so that the
    transcendental functions never see NaN or inf (their SIMD loops fall back to scalar
    code, 10-15x slower, on any special value); the caller masks those terms out."""
    if floor > 0:
        np.fmax(age, floor, out=age)  # also NaN -> floor (finite)
    else:
        missing = np.isnan(age)
        np.maximum(age, floor, out=age)
        np.copyto(age, 1.0, where=missing)
    np.log(age, out=age)


def _spacing_terms(age: np.ndarray, neg_decay: np.ndarray, floor: float) -> None:
    """``max(age, floor) ** -d`` in place as ``exp(-d * ln max(age, floor))`` (``neg_decay``
    is -d): a presentation's term in Pavlik & Anderson's activation. NaN ages (no
    presentation) give finite garbage the caller masks out by copy. An overflowed decay
    (d = inf) at age exactly 1 gives 0 x -inf = NaN where ``1 ** -inf`` is 1: the product is
    set to 0 there (exp(0) = 1; no finite product is NaN, so nothing else changes)."""
    _floored_log_ages(age, floor)
    np.multiply(age, neg_decay, out=age)
    np.copyto(age, 0.0, where=np.isnan(age))
    np.exp(age, out=age)


def actr_spacing_terms(age: ArrayLike, neg_decay: ArrayLike, floor: float = 0.0) -> np.ndarray:
    """``max(age, floor) ** -d`` of each presentation (``neg_decay`` is -d), as the spacing
    kernels compute a term (:func:`_spacing_terms`), into a new array."""
    out = np.array(age, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        _spacing_terms(out, np.asarray(neg_decay, dtype=np.float64), float(floor))
    return out


def actr_spacing_neg_decay(
    x: ArrayLike, a: float = 0.1768, c: float = 0.2170, out: np.ndarray | None = None
) -> np.ndarray:
    """-d of a new presentation, ``d = c * exp(m) + a`` (Pavlik & Anderson 2005 eq. 3),
    from ``x = exp(m)``, the sum of the earlier presentations' terms at its time (0 for the
    first presentation: d_1 = a). Computed as ``x * -c - a``: the one place of the formula,
    for the padded kernel and the policy's decays cached at each presentation alike."""
    r = np.multiply(x, -float(c), out=out)
    r -= float(a)
    return r


def _spacing_block_neg_decays(
    tb: np.ndarray, ok: np.ndarray, a: float, c: float, floor: float, nd: np.ndarray
) -> None:
    """-d_j of the (m, b) block ``tb`` (column: a row's presentations, NaN after them; ``ok``
    1.0 where present) into ``nd``, -a where a row has no j-th presentation. Each d_j's sum
    is over the row's earlier presentations, in order."""
    m, b = tb.shape
    tm = np.empty((m, b))
    x = np.empty(b)
    nd[0] = -a
    for j in range(1, m):
        age = tm[:j]
        np.subtract(tb[j], tb[:j], out=age)
        _spacing_terms(age, nd[:j], floor)
        np.copyto(x, age[0])
        for i in range(1, j):
            x += age[i]
        # exp(m_{j-1}); 0 where there is no j-th presentation (d_j = a): a copy, not a
        # product, since x overflows to inf after rapid repetitions and inf * 0 would be NaN
        np.copyto(x, 0.0, where=ok[j] == 0)
        actr_spacing_neg_decay(x, a, c, out=nd[j])


def actr_activation_spacing(
    times: ArrayLike, now: ArrayLike, a: float = 0.1768, c: float = 0.2170, min_age: float = 0.0
) -> np.ndarray:
    """Pavlik & Anderson (2005) base-level activation with spacing-dependent decay: the j-th
    presentation decays with ``d_j = c * exp(m_{j-1}) + a``, m_{j-1} the activation at t_j
    from the earlier presentations (m = -inf before the first, so d_1 = a). ``times`` (n, m)
    in time order, NaN-padded at the end of each row. ``x ** -d`` is evaluated as
    ``exp(-d * ln x)`` (libm's pow with a per-row exponent is the slow part; equal to a few
    ulp). Every d_j is recomputed per call (O(m^2) per row): the reference of
    :func:`actr_activation_spacing_segments`, which reads decays cached at presentation."""
    t, res, m = _actr_blocks(times)
    now_, a_, c_, floor = float(_f(now)), float(a), float(c), float(min_age)
    n = len(t)
    if m == 0:
        return np.full(np.shape(times)[:-1], -np.inf)
    rows = min(n, _ACTR_BLOCK)
    neg_d = np.empty((m, rows))  # -d_j per row of the block
    terms = np.empty((m, rows))
    present = np.empty((m, rows))  # 1.0 where the row has a j-th presentation, else 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for lo in range(0, n, _ACTR_BLOCK):
            hi = min(n, lo + _ACTR_BLOCK)
            b = hi - lo
            tb = np.ascontiguousarray(t[lo:hi].T)  # (m, b): row j is every j-th presentation
            nd, tm, ok = neg_d[:, :b], terms[:, :b], present[:, :b]
            np.isfinite(tb, out=ok, casting="unsafe")
            _spacing_block_neg_decays(tb, ok, a_, c_, floor, nd)
            np.subtract(now_, tb, out=tm)
            _spacing_terms(tm, nd, floor)
            np.copyto(tm, 0.0, where=ok == 0)  # as above: an overflowed term times 0 is NaN
            o = res[lo:hi]
            np.copyto(o, tm[0])
            for j in range(1, m):
                o += tm[j]
            np.log(o, out=o)
    return res.reshape(np.shape(times)[:-1])


def actr_spacing_neg_decays(
    times: ArrayLike, a: float = 0.1768, c: float = 0.2170, min_age: float = 0.0
) -> np.ndarray:
    """-d_j of every presentation of the (n, m) NaN-padded ``times``, as
    :func:`actr_activation_spacing` computes them (NaN where a row has no j-th
    presentation): the decays a policy may cache at each presentation instead."""
    t, _, m = _actr_blocks(times)
    out = np.full(t.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for lo in range(0, len(t), _ACTR_BLOCK):
            tb = np.ascontiguousarray(t[lo : lo + _ACTR_BLOCK].T)
            ok = np.isfinite(tb).astype(np.float64)
            nd = np.empty(tb.shape)
            if m:
                _spacing_block_neg_decays(tb, ok, float(a), float(c), float(min_age), nd)
            out[lo : lo + _ACTR_BLOCK] = np.where(ok == 1.0, nd, np.nan).T
    return out.reshape(np.shape(times))


def actr_spacing_sums(
    pool: np.ndarray,
    neg_decay: np.ndarray,
    start: np.ndarray,
    counts: np.ndarray,
    now: float,
    min_age: float = 0.0,
) -> np.ndarray:
    """``sum_j max(now - t_j, min_age) ** -d_j`` of rows whose presentations and their -d_j
    are stored one after the other: row i's are ``pool[start[i] : start[i] + counts[i]]``
    and ``neg_decay[...]`` at the same places (0 for a row with none). Summed in
    presentation order with the padded kernel's operations per element, so that
    ``ln`` of it is :func:`actr_activation_spacing` bit for bit and
    :func:`actr_spacing_neg_decay` of it at a new presentation's time is that kernel's d_j.
    Rows are grouped by the power of two at or above their count (cost O(presentations))."""
    pool_ = np.asarray(pool, dtype=np.float64)
    nd_ = np.asarray(neg_decay, dtype=np.float64)
    st = np.asarray(start, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    out = np.zeros(len(c))
    now_, floor = float(now), float(min_age)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for rows in _count_groups(c):
            w = int(c[rows].max())
            (age, nd), present = _segment_blocks((pool_, nd_), (np.nan, 0.0), st, c, rows, w)
            np.subtract(now_, age, out=age)
            _spacing_terms(age, nd, floor)
            if present is not None:  # a copy: an overflowed term times 0 is NaN
                np.copyto(age, 0.0, where=~present)
            # running sums down the columns, strictly in order (a reduction may sum pairwise)
            np.add.accumulate(age, axis=0, out=age)
            out[rows] = age[-1]
    return out


def actr_activation_spacing_segments(
    pool: np.ndarray,
    neg_decay: np.ndarray,
    start: np.ndarray,
    counts: np.ndarray,
    now: float,
    min_age: float = 0.0,
) -> np.ndarray:
    """:func:`actr_activation_spacing` bit for bit, from presentations and their -d_j stored
    as segments of two parallel pools (see :func:`actr_spacing_sums`): O(presentations)
    per call instead of the padded kernel's O(widest row^2) numpy calls."""
    x = actr_spacing_sums(pool, neg_decay, start, counts, now, min_age)
    with np.errstate(divide="ignore"):
        np.log(x, out=x)
    return x


def logistic_recall(activation: ArrayLike, tau: ArrayLike, s: ArrayLike) -> np.ndarray:
    """ACT-R recall probability ``1 / (1 + exp(-(A - tau) / s))``."""
    z = np.asarray(np.subtract(_f(tau), _f(activation)))
    z /= _f(s)
    with np.errstate(over="ignore"):
        np.exp(z, out=z)
    z += 1.0
    return _f(np.reciprocal(z, out=z))


def fsrs_retrievability(elapsed: ArrayLike, stability: ArrayLike, w20: float) -> np.ndarray:
    """FSRS-6 ``R = (1 + F * t / S) ^ -w20``, ``F = 0.9 ^ (-1 / w20) - 1``."""
    decay = -float(w20)
    factor = 0.9 ** (1.0 / decay) - 1.0
    x = np.asarray(factor * _f(elapsed) / _f(stability))
    x += 1.0
    return _f(np.power(x, decay, out=x))


def fsrs_review_good(
    stability: ArrayLike, difficulty: ArrayLike, elapsed: ArrayLike, w: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """One FSRS-6 review rated Good of cards with (stability, difficulty) after ``elapsed``
    whole days: short-term stability when elapsed < 1, else the recall-stability update;
    difficulty by mean reversion (Good's delta is 0). Returns (stability, difficulty), as the
    ``fsrs`` package's Scheduler.review_card (clamps S >= 0.001, 1 <= D <= 10)."""
    S, D, t = np.broadcast_arrays(_f(stability), _f(difficulty), _f(elapsed))
    R = fsrs_retrievability(t, S, w[20])
    # S * (1 + e^w8 * (11 - D) * S^-w9 * (e^((1 - R) * w10) - 1))
    g = np.subtract(1.0, R, out=R)
    g *= w[10]
    np.exp(g, out=g)
    g -= 1.0
    g *= np.power(S, -w[9])
    g *= np.subtract(11.0, D)
    g *= np.e ** w[8]
    g += 1.0
    S2 = np.multiply(S, g, out=g)
    short = t < 1
    if short.any():  # same day: S * max(e^(w17 * (G - 3 + w18)) * S^-w19, 1)
        Ss = S[short]
        S2[short] = Ss * np.maximum(np.e ** (w[17] * (0 + w[18])) * Ss ** -w[19], 1.0)
    np.maximum(S2, 0.001, out=S2)
    d0_easy = w[4] - np.e ** (w[5] * (4 - 1)) + 1
    D2 = w[7] * d0_easy + (1 - w[7]) * D  # Good: delta difficulty -w6 * (3 - 3) = 0
    return _f(S2), _f(np.clip(D2, 1.0, 10.0))


def ebisu_predict_recall(
    alpha: ArrayLike, beta: ArrayLike, half_life: ArrayLike, elapsed: ArrayLike
) -> np.ndarray:
    """Ebisu 2 ``predictRecall(exact=True)``: ``B(alpha + dt, beta) / B(alpha, beta)`` with
    ``dt = elapsed / half_life`` (B the Beta function, through log-gamma).

    Speed (issue 14): four scipy ``gammaln`` calls per row cost about 30-40 ns each on this
    machine, so the kernel stays near 15-30x its scalar twin (about 2 us per row) at 1M rows,
    short of 100x. numpy/scipy offer no cheaper exact log-gamma; a hand-written vectorized
    one (Stirling series after a shift, some 35 array passes per argument) was estimated at
    no better and not attempted."""
    from scipy.special import gammaln

    a, b = _f(alpha), _f(beta)
    dt = _f(elapsed) / _f(half_life)
    ab = a + b
    x = np.asarray(gammaln(a + dt))
    x -= gammaln(ab + dt)
    x += gammaln(ab)
    x -= gammaln(a)
    np.exp(x, out=x)
    return _f(np.minimum(x, 1.0, out=x))  # a probability: log-gamma rounding can give 1 + eps


def minmax_normalize(x: ArrayLike) -> np.ndarray:
    """``(x - min) / (max - min)`` over the last axis; 0.5 everywhere when max == min (as
    Generative Agents' released ``normalize_dict_floats``)."""
    v = _f(x)
    if v.shape[-1] == 0:
        return v.copy()
    if v.ndim == 1:
        return minmax_normalize_between(v, v.min(), v.max())
    lo = v.min(axis=-1, keepdims=True)
    span = v.max(axis=-1, keepdims=True) - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        return _f(np.where(span == 0, 0.5, (v - lo) / np.where(span == 0, 1.0, span)))


def generative_agents_score(
    recency: ArrayLike,
    importance: ArrayLike,
    relevance: ArrayLike,
    w: Sequence[float] = (1.0, 1.0, 1.0),
) -> np.ndarray:
    """Park et al. (2023) retrieval score: ``w0 * norm(recency) + w1 * norm(importance) +
    w2 * norm(relevance)``, each min-max normalized over the candidates."""
    rec, imp, rel = _f(recency), _f(importance), _f(relevance)
    if not len(rec):
        return rec.copy()
    spans = [(c.min(), c.max()) for c in (rec, imp, rel)]
    return generative_agents_score_between(rec, imp, rel, w, spans)


def minmax_normalize_between(x: ArrayLike, lo: float, hi: float) -> np.ndarray:
    """:func:`minmax_normalize` of a 1-D ``x`` that is part of candidates whose min and
    max are ``lo`` and ``hi``: the same numbers at those elements (element-wise operations
    only), at the cost of ``x``."""
    v = _f(x)
    if hi == lo:
        return np.full(v.shape, 0.5)
    out = v - lo
    out /= hi - lo
    return _f(out)


def generative_agents_score_between(
    recency: ArrayLike,
    importance: ArrayLike,
    relevance: ArrayLike,
    w: Sequence[float],
    spans: Sequence[tuple[float, float]],
) -> np.ndarray:
    """:func:`generative_agents_score` of some of the candidates, ``spans`` holding each
    component's (min, max) over all of them: the same numbers at those candidates, bit for
    bit (the same operations in the same order), at the cost of the rows given."""
    (lo_r, hi_r), (lo_i, hi_i), (lo_s, hi_s) = spans
    out = minmax_normalize_between(recency, lo_r, hi_r)
    out *= float(w[0])
    for wi, col, lo, hi in ((w[1], importance, lo_i, hi_i), (w[2], relevance, lo_s, hi_s)):
        c = minmax_normalize_between(col, lo, hi)
        c *= float(wi)
        out += c
    return out
