"""Property tests for Izzie (003) and Kernle (004): hypothesis examples and one small
RuleBasedStateMachine per policy."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memsim.engine.events import Claim, Episode, Forget, Protect, Query, Recover
from memsim.engine.mockllm import MockLLM
from policies.izzie import CATEGORIES, Izzie, IzzieParams, strength_scalar, strength_vector
from policies.kernle import Kernle, KernleParams, salience_scalar, salience_vector

unit = st.floats(0.0, 1.0)
days = st.floats(0.0, 1000.0)
KEYS = ("owner.name", "owner.city", "work.team", "work.tool")


def _episode(
    i: int, t: float, key: str, category: str, importance: float = 0.7, confidence: float = 0.9
):
    return Episode(
        f"e{i}",
        t,
        f"{key} {i}",
        claims=(Claim(key, f"v{i % 2}", category, importance, confidence=confidence),),
    )


# ---------------------------------------------------------------------------- Izzie


@given(st.lists(st.tuples(unit, st.sampled_from(CATEGORIES), days), min_size=1, max_size=20))
def test_izzie_vector_equals_scalar_reference(rows):
    """003 §Memory Strength Calculation: vectorized strength == the scalar formula."""
    p = IzzieParams()
    imp = np.array([r[0] for r in rows])
    rate = np.array([p.decay_rate(r[1]) for r in rows])
    d = np.array([r[2] for r in rows])
    vec = strength_vector(imp, rate, d)
    for i, (a, c, t) in enumerate(rows):
        assert math.isclose(
            vec[i], strength_scalar(a, p.decay_rate(c), t), rel_tol=1e-12, abs_tol=1e-300
        )


@settings(max_examples=30)
@given(st.sampled_from(CATEGORIES), unit, st.lists(days, min_size=2, max_size=8))
def test_izzie_monotone_decay_at_the_category_rate(category, importance, times):
    """003 §Memory Categories & Decay Rates: without access, strength never rises and
    strength(t) / strength(0) = exp(-rate(category) x t)."""
    pol = Izzie(llm=MockLLM(seed=0, dim=16))
    pol.ingest([_episode(0, 0.0, "owner.name", category, importance)], 0.0)
    times = sorted(times)
    s = [pol.strength(t)[0] for t in times]
    assert all(b <= a for a, b in zip(s, s[1:]))
    rate = IzzieParams().decay_rate(category)
    for t, v in zip(times, s):
        assert math.isclose(v, importance * math.exp(-rate * t), rel_tol=1e-12, abs_tol=1e-300)


# ---------------------------------------------------------------------------- Kernle


@given(
    st.lists(st.tuples(unit, st.integers(0, 50), days), min_size=1, max_size=20),
    st.floats(0.1, 365.0),
)
def test_kernle_vector_equals_scalar_reference(rows, half_life):
    """004 §Salience Formula: vectorized salience == the scalar formula."""
    c = np.array([r[0] for r in rows])
    n = np.array([r[1] for r in rows], dtype=np.float64)
    d = np.array([r[2] for r in rows])
    vec = salience_vector(c, n, d, half_life)
    for i, (a, k, t) in enumerate(rows):
        assert math.isclose(
            vec[i], salience_scalar(a, k, t, half_life), rel_tol=1e-12, abs_tol=1e-300
        )


@settings(max_examples=30)
@given(unit, st.integers(0, 6), st.floats(0.0, 60.0), st.floats(0.0, 2.0))
def test_kernle_threshold_exact(confidence, accesses, age, threshold):
    """004 §Forgetting Cycle: a memory is a candidate iff salience < threshold (strict)."""
    pol = Kernle(KernleParams(forgetting_threshold=threshold), llm=MockLLM(seed=0, dim=16))
    pol.ingest([_episode(0, 0.0, "owner.name", "fact", confidence=confidence)], 0.0)
    pol.store["access_count"][0] = accesses
    sal = salience_scalar(confidence, accesses, age, 30.0)
    pol.maintain(age, ["forget"])
    assert (pol.store.status_of(0) == "forgotten") == (sal < threshold)


@settings(max_examples=30)
@given(
    st.lists(
        st.tuples(st.sampled_from(KEYS), st.sampled_from(("fact", "event", "value", "note"))),
        min_size=1,
        max_size=6,
    ),
    st.data(),
)
def test_kernle_protected_never_forgotten_and_recover_restores(items, data):
    """004 §Protection and §Forgetting System: protected memories survive every cycle;
    recover() brings a tombstoned memory back to active, with its provenance."""
    pol = Kernle(llm=MockLLM(seed=1, dim=16))
    pol.ingest([_episode(i, 0.0, k, c) for i, (k, c) in enumerate(items)], 0.0)
    protect = data.draw(st.sets(st.integers(0, len(items) - 1)))
    pol.protect([Protect(f"p{i}", 0.0, f"e{i}") for i in sorted(protect)], 0.0)
    for t in (7.0, 14.0, 21.0):
        pol.maintain(t, ["forget"])
    for r in range(len(items)):
        if pol.store["protected"][r]:
            assert pol.store.status_of(r) == "active"
        else:
            assert pol.store.status_of(r) == "forgotten"  # the finding: never accessed
            pol.recover([Recover(f"r{r}", 22.0, f"e{r}")], 22.0)
            assert pol.store.status_of(r) == "active" and pol.store.provenance[r] == {f"e{r}"}


# ---------------------------------------------------------------------------- state machines


class _Machine(RuleBasedStateMachine):
    """Shared rules: episodes, queries, time, user forget. Subclasses add their invariants."""

    policy_cls: type = Izzie

    def __init__(self) -> None:
        super().__init__()
        self.pol = self.policy_cls(llm=MockLLM(seed=2, dim=16))
        self.now = 0.0
        self.n_ep = 0
        self.terminal_seen: dict[int, int] = {}  # row -> status code once terminal
        self.last_tick = 0.0

    @rule(
        key=st.sampled_from(KEYS),
        category=st.sampled_from(CATEGORIES + ("value", "drive")),
        importance=unit,
        confidence=unit,
    )
    def add(self, key, category, importance, confidence):
        e = _episode(self.n_ep, self.now, key, category, importance, confidence)
        self.n_ep += 1
        self.pol.ingest([e], self.now)

    @rule(key=st.sampled_from(KEYS), k=st.integers(1, 3))
    def query(self, key, k):
        before = self.pol.store["access_count"].copy()
        r = self.pol.recall(
            [Query(f"q{self.now}-{key}", self.now, "?", keys=(key,), k=k)], self.now
        )[0]
        assert len(r.ids) <= k
        assert self.pol.store.retrievable()[r.ids].all()
        after = self.pol.store["access_count"]
        assert np.array_equal(after[r.ids], before[r.ids] + 1)

    @rule(dt=st.floats(0.0, 20.0))
    def advance(self, dt):
        old = self.pol.strength(self.now).copy()
        self.now += dt
        self.tick()
        # no rise without access (time passing never raises strength)
        assert (self.pol.strength(self.now) <= old + 1e-12).all()

    def tick(self):
        pass

    @precondition(lambda self: self.n_ep > 0)
    @rule(data=st.data())
    def forget(self, data):
        i = data.draw(st.integers(0, self.n_ep - 1))
        self.pol.forget([Forget(f"f{self.now}-{i}", self.now, f"e{i}")], self.now)

    @invariant()
    def strength_finite_in_range(self):
        s = self.pol.strength(self.now)
        lo, hi = self.pol.strength_range
        assert s.shape == (self.pol.store.n,) and np.isfinite(s).all()
        assert ((s >= lo) & (s <= hi)).all()

    @invariant()
    def terminal_stays_terminal(self):
        st_ = self.pol.store
        terminal = set(st_.statuses.codes(st_.statuses.terminal).tolist())
        for r, code in self.terminal_seen.items():
            assert st_["status"][r] == code
        for r in range(st_.n):
            if int(st_["status"][r]) in terminal:
                self.terminal_seen[r] = int(st_["status"][r])


class IzzieMachine(_Machine):
    policy_cls = Izzie

    @invariant()
    def strength_matches_scalar_reference(self):
        s = self.pol.store
        got = self.pol.strength(self.now)
        for r in range(s.n):
            last = s["created"][r] if np.isnan(s["last_access"][r]) else s["last_access"][r]
            want = strength_scalar(s["importance"][r], s["decay_rate"][r], self.now - last)
            assert math.isclose(got[r], want, rel_tol=1e-12, abs_tol=1e-300)


class KernleMachine(_Machine):
    policy_cls = Kernle

    def tick(self):
        """Run the maintenance ticks due in (last_tick, now], as the runner would; the cycle
        never forgets a protected row (004 §Protection)."""
        from memsim.engine.runner import tick_times

        for t, jobs in tick_times(tuple(self.pol.schedule), self.last_tick):
            if t > self.now:
                break
            for o in self.pol.maintain(t, jobs):
                if o.action == "forget":
                    assert not self.pol.store["protected"][o.memory]
                    assert self.pol.strength(t)[o.memory] < self.pol.params.forgetting_threshold
        self.last_tick = self.now

    @precondition(lambda self: self.n_ep > 0)
    @rule(data=st.data())
    def protect(self, data):
        i = data.draw(st.integers(0, self.n_ep - 1))
        self.pol.protect([Protect(f"p{self.now}-{i}", self.now, f"e{i}")], self.now)

    @precondition(lambda self: self.n_ep > 0)
    @rule(data=st.data())
    def recover(self, data):
        i = data.draw(st.integers(0, self.n_ep - 1))
        rows = [
            r
            for r in self.pol.store.rows_from(f"e{i}").tolist()
            if self.pol.store.status_of(r) == "forgotten"
        ]
        self.pol.recover([Recover(f"r{self.now}-{i}", self.now, f"e{i}")], self.now)
        assert all(self.pol.store.status_of(r) == "active" for r in rows)

    @rule(dt=st.floats(0.0, 20.0))
    def advance(self, dt):
        # salience may not rise with time either, but the tick can tombstone rows; check
        # the rows that stay put
        old = self.pol.strength(self.now).copy()
        n = self.pol.store.n
        self.now += dt
        self.tick()
        assert (self.pol.strength(self.now)[:n] <= old + 1e-12).all()

    @invariant()
    def superseded_is_inactive(self):
        s = self.pol.store
        for r in range(s.n):
            assert (s.status_of(r) == "superseded") == (not s["is_active"][r])

    @invariant()
    def salience_matches_scalar_reference(self):
        s = self.pol.store
        got = self.pol.strength(self.now)
        for r in range(s.n):
            last = s["created"][r] if np.isnan(s["last_access"][r]) else s["last_access"][r]
            want = salience_scalar(s["confidence"][r], s["access_count"][r], self.now - last, 30.0)
            assert math.isclose(got[r], want, rel_tol=1e-12, abs_tol=1e-300)


_settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
TestIzzieMachine = IzzieMachine.TestCase
TestIzzieMachine.settings = _settings
TestKernleMachine = KernleMachine.TestCase
TestKernleMachine.settings = _settings
