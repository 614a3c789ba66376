"""The runner: tick scheduling, observation order, recall assertions, capabilities,
footprint sampling, Trace content / frames / pickling, continuing a run."""

import hashlib
import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.engine.errors import PolicyContractError
from memsim.engine.events import Claim, Episode, Forget, Protect, Query, Stream
from memsim.engine.llm import Embedded
from memsim.engine.policy import Job, Outcome, Policy, Ranking
from memsim.engine.registry import PolicySpec
from memsim.engine.runner import run, tick_times
from policies.baselines import KeepAll


def _hv(text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).normal(size=dim)


class StubLLM:
    """A tiny deterministic stand-in for the LLM protocol (claims by key/value hashing)."""

    def __init__(self, seed: int = 0, dim: int = 16) -> None:
        self.seed, self.dim = seed, dim

    def extract(self, episode):
        return episode.claims or (Claim("", episode.text),)

    def _vec(self, c):
        if isinstance(c, str) or not c.key:
            v = _hv(c if isinstance(c, str) else c.value, self.dim)
        else:
            v = (
                _hv(c.topic, self.dim)
                + _hv(c.key, self.dim)
                + 0.5 * _hv(c.key + "=" + c.value, self.dim)
            )
        return v / np.linalg.norm(v)

    def embed(self, items, keys):
        vecs = np.array([self._vec(c) for c in items], dtype=np.float32).reshape(
            len(items), self.dim
        )
        return Embedded(vecs, np.ones(len(items), dtype=bool))

    def embed_query(self, query):
        v = (
            sum(_hv(k.rsplit(".", 1)[0], self.dim) + _hv(k, self.dim) for k in query.keys)
            if query.keys
            else _hv(query.text, self.dim)
        )
        return (v / np.linalg.norm(v)).astype(np.float32)


class Recorder(Policy):
    """Records the calls it receives; one memory per episode; recall returns the newest rows."""

    schedule = (Job("daily", 1.0),)

    def setup(self):
        self.calls = []

    def ingest(self, episodes, now):
        self.calls.append(("ingest", now, tuple(e.id for e in episodes)))
        rows = self.store.add(
            now,
            np.ones((len(episodes), self.llm.dim)),
            texts=[e.text for e in episodes],
            claims=[None] * len(episodes),
            provenance=[(e.id,) for e in episodes],
        )
        return [Outcome(e.id, "create", int(r)) for e, r in zip(episodes, rows)]

    def recall(self, queries, now):
        self.calls.append(("recall", now, tuple(q.id for q in queries)))
        n = self.store.n
        return [
            Ranking(
                np.arange(n - 1, max(n - 1 - q.k, -1), -1), -np.arange(min(q.k, n), dtype=float)
            )
            for q in queries
        ]

    def strength(self, now):
        return np.ones(self.store.n)

    def maintain(self, now, jobs):
        self.calls.append(("maintain", now, tuple(jobs)))
        return [Outcome(j, "skip") for j in jobs]

    def forget(self, events, now):
        self.calls.append(("forget", now, tuple(e.id for e in events)))
        return [Outcome(e.id, "forget") for e in events]


def ep(eid, t, key="a.b", value="x"):
    return Episode(eid, t, f"{key} is {value}", (Claim(key, value),))


def test_tick_times_union_in_schedule_order():
    jobs = (Job("a", 1.0), Job("b", 2.0), Job("c", 1.5, offset=0.5))
    got = []
    for t, names in tick_times(jobs, None):
        if t > 4:
            break
        got.append((t, names))
    # a: 1,2,3,4   b: 2,4   c (offset 0.5, n>=0): 0.5,2,3.5
    assert got == [
        (0.5, ["c"]),
        (1.0, ["a"]),
        (2.0, ["a", "b", "c"]),
        (3.0, ["a"]),
        (3.5, ["c"]),
        (4.0, ["a", "b"]),
    ]


def test_tick_times_start_after_skips_done_ticks():
    got = [t for t, _ in zip(tick_times((Job("a", 1.0),), 2.5), range(3))]
    assert [t for t, _ in got] == [3.0, 4.0, 5.0]
    got = [t for t, _ in zip(tick_times((Job("a", 1.0),), 3.0), range(2))]
    assert [t for t, _ in got] == [4.0, 5.0]


