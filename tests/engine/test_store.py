"""MemoryStore: growth keeps data, statuses and terminal enforcement, provenance and its
log, policy columns, vector validation."""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.ingest_day import store_state
from memsim.engine.errors import MemsimError, VectorError
from memsim.engine.similarity import PackedRows, RecurringScans
from memsim.engine.store import MemoryStore, Statuses, as_unit_vectors

ST = Statuses(
    ("active", "archived", "deleted"),
    terminal=frozenset({"deleted"}),
    retrievable=frozenset({"active"}),
)


def add(store, n, now=0.0, **kw):
    rng = np.random.default_rng(n)
    return store.add(
        now,
        rng.normal(size=(n, store.dim)),
        texts=[f"t{i}" for i in range(n)],
        claims=[None] * n,
        provenance=[{f"e{store.n + i}"} for i in range(n)],
        **kw,
    )


def test_growth_by_doubling_keeps_data():
    s = MemoryStore(4, ST, capacity=2)
    s.add_column("salience", np.float64, 0.5)
    first = add(s, 2, salience=[0.1, 0.2])
    emb_before = s.embedding.copy()
    rows = add(s, 5, now=1.0)
    assert first.tolist() == [0, 1] and rows.tolist() == [2, 3, 4, 5, 6]
    assert s.n == len(s) == 7 and s._cap == 8
    np.testing.assert_array_equal(s.embedding[:2], emb_before)
    assert s["salience"].tolist() == [0.1, 0.2, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert s["created"].tolist() == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert np.isnan(s["last_access"]).all() and s["access_count"].tolist() == [0] * 7
    np.testing.assert_allclose(np.linalg.norm(s.embedding, axis=1), 1.0, rtol=1e-6)
    assert s.text[6] == "t4" and s.provenance[6] == {"e6"}


def test_statuses_and_masks():
    s = MemoryStore(3, ST, kinds=("episode", "belief"))
    add(s, 3)
    add(s, 1, kind="belief")
    s.set_status([1], "archived", 2.0)
    assert s.status_of(0) == "active" and s.status_of(1) == "archived"
    assert s.retrievable().tolist() == [True, False, True, True]
    assert s.count() == 3 and s.count(["archived"]) == 1
    assert s.mask(kinds=["belief"]).tolist() == [False, False, False, True]
    assert s.mask(["active", "archived"], kinds=["episode"]).tolist() == [True, True, True, False]
    with pytest.raises(KeyError, match="unknown status 'gone'"):
        s.set_status([0], "gone", 1.0)
    with pytest.raises(KeyError, match="unknown kind"):
        add(s, 1, kind="nope")


def test_terminal_status_is_enforced_and_logged():
    s = MemoryStore(3, ST)
    add(s, 2)
    s.set_status([0, 1], "deleted", 3.0)
    s.set_status([0], "deleted", 4.0)  # staying is fine and not logged again
    with pytest.raises(
        AssertionError, match="memory 0 is 'deleted', a terminal status; it cannot become 'active'"
    ):
        s.set_status([0], "active", 5.0)
    assert s.status_log == [(0.0, 0, 0), (0.0, 1, 0), (3.0, 0, 2), (3.0, 1, 2)]
    assert ST.terminal_codes == frozenset({ST.code("deleted")}) == frozenset({2})


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.lists(st.integers(-4, 3), max_size=4),  # rows (negative: from the end)
            st.sampled_from(["active", "archived", "deleted"]),
        ),
        max_size=12,
    )
)
def test_set_status_of_a_list_of_ints_is_the_array_path(calls):
    """A list of Python ints (taken as it is) changes statuses, logs and raises exactly as
    the same rows as an array do (repeated rows, terminal statuses, negative rows)."""
    stores = [MemoryStore(3, ST), MemoryStore(3, ST)]
    for s in stores:
        add(s, 4)
    for i, (rows, status) in enumerate(calls):
        errors = []
        for s, arg in zip(stores, (rows, np.array(rows, dtype=np.int64))):
            try:
                s.set_status(arg, status, float(i))
                errors.append(None)
            except AssertionError as e:  # PolicyContractError: leaving a terminal status
                errors.append(str(e))
        assert errors[0] == errors[1]
    assert stores[0].status_log == stores[1].status_log
    assert all(type(r) is int for _, r, _ in stores[0].status_log)
    assert stores[0]["status"].tolist() == stores[1]["status"].tolist()


