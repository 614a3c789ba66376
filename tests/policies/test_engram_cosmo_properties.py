"""Property-based tests for Engram (001) and Cosmo (002): decay never rises without access,
caps hold, statuses only move along legal transitions, vectorized scores equal their scalar
references, and one small RuleBasedStateMachine per policy."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memsim.engine.events import Claim, Episode, Forget, Query
from policies.cosmo import Cosmo, CosmoParams
from policies.engram import Engram, EngramParams
from tests.policies.test_engram import StubLLM

DIM = 32
TOPICS = ("owner.city", "owner.job", "pet.name", "food.likes")
VALUES = ("a", "b", "c")


def engram(**p) -> Engram:
    return Engram(EngramParams(**p), llm=StubLLM(DIM))


def cosmo(**p) -> Cosmo:
    return Cosmo(CosmoParams(**p), llm=StubLLM(DIM))


# -- Engram ----------------------------------------------------------------------------------------
@settings(max_examples=30)
@given(
    alpha=st.floats(0.1, 50),
    beta=st.floats(0.1, 50),
    stability=st.floats(0.1, 365),
    t1=st.floats(0, 500),
    dt=st.floats(0, 500),
)
def test_engram_strength_monotone_without_access(alpha, beta, stability, t1, dt):
    """001 §Belief Lifecycle 7: R(t) = exp(-t/S) only falls between retrievals."""
    pol = engram()
    row = pol.plant(
        Episode(
            "p",
            0.0,
            "x",
            (
                Claim(
                    "a.b", "v", attrs=(("alpha", alpha), ("beta", beta), ("stability", stability))
                ),
            ),
        ),
        0.0,
    )
    s1, s2 = pol.strength(t1)[row], pol.strength(t1 + dt)[row]
    assert 0.0 <= s2 <= s1 <= 1.0
    assert 0.0 < pol.confidence([row])[0] < 1.0


@settings(max_examples=30)
@given(gaps=st.lists(st.floats(0, 400), min_size=1, max_size=12), s0=st.floats(0.5, 365))
def test_engram_stability_grows_and_is_capped(gaps, s0):
    pol = engram(initial_stability=s0)
    row = pol.plant(Episode("p", 0.0, "x", (Claim("a.b", "v"),)), 0.0)
    t, prev = 0.0, s0
    for g in gaps:
        t += g
        pol.recall([Query(f"q{t}", t, "a b", keys=("a.b",), k=1)], t)
        s = pol.store["stability"][row]
        assert prev - 1e-9 <= s <= 365.0
        prev = s


@settings(max_examples=30)
@given(
    st.lists(
        st.tuples(st.floats(0.01, 1), st.floats(-1, 1), st.floats(0, 1), st.floats(0, 1)),
        min_size=1,
        max_size=20,
    )
)
def test_engram_belief_score_equals_scalar_reference(rows):
    from policies.engram import belief_score

    conf, cos, r, bm = (np.array(c) for c in zip(*rows))
    vec = belief_score(conf, cos, r, bm, 0.5, 0.3, 0.2)
    for i, (c, x, rr, b) in enumerate(rows):
        assert math.isclose(
            vec[i], 0.5 * (c * x) + 0.3 * rr + 0.2 * b, rel_tol=1e-12, abs_tol=1e-15
        )


def test_engram_recall_scores_equal_per_row_reference():
    """The vectorized recall score of every belief row equals the document's formula row by row."""
    pol = engram()
    for i, k in enumerate(TOPICS):
        pol.plant(
            Episode(f"p{i}", 0.0, k, (Claim(k, "v", attrs=(("alpha", 1 + i), ("beta", 1.0))),)), 0.0
        )
    q = Query("q", 3.0, "owner city", keys=("owner.city",), k=4)
    bs, _ = pol.score_query(q, 3.0)
    qv = pol.llm.embed_query(q)
    rows = np.flatnonzero(pol.store.mask(["active"], kinds=["belief"]))
    bm = pol._bm25_scores(rows, ["owner", "city"])
    for j, r in enumerate(rows):
        a, b = pol.store["alpha"][r], pol.store["beta"][r]
        cos = float(np.dot(pol.store.embedding[r].astype(np.float64), qv))
        ref = 0.5 * (a / (a + b) * cos) + 0.3 * math.exp(-3.0 / 7.0) + 0.2 * bm[j]
        # recall takes cosines from one float32 matrix-vector product (cast afterwards), the
        # reference from a float64 dot: they agree to float32 precision
        assert math.isclose(bs[r], ref, rel_tol=1e-6)


