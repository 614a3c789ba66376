"""policies.pai_fastscore: the fused recall kernels equal the straightforward ones bit for bit
(document 000 §2 multi-factor score, cosine floor 0.20, top-k), and both agree with the
one-memory-at-a-time reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import workloads
from memsim.engine.events import Query
from memsim.engine.quantized import QuantizedScreen
from memsim.engine.ranking import topk
from memsim.engine.similarity import rows_matvec
from policies import cosmo, engram, izzie, pai_formulas
from policies import pai_fastscore as fs
from policies.pai import TYPE_CODE, PaiParams, PersonalAI

DIM = 16
P = PaiParams()


def unit_rows(rng, n, dim=DIM, clusters=0):
    """Random unit rows; with clusters, rows sit around a few centres (many above the floor)."""
    if clusters:
        centres = rng.standard_normal((clusters, dim))
        X = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim))
    else:
        X = rng.standard_normal((n, dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X.astype(np.float32)


def columns(rng, n, now=100.0, allowed=True):
    last = rng.uniform(0, now, n)
    last[rng.random(n) < 0.4] = np.nan  # never accessed: counts from unaccessed_from
    return fs.PaiColumns(
        importance=rng.integers(1, 11, n).astype(np.float64),
        stability=rng.choice([1.0, 1.1, 2.5, 5.0], n),
        last_access=last,
        unaccessed_from=rng.uniform(0, now, n),
        subject=rng.integers(0, 4, n).astype(np.int32),
        insight=rng.random(n) < 0.2,
        allowed=(rng.random(n) < 0.9) if allowed else None,
    )


def reference(cos, cols, now, codes, p, k):
    scores = fs.pai_scores(cos, cols, now, codes, p)
    ids = topk(scores, k)
    return ids, scores[ids]


def assert_same(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_pai_scores_equal_the_policy_score_rows_bit_for_bit():
    """The straightforward kernel is exactly PersonalAI.score_rows (000 §2), so swapping
    the fused kernel into the policy changes no ranking."""
    rng = np.random.default_rng(1)
    n = 3000
    pol = PersonalAI()
    for name in ("alex", "sam", "kim"):
        pol._code_subject(name)
    cols = columns(rng, n)
    X = unit_rows(rng, n, dim=pol.store.dim, clusters=5)
    s = pol.store
    s.reserve(n)
    s.add(
        0.0,
        X,
        texts=[""] * n,
        claims=[None] * n,
        provenance=[()] * n,
        importance=cols.importance,
        stability=cols.stability,
        subject=cols.subject,
        type=np.where(cols.insight, TYPE_CODE["insight"], TYPE_CODE["factual"]),
    )
    s["created"][:] = cols.unaccessed_from
    s["last_access"][:] = cols.last_access
    s.set_status(np.flatnonzero(~cols.allowed), "pruned", 1.0)
    q = unit_rows(rng, 1, dim=pol.store.dim)[0]
    query = Query("q1", 100.0, "where does alex live", keys=("x",), subject="alex")
    want = pol.score_rows(query, q, 100.0)
    mine = fs.PaiColumns.of_store(s, TYPE_CODE["insight"], pol._searchable())
    got = fs.pai_scores(s.embedding @ q, mine, 100.0, [pol._subject_code["alex"]], P)
    np.testing.assert_array_equal(got, want)
    ids, scores = fs.pai_topk(s.embedding, q, mine, 100.0, [pol._subject_code["alex"]], P, 10)
    np.testing.assert_array_equal(ids, topk(want, 10))
    np.testing.assert_array_equal(scores, want[ids])


@pytest.mark.parametrize("clusters", [0, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("floor", [0.20, -1.0])
def test_topk_from_cos_equals_straightforward(clusters, dtype, floor):
    """Few candidates (random rows, floor 0.20) and nearly all rows candidates (floor -1:
    the bound prefilter does the pruning) give exactly the full computation's answer."""
    rng = np.random.default_rng(2)
    n = 5000
    p = dataclasses.replace(P, cosine_floor=floor)
    X = unit_rows(rng, n, clusters=clusters)
    cols = columns(rng, n)
    for _ in range(5):
        q = unit_rows(rng, 1)[0]
        cos = (X @ q).astype(dtype)
        for k in (1, 10, 50):
            assert_same(
                fs.pai_topk_from_cos(cos, cols, 100.0, [1, 2], p, k),
                reference(cos, cols, 100.0, [1, 2], p, k),
            )