def test_provenance_and_its_log():
    s = MemoryStore(3, ST)
    add(s, 2, now=1.0)
    s.add_provenance(0, ["e9", "e1", "e0"], 2.0)  # e0 already there: not logged again
    assert s.provenance[0] == {"e0", "e1", "e9"}
    assert s.provenance_log == [(1.0, 0, "e0"), (1.0, 1, "e1"), (2.0, 0, "e1"), (2.0, 0, "e9")]
    assert s.rows_from("e1").tolist() == [0, 1] and s.rows_from("zz").tolist() == []


def test_rows_added_at_once_log_their_provenance_where_log_in_order_says():
    """add(..., log_provenance=False) then log_in_order, its rows between add_provenance
    entries, gives the log of adding the rows one at a time in that order (Cosmo's batch)."""
    vecs = np.random.default_rng(0).normal(size=(3, 3))
    provs = [{"e1", "e0"}, set(), {"e2"}]
    one, batch = MemoryStore(3, ST), MemoryStore(3, ST)
    add(one, 1, now=0.0)
    add(batch, 1, now=0.0)
    for i in range(3):
        one.add(1.0, vecs[i], texts=[f"t{i}"], claims=[None], provenance=[provs[i]])
        one.add_provenance(0, [f"x{i}"], 1.0)
    batch.add(
        1.0,
        vecs,
        texts=["t0", "t1", "t2"],
        claims=[None] * 3,
        provenance=provs,
        log_provenance=False,
    )
    assert batch.provenance_log == [(0.0, 0, "e0")]  # nothing of the new rows yet
    batch.log_in_order([1, (0, ["x0"]), 2, (0, ("x1",)), 3, (0, {"x2"})], 1.0)
    assert batch.provenance_log == one.provenance_log
    assert batch.status_log == one.status_log and batch.provenance == one.provenance
    assert batch["tie_id"].tolist() == one["tie_id"].tolist()
    assert np.array_equal(batch.embedding, one.embedding)
    with pytest.raises(KeyError):  # logged once
        batch.log_in_order([1], 1.0)


def test_provenance_of_is_each_rows_provenance_then_one_snapshot_per_state():
    """provenance_of: equal to the live sets at every call, and each snapshot stays equal
    to the set as it was when taken while the row grows (a trace records one per query);
    while a row's provenance is unchanged the same snapshot object comes back; snapshots
    behave as frozensets (equality, hashing, membership, set operations, pickling); copies
    and pickles of the store start without the kept logs and agree with the original."""
    import copy
    import pickle

    s = MemoryStore(3, ST)
    add(s, 3, now=1.0)
    first = s.provenance_of([2, 0, 2])
    assert first == tuple(frozenset(s.provenance[r]) for r in (2, 0, 2))
    assert first[0] is first[2]
    s.add_provenance(0, ["e7", "e5"], 2.0)
    s.add_provenance(2, ["e2"], 2.0)  # already there: unchanged
    again = s.provenance_of([0, 2])
    assert again == (frozenset({"e0", "e5", "e7"}), frozenset({"e2"}))
    assert again[1] is first[0] and again[0] is not first[1]
    # the earlier snapshot is the set as it was then, whatever was asked of the row since
    assert first[1] == {"e0"} and "e7" not in first[1] and "e7" in again[0]
    assert len(first[1]) == 1 and sorted(again[0]) == ["e0", "e5", "e7"]
    assert hash(again[0]) == hash(frozenset({"e0", "e5", "e7"}))
    assert again[0] - {"e5"} == frozenset({"e0", "e7"}) and not again[0].isdisjoint({"e7"})
    assert first[1].isdisjoint({"e7", "e5"}) and 3 not in again[0]
    back = pickle.loads(pickle.dumps((first, again)))
    assert back == (first, again) and "e7" not in back[0][1] and "e7" in back[1][0]
    twin = copy.deepcopy(s)
    twin.add_provenance(1, ["e8"], 3.0)
    assert twin.provenance_of([1]) == (frozenset({"e1", "e8"}),)
    assert s.provenance_of([1]) == (frozenset({"e1"}),)
    s.add_provenance(0, ["e9"], 4.0)
    assert twin.provenance_of([0]) == (frozenset({"e0", "e5", "e7"}),)
    assert s.provenance_of([0]) == (frozenset({"e0", "e5", "e7", "e9"}),)
    assert again[0] == {"e0", "e5", "e7"}


