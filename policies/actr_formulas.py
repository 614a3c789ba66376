"""ACT-R's formulas (policies/actr.py): base-level activation, with the spacing effect's
presentation decays, over blocks and groups of rows, and the logistic recall probability.

Each vectorized kernel sits beside its scalar reference twin (``NAME_ref``, plain Python);
tests/test_ref_fsrs_actr.py proves them equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine.arrays import as_float64

# Rows per block of the ACT-R kernels: a block's (m, rows) temporaries stay in cache, where
# full-size temporaries cost more in page faults than the arithmetic does.
_ACTR_BLOCK = 4096


def _actr_blocks(times: ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """(times as (n, m) float64, result of n, m): the last axis holds a row's presentations
    (a 1-D ``times`` is one row)."""
    t = as_float64(times)
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
    now_, d, floor = float(as_float64(now)), float(as_float64(decay)), float(as_float64(min_age))
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
    now_, a_, c_, floor = float(as_float64(now)), float(a), float(c), float(min_age)
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
    z = np.asarray(np.subtract(as_float64(tau), as_float64(activation)))
    z /= as_float64(s)
    with np.errstate(over="ignore"):
        np.exp(z, out=z)
    z += 1.0
    return as_float64(np.reciprocal(z, out=z))


def actr_activation_ref(
    times: Sequence[float], now: float, decay: float = 0.5, min_age: float = 0.0
) -> float:
    total = sum(max(now - t, min_age) ** -decay for t in times)
    return math.log(total) if total > 0 else -math.inf


def actr_activation_spacing_ref(
    times: Sequence[float], now: float, a: float = 0.1768, c: float = 0.2170, min_age: float = 0.0
) -> float:
    decays: list[float] = []
    for j, tj in enumerate(times):
        m = actr_activation_with_ref(times[:j], decays, tj, min_age)
        decays.append(c * _overflowing(math.exp, m) + a)
    return actr_activation_with_ref(times, decays, now, min_age)


def actr_activation_with_ref(
    times: Sequence[float], decays: Sequence[float], now: float, min_age: float
) -> float:
    total = sum(_overflowing(pow, max(now - t, min_age), -d) for t, d in zip(times, decays))
    return math.log(total) if total > 0 else -math.inf


def _overflowing(fn: Callable[..., float], *args: float) -> float:
    """``fn(*args)``, +inf where Python raises OverflowError and numpy's float64 gives inf
    (presentations at one instant under ``min_age`` < 1: each one's decay grows from the
    activation of those before, until ``min_age ** -decay`` overflows)."""
    try:
        return fn(*args)
    except OverflowError:
        return math.inf


def logistic_recall_ref(activation: float, tau: float, s: float) -> float:
    z = -(activation - tau) / s
    return 0.0 if z > 700 else 1.0 / (1.0 + math.exp(z))