def test_tick_sees_events_at_its_time_and_observer_order():
    stream = Stream((ep("e1", 0.0), ep("e2", 1.0), ep("e3", 1.5), ep("e4", 3.0)), horizon=4.0)
    p = Recorder(llm=StubLLM())
    # the observation at 5.0 lies past the horizon (4.0): ticks continue up to it
    run(
        p,
        stream,
        observe=[2.5, 1.0, 5.0],
        observer=lambda pol, t: pol.calls.append(("observe", t, ())),
    )
    assert [(c[0], c[1]) for c in p.calls] == [
        ("ingest", 0.0),
        ("ingest", 1.0),
        ("maintain", 1.0),
        ("observe", 1.0),
        ("ingest", 1.5),
        ("maintain", 2.0),
        ("observe", 2.5),
        ("ingest", 3.0),
        ("maintain", 3.0),
        ("maintain", 4.0),
        ("maintain", 5.0),
        ("observe", 5.0),
    ]


def test_ticks_end_at_horizon():
    p = Recorder(llm=StubLLM())
    run(p, Stream((ep("e1", 0.0),), horizon=2.5))
    assert [c[1] for c in p.calls if c[0] == "maintain"] == [1.0, 2.0]


def test_footprint_after_every_batch_and_tick():
    stream = Stream(
        (ep("e1", 0.0), ep("e2", 0.0), Query("q", 0.5, "?", keys=("a.b",), k=1), ep("e3", 2.0)),
        horizon=2.0,
    )
    p = Recorder(llm=StubLLM())
    tr = run(p, stream)
    # batches: ingest@0 (2 rows), recall@0.5, tick@1, ingest@2, tick@2
    assert tr.footprint == [(0.0, 2, 2), (0.5, 2, 2), (1.0, 2, 2), (2.0, 3, 3), (2.0, 3, 3)]
    assert tr.queries[0].footprint == 2


def test_recall_records_provenance_snapshot_at_recall_time():
    stream = Stream((ep("e1", 0.0), Query("q", 1.0, "?", keys=("a.b",), k=2)))
    p = Recorder(llm=StubLLM())
    tr = run(p, stream)
    p.store.add_provenance(0, ["later"], 2.0)
    assert tr.queries[0].provenance == (frozenset({"e1"}),)
    assert tr.queries[0].ids.tolist() == [0]


@pytest.mark.parametrize("policy_id", ["cosmo", "engram", "pai"])
def test_each_answers_provenance_is_the_log_cut_where_its_recall_batch_ended(policy_id):
    """The snapshots a trace records (store.ProvenanceSnapshot) are each returned memory's
    provenance log entries up to the query's ``provenance_log_len``, though the memories
    (Cosmo's storylines, Engram's and pai's reinforced beliefs) kept growing after; and a
    pickled trace gives the same sets."""
    import scenarios
    from memsim.engine import registry
    from memsim.engine.mockllm import MockLLM

    policy = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    trace = run(policy, scenarios.load("synthetic:steady,episodes=600,queries=120"))
    log = trace.provenance_log
    grown = 0
    # latest first, so a row's later episodes are already mapped when earlier snapshots are asked
    for rec in [*reversed(pickle.loads(pickle.dumps(trace)).queries), *reversed(trace.queries)]:
        for row, prov in zip(rec.ids.tolist(), rec.provenance):
            then = {e for _, r, e in log[: rec.provenance_log_len] if r == row}
            assert prov == frozenset(then) and len(prov) == len(then)
            later = policy.store.provenance[row] - then
            assert all(e in prov for e in then) and not any(e in prov for e in later)
            grown += bool(later)
    assert grown  # some returned memory did grow after the query


class TooMany(Recorder):
    def recall(self, queries, now):
        return [Ranking(np.arange(self.store.n), np.zeros(self.store.n)) for _ in queries]


class ReturnsDead(Recorder):
    def recall(self, queries, now):
        self.store.set_status([0], "active", now)
        return [Ranking(np.array([5]), np.zeros(1)) for _ in queries]


class WrongCount(Recorder):
    def recall(self, queries, now):
        return []


