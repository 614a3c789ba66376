"""Every vectorized kernel equals its scalar twin (``NAME_ref`` beside it) written from the
seed formula; inputs are never mutated."""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from memsim.engine import decay, ranking, similarity
from policies import actr_formulas, cosmo, engram, izzie, kernle, pai_formulas
from tests import kernel_helpers

RTOL = 1e-12


def floats(lo, hi, **kw):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, **kw)


def arrays(elements, n):
    return hnp.arrays(np.float64, n, elements=elements)


def check_elementwise(kernel, ref, *cols, **kw):
    """Kernel on whole columns == ref row by row; inputs left untouched."""
    before = [c.copy() for c in cols]
    got = kernel(*cols, **kw)
    for c, b in zip(cols, before):
        assert np.array_equal(c, b, equal_nan=True), "kernel mutated its input"
    assert got.shape == np.broadcast(*cols).shape
    for i in range(len(got)):
        want = ref(*(float(c[i]) if c.dtype != bool else bool(c[i]) for c in cols), **kw)
        assert math.isclose(got[i], want, rel_tol=RTOL, abs_tol=1e-300), (i, got[i], want)


sizes = st.integers(1, 20)
DT = floats(0, 1e4) | st.just(0.0)


@given(
    sizes.flatmap(
        lambda n: st.tuples(
            arrays(floats(0, 1e3), n), arrays(floats(0, 5) | st.just(0.0), n), arrays(DT, n)
        )
    )
)
def test_exp_decay(cols):  # 003 strength, 002 salience, 000 recency
    check_elementwise(izzie.exp_decay, izzie.exp_decay_ref, *cols)


@example(seed=747, shapes=((3, 1), (1, 4), (4,)))  # NaN x NaN in a broadcast
@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shapes=st.sampled_from(
        [
            ((), (), ()),
            ((7,), (7,), (7,)),
            ((), (7,), (7,)),
            ((7,), (), ()),
            ((7,), (), (7,)),
            ((3, 1), (1, 4), (4,)),
            ((), (), (5,)),
            ((2, 5), (5,), ()),
        ]
    ),
)
def test_exp_decay_is_the_expression_bit_for_bit(seed, shapes):
    """The kernel's one-array evaluation gives ``x0 * np.exp(-rate * dt)`` bit for bit, in
    its shape, for any broadcast of its arguments (scalars, 0-d, rows, grids), NaN and
    infinities included, and leaves its inputs alone."""
    rng = np.random.default_rng(seed)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, 5e-324])

    def draw(shape):
        v = rng.uniform(-50, 400, shape)
        if v.ndim:
            hit = rng.random(shape) < 0.2
            v[hit] = rng.choice(special, hit.sum())
        return v if shape else float(v)

    x0, rate, dt = (draw(sh) for sh in shapes)
    before = [np.copy(a) for a in (x0, rate, dt)]
    with np.errstate(all="ignore"):
        want = np.asarray(x0) * np.exp(-np.asarray(rate, dtype=float) * np.asarray(dt))
        got = izzie.exp_decay(x0, rate, dt)
    assert np.shape(got) == np.shape(want)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip((x0, rate, dt), before))


def test_exp_decay_edges():
    assert izzie.exp_decay(0.7, 0.0, 1e6) == 0.7
    assert izzie.exp_decay(0.7, 0.023, 0.0) == 0.7
    assert izzie.exp_decay(1.0, 0.02, 35.0) == pytest.approx(
        0.4966, abs=1e-4
    )  # 002: ~half after 35 days


@given(
    sizes.flatmap(
        lambda n: st.tuples(arrays(floats(0, 1), n), arrays(DT, n), arrays(floats(1e-3, 1e4), n))
    )
)
def test_half_life_decay(cols):  # 000 effective confidence
    check_elementwise(pai_formulas.half_life_decay, pai_formulas.half_life_decay_ref, *cols)
    assert pai_formulas.half_life_decay(0.8, 30.0, 30.0) == pytest.approx(0.4, rel=RTOL)


@given(
    sizes.flatmap(lambda n: st.tuples(arrays(floats(1e-6, 1e6), n), arrays(floats(1e-6, 1e6), n)))
)
def test_beta_mean(cols):  # 001 confidence
    check_elementwise(engram.beta_mean, engram.beta_mean_ref, *cols)


@given(sizes.flatmap(lambda n: st.tuples(arrays(DT, n), arrays(floats(1e-3, 365), n))))
def test_retrieval_strength(cols):  # 001 R(t) = e^(-t/S)
    check_elementwise(decay.retrieval_strength, decay.retrieval_strength_ref, *cols)
    assert decay.retrieval_strength(0.0, 5.0) == 1.0