def test_ties_go_to_the_lower_row():
    """Duplicate memories score equal: the lower row wins, as in ranking.topk."""
    rng = np.random.default_rng(3)
    base = unit_rows(rng, 50)
    X = np.tile(base, (40, 1))  # 2000 rows, 40 copies of each
    n = len(X)
    cols = fs.PaiColumns(
        np.full(n, 5.0),
        np.ones(n),
        np.full(n, np.nan),
        np.zeros(n),
        np.zeros(n, np.int32),
        np.zeros(n, bool),
    )
    p = dataclasses.replace(P, cosine_floor=-1.0)
    q = base[7]
    got = fs.pai_topk(X, q, cols, 10.0, [], p, 10)
    assert_same(got, reference(X @ q, cols, 10.0, [], p, 10))
    np.testing.assert_array_equal(got[0], 7 + 50 * np.arange(10))


@pytest.mark.parametrize("floor", [0.20, -1.0])
def test_tiebreak_equals_topk_with_the_tie_rule_even_when_the_bound_prunes(floor):
    """With tie keys (recall's path), the fused answer is exactly ``topk(scores, k, keys)``:
    duplicate rows tie within TIE_RTOL and go in key order, and a pruned row that would
    join the tie at the cut brings the pruned candidates back (floor -1: the bound prunes)."""
    rng = np.random.default_rng(4)
    base = unit_rows(rng, 60)
    X = np.tile(base, (40, 1))  # 2400 rows, 40 copies of each: wide ties at every score
    n = len(X)
    cols = columns(rng, n)
    cols = dataclasses.replace(
        cols,
        importance=np.full(n, 5.0),
        stability=np.ones(n),
        last_access=np.full(n, np.nan),
        unaccessed_from=np.zeros(n),
        subject=np.zeros(n, np.int32),
        insight=np.zeros(n, bool),
    )
    p = dataclasses.replace(P, cosine_floor=floor)
    keys = rng.integers(0, 2**63, n).astype(np.uint64)
    for qi in (3, 17, 41):
        cos = X @ base[qi]
        for k in (1, 10, 45):
            scores = fs.pai_scores(cos, cols, 10.0, [], p)
            want = topk(scores, k, keys)
            got_ids, got_scores = fs.pai_topk_from_cos(cos, cols, 10.0, [], p, k, tiebreak=keys)
            np.testing.assert_array_equal(got_ids, want)
            np.testing.assert_array_equal(got_scores, np.minimum.accumulate(scores[want]))
            assert not np.array_equal(want, topk(scores, k)) or k == 1


@pytest.mark.parametrize("floor", [0.20, -1.0])
def test_batch_equals_one_query_at_a_time(floor):
    rng = np.random.default_rng(4)
    n, B = 6000, 9
    p = dataclasses.replace(P, cosine_floor=floor)
    X = unit_rows(rng, n, clusters=4)
    cols = columns(rng, n)
    Q = unit_rows(rng, B, clusters=4)
    codes = [[], [1], [0, 3], [2], [], [1, 2], [3], [0], [9]]
    got = fs.pai_topk_batch(X, Q, cols, 100.0, codes, p, 10, chunk=700)
    C = fs.batch_cosines(X, Q, chunk=700)
    for b in range(B):
        assert_same(got[b], reference(C[b], cols, 100.0, codes[b], p, 10))
        # against a single query's GEMV: the same rows, scores within float32 rounding
        single = fs.pai_topk(X, Q[b], cols, 100.0, codes[b], p, 10)
        np.testing.assert_allclose(got[b][1], single[1], rtol=1e-6)
    # the default chunk too, without an allowed mask
    cols = dataclasses.replace(cols, allowed=None)
    got = fs.pai_topk_batch(X, Q, cols, 100.0, codes, p, 7)
    C = fs.batch_cosines(X, Q)
    for b in range(B):
        assert_same(got[b], reference(C[b], cols, 100.0, codes[b], p, 7))