@pytest.mark.parametrize(
    "cls, words",
    [
        (TooMany, "returned 3 ids for query 'q1' (k=2)"),
        (ReturnsDead, "outside the store"),
        (WrongCount, "0 rankings for 1 queries"),
    ],
)
def test_recall_contract_violations_name_policy_and_query(cls, words):
    stream = Stream(
        (ep("e1", 0.0), ep("e2", 0.0), ep("e3", 0.0), Query("q1", 1.0, "?", keys=("a.b",), k=2))
    )
    with pytest.raises(PolicyContractError) as err:
        run(cls(llm=StubLLM()), stream)
    assert cls.__name__ in str(err.value) and words in str(err.value)


def test_recall_of_non_retrievable_memory_is_rejected():
    class Forgets(KeepAll):
        def recall(self, queries, now):
            self.store.set_status([0], "forgotten", now)
            return [Ranking(np.array([1, 0]), np.ones(2)) for _ in queries]

    stream = Stream((ep("e1", 0.0), ep("e2", 0.0), Query("q1", 1.0, "?", keys=("a.b",))))
    with pytest.raises(
        PolicyContractError,
        match=r"Forgets.recall returned memories \[0\] for query 'q1'.*not retrievable",
    ):
        run(Forgets(llm=StubLLM()), stream)


def test_user_actions_follow_declared_capabilities():
    stream = Stream((ep("e1", 0.0), Forget("f1", 1.0, "e1"), Protect("p1", 1.0, "e1")))
    bare = Recorder(llm=StubLLM())
    tr = run(bare, stream)
    assert [(o.event, o.action) for o in tr.outcomes if o.event in ("f1", "p1")] == [
        ("f1", "unsupported"),
        ("p1", "unsupported"),
    ]
    assert not any(c[0] == "forget" for c in bare.calls)

    declared = Recorder(llm=StubLLM())
    declared.spec = PolicySpec(
        "rec", 1, "tests.engine.test_runner:Recorder", capabilities=frozenset({"forget"})
    )
    tr = run(declared, stream)
    assert ("forget", 1.0, ("f1",)) in declared.calls
    assert [(o.event, o.action) for o in tr.outcomes if o.event in ("f1", "p1")] == [
        ("f1", "forget"),
        ("p1", "unsupported"),
    ]
    assert tr.policy_id == "rec" and tr.policy_version == 1


def test_ingest_one_by_one_splits_batches():
    stream = Stream((ep("e1", 0.0), ep("e2", 0.0)))
    p = Recorder(llm=StubLLM())
    run(p, stream, ingest_one_by_one=True)
    assert [c for c in p.calls if c[0] == "ingest"] == [
        ("ingest", 0.0, ("e1",)),
        ("ingest", 0.0, ("e2",)),
    ]


def _small_stream():
    return Stream(
        (
            ep("e1", 0.0, "owner.name", "Dana"),
            ep("e2", 0.0, "pets.dog", "Rex"),
            ep("e3", 2.0, "owner.city", "Boston"),
            Query("q1", 3.0, "name?", keys=("owner.name",), k=2),
            Query("q2", 3.0, "dog?", keys=("pets.dog",), k=1),
            Forget("f1", 4.0, "e2"),
            Query("q3", 5.0, "dog?", keys=("pets.dog",), k=3),
        ),
        name="small",
        horizon=6.0,
    )


def test_trace_is_deterministic_picklable_and_framed():
    spec = PolicySpec(
        "keep-all", 1, "policies.baselines:KeepAll", capabilities=frozenset({"forget"})
    )
    a = run(spec.make(llm=StubLLM()), _small_stream())
    b = run(spec.make(llm=StubLLM()), _small_stream())
    assert a.content() == b.content()
    c = pickle.loads(pickle.dumps(a))
    assert c.content() == a.content()
    q = a.queries_frame()
    assert list(q.query_id) == ["q1", "q2", "q3"] and list(q.returned) == [2, 1, 2]
    assert q.scores[0][0] >= q.scores[0][1]
    o = a.outcomes_frame()
    assert list(o.columns) == ["time", "event", "action", "memory", "detail"]
    assert list(o[o.event == "f1"].action) == ["forget"]
    f = a.footprint_frame()
    assert f.retrievable.iloc[-1] == 2 and f.rows.iloc[-1] == 3
    assert set(a.timings) >= {"ingest", "recall", "maintain", "total"}
    # a different stream content gives a different trace
    other = run(spec.make(llm=StubLLM()), replace(_small_stream(), name="other"))
    assert other.content() != a.content()