@given(
    sizes.flatmap(
        lambda n: st.tuples(arrays(floats(1e-3, 400), n), arrays(DT, n), arrays(floats(1, 400), n))
    )
)
def test_stability_update(cols):  # 001 spaced repetition, capped
    check_elementwise(engram.stability_update, engram.stability_update_ref, *cols)
    assert engram.stability_update(10.0, 0.0, 365.0) == 10.0
    assert engram.stability_update(364.0, 1e6, 365.0) == 365.0
    assert engram.stability_update(10.0, 24.0 * (math.e - 1), 365.0) == pytest.approx(
        11.0, rel=RTOL
    )


@given(
    sizes.flatmap(
        lambda n: st.tuples(
            arrays(floats(0, 1), n),
            arrays(floats(0, 1e4), n),
            arrays(DT, n),
            arrays(floats(1e-3, 1e3), n),
        )
    )
)
def test_hyperbolic_salience(cols):  # 004 §Salience Formula
    check_elementwise(kernle.hyperbolic_salience, kernle.hyperbolic_salience_ref, *cols)
    assert kernle.hyperbolic_salience(0.9, 0, 1.0, 30.0) == 0.0  # never accessed: salience 0
    assert kernle.hyperbolic_salience(1.0, math.e - 1, 0.0, 30.0) == pytest.approx(
        1.0, rel=RTOL
    )  # natural log


@given(
    sizes.flatmap(
        lambda n: st.tuples(
            arrays(st.integers(0, 50).map(float), n),
            arrays(floats(-2, 3), n),
            arrays(floats(0.001, 0.1), n),
            hnp.arrays(bool, n),
            arrays(floats(0, 1) | st.sampled_from([0.8, 0.7999999]), n),
        )
    )
)
def test_cosmo_decay_rate(cols):  # 002 §Candidate Semantics
    rf, g, base, cand, conf = cols
    check_elementwise(cosmo.cosmo_decay_rate, cosmo.cosmo_decay_rate_ref, rf, g, base, cand, conf)


def test_cosmo_decay_rate_document_examples():  # 002 §Candidate Semantics examples
    assert cosmo.cosmo_decay_rate(0, 1.0, 0.02, True, 0.4) == pytest.approx(0.044, rel=1e-12)
    assert cosmo.cosmo_decay_rate(0, 1.0, 0.02, True, 0.7) == pytest.approx(0.032, rel=1e-12)
    assert cosmo.cosmo_decay_rate(0, 1.0, 0.02, True, 0.5) == pytest.approx(0.04, rel=1e-12)
    assert cosmo.cosmo_decay_rate(0, 1.0, 0.02, True, 0.85) == 0.0
    assert cosmo.cosmo_decay_rate(0, 1.0, 0.02, True, 0.8) == 0.0  # threshold is inclusive: >= 0.8
    assert cosmo.cosmo_decay_rate(0, 1.0, 0.02, False, 0.4) == 0.02
    assert cosmo.cosmo_decay_rate(5, 1.5, 0.02, False, 1.0) == pytest.approx(
        0.02 / (1 + 5**1.5), rel=1e-12
    )
    assert cosmo.cosmo_decay_rate(0, -0.5, 0.02, False, 1.0) == 0.0  # 0 ** negative -> inf: limit


@given(
    st.integers(1, 5).flatmap(
        lambda m: st.tuples(
            st.lists(floats(-10, 10), min_size=m, max_size=m),
            st.lists(arrays(floats(-1e3, 1e3), 7), min_size=m, max_size=m),
        )
    )
)
def test_weighted_sum(args):
    w, cols = args
    got = decay.weighted_sum(w, cols)
    for i in range(7):
        assert math.isclose(
            got[i],
            decay.weighted_sum_ref(w, [float(c[i]) for c in cols]),
            rel_tol=RTOL,
            abs_tol=1e-9,
        )
    with pytest.raises(ValueError):
        decay.weighted_sum(w, cols + [cols[0]])


@given(
    sizes.flatmap(
        lambda n: st.tuples(
            arrays(floats(-1, 1), n),
            arrays(floats(1, 10), n),
            arrays(floats(0, 1), n),
            arrays(floats(1, 5), n),
            arrays(st.sampled_from([0.0, 1.0]), n),
        )
    )
)
def test_pai_score(cols):  # 000 multi-factor recall
    check_elementwise(pai_formulas.pai_score, pai_formulas.pai_score_ref, *cols)
    assert pai_formulas.pai_score(1.0, 10.0, 1.0, 5.0, 1.0) == pytest.approx(1.0, rel=RTOL)
    assert pai_formulas.pai_score(0.8, 5.0, 0.5, 2.0, 0.0) == pytest.approx(
        0.4 + 0.1 + 0.05 + 0.02, rel=RTOL
    )