def test_scalar_reference_agrees():
    """The one-memory-at-a-time loop ranks the same rows with the same scores (float
    rounding apart)."""
    rng = np.random.default_rng(5)
    n = 800
    X = unit_rows(rng, n, clusters=3)
    cols = columns(rng, n)
    q = X[0]
    ids, scores = fs.pai_topk_scalar(X, q, cols, 100.0, [2], P, 10)
    fids, fscores = fs.pai_topk(X, q, cols, 100.0, [2], P, 10)
    np.testing.assert_array_equal(ids, fids)
    np.testing.assert_allclose(scores, fscores, rtol=1e-6)


def test_bound_holds_for_every_row():
    """score <= m * w_cosine * cos + R for every row with cos >= 0 (the prefilter's premise)."""
    rng = np.random.default_rng(6)
    n = 4000
    X = unit_rows(rng, n, clusters=2)
    cols = columns(rng, n, allowed=False)
    p = dataclasses.replace(P, cosine_floor=0.0)
    rest, mult = fs.pai_rest_bound(cols, 100.0, p)
    cos = X @ X[3]
    s = fs.pai_scores(cos, cols, 100.0, [0, 1, 2, 3], p)
    ok = cos >= 0
    assert (s[ok] <= mult * p.w_cosine * cos[ok].astype(np.float64) + rest + 1e-12).all()


def test_empty_and_no_candidates():
    rng = np.random.default_rng(7)
    cols = columns(rng, 0)
    ids, scores = fs.pai_topk(
        np.zeros((0, DIM), np.float32), np.ones(DIM, np.float32) / 4, cols, 1.0, [], P, 10
    )
    assert len(ids) == len(scores) == 0
    X = unit_rows(rng, 100)
    cols = columns(rng, 100)
    got = fs.pai_topk(X, -X[0], cols, 100.0, [], dataclasses.replace(P, cosine_floor=0.999), 10)
    assert len(got[0]) == 0
    assert [len(r[0]) for r in fs.pai_topk_batch(X, X[:2], cols, 100.0, [[], []], P, 0)] == [0, 0]
    with pytest.raises(ValueError, match="subject_codes"):
        fs.pai_topk_batch(X, X[:2], cols, 100.0, [[]], P, 10)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    k=st.integers(1, 30),
    floor=st.sampled_from([-1.0, 0.0, 0.2, 0.5]),
    clusters=st.sampled_from([0, 1, 3]),
)
def test_property_fused_equals_straightforward(seed, n, k, floor, clusters):
    rng = np.random.default_rng(seed)
    p = dataclasses.replace(P, cosine_floor=floor)
    X = unit_rows(rng, n, clusters=clusters)
    cols = columns(rng, n)
    Q = unit_rows(rng, 3, clusters=clusters)
    codes = [[0], [], [1, 3]]
    batch = fs.pai_topk_batch(X, Q, cols, 100.0, codes, p, k, chunk=64)
    C = fs.batch_cosines(X, Q, chunk=64)
    for b in range(3):
        assert_same(
            fs.pai_topk(X, Q[b], cols, 100.0, codes[b], p, k),
            reference(X @ Q[b], cols, 100.0, codes[b], p, k),
        )
        assert_same(batch[b], reference(C[b], cols, 100.0, codes[b], p, k))


def test_chunked_is_bit_identical_to_the_kernel():

    rng = np.random.default_rng(8)
    n = 20_001
    a, r, d = rng.uniform(0, 1, n), rng.uniform(0.001, 0.1, n), rng.uniform(0, 365, n)
    np.testing.assert_array_equal(
        fs.chunked(izzie.exp_decay, a, r, d, chunk=1000), izzie.exp_decay(a, r, d)
    )
    # broadcast scalars and keyword arguments, a 2-D input falls back to the plain call
    np.testing.assert_array_equal(
        fs.chunked(engram.stability_update, d, 0.5, cap=365.0, chunk=333),
        engram.stability_update(d, 0.5, cap=365.0),
    )
    np.testing.assert_array_equal(
        fs.chunked(engram.beta_mean, a.reshape(3, -1)[:, :5], 2.0),
        engram.beta_mean(a.reshape(3, -1)[:, :5], 2.0),
    )
    cand = rng.random(n) < 0.3
    rf = rng.integers(0, 9, n).astype(float)
    np.testing.assert_array_equal(
        fs.chunked(cosmo.cosmo_decay_rate, rf, r * 10, 0.02, cand, a, chunk=4096),
        cosmo.cosmo_decay_rate(rf, r * 10, 0.02, cand, a),
    )