@settings(max_examples=60, deadline=None)
@given(
    growth=st.lists(st.lists(st.integers(0, 12), max_size=4), min_size=1, max_size=6),
    probes=st.lists(st.lists(st.integers(0, 14), max_size=5), min_size=1, max_size=8),
    newest_first=st.booleans(),
)
def test_snapshots_answer_membership_and_isdisjoint_as_their_frozensets(
    growth, probes, newest_first
):
    """Each snapshot taken while a row grows answers ``in`` and ``isdisjoint`` (its own, not
    the mixin's) as the frozenset of the row's provenance at that moment, whether a newer
    snapshot extended the row's position map before it is asked or not."""
    s = MemoryStore(3, ST)
    add(s, 1)
    taken = []
    for step, eps in enumerate(growth):
        s.add_provenance(0, [f"e{i}" for i in eps], float(step + 1))
        taken.append((s.provenance_of([0])[0], frozenset(s.provenance[0])))
    for snap, truth in reversed(taken) if newest_first else taken:
        for probe in probes:
            names = [f"e{i}" for i in probe]
            assert snap.isdisjoint(names) == truth.isdisjoint(names)
            assert snap.isdisjoint(set(names)) == truth.isdisjoint(names)
            assert [n in snap for n in names] == [n in truth for n in names]
        assert snap == truth and len(snap) == len(truth)


def test_columns():
    s = MemoryStore(3, ST)
    add(s, 2)
    s.add_column("alpha", np.float64, 1.0)  # existing rows take the default
    assert s["alpha"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="already exists"):
        s.add_column("alpha", np.float64, 1.0)
    with pytest.raises(KeyError, match="unknown or reserved column 'beta'"):
        s.add(0.0, np.ones((1, 3)), texts=["x"], claims=[None], provenance=[()], beta=1.0)
    with pytest.raises(ValueError, match="one entry per embedding"):
        s.add(0.0, np.ones((2, 3)), texts=["x"], claims=[None], provenance=[()])
    assert s.n == 2 and "alpha" in s.columns and s.nbytes() > 0


def _two_rows(s, now, **kw):
    """An add of two plain rows (texts x and y, no claims, no provenance)."""
    return s.add(
        now, np.ones((2, 3)), texts=["x", "y"], claims=[None] * 2, provenance=[(), ()], **kw
    )


@settings(max_examples=30, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["memory", "belief", "note"]), min_size=1, max_size=9),
    provs=st.lists(st.frozensets(st.sampled_from("abcdef"), max_size=3), min_size=9, max_size=9),
    seed=st.integers(0, 2**16),
)
def test_one_add_of_many_rows_is_that_many_adds_of_one(kinds, provs, seed):
    """A kind per row (Kernle adds a batch of mixed kinds in one call): the same store, row
    for row, as one add per row, tie ids, logs and provenance included."""
    m = len(kinds)
    vecs = np.random.default_rng(seed).normal(size=(m, 5))
    texts, claims = [f"t{i % 3}" for i in range(m)], [("c", i) for i in range(m)]
    both = [MemoryStore(5, ST, kinds=("memory", "belief", "note"), capacity=2) for _ in "ab"]
    for s in both:
        s.add_column("confidence", np.float64, 0.5)
        add(s, 2)
    conf = np.linspace(0.1, 0.9, m)
    rows = both[0].add(
        3.0, vecs, texts=texts, claims=claims, provenance=provs[:m], kind=kinds, confidence=conf
    )
    for i in range(m):
        both[1].add(
            3.0,
            vecs[i : i + 1],
            texts=texts[i : i + 1],
            claims=claims[i : i + 1],
            provenance=provs[i : i + 1],
            kind=kinds[i],
            confidence=conf[i],
        )
    assert rows.tolist() == list(range(2, 2 + m))
    assert both[0]["kind"][2:].tolist() == [both[0].kind_code(k) for k in kinds]
    assert store_state(both[0]) == store_state(both[1])