def test_pai_score_insight_multiplier():  # 000 §2: insight-type beliefs score * 0.5
    args = (np.array([0.8, 0.8]), np.array([5.0, 5.0]), 0.5, 2.0, 0.0)
    got = pai_formulas.pai_score(*args, insight=np.array([False, True]), insight_multiplier=0.5)
    plain = pai_formulas.pai_score(*args)
    assert got[0] == plain[0] and got[1] == plain[1] * 0.5
    ref = pai_formulas.pai_score_ref(0.8, 5.0, 0.5, 2.0, 0.0, insight=True, insight_multiplier=0.5)
    assert ref == pytest.approx(got[1], rel=RTOL)


def test_days_since_access_is_the_one_clock():
    """Since the last access, else since creation (NaN last access), never negative."""
    now = 10.0
    last = np.array([np.nan, 4.0, 12.0, np.nan])
    created = np.array([1.0, 0.0, 0.0, 11.0])
    got = decay.days_since_access(now, last, created)
    np.testing.assert_array_equal(got, [9.0, 6.0, 0.0, 0.0])
    for i in range(len(last)):
        assert decay.days_since_access_ref(now, float(last[i]), float(created[i])) == got[i]


# -- top-k -------------------------------------------------------------------------------

score_values = st.sampled_from([0.0, 0.5, 1.0, -1.0, np.nan, -np.inf, np.inf]) | floats(-3, 3)


@given(hnp.arrays(np.float64, st.integers(0, 40), elements=score_values), st.integers(-1, 50))
def test_topk_equals_stable_sort_prefix(scores, k):
    before = scores.copy()
    got = ranking.topk(scores, k)
    assert np.array_equal(scores, before, equal_nan=True)
    assert got.dtype == np.int64
    assert got.tolist() == ranking.topk_ref(scores.tolist(), k)
    # the same as a full stable sort of the scores other than NaN and -inf (+inf first), cut at k
    kept = np.flatnonzero(~np.isnan(scores) & (scores > -np.inf))
    full = kept[np.argsort(-scores[kept], kind="stable")]
    assert got.tolist() == full[: max(0, k)].tolist()


def test_topk_ranks_an_overflowed_score_first_never_drops_it():
    """+inf (a score that overflowed to its formula's maximum) ranks above every finite score;
    several +inf rows are one tie, in key order with a tiebreak, else by row. Before, topk
    returned finite scores only, so such a row was never recalled."""
    s = np.array([0.5, np.inf, 0.9, -np.inf, np.inf, np.nan, 0.1])
    assert ranking.topk(s, 3).tolist() == [1, 4, 2]
    assert ranking.topk(s, 1).tolist() == [1]
    assert ranking.topk(s, 10).tolist() == [1, 4, 2, 0, 6]  # NaN and -inf still never returned
    keys = np.array([0, 9, 0, 0, 3, 0, 0], dtype=np.uint64)
    assert ranking.topk(s, 3, keys).tolist() == [4, 1, 2]
    assert ranking.topk(s, 3, lambda rows: keys[rows]).tolist() == [4, 1, 2]
    assert ranking.batch_topk(np.stack([s, s]), 3, keys).tolist() == [[4, 1, 2]] * 2
    assert ranking.batch_topk(s[None, :], 6).tolist() == [[1, 4, 2, 0, 6, -1]]
    assert kernel_helpers.masked_topk(s, s != 0.9, 2).tolist() == [1, 4]
    with pytest.raises(ValueError, match="tiebreak shape"):
        ranking.topk(s, 3, keys[:3])
    with pytest.raises(ValueError, match="tiebreak shape"):  # no tie: still one key per score
        ranking.topk(np.array([0.3, 0.2, 0.1]), 2, keys[:2])


@given(
    hnp.arrays(np.float64, st.integers(0, 40), elements=score_values).flatmap(
        lambda s: st.tuples(st.just(s), hnp.arrays(bool, len(s)))
    ),
    st.integers(0, 50),
)
def test_masked_topk(args, k):
    scores, mask = args
    got = kernel_helpers.masked_topk(scores, mask, k)
    assert got.tolist() == kernel_helpers.masked_topk_ref(scores.tolist(), mask.tolist(), k)
    assert mask[got].all()


@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 6), st.integers(0, 30)),
        elements=st.sampled_from([0.0, 1.0, 2.0, np.nan, -np.inf]) | floats(-2, 2),
    ),
    st.integers(0, 40),
)
def test_batch_topk(scores, k):
    before = scores.copy()
    got = ranking.batch_topk(scores, k)
    assert np.array_equal(scores, before, equal_nan=True)
    assert got.shape == (scores.shape[0], k) and got.dtype == np.int64
    assert got.tolist() == ranking.batch_topk_ref(scores.tolist(), k)