def test_half_life_decay_exp2_matches_pow_within_2_ulp():
    """000 §7: c * 0.5 ** (days / (30 * stability)); exp2 form vs numpy/libm pow."""

    rng = np.random.default_rng(9)
    c, dt, hl = rng.uniform(0, 1, 5000), rng.uniform(0, 2000, 5000), rng.uniform(30, 150, 5000)
    got = fs.half_life_decay(c, dt, hl)
    want = pai_formulas.half_life_decay(c, dt, hl)
    assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want))).all()
    assert (
        fs.half_life_decay(0.6, 30.0, 30.0)
        == pai_formulas.half_life_decay_ref(0.6, 30.0, 30.0)
        == 0.3
    )


def test_cosmo_decay_rate_exp_log_matches_the_kernel():
    """002 offline decay: base_rate / (1 + recall_frequency ** decay_gradient), candidate
    penalty; the exp/log power agrees with policies.cosmo.cosmo_decay_rate (libm pow) within
    1e-14, and the edge cases (rf = 0 with gradient > 0, = 0, < 0) are exact."""

    rng = np.random.default_rng(12)
    n = 5000
    rf = rng.integers(0, 200, n).astype(float)
    g = rng.uniform(-2.0, 3.0, n)
    cand, conf = rng.random(n) < 0.3, rng.uniform(0, 1, n)
    got = fs.cosmo_decay_rate(rf, g, 0.02, cand, conf)
    np.testing.assert_allclose(
        got, cosmo.cosmo_decay_rate(rf, g, 0.02, cand, conf), rtol=1e-14, atol=0
    )
    for r, gr in [(0.0, 1.5), (0.0, 0.0), (0.0, -1.0), (5.0, 1.5)]:
        assert fs.cosmo_decay_rate(r, gr) == pytest.approx(
            cosmo.cosmo_decay_rate_ref(r, gr), rel=1e-14, abs=0
        )
    # 002's example: recall_frequency=5, decay_gradient=1.5 gives about 0.0015
    assert fs.cosmo_decay_rate(5.0, 1.5) == pytest.approx(0.02 / (1 + 5**1.5), rel=1e-14)


def screened(X, q, cols, now, codes, p, k, tb, first, screen=None):
    screen = screen or QuantizedScreen(X.shape[1])
    return fs.pai_topk_screened(
        lambda m: screen.ranked(X, q, m),
        lambda rows: rows_matvec(X, rows, q),
        cols,
        now,
        codes,
        p,
        k,
        tb,
        first=first,
    )