def test_a_failed_add_leaves_the_next_rows_their_defaults():
    """Rows past n hold the defaults (add writes only the columns given): an add whose
    column value does not fit raises, changes nothing, and the next add's rows still take
    every default."""
    s = MemoryStore(3, ST, capacity=4)
    s.add_column("salience", np.float64, 0.5)
    s.add_column("hits", np.int64, 7)
    add(s, 1)
    before = store_state(s)
    with pytest.raises(ValueError):
        _two_rows(s, 2.0, salience=[0.1, 0.2], hits=[1, 2, 3])
    with pytest.raises(KeyError, match="unknown or reserved column 'beta'"):
        s.add(2.0, np.ones((1, 3)), texts=["x"], claims=[None], provenance=[()], hits=1, beta=1)
    assert store_state(s) == before
    add(s, 2, now=3.0)  # into the room the failed add wrote to
    add(s, 5, now=4.0)  # and past the capacity
    assert s["salience"].tolist() == [0.5] * 8 and s["hits"].tolist() == [7] * 8
    assert s["status"].tolist() == [0] * 8
    assert s["created"].tolist() == [0.0, 3.0, 3.0] + [4.0] * 5
    assert np.isnan(s["last_access"]).all()


def test_a_kind_per_row_needs_one_per_row():
    s = MemoryStore(3, ST, kinds=("memory", "belief"))
    with pytest.raises(ValueError, match="3 kinds for 2 rows"):
        _two_rows(s, 0.0, kind=["memory", "belief", "memory"])
    with pytest.raises(KeyError, match="unknown kind 'fact'"):
        s.add(0.0, np.ones((1, 3)), texts=["x"], claims=[None], provenance=[()], kind=["fact"])
    assert s.n == 0 and s.text == [] and s.status_log == []


@pytest.mark.parametrize(
    "vec, words",
    [
        ([[1.0, np.nan, 0.0]], "row 0 has a NaN or infinite value"),
        ([[1.0, 0.0, 0.0], [np.inf, 0.0, 0.0]], "row 1 has a NaN or infinite value"),
        ([[0.0, 0.0, 0.0]], "row 0 has zero norm"),
        ([[1.0, 0.0]], r"expected shape \(n, 3\)"),
        # more rows than the norms checked as Python floats
        (
            [[1.0, 2.0, 3.0]] * 17 + [[0.0, -np.inf, 0.0]] + [[1.0, 0.0, 0.0]] * 2,
            "row 17 has a NaN",
        ),
        ([[1.0, 2.0, 3.0]] * 19 + [[0.0, 0.0, 0.0]], "row 19 has zero norm"),
    ],
)
def test_bad_vectors_raise_vector_error(vec, words):
    s = MemoryStore(3, ST)
    with pytest.raises(VectorError, match=words):
        s.add(
            0.0,
            np.array(vec),
            texts=["x"] * len(vec),
            claims=[None] * len(vec),
            provenance=[()] * len(vec),
        )
    assert s.n == 0 and s.status_log == []
    assert issubclass(VectorError, MemsimError)


def test_as_unit_vectors_normalizes_a_single_vector():
    v = as_unit_vectors([3.0, 4.0], 2)
    assert v.dtype == np.float32 and v.shape == (1, 2)
    np.testing.assert_allclose(v[0], [0.6, 0.8], rtol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 40),
    st.sampled_from(["float32", "float64", "int64"]),
    st.floats(-30, 30),
    st.integers(0, 2**32 - 1),
)
def test_unit_rows_are_the_float64_quotients_rounded_once(n, dim, dtype, scale, seed):
    """as_unit_vectors and MemoryStore.add take float32 rows in float64 without a copy and
    divide straight into float32: the bytes of (x.astype(float64) / norm).astype(float32)."""
    if dtype == "int64":
        scale = min(abs(scale), 6.0)  # whole numbers that fit
    x = (np.random.default_rng(seed).standard_normal((n, dim)) * 10.0**scale).astype(dtype)
    x[np.abs(x).sum(axis=1) == 0, 0] = 1  # no zero rows
    x64 = x.astype(np.float64)
    want = (x64 / np.sqrt(np.add.reduce(x64 * x64, axis=1))[:, None]).astype(np.float32)
    assert as_unit_vectors(x, dim).tobytes() == want.tobytes()
    s = MemoryStore(dim, ST)
    s.add(0.0, x, texts=["t"] * n, claims=[None] * n, provenance=[()] * n)
    assert s.embedding.tobytes() == want.tobytes()