def test_batch_topk_large_matches_rows():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 50, size=(30, 2000)).astype(np.float64)  # many ties
    s[rng.random(s.shape) < 0.1] = -np.inf
    got = ranking.batch_topk(s, 25)
    for r in range(30):
        assert got[r].tolist() == ranking.topk(s[r], 25).tolist()
    with pytest.raises(ValueError):
        ranking.batch_topk(s[0], 3)


@given(
    st.tuples(st.integers(0, 20), st.integers(1, 30)).flatmap(
        lambda nd: st.tuples(
            hnp.arrays(np.float32, nd, elements=floats(-1, 1, width=32)),
            hnp.arrays(np.float32, nd[1], elements=floats(-1, 1, width=32)),
        )
    )
)
def test_scores_matvec(args):
    E, q = args
    got = kernel_helpers.scores_matvec(E, q)
    assert got.dtype == np.float32 and got.shape == (E.shape[0],)
    want = kernel_helpers.scores_matvec_ref(E.astype(float).tolist(), q.astype(float).tolist())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    Q = np.stack([q, -q], axis=1)
    both = kernel_helpers.scores_matvec(E, Q)
    assert both.shape == (E.shape[0], 2)
    np.testing.assert_allclose(both[:, 1], -got, rtol=1e-5, atol=1e-6)


# -- defined tie-breaks (issue 12) ------------------------------------------------------


def _tie_ref(scores, k, tb):
    """Reference: sort best first, single-link groups within TIE_RTOL, then by key, row."""
    from memsim.engine.ranking import TIE_RTOL

    rows = sorted(
        (i for i in range(len(scores)) if scores[i] > -np.inf), key=lambda i: (-scores[i], i)
    )
    group, out = 0, []
    for j, i in enumerate(rows):
        before = scores[rows[j - 1]]
        if (
            j
            and before != scores[i]
            and (  # +inf is a tie of its own
                before == np.inf or before - scores[i] > TIE_RTOL * max(abs(before), abs(scores[i]))
            )
        ):
            group += 1
        out.append((group, int(tb[i]), i))
    return [i for _, _, i in sorted(out)][:k]


def test_topk_tiebreak_orders_near_equal_scores_by_key_not_row():
    from memsim.engine.ranking import topk

    s = np.array([0.5, 0.9, 0.9 + 3e-7, 0.9 - 2e-7, 0.1])  # rows 1-3 tie within 1e-6
    tb = np.array([0, 30, 20, 10, 0], dtype=np.uint64)
    assert topk(s, 3, tb).tolist() == [3, 2, 1]
    assert topk(s, 2, tb).tolist() == [3, 2]
    assert topk(s, 3).tolist() == [2, 1, 3]  # without a key: exact order, as before


@given(
    st.lists(
        st.sampled_from([0.3, 0.3 + 4e-7, 0.3 - 4e-7, 0.7, -np.inf, np.inf, np.nan, 0.0]),
        min_size=1,
        max_size=30,
    ),
    st.integers(0, 12),
    st.integers(0, 2**32),
)
@settings(max_examples=60, deadline=None)
def test_topk_tiebreak_matches_reference_and_batch(values, k, salt):
    from memsim.engine.ranking import batch_topk, mix64, topk

    s = np.array(values)
    tb = mix64(np.arange(len(s), dtype=np.uint64) * 7 + 1, salt)
    got = topk(s, k, tb).tolist()
    assert got == _tie_ref(s, k, tb)
    b = batch_topk(np.stack([s, s[::-1]]), k, np.stack([tb, tb[::-1]]))
    assert b[0][b[0] >= 0].tolist() == got
    assert b[1][b[1] >= 0].tolist() == topk(s[::-1], k, tb[::-1]).tolist()


@given(
    st.integers(ranking._ONE_TIE_FROM + 1, 300),
    st.lists(st.sampled_from([0.2, 0.7, 0.7 + 4e-7, -np.inf, np.nan]), max_size=20),
    st.integers(0, 80),
    st.data(),
)
@settings(max_examples=60, deadline=None)
def test_topk_of_a_large_exact_tie_is_the_reference(tied, others, k, data):
    """topk's selection for many candidates that share one score (_least_keys_first) gives
    the order of the reference: key, then row, with keys that repeat; and a candidate set
    that holds another score by a hair (0.7 + 4e-7) takes the sorts."""
    s = np.array([0.7] * tied + others)
    s = s[data.draw(st.permutations(range(len(s))))]
    tb = np.array(data.draw(st.lists(st.integers(0, 9), min_size=len(s), max_size=len(s))))
    tb = tb.astype(np.uint64)
    assert ranking.topk(s, k, tb).tolist() == _tie_ref(s, k, tb)
    assert ranking.topk(s, k, lambda rows: tb[rows]).tolist() == _tie_ref(s, k, tb)


