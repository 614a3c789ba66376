"""Property tests of policy ``pai`` (document 000): band decisions exact at the thresholds,
caps and floors, monotone decay, the vectorized recall score against a scalar reference
written from §2, and one stateful machine over ingest / recall / maintain / forget."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.llm import NONE, Faults
from memsim.engine.mockllm import MockLLM
from memsim.engine.ranking import topk
from policies.pai import (
    TYPE_CODE,
    PaiParams,
    PersonalAI,
    effective_confidence,
    in_grey_zone,
    in_link_band,
    is_reinforce,
)
from tests.test_pai import C, FakeLLM, assert_batched_equals_one_by_one, ep


def f32(x: float) -> float:
    return float(np.float32(x))


def ulps32(x: float, n: int) -> float:
    """x moved by n float32 ulps (x must be a float32 value)."""
    v = np.float32(x)
    step = np.float32(np.inf if n > 0 else -np.inf)
    for _ in range(abs(n)):
        v = np.nextafter(v, step)
    return float(v)


# ------------------------------------------------------------------ §1/§4 bands


@given(s=st.floats(-1.0, 1.0), r=st.floats(0.5, 0.99), g=st.floats(0.3, 0.5))
def test_bands_partition_the_similarity_axis(s, r, g):
    """Every similarity is exactly one of: reinforce (> r), grey zone ([g, r]), below."""
    p = PaiParams(reinforce_above=r, grey_lo=g)
    below = s < g
    assert is_reinforce(s, p) + in_grey_zone(s, p) + below == 1


@given(r=st.floats(0.5, 0.99))
def test_band_boundaries_exact(r):
    p = PaiParams(reinforce_above=r, grey_lo=r - 0.2, link_lo=r - 0.4, link_hi=r)
    up, down = math.nextafter(r, 2.0), math.nextafter(r, -2.0)
    assert not is_reinforce(r, p) and in_grey_zone(r, p) and is_reinforce(up, p)
    assert in_grey_zone(r - 0.2, p) and not in_grey_zone(math.nextafter(r - 0.2, -2.0), p)
    assert in_link_band(r - 0.4, p) and not in_link_band(math.nextafter(r - 0.4, -2.0), p)
    assert not in_link_band(r, p) and in_link_band(down, p)


@settings(max_examples=40)
@given(
    r=st.floats(0.5, 0.95).map(f32),
    offset=st.integers(-2, 2),
    reply=st.sampled_from([NONE, "1", "x"]),
)
def test_policy_ingest_decision_exact_at_reinforce_threshold(r, offset, reply):
    """Through the policy: a new claim at cosine s (float32-exact) with one old belief."""
    s = ulps32(r, offset)
    llm = FakeLLM(reply=reply)
    pol = PersonalAI(PaiParams(reinforce_above=r, grey_lo=f32(r - 0.1), link_hi=r), llm=llm)
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    out = pol.ingest([ep("e2", 0, C("a.x", "2", s, 2))], 0.0)
    acts = [o.action for o in out]
    if s > r:
        assert acts == ["reinforce"] and llm.classify_calls == []
    else:
        assert len(llm.classify_calls) == 1 and "create" in acts
        assert ("invalidate" in acts) == (reply == "1")
        # linked to the old belief iff it is still active and s < link_hi (= r)
        assert (1 in pol.links.get(0, set())) == (reply != "1" and s < r)


@settings(max_examples=40)
@given(g=st.floats(0.5, 0.8).map(f32), offset=st.integers(-2, 2))
def test_policy_grey_zone_lower_end_exact(g, offset):
    s = ulps32(g, offset)
    llm = FakeLLM(reply=NONE)
    pol = PersonalAI(PaiParams(grey_lo=g), llm=llm)
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    pol.ingest([ep("e2", 0, C("a.y", "2", s, 2))], 0.0)
    assert (len(llm.classify_calls) == 1) == (s >= g)


@settings(max_examples=40)
@given(lo=st.floats(0.2, 0.6).map(f32), offset=st.integers(-2, 2))
def test_policy_link_lower_end_exact(lo, offset):
    s = ulps32(lo, offset)
    pol = PersonalAI(PaiParams(link_lo=lo), llm=FakeLLM())
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    pol.ingest([ep("e2", 0, C("a.y", "2", s, 2))], 0.0)
    assert (pol.links.get(1) == {0}) == (s >= lo)


# ------------------------------------------------------------------ caps and floors


@settings(max_examples=25)
@given(
    values=st.lists(st.sampled_from(["Paris", "Rome", "Oslo"]), min_size=1, max_size=25),
    invalid=st.sampled_from([0.0, 0.5]),
)
def test_confidence_stays_within_floor_and_cap(values, invalid):
    pol = PersonalAI(llm=MockLLM(seed=0, faults=Faults(invalid_answer=invalid)))
    for i, v in enumerate(values):
        pol.ingest([ep(f"e{i}", i, Claim("owner.city", v))], float(i))
        conf = pol.store["confidence"]
        assert ((conf >= 0.1) & (conf <= 1.0)).all()


@settings(max_examples=25)
@given(n=st.integers(0, 60), start=st.floats(1.0, 5.0))
def test_stability_capped_at_5_after_any_number_of_accesses(n, start):
    pol = PersonalAI(llm=FakeLLM())
    pol.ingest([ep("e1", 0, C("a.x", "1", 0.9, 1))], 0.0)
    pol.store["stability"][0] = start
    for i in range(n):
        pol.recall([Query(f"q{i}", i, "x", keys=("a",), k=1)], float(i))
    expected = start
    for _ in range(n):
        expected = min(5.0, expected + 0.1)
    assert pol.store["stability"][0] == expected <= 5.0
    assert pol.store["access_count"][0] == n


# ------------------------------------------------------------------ §7 decay


@given(
    conf=st.floats(0.1, 1.0), stab=st.floats(1.0, 5.0), t1=st.floats(0, 1000), dt=st.floats(0, 1000)
)
def test_decay_monotone_without_access_and_halves_each_half_life(conf, stab, t1, dt):
    c, s, u = np.array([conf]), np.array([stab]), np.array([0.0])
    a = effective_confidence(c, s, u, t1)[0]
    b = effective_confidence(c, s, u, t1 + dt)[0]
    assert 0.0 <= b <= a <= conf
    h = effective_confidence(c, s, u, 30.0 * stab)[0]
    assert math.isclose(h, conf / 2, rel_tol=1e-12)


# ------------------------------------------------------------------ §2 score: scalar reference


def scalar_score(cos, importance, stability, last_access, created, subject_hit, insight, now):
    """§2 written out for one belief, straight from the document."""
    days = now - (created if math.isnan(last_access) else last_access)
    recency = math.exp(-0.023 * days)
    score = (
        0.50 * cos
        + 0.20 * importance / 10
        + 0.10 * recency
        + 0.05 * stability / 5
        + 0.15 * (1.0 if subject_hit else 0.0)
    )
    return score * 0.5 if insight else score


row = st.tuples(
    st.integers(1, 10),
    st.floats(1.0, 5.0),
    st.one_of(st.just(math.nan), st.floats(0, 50)),
    st.floats(0, 50),
    st.sampled_from(["owner", "alex", "sam"]),
    st.booleans(),
    st.sampled_from(["active", "active", "pruned"]),
)


@settings(max_examples=30)
@given(
    rows=st.lists(row, min_size=1, max_size=30),
    seed=st.integers(0, 1000),
    qsubject=st.sampled_from(["", "alex", "sam"]),
    k=st.integers(1, 8),
)
def test_vectorized_score_and_recall_equal_scalar_reference(rows, seed, qsubject, k):
    rng = np.random.default_rng(seed)
    pol = PersonalAI(llm=FakeLLM(dim=16))
    n = len(rows)
    X = rng.standard_normal((n, 16))
    X[:, 0] += 1.5  # most rows above the cosine floor
    s = pol.store
    s.add(0.0, X, texts=[""] * n, claims=[None] * n, provenance=[()] * n)
    pol._tokens.extend([frozenset()] * n)
    for i, (imp, stab, last, created, subj, insight, status) in enumerate(rows):
        s["importance"][i], s["stability"][i] = imp, stab
        s["last_access"][i], s["created"][i] = last, created
        s["subject"][i] = pol._code_subject(subj)
        s["type"][i] = TYPE_CODE["insight" if insight else "factual"]
        if status != "active":
            s.set_status(i, status, 0.0)
    now = 60.0
    q = Query("q", now, "what", keys=("a",), subject=qsubject, k=k)
    v = pol.llm.embed_query(q)
    vec = pol.score_rows(q, v, now)
    E = s.embedding
    ref = []
    for i, (imp, stab, last, created, subj, insight, status) in enumerate(rows):
        cos = float(np.dot(E[i].astype(np.float64), v.astype(np.float64)))
        if status != "active" or cos < 0.20:
            ref.append(-math.inf)
        else:
            ref.append(
                scalar_score(
                    cos, imp, stab, last, created, qsubject != "" and subj == qsubject, insight, now
                )
            )
    ref = np.array(ref)
    assert np.array_equal(np.isinf(vec), np.isinf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(vec[fin], ref[fin], rtol=1e-6, atol=1e-7)  # float32 cosines
    # recall (no links): exactly the top k of the vectorized score, then access recorded
    want = topk(vec, k)
    got = pol.recall([q], now)[0]
    assert got.ids.tolist() == want.tolist()
    np.testing.assert_array_equal(got.scores, vec[want])
    assert (s["last_access"][want] == now).all()


# ------------------------------------------------------------------ batch == one by one


@settings(max_examples=15)
@given(
    spec=st.lists(
        st.tuples(
            st.sampled_from(["owner.city", "owner.name", "work.role"]),
            st.sampled_from(["a", "b"]),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=12,
    ),
    fail=st.sampled_from([0.0, 0.3]),
)
def test_batch_ingest_equals_one_by_one(spec, fail):
    eps = [
        Episode(f"e{i}", float(t), f"{k} {v}", (Claim(k, v),), conversation="c")
        for i, (k, v, t) in enumerate(sorted(spec, key=lambda x: x[2]))
    ]
    faults = Faults(embed_fail=fail, extract_fail=fail, invalid_answer=fail)
    assert_batched_equals_one_by_one(
        PersonalAI(llm=MockLLM(seed=3, faults=faults)),
        PersonalAI(llm=MockLLM(seed=3, faults=faults)),
        eps,
    )


# ------------------------------------------------------------------ stateful machine

KEYS = ["owner.city", "owner.name", "work.role", "work.team"]
VALUES = ["a", "b", "c"]
TERMINAL = {"invalidated", "forgotten", "pruned"}


class PaiMachine(RuleBasedStateMachine):
    """ingest / recall / advance time + maintain / forget, with the §5 status rules and the
    §6 ranges checked after every step."""

    @initialize(fail=st.sampled_from([0.0, 0.2]))
    def start(self, fail):
        faults = Faults(embed_fail=fail, extract_fail=fail, invalid_answer=fail)
        self.pol = PersonalAI(
            PaiParams(synthesis_threshold=0.5), llm=MockLLM(seed=1, faults=faults)
        )
        self.now = 0.0
        self.n_ep = 0
        self.episodes: list[str] = []
        self.terminal: dict[int, str] = {}

    @rule(
        key=st.sampled_from(KEYS),
        value=st.sampled_from(VALUES),
        imp=st.floats(0, 1),
        n=st.integers(1, 3),
    )
    def ingest(self, key, value, imp, n):
        batch = []
        for _ in range(n):
            self.n_ep += 1
            eid = f"e{self.n_ep}"
            batch.append(
                Episode(
                    eid,
                    self.now,
                    f"{key} {value}",
                    (Claim(key, value, importance=imp),),
                    conversation="chat",
                )
            )
            self.episodes.append(eid)
        self.pol.ingest(batch, self.now)

    @rule(key=st.sampled_from(KEYS), k=st.integers(1, 5))
    def recall(self, key, k):
        self.n_ep += 1
        (r,) = self.pol.recall([Query(f"q{self.n_ep}", self.now, key, keys=(key,), k=k)], self.now)
        assert len(r.ids) <= k
        assert all(self.pol.store.status_of(int(i)) == "active" for i in r.ids)
        assert np.all(np.diff(r.scores) <= 0)

    @rule(days=st.sampled_from([1.0, 7.0, 30.0, 120.0]))
    def advance_and_maintain(self, days):
        self.now += days
        self.pol.maintain(self.now, [j.name for j in self.pol.schedule])

    @precondition(lambda self: bool(self.episodes))
    @rule(data=st.data())
    def forget(self, data):
        eid = data.draw(st.sampled_from(self.episodes))
        self.n_ep += 1
        self.pol.forget([Forget(f"f{self.n_ep}", self.now, eid)], self.now)
        s = self.pol.store
        assert not any(s.status_of(int(r)) == "active" for r in s.rows_from(eid))

    @invariant()
    def statuses_legal_and_terminal_stay_terminal(self):
        s = self.pol.store
        for r in range(s.n):
            name = s.status_of(r)
            assert name in PersonalAI.statuses.names
            if r in self.terminal:
                assert name == self.terminal[r], f"row {r} left terminal {self.terminal[r]}"
            elif name in TERMINAL:
                self.terminal[r] = name

    @invariant()
    def ranges_hold(self):
        s = self.pol.store
        conf, stab = s["confidence"], s["stability"]
        meta = s["type"] == TYPE_CODE["meta"]
        assert ((conf >= 0.1) & (conf <= 1.0)).all()
        assert ((stab[~meta] >= 1.0) & (stab[~meta] <= 5.0)).all()
        assert ((stab[meta] >= 3.0) & (stab[meta] <= 5.0)).all()
        imp = s["importance"]
        assert ((imp >= 1) & (imp <= 10)).all()
        strength = self.pol.strength(self.now)
        assert np.isfinite(strength).all() and ((strength >= 0) & (strength <= 1.0)).all()

    @invariant()
    def links_symmetric(self):
        for a, nbs in self.pol.links.items():
            assert a not in nbs and all(a in self.pol.links[b] for b in nbs)


PaiMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
TestPaiMachine = PaiMachine.TestCase