def test_statuses_validation():
    with pytest.raises(ValueError, match="not among"):
        Statuses(("active",), terminal=frozenset({"gone"}))
    with pytest.raises(ValueError, match="terminal status cannot be retrievable"):
        Statuses(("active",), terminal=frozenset({"active"}), retrievable=frozenset({"active"}))
    assert ST.codes(["deleted", "active"]).tolist() == [2, 0]


def test_set_embedding_validates_and_normalizes():
    import numpy as np
    import pytest

    from memsim.engine.errors import VectorError
    from memsim.engine.store import MemoryStore, Statuses

    st = MemoryStore(3, Statuses(("active",)))
    st.add(0.0, np.eye(3)[:2], texts=["a", "b"], claims=[None, None], provenance=[["e1"], ["e2"]])
    st.set_embedding(1, [0.0, 0.0, 2.0])
    assert np.allclose(st.embedding[1], [0, 0, 1]) and np.allclose(st.embedding[0], [1, 0, 0])
    with pytest.raises(VectorError, match="zero norm"):
        st.set_embedding(0, [0.0, 0.0, 0.0])
    with pytest.raises(VectorError, match="NaN"):
        st.set_embedding(0, [np.nan, 0.0, 1.0])
    with pytest.raises(IndexError):
        st.set_embedding(5, [1.0, 0.0, 0.0])


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 12), fill=st.sampled_from([-np.inf, 0.0])
)
def test_products_are_the_masked_full_scan_bit_for_bit(seed, steps, fill):
    """store.products (similarity.PackedRows: only the masked rows, kept packed between calls)
    gives np.where(mask, E @ v, fill) bit for bit, and store.products_at the same numbers
    at the masked rows (or at a few rows, the store's last ones among them), through adds,
    masks that shrink and grow (rows appended, dropped, the packed matrix rebuilt and
    abandoned for the full product), changed embeddings, and a copy."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PackedRows, "MIN_ROWS", 16)
        _check_products(seed, steps, fill)


def _check_products(seed: int, steps: int, fill: float) -> None:
    import copy

    rng = np.random.default_rng(seed)
    st_ = MemoryStore(dim=384, statuses=Statuses(("active", "gone")))
    live = np.zeros(0, dtype=bool)
    for _ in range(steps):
        m = int(rng.integers(1, 300))
        st_.add(
            0.0,
            rng.standard_normal((m, 384)),
            texts=["t"] * m,
            claims=[None] * m,
            provenance=[("e",)] * m,
        )
        # a searchable set that evolves as a forgetting policy's does, now and then redrawn
        share = float(rng.choice([0.01, 0.05, 0.2, 0.5, 1.0]))
        live = np.concatenate([live, rng.random(m) < share])
        live &= rng.random(st_.n) > 0.2 * share
        live |= rng.random(st_.n) < 0.01 * share
        if rng.random() < 0.2:
            live = rng.random(st_.n) < share
        for _query in range(2):  # the second query finds the blocks already packed
            if rng.random() < 0.5 and live.any():  # searchable rows change embedding
                rows = np.unique(rng.choice(np.flatnonzero(live), int(rng.integers(1, 20))))
                st_.set_embedding(rows, rng.standard_normal((len(rows), 384)))
            if rng.random() < 0.1:
                st_ = copy.deepcopy(st_)
            v = rng.standard_normal(384).astype(np.float32)
            got = st_.products(v, live, fill)
            assert got.dtype == np.float32
            full = st_.embedding @ v
            np.testing.assert_array_equal(got, np.where(live, full, np.float32(fill)))
            rows = np.flatnonzero(live)
            if rng.random() < 0.3:  # a few rows, the last ones (after the last full block) too
                rows = np.unique(rng.integers(max(0, st_.n - 8), st_.n, 3))
            at = st_.products_at(v, rows)
            assert at.dtype == np.float32
            np.testing.assert_array_equal(at, full[rows])


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.integers(1, 40),
    dim=st.sampled_from([5, 16, 384]),
    pool=st.integers(1, 14),
)
def test_query_products_are_the_full_scan_bit_for_bit(seed, steps, dim, pool):
    """store.query_products (similarity.RecurringScans: each vector's products kept between its
    calls) gives (E @ v)[rows] bit for bit through adds of any size (the store's last rows
    after its last full block among them), changed embeddings (before and after the kept
    rows, of vectors in use and of evicted ones), vectors that come back, more vectors than
    it keeps (dim 16 keeps 8), a copy, and callers writing into what it returned; with a
    short change log, so that it is compacted and merged often."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RecurringScans, "LOG_LIMIT", 4)
        _check_query_products(seed, steps, dim, pool)