@given(
    st.lists(
        st.sampled_from(
            [0.3, 0.3 + 4e-7, 0.3 - 2e-7, 0.3 - 4e-7, 0.7, -0.2, -0.2 - 1e-7, 0.0, -0.0, 5e-324]
        ),
        min_size=1,
        max_size=ranking._SMALL_TOPK,
    ),
    st.integers(0, ranking._SMALL_TOPK + 2),
    st.lists(st.integers(0, 3), min_size=ranking._SMALL_TOPK, max_size=ranking._SMALL_TOPK),
)
@example([0.7, 0.3, 0.3 - 2e-7, 0.3 - 4e-7], 2, [0, 3, 2, 1] * 8).via("a tie chain under the k-th")
@settings(max_examples=150, deadline=None)
def test_topk_of_a_few_finite_scores_is_the_reference(values, k, keys):
    """topk's Python path for a few finite float64 scores (_topk_small) returns what the
    reference returns, with keys that repeat and without keys."""
    s = np.array(values)
    tb = np.array(keys[: len(s)], dtype=np.uint64)
    got = ranking.topk(s, k, tb).tolist()
    assert got == _tie_ref(s, k, tb)
    if k > 0:  # (topk returns nothing before it)
        assert ranking._topk_small(values, k, tb).tolist() == got
    plain = sorted(range(len(s)), key=lambda i: (-values[i], i))[:k]
    assert ranking.topk(s, k).tolist() == plain


def test_tie_groups_do_not_depend_on_a_rounding_grid():
    from memsim.engine.ranking import tie_groups

    # 0.6054901933620518 and 0.6054902477277553 straddle a 2**-20 grid point: still one tie
    assert tie_groups(np.array([0.6054902477277553, 0.6054901933620518, 0.5])).tolist() == [0, 0, 1]


def _splitmix64(key: int, salt: int) -> int:
    """splitmix64 of ``key ^ salt`` on Python integers (Steele, Lea and Flood 2014)."""
    m = (1 << 64) - 1
    z = ((key ^ salt) + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


@given(st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=12), st.integers(0, 2**64 - 1))
@settings(max_examples=60, deadline=None)
def test_mix64_is_splitmix64_in_every_shape(keys, salt):
    want = [_splitmix64(k, salt) for k in keys]
    got = ranking.mix64(np.array(keys, dtype=np.uint64), salt)
    assert got.dtype == np.uint64 and got.tolist() == want
    if len(keys) % 2 == 0:  # a 2-d array keeps its shape
        grid = ranking.mix64(np.array(keys, dtype=np.uint64).reshape(2, -1), salt)
        assert grid.shape == (2, len(keys) // 2) and grid.ravel().tolist() == want
    if keys:  # one key alone: a numpy scalar, as the tie keys of one row
        one = ranking.mix64(np.uint64(keys[0]), salt)
        assert np.ndim(one) == 0 and int(one) == want[0]


def test_store_tie_keys_follow_identity_not_row():
    from memsim.engine.store import MemoryStore, Statuses

    def store(order):
        st_ = MemoryStore(dim=2, statuses=Statuses(("active",)))
        for e in order:
            st_.add(0.0, [[1.0, 0.0]], texts=[f"t{e}"], claims=[None], provenance=[(e,)])
        return st_

    a, b = store(["e1", "e2", "e3"]), store(["e3", "e1", "e2"])
    ka, kb = a.tie_keys("0:q1"), b.tie_keys("0:q1")
    assert dict(zip(["e1", "e2", "e3"], ka.tolist())) == dict(zip(["e3", "e1", "e2"], kb.tolist()))
    assert a.tie_keys("0:q2").tolist() != ka.tolist()  # another query: another permutation


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    share=st.floats(0.0, 1.0),
    threshold=st.floats(-0.2, 1.0),
    near=st.booleans(),
    given_screen=st.sampled_from([None, "matrix product", "off by up to the margin"]),
)
def test_rows_at_least_decides_as_float64(seed, n, share, threshold, near, given_screen):
    """The float32-screened threshold search keeps exactly the rows (in order) of the plain
    float64 product, also with rows planted right at the threshold and planted just past the
    margin on either side; with the screen it computes, one a caller computed as a matrix
    product (Kernle's revision), or any screen within screen_margin of the float64 cosines."""
    rng = np.random.default_rng(seed)
    d = 384
    E = rng.standard_normal((n, d))
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    if near and n:
        # rows whose cosine with v sits within float32 rounding of the threshold, or of the
        # threshold plus or minus the margin (where the screen alone decides)
        m = similarity.screen_margin(d)
        for i in range(0, n, 3):
            t = np.clip(threshold + (0.0, m, -m)[i % 3] * 1.01, -0.9, 0.99)
            w = E[i] - (E[i] @ v) * v
            w /= np.linalg.norm(w)
            E[i] = t * v + math.sqrt(1 - t * t) * w + rng.normal(0, 1e-7, d)
    E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    E = E.astype(np.float32)
    v32 = v.astype(np.float32)
    rows = np.flatnonzero(rng.random(n) < share)
    want = similarity.exact_cosines(E, v32)[rows]
    screen = None
    if given_screen == "matrix product":
        other = rng.standard_normal((3, d)).astype(np.float32)
        screen = (E[rows] @ np.vstack([other, v32]).T)[:, 3]
    elif given_screen == "off by up to the margin":
        off = rng.uniform(-0.9, 0.9, len(rows)) * similarity.screen_margin(d)
        screen = (want + off).astype(np.float32)
    got = similarity.rows_at_least(E, rows, v32, threshold, screen=screen)
    np.testing.assert_array_equal(got, rows[want >= threshold])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), m=st.integers(1, 12))