class PolicyMachine(RuleBasedStateMachine):
    """Shared by the Engram and Cosmo machines: a user forget of any earlier episode, and the
    check that every row's status moves only along ``MOVES`` (subclasses call move_ok)."""

    MOVES: dict[str, set[str]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.t = 0.0
        self.n_eps = 0
        self.status: dict[int, str] = {}

    @precondition(lambda self: self.n_eps > 0)
    @rule(data=st.data())
    def forget(self, data):
        i = data.draw(st.integers(0, self.n_eps - 1))
        self.pol.forget([Forget(f"f{self.t}-{i}", self.t, f"e{i}")], self.t)

    def move_ok(self, row: int) -> None:
        now = self.pol.store.status_of(row)
        old = self.status.get(row)
        assert old is None or now == old or now in self.MOVES[old], (old, now)
        self.status[row] = now


ENGRAM_MOVES = {
    "active": {"revised", "split", "merged", "archived", "deleted"},
    "archived": {"deleted"},
    "revised": {"deleted"},
    "split": {"deleted"},
    "merged": {"deleted"},
    "deleted": set(),
}


class EngramMachine(PolicyMachine):
    """Episodes, recalls, consolidation cycles and forgets in any order."""

    MOVES = ENGRAM_MOVES

    def __init__(self) -> None:
        super().__init__()
        self.pol = engram(episode_threshold=4)
        self.evidence: dict[int, int] = {}

    @rule(topic=st.sampled_from(TOPICS), value=st.sampled_from(VALUES), copies=st.integers(1, 4))
    def episodes(self, topic, value, copies):
        eps = []
        for _ in range(copies):
            eps.append(
                Episode(f"e{self.n_eps}", self.t, f"{topic} {value}", (Claim(topic, value),))
            )
            self.n_eps += 1
        self.pol.ingest(eps, self.t)

    @rule(dt=st.floats(0.05, 40))
    def consolidate(self, dt):
        self.t += dt
        self.pol.maintain(self.t, ["consolidate"])

    @rule(topic=st.sampled_from(TOPICS), k=st.integers(1, 6))
    def recall(self, topic, k):
        r = self.pol.recall(
            [Query(f"q{self.t}-{topic}-{k}", self.t, topic, keys=(topic,), k=k)], self.t
        )[0]
        s = self.pol.store
        assert len(r.ids) <= k
        assert (s["kind"][r.ids] == s.kind_code("belief")).sum() <= 2
        assert all(s.status_of(i) == "active" for i in r.ids.tolist())

    @invariant()
    def beliefs_consistent(self):
        s = self.pol.store
        for r in range(s.n):
            self.move_ok(r)
            assert s["evidence"][r] >= self.evidence.get(r, 0)  # storage strength never decreases
            self.evidence[r] = int(s["evidence"][r])
        conf = self.pol.confidence()
        assert np.all((conf > 0) & (conf < 1))
        assert np.all(s["stability"] <= 365.0)
        strength = self.pol.strength(self.t)
        assert np.all((strength >= 0) & (strength <= 1))


EngramMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
TestEngramMachine = EngramMachine.TestCase


# -- Cosmo -----------------------------------------------------------------------------------------
@settings(max_examples=30)
@given(
    state=st.sampled_from(["candidate", "active", "core", "archived"]),
    conf=st.floats(0, 1),
    sal=st.floats(0, 1),
    rf=st.integers(0, 30),
    g=st.floats(-1, 3),
    ttl=st.sampled_from(["decay", "ephemeral"]),
    mode=st.sampled_from(["closed_form", "nightly"]),
    nights=st.integers(1, 40),
)
def test_cosmo_salience_never_rises_without_access(state, conf, sal, rf, g, ttl, mode, nights):
    """002 §Offline/Nightly Decay Job: without retrieval salience only falls (both modes),
    stays in [0, 1], and archival is never undone by maintenance."""
    pol = cosmo(decay_mode=mode)
    row = pol.plant(
        Episode(
            "p",
            0.0,
            "x",
            (
                Claim(
                    "a.b",
                    "v",
                    confidence=conf,
                    attrs=(
                        ("state", state),
                        ("salience", sal),
                        ("recall_frequency", rf),
                        ("decay_gradient", g),
                        ("ttl_policy", ttl),
                    ),
                ),
            ),
        ),
        0.0,
    )
    prev = pol.strength(0.0)[row]
    was_archived = False
    for d in range(1, nights + 1):
        pol.maintain(float(d), ["nightly"] + (["weekly"] if d % 7 == 0 else []))
        now = pol.strength(float(d))[row]
        assert 0.0 <= now <= prev + 1e-15 <= 1.0 + 1e-15
        prev = now
        status = pol.store.status_of(row)
        assert not (was_archived and status != "archived")
        was_archived = status == "archived"


@settings(max_examples=30)
@given(times=st.lists(st.floats(0.01, 30), min_size=1, max_size=15), conf=st.floats(0, 1))
def test_cosmo_access_caps_and_transitions(times, conf):
    pol = cosmo()
    row = pol.plant(Episode("p", 0.0, "x", (Claim("a.b", "v", confidence=conf),)), 0.0)
    t = 0.0
    for i, dt in enumerate(times, 1):
        t += dt
        pol.recall([Query(f"q{i}", t, "a b", keys=("a.b",), k=1)], t)
        s = pol.store
        assert (
            s["salience"][row] <= 1.0 and s["access_count"][row] == i == s["recall_frequency"][row]
        )
        assert s.status_of(row) == ("core" if i >= 10 else "active")


COSMO_MOVES = {
    "candidate": {"active", "core", "archived", "deleted"},
    "active": {"core", "archived", "deleted"},
    "core": {"active", "archived", "deleted"},
    "archived": {"active", "core", "deleted"},
    "deleted": set(),
}


class CosmoMachine(PolicyMachine):
    """Mentions, recalls, nightly/weekly jobs and forgets in any order."""

    MOVES = COSMO_MOVES

    def __init__(self) -> None:
        super().__init__()
        self.pol = cosmo(include_archived=True)
        self.accesses: dict[int, int] = {}

    @rule(
        topic=st.sampled_from(TOPICS),
        value=st.sampled_from(VALUES),
        conf=st.sampled_from([0.5, 0.75, 0.9]),
    )
    def mention(self, topic, value, conf):
        self.pol.ingest(
            [
                Episode(
                    f"e{self.n_eps}",
                    self.t,
                    f"{topic} {value}",
                    (Claim(topic, value, confidence=conf),),
                )
            ],
            self.t,
        )
        self.n_eps += 1

    @rule(days=st.integers(1, 20))
    def nights(self, days):
        for _ in range(days):
            self.t = math.floor(self.t) + 1.0
            before = self.pol.strength(self.t).copy()
            jobs = ["nightly"] + (["weekly"] if int(self.t) % 7 == 0 else [])
            self.pol.maintain(self.t, jobs)
            after = self.pol.strength(self.t)
            assert np.all(after <= before + 1e-12)  # maintenance never raises salience

    @rule(topic=st.sampled_from(TOPICS), k=st.integers(1, 5))
    def recall(self, topic, k):
        r = self.pol.recall(
            [Query(f"q{self.t}-{topic}-{k}-{self.n_eps}", self.t, topic, keys=(topic,), k=k)],
            self.t,
        )[0]
        assert len(r.ids) <= k
        for i in r.ids.tolist():
            self.accesses[i] = self.accesses.get(i, 0) + 1

    @invariant()
    def consistent(self):
        s = self.pol.store
        for r in range(s.n):
            self.move_ok(r)
            assert s["access_count"][r] == self.accesses.get(r, 0)
        sal = self.pol.strength(self.t)
        assert np.all((sal >= 0) & (sal <= 1.0))
        assert np.all(s["salience"] <= 1.0)


CosmoMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
TestCosmoMachine = CosmoMachine.TestCase