def _check_query_products(seed: int, steps: int, dim: int, pool: int) -> None:
    import copy

    rng = np.random.default_rng(seed)
    st_ = MemoryStore(dim=dim, statuses=Statuses(("active",)))
    queries = rng.standard_normal((pool, dim))  # float64, as the mock LLM's
    for _ in range(steps):
        m = int(rng.integers(0, 30))
        if m:
            st_.add(
                0.0,
                rng.standard_normal((m, dim)),
                texts=["t"] * m,
                claims=[None] * m,
                provenance=[("e",)] * m,
            )
        if st_.n and rng.random() < 0.3:
            rows = np.unique(rng.integers(0, st_.n, int(rng.integers(1, 6))))
            st_.set_embedding(rows, rng.standard_normal((len(rows), dim)))
        if rng.random() < 0.05:
            st_ = copy.deepcopy(st_)
        for _query in range(int(rng.integers(1, 4))):
            v = queries[int(rng.integers(0, pool))]
            full = st_.embedding @ v.astype(np.float32)
            got = st_.query_products(v)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, full)
            got[:] = np.nan  # a new array: the kept products are not the caller's
            if st_.n:
                rows = rng.integers(0, st_.n, int(rng.integers(0, 8)))
                rows = np.concatenate([rows, [st_.n - 1]])
                np.testing.assert_array_equal(st_.query_products(v, rows), full[rows])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 25))
def test_rows_with_is_the_mask_s_rows_through_adds_and_status_changes(seed, steps):
    """store.rows_with (kept between calls, brought up to date from the status log) gives
    np.flatnonzero(store.mask(statuses, kinds)) for several status and kind sets, through
    adds, rows that leave a status and come back, calls skipped for a while, and a copy;
    read-only, and every array handed out keeps its rows (new rows are written past it in
    the array it is the head of). store.mask_at gives the mask's entries at the rows asked;
    store.kept_mask the mask itself, kept the same way, each a new array that keeps its
    entries."""
    import copy

    rng = np.random.default_rng(seed)
    sts = Statuses(("active", "dormant", "gone"), terminal=frozenset({"gone"}))
    s = MemoryStore(dim=4, statuses=sts, kinds=("a", "b", "c"))
    sets = [
        (None, None),
        (("active",), None),
        (("dormant", "gone"), None),
        (("active", "dormant"), ("a", "c")),
        (None, ("b",)),
    ]
    handed: list[tuple[np.ndarray, np.ndarray]] = []  # (an array rows_with gave, its rows then)
    for _ in range(steps):
        before = (len(s.status_log), s.n, s["status"].copy())
        m = int(rng.integers(0, 6))
        if m:
            vecs = rng.standard_normal((m, 4)) + 0.1
            kind = str(rng.choice(["a", "b", "c"]))
            s.add(0.0, vecs, texts=["t"] * m, claims=[None] * m, provenance=[("e",)] * m, kind=kind)
        if s.n:
            for _change in range(int(rng.integers(0, 4))):
                r = int(rng.integers(0, s.n))
                if s.status_of(r) != "gone":
                    s.set_status(r, str(rng.choice(["active", "dormant", "gone"])), 1.0)
        # rows_logged: the rows added or whose status was set since a point in the log
        since, n0, status0 = before
        logged = s.rows_logged(since)
        assert logged.tolist() == sorted(set(logged.tolist())) and set(range(n0, s.n)) <= set(
            logged.tolist()
        )
        changed = np.flatnonzero(s["status"][:n0] != status0)
        assert set(changed.tolist()) <= set(logged.tolist())
        if rng.random() < 0.1:
            s = copy.deepcopy(s)
        for statuses, kinds in sets:
            if rng.random() < 0.7:  # some sets not asked this step: several changes to catch up
                got = s.rows_with(statuses, kinds)
                np.testing.assert_array_equal(got, np.flatnonzero(s.mask(statuses, kinds)))
                assert not got.flags.writeable
                handed.append((got, got.copy()))
            if rng.random() < 0.7:  # kept_mask, kept the same way: the mask itself, a new array
                kept = s.kept_mask(statuses, kinds)
                np.testing.assert_array_equal(kept, s.mask(statuses, kinds))
                handed.append((kept, kept.copy()))
            if s.n:  # mask_at: the mask's entries at a few rows, repeated, in any order
                rows = rng.integers(0, s.n, int(rng.integers(0, 6)))
                np.testing.assert_array_equal(
                    s.mask_at(rows, statuses, kinds), s.mask(statuses, kinds)[rows]
                )
    for got, then in handed:
        np.testing.assert_array_equal(got, then)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(1, 4), st.sampled_from(["a", "b", "c"])),
            st.tuples(st.just("set"), st.integers(0, 40), st.sampled_from(["a", "b", "c"])),
            st.tuples(st.just("count"), st.just(0), st.just("")),
        ),
        max_size=40,
    )
)
def test_count_is_the_status_columns_count(steps):
    """count() is kept by add and set_status; at every count it equals a count over the
    whole column, whatever rows were added and statuses changed between, and so does a
    store pickled before the counts were kept (they are counted from the column)."""
    store = MemoryStore(4, Statuses(("a", "b", "c"), retrievable=frozenset({"a", "c"})))
    count = store.count
    rng = np.random.default_rng(0)
    for op, n, status in steps:
        if op == "add":
            v = rng.normal(size=(n, 4))
            store.add(0.0, v, texts=[""] * n, claims=[None] * n, provenance=[()] * n, status=status)
        elif op == "set" and store.n:
            store.set_status([n % store.n], status, 1.0)
        else:
            assert count() == int(np.isin(store["status"], [0, 2]).sum())
    assert count() == int(np.isin(store["status"], [0, 2]).sum())
    del store.__dict__["_status_counts"]  # as a store pickled before them
    assert count() == int(np.isin(store["status"], [0, 2]).sum()) == store.count(["a", "c"])
    assert store.status_log_mismatch() is None