def full_scan(X, q, cols, now, codes, p, k, keys):
    scores = fs.pai_scores(X @ q, cols, now, codes, p)
    ids = topk(scores, k, keys)
    return ids, np.minimum.accumulate(scores[ids])


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 1200),
    k=st.integers(1, 30),
    floor=st.sampled_from([-1.0, 0.0, 0.2, 0.5]),
    clusters=st.sampled_from([0, 1, 3]),
    copies=st.sampled_from([1, 2, 40]),
    flat=st.booleans(),
    ties_by_key=st.booleans(),
    weights=st.tuples(*[st.sampled_from([0.0, 0.3, 1.0, 2.5])] * 4),
    insight_multiplier=st.sampled_from([0.5, 1.0, 3.0]),
    first=st.integers(1, 64),
)
def test_property_screened_equals_the_full_scan(
    seed, n, k, floor, clusters, copies, flat, ties_by_key, weights, insight_multiplier, first
):
    """The int8-screened top k (rows, order, running-minimum scores) is the full scan's
    ``topk(pai_scores(X @ q), k, keys)`` bit for bit, whenever the screen decides: random
    stores with duplicate rows (``copies``: wide ties at every score), equal non-cosine
    columns (``flat``: equal scores wherever cosines are equal), with and without tie keys,
    and random non-negative weights, insight multiplier and floor."""
    rng = np.random.default_rng(seed)
    base = unit_rows(rng, max(1, n // copies), clusters=clusters)
    X = np.ascontiguousarray(np.tile(base, (copies, 1))[:n])
    n = len(X)
    cols = columns(rng, n)
    if flat:
        cols = dataclasses.replace(
            cols,
            importance=np.full(n, 5.0),
            stability=np.ones(n),
            last_access=np.full(n, np.nan),
            unaccessed_from=np.zeros(n),
            insight=np.zeros(n, bool),
        )
    w_importance, w_recency, w_stability, w_subject = weights
    p = dataclasses.replace(
        P,
        cosine_floor=floor,
        w_importance=w_importance,
        w_recency=w_recency,
        w_stability=w_stability,
        w_subject=w_subject,
        insight_multiplier=insight_multiplier,
    )
    keys = rng.integers(0, 2**63, n).astype(np.uint64) if ties_by_key else None
    tb = None if keys is None else (lambda rows: keys[rows])
    screen = QuantizedScreen(DIM)
    for q, codes in zip(
        np.concatenate([X[:1], unit_rows(rng, 2, clusters=clusters)]), [[0], [], [1, 3]]
    ):
        got = screened(X, q, cols, 100.0, codes, p, k, tb, first, screen)
        if got is not None:
            assert_same(got, full_scan(X, q, cols, 100.0, codes, p, k, keys))


@pytest.mark.parametrize("ties_by_key", [False, True])
def test_screened_decides_on_the_benchmark_store(ties_by_key):
    """On the benchmarks' clustered store (20,000 rows, their Personal AI columns) the
    screen decides from a small share of the rows (the property test above is not
    vacuous), with the full scan's answer."""
    n = 20_000
    X = workloads.embeddings(n)
    cols = workloads.pai_columns(workloads.pai_workload(n))
    keys = np.arange(n, dtype=np.uint64)[::-1].copy()
    tb = (lambda rows: keys[rows]) if ties_by_key else None
    screen = QuantizedScreen(X.shape[1])
    now = workloads.NOW
    for q in workloads.queries(n, 5):
        got = screened(X, q, cols, now, [7], P, 10, tb, None, screen)
        assert got is not None
        assert_same(got, full_scan(X, q, cols, now, [7], P, 10, keys if ties_by_key else None))


@pytest.mark.parametrize("policy_id", ["pai", "pai-code"])
def test_a_run_through_the_screen_is_the_full_scans_byte_for_byte(monkeypatch, policy_id):
    """With the int8 screen forced on for every store size and a small first read (so it
    decides in a small store), a Personal AI run's trace and store equal the plain run's,
    bytes included, and the screen decided most of its queries."""
    import scenarios
    from benchmarks.fingerprint import digest
    from memsim.engine import store as store_module
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.registry import make
    from memsim.engine.runner import run

    spec = "synthetic:steady,episodes=3000,queries=400"

    def one_run():
        pol = make(policy_id, llm=MockLLM(seed=0), seed=0)
        return pol, run(pol, scenarios.load(spec))

    plain, plain_trace = one_run()
    monkeypatch.setattr(store_module, "SCREEN_MIN_ROWS", 0)
    monkeypatch.setattr(fs, "SCREEN_FIRST_PER_K", 2)
    monkeypatch.setattr(fs, "SCREEN_FIRST_MIN", 8)
    decided = []
    screened_topk = fs.pai_topk_screened

    def counted(*args, **kwargs):
        got = screened_topk(*args, **kwargs)
        decided.append(got is not None)
        return got

    monkeypatch.setattr("policies.pai.pai_topk_screened", counted)
    pol, trace = one_run()
    assert sum(decided) >= 50, (sum(decided), len(decided))
    assert digest(pol, trace) == digest(plain, plain_trace)