def test_continuing_a_run_equals_one_run():
    # a continued stream cannot name episodes of the first part (Stream validation), so no Forget
    events = tuple(e for e in _small_stream().events if not isinstance(e, Forget))
    one = Recorder(llm=StubLLM())
    run(one, Stream(events, horizon=6.0))
    two = Recorder(llm=StubLLM())
    run(two, Stream(tuple(e for e in events if e.time <= 2.5), horizon=2.5))
    run(two, Stream(tuple(e for e in events if e.time > 2.5), horizon=6.0), start_after=2.5)
    assert one.calls == two.calls
    assert [c[1] for c in one.calls if c[0] == "maintain"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_observe_without_observer_is_an_error():
    with pytest.raises(ValueError, match="observer"):
        run(Recorder(llm=StubLLM()), Stream((ep("e1", 0.0),)), observe=[1.0])


@given(
    st.lists(
        st.tuples(st.sampled_from([0.25, 0.5, 1.0, 1.5, 7.0]), st.sampled_from([0.0, 0.5, 2.0])),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([None, 0.0, 1.0, 3.3]),
)
def test_tick_times_match_brute_force(specs, start_after):
    jobs = tuple(Job(f"j{i}", every, offset) for i, (every, offset) in enumerate(specs))
    horizon = 20.0
    expected: dict[float, list[str]] = {}
    for job in jobs:
        n = 1 if job.offset == 0 else 0
        while job.offset + n * job.every <= horizon:
            t = job.offset + n * job.every
            if start_after is None or t > start_after:
                expected.setdefault(t, []).append(job.name)
            n += 1
    got = []
    for t, names in tick_times(jobs, start_after):
        if t > horizon:
            break
        got.append((t, names))
    assert got == sorted(expected.items())


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    k=st.integers(0, 12),
    share=st.sampled_from([0.1, 0.5, 1.0]),
)
def test_rank_among_rows_is_rank_of_the_store_long_scores(seed, n, k, share):
    """Policy.rank_among / ranking_among (a ranking over some rows only, as positions into
    them) give the rows, order and scores of rank / ranking over a store-long array with -inf
    elsewhere, ties within TIE_RTOL included (they go by each row's seeded key)."""
    rng = np.random.default_rng(seed)
    pol = KeepAll(llm=StubLLM(), seed=int(rng.integers(0, 100)))
    pol.ingest([Episode(f"e{i}", 0.0, f"text {i}", ()) for i in range(n)], 0.0)
    rows = np.flatnonzero(rng.random(pol.store.n) < share)
    # few distinct values, some within TIE_RTOL of each other: ties decide the order
    scores = rng.choice([0.3, 0.3 + 1e-8, 0.3 + 4e-7, 0.5, 0.9], size=len(rows))
    full = np.full(pol.store.n, -np.inf)
    full[rows] = scores
    among = pol.rank_among(rows, scores, k, "q7")
    np.testing.assert_array_equal(rows[among], pol.rank(full, k, "q7"))
    got, want = pol.ranking_among(rows, scores, k, "q7"), pol.ranking(full, k, "q7")
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)


def test_a_status_written_to_the_column_without_set_status_is_a_contract_error():
    """The footprint is counted from the status log, so a status that bypasses it (and
    would leave the footprint wrong) stops the run."""

    class WritesStatus(KeepAll):
        def recall(self, queries, now):
            self.store["status"][0] = self.store.statuses.code("forgotten")
            return [Ranking.empty() for _ in queries]

    stream = Stream((ep("e1", 0.0), ep("e2", 0.0), Query("q1", 1.0, "?", keys=("a.b",))))
    with pytest.raises(PolicyContractError, match="WritesStatus: row 0 .* without MemoryStore"):
        run(WritesStatus(llm=StubLLM()), stream)