def test_stored_bytes_are_the_retrievable_rows_vectors_and_utf8_texts():
    store = MemoryStore(4, Statuses(("active", "gone")))
    texts = ["abc", "h\u00e9llo", "\u20ac", "dropped"]  # ASCII, a 2-byte and a 3-byte char
    store.add(0.0, np.eye(4), texts=texts, claims=[None] * 4, provenance=[{"e"}] * 4)
    store.set_status([3], "gone", 1.0)
    assert store.stored_bytes() == (3 * 4 * 4, 3 + 6 + 3)  # (float32 rows; "dropped" gone)
    store.set_text(0, "\u00e9\u00e9")  # a policy rewrites a text
    assert store.stored_bytes() == (3 * 4 * 4, 4 + 6 + 3)
    store.set_text(-1, "\u20ac\u20ac")  # (a memory gone counts nothing, rewritten or not)
    assert store.stored_bytes() == (3 * 4 * 4, 4 + 6 + 3)
    with pytest.raises(TypeError, match="set_text"):
        store.text[1] = "x"  # (a write that bypassed the count would go unseen)
    for again in (copy.deepcopy(store), pickle.loads(pickle.dumps(store))):
        assert list(again.text) == list(store.text)
        assert again.stored_bytes() == store.stored_bytes()
        again.set_text(0, "ab")
        assert again.stored_bytes() == (3 * 4 * 4, 2 + 6 + 3)


def test_stored_bytes_of_a_store_pickled_before_texts_were_counted():
    store = MemoryStore(4, Statuses(("active",)))
    store.add(0.0, np.eye(4)[:2], texts=["ab", "\u00e9"], claims=[None] * 2, provenance=[{"e"}] * 2)
    state = store.__getstate__()
    del state["_text_bytes"]
    state["text"] = list(state["text"])
    old = MemoryStore.__new__(MemoryStore)
    old.__setstate__(state)
    assert old.stored_bytes() == (2 * 4 * 4, 2 + 2)
    with pytest.raises(TypeError):
        old.text[0] = "x"
