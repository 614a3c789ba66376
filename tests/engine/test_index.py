"""Vector indexes: exact vs brute force, faiss flat == exact, HNSW recall, masks, edges."""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.engine import ranking, similarity
from memsim.engine.errors import ParamError, UnknownIdError, VectorError
from memsim.engine.vector_index import INDEX_KINDS, ExactIndex, FaissIndex, VectorIndex, make_index


def unit(rng, n, d):
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def clustered(rng, n, d, clusters=50, noise=0.35):
    centers = unit(rng, clusters, d)
    v = centers[rng.integers(0, clusters, n)] + noise * rng.standard_normal((n, d)).astype(
        np.float32
    ) / np.sqrt(d)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def brute(E, Q, k, mask=None):
    """Full stable sort of every score, masked rows dropped."""
    out = []
    for q in Q:
        s = E.astype(np.float64) @ q.astype(np.float64)
        ids = [i for i in np.argsort(-s, kind="stable") if mask is None or mask[i]][:k]
        out.append(ids + [-1] * (k - len(ids)))
    return np.array(out, dtype=np.int64)


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_make_index_kinds(kind):
    idx = make_index(kind, 8)
    assert isinstance(idx, VectorIndex) and len(idx) == 0 and idx.dim == 8


def test_unknown_kind():
    with pytest.raises(UnknownIdError, match="faiss-hnsw"):
        make_index("annoy", 8)
    with pytest.raises(ParamError, match="efSearch"):
        make_index("faiss-hnsw", 8, efSearch=3)
    with pytest.raises(ParamError):
        make_index("faiss-ivf", 8, nlist=0)