def test_exact_cosines_of_a_row_do_not_depend_on_the_rows_beside_it(seed, n, m):
    """Each row's float64 cosine is summed on its own: the same number alone, among any
    other rows, in any order (Personal AI reads a settled best row's cosine alone)."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, 384)).astype(np.float32)
    v = rng.standard_normal(384).astype(np.float32)
    rows = rng.choice(n, min(m, n), replace=False)
    together = similarity.exact_cosines(E[rows], v)
    alone = [similarity.exact_cosines(E[r : r + 1], v)[0] for r in rows]
    assert together.tolist() == alone == similarity.exact_cosines(E, v)[rows].tolist()


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2000), m=st.integers(1, 120))
def test_rows_matvec_is_the_full_product_bit_for_bit(seed, n, m):
    """The BLAS property a candidate index relies on: a few rows' float32 products equal
    the full matrix-vector product's, bit for bit (also on a view of a larger buffer, as
    the store's embedding matrix is), with rows repeated and sharing blocks, up to and
    beyond the count where their blocks are deduplicated first."""
    rng = np.random.default_rng(seed)
    buf = np.zeros((n + 7, 384), dtype=np.float32)
    buf[:n] = rng.standard_normal((n, 384))
    E = buf[:n]
    v = rng.standard_normal(384).astype(np.float32)
    rows = np.concatenate([rng.integers(0, n, m), [n - 1, 0]])
    np.testing.assert_array_equal(similarity.rows_matvec(E, rows, v), (E @ v)[rows])


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 41),
    picks=st.lists(st.integers(0, 40), min_size=1, max_size=7, unique=True),
    seed=st.integers(0, 2**16),
)
def test_rows_matvec_of_a_few_rows_is_the_full_product_bit_for_bit(n, picks, seed):
    """A candidate index's one or two found rows (each block a slice of the matrix): the
    full product's numbers, rows in full blocks, in the tail after the last full block,
    and more rows than the sliced path takes."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, 384)).astype(np.float32)
    v = rng.standard_normal(384).astype(np.float32)
    rows = np.unique(np.array([p % n for p in picks], dtype=np.int64))
    assert similarity.rows_matvec(E, rows, v).tobytes() == (E @ v)[rows].tobytes()


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 2000), m=st.integers(1, 60))
def test_a_row_in_any_full_block_has_its_full_product_bit_for_bit(seed, n, m):
    """The BLAS property similarity.PackedRows relies on: a row's float32 product inside a full
    block of MATVEC_BLOCK rows does not depend on the block's other rows or on its place in
    the block, so rows of the full matrix's full blocks, packed in any order and padded to
    whole blocks with any finite rows, keep the full product's numbers bit for bit."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, 384)).astype(np.float32)
    v = rng.standard_normal(384).astype(np.float32)
    end = (n // similarity.MATVEC_BLOCK) * similarity.MATVEC_BLOCK
    rows = rng.permutation(rng.integers(0, end, m))
    pad = (-m) % similarity.MATVEC_BLOCK
    packed = np.vstack([E[rows], rng.standard_normal((pad, 384)).astype(np.float32)])
    np.testing.assert_array_equal((packed @ v)[:m], (E @ v)[rows])


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([-np.inf, -1.0, -0.0, 0.0, 0.3, 0.3 + 1e-7, 0.7, 1.0]), min_size=2
    ),
    bulk=st.sampled_from([None, -np.inf, 0.0, 0.3]),
    n_bulk=st.integers(0, 3000),
    k=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
)
def test_kth_largest_is_the_sorted_value(values, bulk, n_bulk, k, seed):
    """topk's selection of the k-th score (a strided sample's k-th largest, then the rows at
    or above it) is np.sort's k-th largest value, on arrays mostly of one value (a -inf mask,
    zeros, a tie), with -inf rows, both zeros and near-ties, short and long, any order."""
    rng = np.random.default_rng(seed)
    s = np.array(values + ([] if bulk is None else [bulk] * n_bulk), dtype=np.float64)
    s = s[rng.permutation(len(s))]
    k = min(k, len(s) - 1)
    assert ranking._kth_largest(s, k) == np.sort(s)[len(s) - k]
    f32 = s.astype(np.float32)
    assert ranking._kth_largest(f32, k) == np.sort(f32)[len(f32) - k]


@settings(max_examples=60, deadline=None)
@given(
    scores=hnp.arrays(np.float64, st.integers(0, 60), elements=st.sampled_from([0.1, 0.5, 1.0])),
    k=st.integers(0, 70),
    salt=st.integers(0, 2**63),
)
def test_topk_lazy_tiebreak_equals_the_array(scores, k, salt):
    """A tiebreak given as a function of row indices (keys for candidates only) ranks as
    the full key array does."""
    keys = ranking.mix64(np.arange(len(scores), dtype=np.uint64) * 7 + 3, salt)
    lazy = ranking.topk(scores, k, lambda rows: keys[rows])
    np.testing.assert_array_equal(lazy, ranking.topk(scores, k, keys))


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(
        # 0.3 + j * 2e-7 chain as ties (TIE_RTOL * 0.3 = 3e-7 per step), 0.3 +- 4e-7 do not
        # +inf ranks first (k-th +inf: only infinite bounds can tie it); NaN is never
        # returned (fewer than k found: the next bounds)
        st.sampled_from(
            [0.3 + j * 2e-7 for j in range(-3, 3)] + [0.7, 1.2, -np.inf, 0.0, -0.5, np.inf, np.nan]
        ),
        min_size=0,
        max_size=40,
    ),
    slack=st.lists(
        st.sampled_from([0.0, 0.0, 0.0, 1e-7, 3e-7, 0.1, 1.0, np.inf, np.nan]),
        min_size=40,
        max_size=40,
    ),
    k=st.integers(0, 12),
    first=st.one_of(st.none(), st.integers(0, 50)),
    salt=st.integers(0, 2**32),
)
@example(  # a chain of five ties under the best, bounds exact: found one row at a time
    values=[0.3 + j * 2e-7 for j in (2, 1, 0, -1, -2)] + [0.1],
    slack=[0.0] * 40,
    k=1,
    first=1,
    salt=0,
)
@example(  # the k-th found is +inf: every row with an infinite bound can tie it
    values=[np.inf, 0.1, np.inf, np.inf],
    slack=[np.inf] * 40,
    k=1,
    first=1,
    salt=0,
)
@example(  # every bound equal: no row above the (m + 1)-th highest, the first rows at it
    values=[0.5] * 10,
    slack=[0.0] * 40,
    k=2,
    first=None,
    salt=0,
)
def test_topk_support_ranks_as_every_score_with_ties_chained_below_the_kth(
    values, slack, k, first, salt
):
    """topk of the scores topk_support evaluates (-inf elsewhere) is topk of all the scores,
    with a tiebreak, on scores whose ties chain in steps under TIE_RTOL and bounds that are
    exact, loose, infinite or NaN; no row is evaluated twice, and every row topk returns or
    chains through is evaluated."""
    s = np.array(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # -inf + inf: a NaN bound
        bound = s + np.array(slack[: len(s)])
    keys = ranking.mix64(np.arange(len(s), dtype=np.uint64) * 7 + 1, salt)
    asked: list[int] = []

    def exact(rows):
        asked.extend(rows.tolist())
        return s[rows]

    rows, got = ranking.topk_support(bound, exact, k, first)
    assert len(asked) == len(set(asked)) and sorted(asked) == rows.tolist()
    np.testing.assert_array_equal(got, s[rows])
    pruned = np.full(len(s), -np.inf)
    pruned[rows] = got
    assert ranking.topk(pruned, k, keys).tolist() == ranking.topk(s, k, keys).tolist()
    assert ranking.topk(pruned, k).tolist() == ranking.topk(s, k).tolist()


def test_actr_spacing_terms_is_the_kernels_term():
    """The policy's bound takes a presentation's largest term from the same function as the
    activation kernels: ln of one term is a one-presentation activation bit for bit, and an
    overflowed decay at age exactly 1 is 1 there too (1 ** -inf), not NaN."""
    ages = np.array([1 / 24, 0.5, 1.0, 3.0, 400.0])
    for age in ages:
        term = actr_formulas.actr_spacing_terms([age], [-0.1768], 1 / 24)
        act = actr_formulas.actr_activation_spacing(np.array([[0.0]]), age, 0.1768, 0.2170, 1 / 24)
        assert np.log(term).tobytes() == act.tobytes()
    got = actr_formulas.actr_spacing_terms([0.5, 2.0], [-np.inf, -np.inf], 1.0)
    assert got.tolist() == [1.0, 0.0]


@given(st.floats(allow_infinity=False, allow_nan=True) | st.sampled_from([0.0, 1.0, 1.5]))
@example(float("nan"))
def test_settled_gap_of_one_norm_is_the_arrays(norm):
    """settled_gap of a Python float (a search one at a time) is its value over an array of
    norms, to the bit (NaN alike): a batch and one at a time settle the same rows."""
    one = similarity.settled_gap(384, norm)
    many = similarity.settled_gap(384, np.array([norm, 2.0]))
    assert isinstance(one, float)
    assert np.float64(one).tobytes() == many[:1].tobytes()


def test_screen_margins_widen_with_the_norm_only_past_one():
    """screen_margins: a unit or shorter vector's screens keep screen_margin (the rows'
    rounding bound), a longer one's widen in proportion to its norm, a NaN norm stays NaN
    (its screens settle nothing)."""
    m = similarity.screen_margin(384)
    got = similarity.screen_margins(384, np.array([0.0, 0.5, 1.0, 2.0, np.nan]))
    assert got[:3].tolist() == [m, m, m] and got[3] == 2.0 * m and np.isnan(got[4])


@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 3.0),  # time advanced
            st.lists(st.integers(0, 39), max_size=5),  # rows used then
            st.integers(0, 6),  # rows added then
        ),
        min_size=1,
        max_size=25,
    ),
    st.floats(0.01, 50.0),  # stability (days)
    st.floats(0.1, 2.0),  # refresh window (days)
)
@settings(max_examples=150, deadline=None)
def test_decay_caps_bound_a_falling_quantity_until_the_row_is_used(steps, stability, window):
    """Issue 16: ranking.DecayCaps holds, for every row at every later time, at least the
    quantity as its formula computes it (here exp(-t / S) from the row's last use, as
    Engram's R), whatever the uses, growth and refreshes between; used and new rows are at
    the top (with slack), and a time before the last refresh refreshes them all."""
    caps = ranking.DecayCaps(1.0, window)
    last = np.zeros(8)  # rows' last use
    now = 0.0

    def values(t: float) -> np.ndarray:
        return np.exp(-np.maximum(t - last, 0.0) / stability)

    for advance, used, added in steps:
        now += advance
        last = np.concatenate((last, np.full(added, now)))
        got = caps.at(now, len(last), values)
        assert len(got) == len(last) and (got >= values(now)).all()
        rows = np.array([r for r in used if r < len(last)], dtype=np.int64)
        last[rows] = now
        caps.used(rows)
        assert (caps.at(now, len(last), values)[rows] == caps.any).all()
    assert caps.any == 1.0 + ranking.CAP_SLACK
    # asked at a time before its last refresh (which is at most a window before now): every
    # row refreshed at that time
    early = now - window - 1.0
    got = caps.at(early, len(last), values)
    want = values(early) * (1.0 + ranking.CAP_SLACK) + ranking.CAP_TINY
    assert got.tobytes() == want.tobytes()


def test_decay_caps_reset_and_another_stores_rows():
    caps = ranking.DecayCaps(2.0, 1.0)
    ones = lambda t: np.ones(5)  # noqa: E731
    assert caps.at(0.0, 5, ones).tolist() == [1.0 + ranking.CAP_SLACK + ranking.CAP_TINY] * 5
    caps.used(np.array([1, 9]))  # a row it does not know yet is left to the next growth
    assert caps.at(0.5, 5, ones)[1] == caps.any == 2.0 * (1.0 + ranking.CAP_SLACK)
    halves = lambda t: np.full(3, 0.5)  # noqa: E731
    # fewer rows than it knows: another store's, refreshed whatever the time
    assert (
        caps.at(0.5, 3, halves).tolist() == [0.5 * (1.0 + ranking.CAP_SLACK) + ranking.CAP_TINY] * 3
    )
    caps.reset()
    assert caps.at(0.6, 3, halves)[0] == 0.5 * (1.0 + ranking.CAP_SLACK) + ranking.CAP_TINY