@given(st.integers(0, 40), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_exact_vs_brute_force(n, k, seed):
    rng = np.random.default_rng(seed)
    E, Q = unit(rng, n, 6), unit(rng, 3, 6)
    idx = ExactIndex(6)
    idx.add(E[: n // 2])
    idx.add(E[n // 2 :])
    assert len(idx) == n
    mask = rng.random(n) < 0.4
    for m in (None, mask):
        sims, ids = idx.search(Q, k, m)
        assert sims.dtype == np.float32 and ids.dtype == np.int64 and ids.shape == (3, k)
        assert ids.tolist() == brute(E, Q, k, m).tolist()
        ok = ids >= 0
        np.testing.assert_allclose(
            sims[ok], np.einsum("ij,ij->i", Q[np.nonzero(ok)[0]], E[ids[ok]]), rtol=1e-5, atol=1e-6
        )
        assert np.isneginf(sims[~ok]).all()


def test_exact_ties_lower_id_and_mask_paths():
    idx = ExactIndex(2)
    idx.add(np.array([[1, 0], [0, 1], [1, 0], [1, 0]], dtype=np.float32))
    sims, ids = idx.search(np.array([1, 0], dtype=np.float32), 3)
    assert ids.tolist() == [[0, 2, 3]] and sims.tolist() == [[1, 1, 1]]
    # sparse mask (scores only allowed rows) and dense mask agree
    assert idx.search([1, 0], 2, np.array([False, True, False, True]))[1].tolist() == [[3, 1]]
    assert idx.search([1, 0], 2, np.array([True, True, False, True]))[1].tolist() == [[0, 3]]
    assert idx.search([1, 0], 2, np.zeros(4, bool))[1].tolist() == [[-1, -1]]


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_empty_and_bad_input(kind):
    idx = make_index(kind, 4)
    sims, ids = idx.search(np.ones((2, 4), np.float32) / 2, 5)
    assert ids.tolist() == [[-1] * 5] * 2 and np.isneginf(sims).all()
    assert idx.search(np.ones(4, np.float32) / 2, 0)[1].shape == (1, 0)
    with pytest.raises(VectorError):
        idx.add(np.zeros((1, 4)))
    with pytest.raises(VectorError):
        idx.add(np.ones((1, 5)))
    idx.add(np.eye(4, dtype=np.float32))
    with pytest.raises(VectorError):
        idx.search(np.ones((1, 3)), 2)
    with pytest.raises(VectorError):
        idx.search(np.ones((1, 4)), 2, mask=np.ones(3, bool))
    sims, ids = idx.search(np.eye(4, dtype=np.float32)[:1], 6)
    assert (
        ids[0, 0] == 0
        and sorted(ids[0, :4].tolist()) == [0, 1, 2, 3]
        and ids[0, 4:].tolist() == [-1, -1]
    )


def test_faiss_flat_equals_exact():
    rng = np.random.default_rng(1)
    E, Q = unit(rng, 700, 32), unit(rng, 20, 32)
    ex, fl = ExactIndex(32), make_index("faiss-flat", 32)
    for chunk in np.array_split(E, 3):
        ex.add(chunk)
        fl.add(chunk)
    mask = rng.random(700) < 0.3
    for m in (None, mask):
        s1, i1 = ex.search(Q, 10, m)
        s2, i2 = fl.search(Q, 10, m)
        assert i1.tolist() == i2.tolist()
        np.testing.assert_allclose(s1, s2, rtol=1e-5)


def test_hnsw_recall_on_clustered_vectors():
    rng = np.random.default_rng(2)
    E, Q = clustered(rng, 5000, 64, noise=0.5), clustered(rng, 100, 64, noise=0.5)
    ex, hn = ExactIndex(64), make_index("faiss-hnsw", 64)
    ex.add(E)
    hn.add(E)
    truth = ex.search(Q, 10)[1]
    got = hn.search(Q, 10)[1]

    def recall(ids):
        return np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth.tolist(), ids.tolist())])

    assert recall(got) >= 0.9  # defaults M=32, efConstruction=80, efSearch=64: ~0.92 here
    wide = make_index("faiss-hnsw", 64, ef_search=256)
    wide.add(E)
    assert recall(wide.search(Q, 10)[1]) >= 0.98  # the knob reaches the search
    # deterministic: a second build answers identically
    hn2 = make_index("faiss-hnsw", 64)
    hn2.add(E)
    assert np.array_equal(hn2.search(Q, 10)[1], got)


@pytest.mark.parametrize("kind", ["faiss-flat", "faiss-hnsw", "faiss-ivf"])
def test_faiss_masks_honoured(kind):
    rng = np.random.default_rng(3)
    E, Q = clustered(rng, 1200, 16, clusters=10), clustered(rng, 15, 16, clusters=10)
    idx = make_index(kind, 16, **({"nlist": 8} if kind == "faiss-ivf" else {}))
    idx.add(E)
    mask = rng.random(1200) < 0.5
    sims, ids = idx.search(Q, 20, mask)
    ok = ids >= 0
    assert mask[ids[ok]].all()
    assert ok.mean() > 0.9
    none = idx.search(Q, 5, np.zeros(1200, bool))[1]
    assert (none == -1).all()


def test_ivf_exact_until_trained():
    rng = np.random.default_rng(4)
    E, Q = unit(rng, 300, 8), unit(rng, 5, 8)
    ivf = FaissIndex(8, "ivf", nlist=4, nprobe=4, min_train=200)
    ex = ExactIndex(8)
    ivf.add(E[:150])
    ex.add(E[:150])
    assert not ivf.trained
    assert np.array_equal(ivf.search(Q, 7)[1], ex.search(Q, 7)[1])  # exact fallback
    ivf.add(E[150:])
    ex.add(E[150:])
    assert ivf.trained and len(ivf) == 300
    # nprobe == nlist visits every list: exact again, through IVF this time
    assert np.array_equal(ivf.search(Q, 7)[1], ex.search(Q, 7)[1])


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_pickle_round_trip(kind):
    rng = np.random.default_rng(5)
    E, Q = unit(rng, 100, 8), unit(rng, 4, 8)
    idx = make_index(kind, 8, **({"nlist": 2, "min_train": 50} if kind == "faiss-ivf" else {}))
    idx.add(E)
    clone = pickle.loads(pickle.dumps(idx))
    assert len(clone) == 100
    assert np.array_equal(clone.search(Q, 5)[1], idx.search(Q, 5)[1])
    clone.add(E[:3])
    assert len(clone) == 103 and len(idx) == 100


# -- CandidateIndex ------------------------------------------------------------------------


def _at_cosines(q: np.ndarray, cos: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Unit rows whose cosine with the unit vector ``q`` is ``cos`` (float noise apart): ``q``
    scaled, plus the part of each row of ``w`` orthogonal to it, normalized."""
    w = w - (w @ q)[:, None] * q
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    return cos[:, None] * q + np.sqrt(1 - cos**2)[:, None] * w


def _cand_store(n: int, seed: int = 0):
    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(seed)
    s = MemoryStore(16, Statuses(("active", "gone")))
    s.add(
        0.0,
        rng.standard_normal((n, 16)),
        texts=[f"m{i}" for i in range(n)],
        claims=[None] * n,
        provenance=[(f"e{i}",) for i in range(n)],
    )
    return s, rng


def test_candidate_index_exact_mode_never_answers():
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(50)
    idx = CandidateIndex(s, "exact", min_rows=1)
    assert not idx.approximate
    assert idx.candidates(rng.standard_normal(16), 5, s.retrievable()) is None
    assert not idx.audit_due()


def test_candidate_index_kept_current_and_masked():
    """New rows, changed embeddings and the mask are seen by the next search; with every
    list probed the candidates are the exact top-k."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(400)
    idx = CandidateIndex(s, "ivf", min_rows=100, nprobe=10_000)
    q = rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)

    def exact(k):
        m = s.retrievable()
        sims = np.where(m, s.embedding @ q, -np.inf)
        return set(np.argsort(-sims)[:k].tolist())

    assert set(idx.candidates(q, 10, s.retrievable()).tolist()) == exact(10)
    # a changed embedding: row 3 becomes the query itself
    s.set_embedding([3], q[None, :])
    got = idx.candidates(q, 10, s.retrievable())
    assert got[0] == 3 and set(got.tolist()) == exact(10)
    # a masked-out row is never a candidate
    s.set_status([3], "gone", 1.0)
    assert 3 not in idx.candidates(q, 10, s.retrievable()).tolist()
    # new rows (the store doubles: retrained)
    s.add(
        1.0,
        rng.standard_normal((500, 16)),
        texts=[f"n{i}" for i in range(500)],
        claims=[None] * 500,
        provenance=[(f"f{i}",) for i in range(500)],
    )
    assert set(idx.candidates(q, 10, s.retrievable()).tolist()) == exact(10)
    assert idx.audit["trainings"] == 2


def test_candidate_index_same_seed_same_bytes():
    import copy
    import pickle

    from memsim.engine.candidate_index import CandidateIndex

    answers = []
    for _ in range(2):
        s, rng = _cand_store(3000, seed=5)
        idx = CandidateIndex(s, "ivf", min_rows=1000, nprobe=2, seed=7)
        qs = rng.standard_normal((20, 16)).astype(np.float32)
        answers.append([idx.candidates(q, 8, s.retrievable()).tobytes() for q in qs])
        twin = copy.deepcopy(idx)  # faiss state survives copies and pickles
        again = pickle.loads(pickle.dumps(idx))
        assert [twin.candidates(q, 8, s.retrievable()).tobytes() for q in qs] == answers[-1]
        assert [again.candidates(q, 8, again.store.retrievable()).tobytes() for q in qs] == (
            answers[-1]
        )
    assert answers[0] == answers[1]


def test_candidate_index_audit_counts():
    from memsim.engine.candidate_index import CandidateIndex

    s, _ = _cand_store(200)
    idx = CandidateIndex(s, "ivf", min_rows=100, audit_every=3)
    due = [idx.audit_due() for _ in range(7)]
    assert due == [True, False, False, True, False, False, True]
    idx.record(True)
    idx.record(False)
    idx.record(True, decision=True)
    got = idx.summary()
    assert (got["checked"], got["differ"], got["query_differ_share"]) == (2, 1, 0.5)
    assert got["decision_differ_share"] == 1.0
    with pytest.raises(Exception, match="unknown candidate index mode"):
        CandidateIndex(s, "hnsw")


def test_candidate_top_rows_equal_the_exact_scan_with_ties():
    """top_rows gives ranking.topk over the full float32 product (ties to the lower row)
    bit for bit, also when a large group of rows ties at the k-th place."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(3000, seed=3)
    q = rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)
    # 200 rows at the same cosine with q (equal in exact arithmetic, float noise apart)
    planted = _at_cosines(q, np.full(200, 0.9), rng.standard_normal((200, 16)))
    rows = rng.choice(3000, 200, replace=False)
    s.set_embedding(rows, planted)
    s.set_status(rows[:30], "gone", 1.0)
    idx = CandidateIndex(s, "ivf", min_rows=1000, nprobe=10_000)
    mask = s.retrievable()
    for k in (1, 10, 50):
        got_rows, got_sims = idx.top_rows(q, k, mask)
        sims = np.where(mask, s.embedding @ q, -np.inf)
        want = ranking.topk(sims, k)
        np.testing.assert_array_equal(got_rows, want)
        np.testing.assert_array_equal(got_sims, sims[want].astype(np.float32))
        # with the caller's tie keys (seeded order of memory identity), as the caller's scan
        keys = lambda r: s.tie_keys("0:q", r)  # noqa: E731
        got_rows, _ = idx.top_rows(q, k, mask, keys)
        np.testing.assert_array_equal(got_rows, ranking.topk(sims, k, keys))
        # the callers' scans (Izzie's first stage, Personal AI's findSimilarBeliefs) hold the
        # float32 products in float64 arrays: the tie tolerance is computed in float64
        np.testing.assert_array_equal(got_rows, ranking.topk(sims.astype(np.float64), k, keys))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    group=st.integers(0, 40),
    cos=st.sampled_from([0.97, 0.6]),
    k=st.integers(1, 16),
)
def test_candidate_top_rows_equal_the_exact_scan_whatever_the_tie_group(seed, group, cos, k):
    """top_rows with every list probed is the exact scan bit for bit, with no tie group and
    with groups of rows tied near the k-th product smaller and larger than its search's
    width (2k + 4: the rows above the bound come from that search, else from a range
    search), at the top of the ranking or under it, some of them masked out."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(1500, seed=seed % 1000)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)
    if group:
        rows = rng.choice(1500, group, replace=False)
        s.set_embedding(rows, _at_cosines(q, np.full(group, cos), rng.standard_normal((group, 16))))
        s.set_status(rows[: group // 5], "gone", 1.0)
    idx = CandidateIndex(s, "ivf", min_rows=1000, nprobe=10_000)
    mask = s.retrievable()
    sims = np.where(mask, s.embedding @ q, -np.inf)
    keys = lambda r: s.tie_keys("0:q", r)  # noqa: E731
    got_rows, got_sims = idx.top_rows(q, k, mask, keys)
    want = ranking.topk(sims.astype(np.float64), k, keys)
    np.testing.assert_array_equal(got_rows, want)
    np.testing.assert_array_equal(got_sims, sims[want].astype(np.float32))


def test_candidate_rows_near_hold_every_row_reaching_the_threshold_with_the_full_products():
    """rows_near: every allowed row whose full-scan float32 product reaches the threshold
    (a tied group among them, rows near the threshold on both sides), ascending, with the
    full scan's products bit for bit, and none that is masked out or far below."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(3000, seed=4)
    q = rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)
    w = rng.standard_normal((120, 16))
    cos = np.concatenate([np.full(40, 0.9), 0.85 + rng.uniform(-3e-5, 3e-5, 40), np.full(40, 0.95)])
    rows = rng.choice(3000, 120, replace=False)
    s.set_embedding(rows, _at_cosines(q, cos, w))
    s.set_status(rows[::7], "gone", 1.0)
    idx = CandidateIndex(s, "ivf", min_rows=1000, nprobe=10_000)
    mask = s.retrievable()
    got_rows, got_sims = idx.rows_near(q, 0.85, mask)
    full = s.embedding @ q
    reach = np.flatnonzero(mask & (full >= np.float32(0.85)))
    assert len(reach) > 60 and set(reach) <= set(got_rows)
    assert np.all(np.diff(got_rows) > 0) and mask[got_rows].all()
    assert got_sims.tobytes() == full[got_rows].tobytes()
    assert (full[got_rows] >= 0.85 - similarity.screen_margin(16) - 1e-6).all()
    best = int(got_rows[np.argmax(got_sims)])
    assert best == int(np.argmax(np.where(mask, full, -np.inf)))
    assert len(idx.rows_near(q, 0.999, mask)[0]) == 0  # nothing near: a new memory
    assert CandidateIndex(s, "exact").rows_near(q, 0.85, mask) is None

    # the search parameters are kept between searches: a later, narrower mask, a shorter
    # one, an empty one, a grown store, a copy and a new nprobe each give what a fresh
    # index gives
    def fresh(m):
        other = CandidateIndex(s, "ivf", min_rows=1000, nprobe=10_000)
        return other.rows_near(q, 0.85, m)[0].tolist()

    few = np.zeros_like(mask)
    few[reach[::3]] = True
    assert idx.rows_near(q, 0.85, few)[0].tolist() == reach[::3].tolist() == fresh(few)
    short = mask[:1500]
    got = idx.rows_near(q, 0.85, short)[0].tolist()
    assert got == fresh(short) and max(got) < 1500 and set(reach[reach < 1500]) <= set(got)
    assert idx.rows_near(q, 0.85, np.zeros_like(mask))[0].tolist() == []
    s.add(2.0, np.tile(q, (3, 1)), texts=["a"] * 3, claims=[None] * 3, provenance=[()] * 3)
    grown = s.retrievable()
    got = idx.rows_near(q, 0.85, grown)[0].tolist()
    assert got == fresh(grown) and got[-3:] == [3000, 3001, 3002]
    twin = copy.deepcopy(idx)
    assert twin.rows_near(q, 0.85, few)[0].tolist() == reach[::3].tolist()
    twin.nprobe = 1
    one_list = twin.rows_near(q, 0.85, grown)[0].tolist()
    assert set(one_list) < set(got)  # the copy now probes one list


def _reaching(E: np.ndarray, q: np.ndarray, mask: np.ndarray, threshold: float) -> np.ndarray:
    """The full scan's rows: allowed, full-scan float32 product at or above ``threshold``."""
    full = (E @ q)[: len(mask)]
    return np.flatnonzero(mask & (full >= np.float32(threshold)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), thr=st.sampled_from([0.5, 0.85, 0.95]))
def test_candidate_rows_reaching_is_the_full_scan_whatever_the_probes(seed, thr):
    """rows_reaching (the audit's exact side): every allowed row whose full-scan float32
    product reaches the threshold, in any list (one probed list misses some that
    rows_near finds only with every list probed), with the full scan's products bit for bit,
    ascending, nothing masked out; after the store grew and after embeddings changed."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(1500, seed=seed)
    q = rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)
    rows = rng.choice(1500, 90, replace=False)
    cos = np.concatenate([np.full(30, thr + 0.03), thr + rng.uniform(-3e-5, 3e-5, 30)])
    cos = np.concatenate([cos, rng.uniform(thr - 0.3, 1.0, 30).clip(-1, 1)])
    s.set_embedding(rows, _at_cosines(q, cos, rng.standard_normal((90, 16))))
    s.set_status(rows[::5], "gone", 1.0)
    idx = CandidateIndex(s, "ivf", min_rows=1000, nprobe=1)

    def check(mask: np.ndarray) -> None:
        got, products = idx.rows_reaching(q, thr, mask)
        want = _reaching(s.embedding, q, mask, thr)
        assert set(want.tolist()) <= set(got.tolist())
        assert np.all(np.diff(got) > 0) and mask[got].all()
        assert products.tobytes() == (s.embedding @ q)[got].tobytes()

    mask = s.retrievable()
    idx.rows_near(q, thr, mask)  # trained
    check(mask)
    check(mask[:700])  # a shorter mask: rows after it are not allowed
    s.add(
        2.0,
        _at_cosines(q, np.full(5, thr + 0.01), rng.standard_normal((5, 16))),
        texts=["a"] * 5,
        claims=[None] * 5,
        provenance=[()] * 5,
    )
    check(s.retrievable())
    moved = rng.choice(1500, 20, replace=False)
    s.set_embedding(moved, np.tile(q, (20, 1)))
    check(s.retrievable())
    assert CandidateIndex(s, "exact").rows_reaching(q, thr, mask) is None


def test_cones_thresholds_follow_the_lists_as_rows_are_added():
    """Cones keeps a threshold per list and radius; a row that widens a list's cone must
    make the list readable at once (a threshold kept from before would skip it)."""
    from memsim.engine.cones import Cones

    dim = 8
    centroids = np.eye(dim, dtype=np.float32)[:2]  # list 0 around e0, list 1 around e1
    cones = Cones(centroids)
    E = np.zeros((3, dim), dtype=np.float32)
    E[0, 0] = E[1, 1] = 1.0
    E[2] = [0.6, 0.8] + [0.0] * (dim - 2)  # list 1, 37 degrees from e1
    cones.cover(E)
    q = np.zeros(dim, dtype=np.float32)
    q[2] = 1.0  # orthogonal to both lists' rows so far
    assert cones.rows_above(q, 0.9).tolist() == []
    E = np.vstack([E, [[0.0, 0.72, 0.7] + [0.0] * (dim - 3)]]).astype(np.float32)
    E[3] /= np.linalg.norm(E[3])  # in list 1 (nearer e1 than e0), 0.70 from q
    E = np.vstack([E, [[0.0, 0.1, 0.995] + [0.0] * (dim - 3)]]).astype(np.float32)
    E[4] /= np.linalg.norm(E[4])  # in list 1 too (e1 over e0), 0.99 from q: the cone widens
    cones.cover(E)
    assert cones.rows_above(q, 0.9).tolist() == [4]
    assert sorted(cones.rows_above(q, 0.5).tolist()) == [3, 4]


def _clustered_store(n: int, seed: int):
    """A store of ``n`` clustered unit rows in 16 dimensions (so that cones prune)."""
    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(seed)
    s = MemoryStore(16, Statuses(("active", "gone")))
    s.add(
        0.0,
        clustered(rng, n, 16, clusters=40, noise=0.5),
        texts=[f"m{i}" for i in range(n)],
        claims=[None] * n,
        provenance=[(f"e{i}",) for i in range(n)],
    )
    return s, rng


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), thr=st.sampled_from([0.5, 0.85, 0.95]))
def test_cones_rows_near_is_the_full_scan(seed, thr):
    """Mode "cones": rows_near holds every allowed row whose full-scan float32 product
    reaches the threshold, ascending, with the full scan's products bit for bit, nothing
    masked out; after the store grew by rows unlike any it was trained on (lists of their
    own) and after embeddings changed (trained again). It answers None (the caller's scan)
    only where the lists to read hold more than half the store, and nothing is audited."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _clustered_store(1500, seed)
    q = s.embedding[int(rng.integers(1500))].copy()
    rows = rng.choice(1500, 90, replace=False)
    cos = np.concatenate([np.full(30, thr + 0.03), thr + rng.uniform(-3e-5, 3e-5, 30)])
    cos = np.concatenate([cos, rng.uniform(thr - 0.3, 1.0, 30).clip(-1, 1)])
    s.set_embedding(rows, _at_cosines(q, cos, rng.standard_normal((90, 16))))
    s.set_status(rows[::5], "gone", 1.0)
    idx = CandidateIndex(s, "cones", min_rows=1000)
    answered: list[bool] = []

    def check(mask: np.ndarray) -> None:
        got = idx.rows_near(q, thr, mask)
        answered.append(got is not None)
        cones = idx._cones
        assert cones is not None
        if got is None:  # the lists to read hold more than half the store
            radius = thr - similarity.screen_margin(16)
            norm = np.linalg.norm(q.astype(np.float64))
            reach = cones.centroids32[: cones.lists] @ q >= cones.list_thresholds(radius) * norm
            assert 2 * cones.size[: cones.lists][reach].sum() > s.n
            return
        found, products = got
        want = _reaching(s.embedding, q, mask, thr)
        assert set(want.tolist()) <= set(found.tolist())
        assert np.all(np.diff(found) > 0) and mask[found].all()
        assert products.tobytes() == (s.embedding @ q)[found].tobytes()

    mask = s.retrievable()
    check(mask)
    check(mask[:700])  # a shorter mask: rows after it are not allowed
    assert idx._cones is not None
    lists = idx._cones.lists  # new lists for rows unlike the trained ones, while spares last
    unlike = unit(rng, 40, 16)  # random directions: far from the clusters
    unlike[:5] = _at_cosines(q, np.full(5, thr + 0.01), rng.standard_normal((5, 16)))
    s.add(2.0, unlike, texts=["a"] * 40, claims=[None] * 40, provenance=[()] * 40)
    check(s.retrievable())
    cones = idx._cones
    assert cones is not None and (cones.lists > lists or cones.lists == len(cones.size))
    trainings = idx.audit["trainings"]
    moved = rng.choice(1500, 20, replace=False)
    s.set_embedding(moved, np.tile(q, (20, 1)))
    check(s.retrievable())
    assert idx.audit["trainings"] == trainings + 1
    if thr >= 0.85:  # the first store prunes well enough at these thresholds
        assert answered[0]
    assert not idx.approximate and not idx.audit_due() and idx.audit["searches"] == 0
    assert idx.candidates(q, 5, mask) is None and idx.top_rows(q, 5, mask) is None
    assert CandidateIndex(s, "cones", min_rows=10**6).rows_near(q, thr, mask) is None


def test_cones_give_rows_unlike_the_trained_ones_lists_of_their_own():
    """With spare lists, a row farther from every centroid than spawn_factor x the median
    angle of the first rows covered is the centroid of a new list (a later row near it
    joins it), until the spare lists are used up; the cones' bound then still holds."""
    from memsim.engine.cones import Cones

    dim = 8
    eye = np.eye(dim)

    def at(axis: int, other: int, angle: float) -> np.ndarray:
        return np.cos(angle) * eye[axis] + np.sin(angle) * eye[other]

    cones = Cones(eye[:2], spare=2, spawn_factor=4 / 3)
    E = np.array([at(0, 7, 0.3), at(0, 6, 0.3), at(1, 7, 0.3), at(1, 6, 0.3)], np.float32)
    cones.cover(E)
    assert cones.lists == 2 and cones.spawn_angle == pytest.approx(0.4)
    E = np.vstack([E, [eye[2], at(2, 7, 0.1), at(0, 7, 0.35)]]).astype(np.float32)
    cones.cover(E)  # e2 starts list 2; the row 0.1 from it joins it; 0.35 from e0: list 0
    assert cones.lists == 3
    assert sorted(cones.ids[2][: cones.size[2]].tolist()) == [4, 5]
    assert cones.widest[2] == pytest.approx(0.1, abs=1e-6)
    E = np.vstack([E, [eye[3], eye[4]]]).astype(np.float32)
    cones.cover(E)  # e3 takes the last spare list; e4 joins the nearest list, widening it
    assert cones.lists == 4 and cones.widest[:4].max() == pytest.approx(np.pi / 2, abs=1e-6)
    for q, radius in [(eye[2], 0.9), (eye[4], 0.9), (at(0, 7, 0.3), 0.5)]:
        q = q.astype(np.float32)
        want = np.flatnonzero(E @ q >= radius)
        got = cones.rows_above(q, radius)
        assert got is not None and set(want.tolist()) <= set(got.tolist())
    assert cones.rows_above(eye[2].astype(np.float32), 0.9, limit=1) is None  # 2 rows to read


def test_cones_drop_rows_in_a_terminal_status():
    """Mode "cones" keeps no row in a terminal status in its lists (never retrievable, never
    left): dropped when the status log shows it, and when the lists are trained again; the
    searches of retrievable rows still equal the full scan's."""
    from memsim.engine.candidate_index import CandidateIndex
    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(3)
    s = MemoryStore(16, Statuses(("active", "gone"), terminal=frozenset({"gone"})))

    def add(n: int) -> None:
        s.add(
            0.0,
            clustered(rng, n, 16, clusters=20, noise=1.0),
            texts=["m"] * n,
            claims=[None] * n,
            provenance=[()] * n,
        )

    add(600)
    s.set_status(np.arange(0, 600, 3), "gone", 1.0)
    idx = CandidateIndex(s, "cones", min_rows=500)

    def check() -> None:
        mask = s.retrievable()
        for q in s.embedding[rng.choice(s.n, 20, replace=False)]:
            got = idx.rows_near(q, 0.8, mask)
            assert got is not None
            want = _reaching(s.embedding, q, mask, 0.8)
            assert set(want.tolist()) <= set(got[0].tolist()) and mask[got[0]].all()
            assert got[1].tobytes() == (s.embedding @ q)[got[0]].tobytes()
        cones = idx._cones
        assert cones is not None
        held = np.concatenate([cones.ids[i][: cones.size[i]] for i in range(cones.lists)])
        assert sorted(held.tolist()) == np.flatnonzero(mask).tolist()

    check()
    s.set_status(np.arange(1, 600, 3), "gone", 2.0)  # read from the status log
    check()
    trainings = idx.audit["trainings"]
    add(700)  # the store doubled: trained again, the terminal rows dropped again
    s.set_status([650, 700], "gone", 3.0)
    check()
    assert idx.audit["trainings"] == trainings + 1


def _reach_answers_agree(got, want, E, v, mask, thr) -> None:
    """BatchReach's answer against CandidateIndex.rows_near's at the same turn: None alike,
    else both ascending, allowed, with the full scan's products bit for bit, and the same
    rows reaching the threshold (every one of the full scan's); rows under it may differ."""
    assert (got is None) == (want is None)
    if got is None:
        return
    rows, products = got
    assert np.all(np.diff(rows) > 0) and mask[rows].all()
    assert products.tobytes() == (E @ v)[rows].tobytes()
    reaching = _reaching(E, v, mask, thr)
    assert rows[products >= np.float32(thr)].tolist() == reaching.tolist()
    assert want[0][want[1] >= np.float32(thr)].tolist() == reaching.tolist()


def _lead_agrees(lead, got, E, v, thr) -> None:
    """BatchReach.lead against BatchReach.rows_near at the same turn (whose rows are the
    index's, _reach_answers_agree): when the screens settle it, the answer holds no row
    (-1), or the row of its highest product, which leads every other row's product and the
    threshold by more than similarity.settled_gap, as Personal AI's check reads it."""

    if lead is None:
        return
    assert got is not None
    rows, products = got
    if lead == -1:
        assert len(rows) == 0
        return
    vals = products.tolist()
    at = vals.index(max(vals))
    second = max([x for i, x in enumerate(vals) if i != at], default=thr)
    gap = similarity.settled_gap(E.shape[1], float(np.linalg.norm(v.astype(np.float64))))
    assert rows[at] == lead and vals[at] - max(second, thr) > gap


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    thr=st.sampled_from([0.3, 0.85, 0.95]),
    chunk=st.sampled_from([3, 512]),
    changed=st.booleans(),
    block=st.sampled_from([1, 4, 64]),
    quiet=st.booleans(),
)
def test_batch_reach_answers_as_the_index_at_each_turn(seed, thr, chunk, changed, block, quiet):
    """BatchReach.rows_near answers for each vector of a batch, at its turn, what the
    cones' own rows_near answers then (None alike: store under min_rows, lists past half
    the store; else the same rows reaching the threshold, the full scan's products), while
    between turns the store adds rows (earlier vectors of the batch, as Personal AI's
    creations, and rows unlike any trained: lists of their own), retires rows for good,
    doubles (the cones trained again mid-batch) and maybe changes an embedding; the batch
    screened 3 vectors at a time, or all 24 at once; its limit checks settled 1, 4 or 64
    vectors at a time, and kept over ``quiet`` turns (a third add nothing); an earlier
    vector asked again out of turn answers as the index does then. BatchReach.lead, asked
    first at each turn, agrees with that answer wherever it settles one, and
    BatchReach.cosine of the row it leads with (and of another row) is the row's own
    float64 cosine."""
    from unittest import mock

    from memsim.engine import batch_reach
    from memsim.engine.batch_reach import BatchReach
    from memsim.engine.candidate_index import CandidateIndex
    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(seed)
    s = MemoryStore(16, Statuses(("active", "gone"), terminal=frozenset({"gone"})))

    def add(rows: np.ndarray) -> None:
        n = len(rows)
        s.add(1.0, rows, texts=["m"] * n, claims=[None] * n, provenance=[()] * n)

    add(clustered(rng, 200, 16, clusters=30, noise=0.5))
    idx = CandidateIndex(s, "cones", min_rows=150, seed=seed % 7)
    batch = np.concatenate(
        [
            s.embedding[rng.choice(200, 12, replace=False)],  # repeats of stored rows
            _at_cosines(s.embedding[7], np.full(4, thr), rng.standard_normal((4, 16))),
            unit(rng, 8, 16),  # new directions
        ]
    ).astype(np.float32)
    batch = batch[rng.permutation(len(batch))]
    answered = []
    with (
        mock.patch.object(batch_reach, "_REACH_CHUNK", chunk),
        mock.patch.object(batch_reach, "_WITHIN_BLOCK", block),
    ):
        reach = BatchReach(idx, batch, thr)
        for j, v in enumerate(batch):
            mask = s.retrievable()
            lead = reach.lead(j, mask)
            got = reach.rows_near(j, mask)
            want = idx.rows_near(v, thr, mask)
            _reach_answers_agree(got, want, s.embedding, v, mask, thr)
            _lead_agrees(lead, got, s.embedding, v, thr)
            for row in ([lead] if lead is not None and lead >= 0 else []) + [j % s.n]:
                # the float64 cosine of the row it reinforces, whichever row that is
                assert reach.cosine(j, row) == similarity.exact_cosines(s.embedding[[row]], v)[0]
            answered.append(got is not None)
            if j % 6 == 5:  # out of turn: an earlier vector, with the rows added since
                back = j - 1 - int(rng.integers(0, 4))
                _reach_answers_agree(
                    reach.rows_near(back, mask),
                    idx.rows_near(batch[back], thr, mask),
                    s.embedding,
                    batch[back],
                    mask,
                    thr,
                )
            if not (quiet and j % 3 == 0):
                add(v[None, :])  # what a creation adds: the vector itself
            if j % 4 == 1:  # rows near the next vector's threshold
                near = _at_cosines(
                    batch[min(j + 1, len(batch) - 1)],
                    np.full(3, thr + 0.01),
                    rng.standard_normal((3, 16)),
                )
                add(near.astype(np.float32))
            if j % 5 == 2:
                s.set_status(rng.choice(s.n, 6, replace=False), "gone", 2.0)
            if j == 9:  # the store doubles: the cones are trained again at the next turn
                add(clustered(rng, 200, 16, clusters=30, noise=0.5))
            if j == 14:
                add(unit(rng, 5, 16))  # unlike the trained rows: lists of their own
            if changed and j == 17:
                s.set_embedding(np.array([3, 4]), batch[j + 1 : j + 3])
    assert idx.audit["trainings"] >= 2 and idx.audit["searches"] == 0
    if thr >= 0.85:
        assert all(answered)


def test_batch_reach_lead_settles_clear_leads_only():
    """BatchReach.lead, where the cones answer: a stored row asked again leads by far (its
    row; retired from the mask before its turn, the rows left decide, as the index's
    answer says); a vector far from every row finds none (-1); a vector between two rows
    at the same cosine above the threshold is a tie the screens leave to rows_near
    (None); a row the store adds after the screen (a copy of a vector at 0.93 from a
    stored row) is read too, and leads; a vector asked again after a later one's turn is
    left to rows_near (None). BatchReach.cosine of a row led with is its float64 cosine,
    read off the chunk's cosines of the best screens' rows or computed for an added row,
    and for a row whose embedding changed since, its cosine now."""
    from memsim.engine.batch_reach import BatchReach
    from memsim.engine.candidate_index import CandidateIndex
    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(3)
    dim, thr = 64, 0.9
    s = MemoryStore(dim, Statuses(("active", "gone"), terminal=frozenset({"gone"})))

    def add(rows: np.ndarray) -> None:
        n = len(rows)
        s.add(1.0, rows, texts=["m"] * n, claims=[None] * n, provenance=[()] * n)

    add(clustered(rng, 2000, dim, clusters=60, noise=0.8))
    between = unit(rng, 1, dim)[0].astype(np.float64)
    side = _at_cosines(between, np.zeros(1), rng.standard_normal((1, dim)))[0]
    add(np.array([0.95 * between + c * np.sqrt(1 - 0.95**2) * side for c in (1, -1)]))
    idx = CandidateIndex(s, "cones", min_rows=100)
    far = -s.embedding[:2000].sum(axis=0)  # away from the clusters
    near20 = _at_cosines(
        s.embedding[20].astype(np.float64), np.full(1, 0.93), rng.standard_normal((1, dim))
    )
    batch = np.concatenate(
        [s.embedding[[5, 6]], [far / np.linalg.norm(far)], [between], near20, s.embedding[[7]]]
    ).astype(np.float32)
    reach = BatchReach(idx, batch, thr)
    mask = s.retrievable()
    assert [reach.lead(j, mask) for j in range(3)] == [5, 6, -1]
    assert reach.lead(3, mask) is None and reach.rows_near(3, mask) is not None
    assert reach.rows_near(3, mask)[0].tolist() == [2000, 2001]
    assert reach.lead(4, mask) == 20
    add(batch[4:5])  # the vector's copy, after the screen: it leads now
    assert reach.lead(4, s.retrievable()) == s.n - 1
    for j, row in ((0, 5), (1, 6), (4, 20), (4, s.n - 1)):  # best screens' rows, an added row
        assert reach.cosine(j, row) == similarity.exact_cosines(s.embedding[[row]], batch[j])[0]
    assert reach.lead(0, s.retrievable()) is None  # out of turn
    s.set_status([7], "gone", 2.0)  # retired before its turn
    mask = s.retrievable()
    lead, got = reach.lead(5, mask), reach.rows_near(5, mask)
    assert lead is not None and lead != 7
    _lead_agrees(lead, got, s.embedding, batch[5], thr)
    s.set_embedding([6], batch[3:4])  # vector 1's best row is another vector now
    assert reach.cosine(1, 6) == similarity.exact_cosines(s.embedding[[6]], batch[1])[0]


def _cones_of_400_and_a_central_row():
    """A store of 400 clustered rows, a CandidateIndex in mode "cones" trained on them (from
    100 rows), its cones, a function adding rows, and the row nearest its list's centroid:
    copies of it join that list (no list of its own)."""
    from memsim.engine.candidate_index import CandidateIndex
    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(5)
    s = MemoryStore(16, Statuses(("active",)))

    def add(rows: np.ndarray) -> None:
        n = len(rows)
        s.add(1.0, rows, texts=["m"] * n, claims=[None] * n, provenance=[()] * n)

    add(clustered(rng, 400, 16, clusters=30, noise=0.5))
    idx = CandidateIndex(s, "cones", min_rows=100)
    assert idx.rows_near(s.embedding[0], 0.8, s.retrievable()) is not None
    cones = idx._cones
    assert cones is not None
    r = int(np.argmax(np.einsum("ij,ij->i", s.embedding, cones.centroids32[cones.owner[:400]])))
    return s, add, idx, cones, s.embedding[r].copy()


def test_batch_reach_asks_the_cones_when_lists_grew_past_the_limit():
    """Whether the lists a vector reaches hold more than half the store is judged with the
    cones' sizes at the turn: rows added after the screen that push them past it make the
    batch answer None, as the index does (the screen's own sizes would not)."""
    from memsim.engine.batch_reach import BatchReach

    s, add, idx, cones, v = _cones_of_400_and_a_central_row()
    reach = BatchReach(idx, np.stack([v, v]), 0.8)
    assert reach.rows_near(0, s.retrievable()) is not None
    lists = cones.lists
    add(np.tile(v, (395, 1)))  # into v's list: it now holds more than half the store
    mask = s.retrievable()
    assert idx.rows_near(v, 0.8, mask) is None
    assert idx._cones is cones and cones.lists == lists  # (not trained again: 795 < 800)
    assert reach.rows_near(1, mask) is None


def test_batch_reach_checks_the_limit_again_when_a_row_joins_a_list_it_reads():
    """A row added to a list a vector reads pushes the lists past half the store while
    half the store stays the same (an odd count): the batch's limit check, settled for
    the vectors ahead at the turn before, is made again with the sizes of now, and the
    batch answers None as the index does."""
    from memsim.engine.batch_reach import BatchReach

    s, add, idx, cones, v = _cones_of_400_and_a_central_row()
    radius = 0.8 - similarity.screen_margin(16)
    held = int(cones.size[cones.reaching(v, radius, None)].sum())
    # copies of v into its list until the lists it reads hold exactly half the store
    add(np.tile(v, (400 - 2 * held, 1)))
    assert s.n % 2 == 0 and s.n < 800  # (not trained again)
    reach = BatchReach(idx, np.stack([v, v, v]), 0.8)
    assert reach.rows_near(0, s.retrievable()) is not None
    chunk = reach._chunk
    assert chunk is not None and chunk._within_ok.all()  # settled for the three at once
    add(v[None, :])  # half of an odd count: the same limit, one row more to read
    mask = s.retrievable()
    assert idx._cones is cones
    assert idx.rows_near(v, 0.8, mask) is None
    assert reach.rows_near(1, mask) is None


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    group=st.integers(0, 40),
    cos=st.sampled_from([0.97, 0.6, 0.0]),
    k=st.integers(1, 12),
    added=st.integers(0, 30),
)
def test_batch_screen_top_rows_are_the_full_scans(seed, group, cos, k, added):
    """BatchScreen.top_rows is ranking.topk over the full float32 product (float64, ties by
    key) bit for bit for every vector of a batch, searched in order while rows are added
    (planted at the tie group's cosine too) and retired between the searches: tie groups
    at the k-th product larger than 2k (topk_support's path), a vector most rows meet at
    ~0, a vector longer than 1, rows added after the batch's product, and a stored
    embedding changed between two searches."""
    from unittest import mock

    from memsim.engine import batch_screen
    from memsim.engine.batch_screen import BatchScreen

    s, rng = _cand_store(300, seed=seed % 1000)
    rng = np.random.default_rng([seed, 1])  # not the store's stream: its rows would be the batch
    batch = rng.standard_normal((4, 16)).astype(np.float32)
    batch /= np.linalg.norm(batch, axis=1, keepdims=True)
    q = batch[0]
    rows = rng.choice(300, group, replace=False)
    if group:
        s.set_embedding(rows, _at_cosines(q, np.full(group, cos), rng.standard_normal((group, 16))))
    # the last vector meets every other row at ~0 (they are built orthogonal to it: most
    # rows are near the k-th product), and the third is three times as long
    rest = np.setdiff1d(np.arange(300), rows)
    s.set_embedding(rest, _at_cosines(batch[3], np.zeros(len(rest)), s.embedding[rest]))
    batch[2] *= 3.0
    keys = lambda r: s.tie_keys("0:q", r)  # noqa: E731
    with mock.patch.object(batch_screen, "BATCH_SCREEN_MIN_ROWS", 1):
        screen = BatchScreen(s, batch)
        for j, v in enumerate(batch):
            if added:  # what the decisions before this search add and retire
                new = _at_cosines(q, np.full(added, cos), rng.standard_normal((added, 16)))
                s.add(
                    float(j + 1),
                    new,
                    texts=[f"a{j}.{i}" for i in range(added)],
                    claims=[None] * added,
                    provenance=[(f"a{j}.{i}",) for i in range(added)],
                )
                s.set_status(rng.choice(s.n, 5, replace=False), "gone", float(j + 1))
            if j == 2:  # a stored row turned to this vector: the product is made again
                s.set_embedding([0], batch[2])
            mask = s.retrievable()
            sims = np.where(mask, s.embedding @ v, -np.inf).astype(np.float64)
            want = ranking.topk(sims, k, keys)
            # the shortlist alone: the scan's answer or none (a tie-free answer: no key read)
            chunk = screen._chunk_of(j)
            short = screen._shortlisted(j, k, screen._listed(j, mask, chunk, k), chunk)
            if short is not None:
                assert short.tolist() == want.tolist() == ranking.topk(sims, k).tolist()
            best = screen.best_row(j, mask)  # first in the top-k, by float64 products too
            if best is not None:
                assert best == want[0] == ranking.topk(sims, 1)[0]
                exact = similarity.exact_cosines(s.embedding[mask], v)
                assert best == np.flatnonzero(mask)[np.argmax(exact)]
                assert (exact == exact.max()).sum() == 1
                # its cosine as Personal AI reads it: the row's own float64 sum
                assert screen.cosine(j, best) == similarity.exact_cosines(s.embedding[[best]], v)[0]
            got = screen.top_rows(j, k, mask, keys)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(screen.top_rows(j, k, mask), ranking.topk(sims, k))
    # a small store: the shortlist's answer, or none for the caller's own scan
    mask = s.retrievable()
    got = screen.top_rows(0, k, mask, keys)
    sims = np.where(mask, s.embedding @ batch[0], -np.inf).astype(np.float64)
    assert got is None or got.tolist() == ranking.topk(sims, k, keys).tolist()


def test_batch_screen_shortlist_settles_apart_rows_and_leaves_ties_to_the_scan():
    """A vector whose k best live rows are apart by more than the screens' rounding gets
    its top-k from its shortlist alone (no product of a row computed, whatever the store's
    size, rows retired and added since the batch's product included). Rows within the
    rounding of each other at the cut are computed exactly among the listed rows, ties
    broken by key as the scan does; when the bounds reach rows left out of the shortlist
    (more rows near the cut than it holds), the caller's scan answers (None below
    BATCH_SCREEN_MIN_ROWS rows)."""
    from unittest import mock

    from memsim.engine import batch_screen
    from memsim.engine.batch_screen import BatchScreen

    s, rng = _cand_store(300, seed=5)
    q = rng.standard_normal(16)
    q /= np.linalg.norm(q)
    near = _at_cosines(q, np.array([0.95, 0.9, 0.85, 0.8, 0.75]), rng.standard_normal((5, 16)))
    s.set_embedding(np.arange(5), near)
    batch = np.vstack([q, q, q]).astype(np.float32)
    screen = BatchScreen(s, batch)
    mask = s.retrievable()
    with mock.patch.object(similarity, "rows_matvec", side_effect=AssertionError("a product")):
        assert screen.top_rows(0, 3, mask).tolist() == [0, 1, 2]
        # the best screen apart from every other covered row's: not even the listed rows
        with mock.patch.object(BatchScreen, "_listed", side_effect=AssertionError("listed")):
            assert screen.best_row(0, mask) == 0
        mask[1] = False  # retired since the product
        assert screen.top_rows(1, 3, mask).tolist() == [0, 2, 3]
        mask[0] = False
        assert screen.best_row(1, mask) == 2
        mask[0] = True
        new = _at_cosines(q, np.array([0.88]), rng.standard_normal((1, 16)))
        s.add(1.0, new, texts=["x"], claims=[None], provenance=[()])  # added since
        mask = np.append(mask, True)
        assert screen.top_rows(2, 3, mask).tolist() == [0, 300, 2]
        s.add(2.0, q[None, :], texts=["q"], claims=[None], provenance=[()])
        assert screen.best_row(2, np.append(mask, True)) == 301
        s.add(3.0, q[None, :], texts=["q"], claims=[None], provenance=[()])
        assert screen.best_row(2, np.append(mask, [True, True])) is None  # 301 and 302 tie
        assert screen.best_row(2, np.append(mask, [False, True])) == 302
    # a row at the k-th's cosine: a tie, broken by key (or to the lower row) as the scan does
    s.set_embedding([6], s.embedding[2])
    s.set_embedding([301, 302], s.embedding[[3, 4]])
    screen = BatchScreen(s, batch)
    mask = s.retrievable()
    sims = np.where(mask, s.embedding @ q.astype(np.float32), -np.inf).astype(np.float64)
    chunk = screen._chunk_of(0)
    assert screen._shortlisted(0, 4, screen._listed(0, mask, chunk, 4), chunk) is None
    for salt in range(4):
        keys = lambda r, salt=salt: ranking.mix64(r, salt)  # noqa: E731
        want = ranking.topk(sims, 4, keys).tolist()
        assert screen.top_rows(0, 4, mask, keys).tolist() == want
        assert sorted(want) in ([0, 1, 2, 300], [0, 1, 6, 300])
    assert screen.top_rows(0, 4, mask).tolist() == [0, 1, 300, 2]
    # every row at ~0 but the k best: more rows near the k-th than the shortlist holds
    rest = np.arange(3, s.n)
    s.set_embedding(rest, _at_cosines(q, np.zeros(len(rest)), s.embedding[rest]))
    screen = BatchScreen(s, batch)
    mask = s.retrievable()
    assert screen.top_rows(0, 3, mask).tolist() == [0, 1, 2]
    assert screen.top_rows(0, 5, mask) is None
    with mock.patch.object(batch_screen, "BATCH_SCREEN_MIN_ROWS", 1):  # the exact path answers
        sims = np.where(mask, s.embedding @ q.astype(np.float32), -np.inf).astype(np.float64)
        assert screen.top_rows(0, 5, mask).tolist() == ranking.topk(sims, 5).tolist()


def test_batch_screen_listed_rows_leave_a_long_tie_chain_to_the_exact_path():
    """A tie chain at the k-th product that runs on below the rows the listed path computes
    (a thousand rows added since the product, 3e-7 apart under the k-th: each within
    TIE_RTOL of the next) is not the listed path's to break: the rows it leaves out tie
    with the k-th too, so the answer comes from the bounds over every row, the scan's
    answer for every salt of the tie keys."""
    from memsim.engine.batch_screen import BatchScreen

    s, rng = _cand_store(300, seed=11)
    q = rng.standard_normal(16)
    q /= np.linalg.norm(q)
    s.set_embedding(np.arange(300), _at_cosines(q, np.zeros(300), s.embedding))
    s.set_embedding(np.arange(3), _at_cosines(q, np.array([0.9, 0.8, 0.7]), s.embedding[:3]))
    screen = BatchScreen(s, q[None, :].astype(np.float32))
    screen._chunk_of(0)  # the product, before the rows below are added
    chain = 0.5 - 3e-7 * np.arange(1000)
    s.add(
        1.0,
        _at_cosines(q, chain, rng.standard_normal((1000, 16))),
        texts=[f"c{i}" for i in range(1000)],
        claims=[None] * 1000,
        provenance=[(f"c{i}",) for i in range(1000)],
    )
    mask = s.retrievable()
    sims = np.where(mask, s.embedding @ q.astype(np.float32), -np.inf).astype(np.float64)
    for salt in range(12):
        keys = lambda r, salt=salt: s.tie_keys(f"q{salt}", r)  # noqa: E731
        assert screen.top_rows(0, 4, mask, keys).tolist() == ranking.topk(sims, 4, keys).tolist()


def test_two_indexes_on_one_store_each_see_every_changed_embedding():
    """Personal AI keeps two candidate indexes over its store (faiss for its top-k, the
    cones for its reinforcement's range search): a stored embedding changed after both were
    made is seen by each, whichever brings itself up to date first."""
    from memsim.engine.candidate_index import CandidateIndex

    s, rng = _cand_store(400, seed=3)
    ivf = CandidateIndex(s, "ivf", min_rows=100, nprobe=10_000)
    cones = CandidateIndex(s, "cones", min_rows=100)
    mask = s.retrievable()
    q = rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)
    assert ivf.top_rows(q, 3, mask) is not None and cones.rows_near(q, 0.9, mask) is not None

    def found(ivf_first: bool) -> tuple[int, list[int]]:
        if ivf_first:
            top, _ = ivf.top_rows(q, 3, mask)
            near, _ = cones.rows_near(q, 0.9, mask)
        else:
            near, _ = cones.rows_near(q, 0.9, mask)
            top, _ = ivf.top_rows(q, 3, mask)
        return int(top[0]), near.tolist()

    for row, ivf_first in ((7, True), (11, False), (23, True)):
        s.set_embedding([row], q)  # the row now holds q itself
        top, near = found(ivf_first)
        assert top == row and row in near
        s.set_embedding([row], rng.standard_normal((1, 16)))  # and then another vector
        top, near = found(not ivf_first)
        assert top != row and row not in near


def test_a_replaced_index_stops_following_the_stores_changes():
    """use_index replaces a policy's candidate index (Personal AI's range search too): the
    store then collects embedding changes for the indexes in use only."""
    from memsim.engine.registry import make

    pol = make("pai")
    assert len(pol.store._change_sets) == 2  # faiss's top-k and the cones' range search
    for mode in ("ivf", "cones", "exact", "ivf"):
        pol.use_index(mode, min_rows=100)
        held = pol.store._change_sets
        if mode == "exact":
            assert held == []
        else:  # the two indexes' own sets, and no other
            assert len(held) == 2
            assert held[0] is pol.candidates._changes and held[1] is pol.reinforcing._changes


# readings of the parameters under which a policy whose defaults search no index does
# (Generative Agents' documented threshold 2.0 never merges; memorybank-code's every dialog
# turn is its own memory; izzie-code limits before it filters and searches by keyword, so its
# recall has no pure similarity stage)
_SEARCHING = {
    "generative-agents": {"reinforce_cosine": 0.85},
    "generative-agents-code": {"reinforce_cosine": 0.85},
    "memorybank-code": {"variant": "paper"},
    "izzie-code": {"limit_before_filter": False, "search": "cosine"},
}


@pytest.mark.parametrize("mode", ["ivf", "cones"])
def test_each_policy_declares_the_index_modes_its_searches_go_through(mode):
    """Policy.index_modes, which the workbench reads to refuse an index that would change
    nothing (api.check_index): a policy declaring a mode searches through it on a small
    stream (mode ivf: the audit counts its searches; cones: the partition is built) under
    its defaults or the reading in _SEARCHING, and one not declaring it never does."""
    import scenarios
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.registry import make, specs
    from memsim.engine.runner import run

    stream = scenarios.load("synthetic:steady,episodes=150,queries=20,facts=20,horizon=40")
    for spec in specs():
        searching = _SEARCHING.get(spec.id)
        for params in [None] if searching is None else [None, searching]:
            pol = make(spec.id, params, llm=MockLLM(seed=0), seed=0)
            pol.use_index(mode, min_rows=20)
            run(pol, stream)
            used = pol.candidates.answered if mode == "ivf" else pol.candidates._cones is not None
            reads = params is not None or searching is None
            assert used == (mode in type(pol).index_modes and reads), (spec.id, params)
