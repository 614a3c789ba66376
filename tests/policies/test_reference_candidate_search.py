"""Ingest-time searches through the candidate index: the reference models'
repetition scan (the argmax's row, ties to the lower row, and its float32 product bit for bit)
and Personal AI's findSimilarBeliefs (000 §1: the similar_limit rows its decisions read) give
the full scan's decisions; the ingest-decision audit, copies, same seed same bytes."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scenarios
from benchmarks.fingerprint import digest as _digest
from memsim.engine.events import Episode
from memsim.engine.mockllm import MockLLM
from memsim.engine.registry import make
from memsim.engine.runner import run

SPEC = "synthetic:steady,episodes=600"


def _run(policy_id: str, spec: str = SPEC, **index):
    pol = make(policy_id, llm=MockLLM(seed=0), seed=0)
    if index:
        pol.use_index("ivf", **index)
    return pol, run(pol, scenarios.load(spec))


@pytest.mark.parametrize("policy_id", ["actr", "fsrs", "memorybank", "pai", "pai-code"])
def test_through_the_index_every_decision_equals_the_full_scan(policy_id):
    """Every probed list (nprobe above nlist): each indexed decision, audited, equals the
    full scan's, and the whole run (trace and store, bytes) equals the exact run."""
    exact_pol, exact_trace = _run(policy_id)
    pol, trace = _run(policy_id, min_rows=100, nprobe=10_000, audit_every=1)
    audit = pol.index_audit()
    assert audit["searches"] >= 300 and audit["decisions_checked"] == audit["searches"]
    assert audit["decisions_differ"] == 0
    assert _digest(pol, trace) == _digest(exact_pol, exact_trace)


@pytest.mark.parametrize(
    "policy_id, spec, checked",
    [("actr", "synthetic:churn", 300), ("pai", "synthetic:churn,episodes=1000", 500)],
)
def test_the_default_probes_stay_within_the_audit_bar(policy_id, spec, checked):
    """The index's default probes (16 lists) for the reference models' range search and
    Personal AI's top-k, forced on from 100 rows, every decision audited."""
    nprobe = make(policy_id).candidates.nprobe
    pol, _ = _run(policy_id, spec, min_rows=100, audit_every=1, nprobe=nprobe)
    audit = pol.index_audit()
    assert audit["nprobe"] == nprobe
    assert audit["decisions_checked"] >= checked
    assert audit["decision_differ_share"] <= 0.01, audit


def test_exact_mode_never_searches_the_index():
    plain, plain_trace = _run("actr")  # the default index, below its 5,000 rows
    small, small_trace = _run("actr", min_rows=10**9)  # ivf asked for, store never that large
    assert plain.index_audit()["searches"] == 0 and small.index_audit()["searches"] == 0
    assert _digest(plain, plain_trace) == _digest(small, small_trace)
    exact = make("actr", llm=MockLLM(seed=0), seed=0)
    exact.use_index("exact")
    exact_trace = run(exact, scenarios.load(SPEC))
    assert exact.index_audit()["searches"] == 0
    assert _digest(exact, exact_trace) == _digest(plain, plain_trace)


# memorybank-code is not among them: its every dialog turn is a new memory (no repetition scan)
REFERENCE = ["actr", "actr-spacing", "fsrs", "ebisu", "memorybank"]


def test_the_reference_models_and_pai_search_through_the_index_by_default():
    """The index is the default where it was measured to pay: the reference models'
    per-claim repetition scan through the exact cones from 2,000 stored rows, Personal AI's
    findSimilarBeliefs through faiss from 5,000 (docs/performance.md); every other policy
    scans exactly unless told."""
    for pid in REFERENCE:
        c = make(pid).candidates
        assert (c.mode, c.min_rows) == ("cones", 2000), pid
    for pid in ["pai", "pai-code"]:
        c = make(pid).candidates
        assert (c.mode, c.min_rows, c.audit_every, c.nprobe) == ("ivf", 5000, 10, 16), pid
        # the reinforcement check's range search: the repetition check's cones
        assert (make(pid).reinforcing.mode, make(pid).reinforcing.min_rows) == ("cones", 2000)
    for pid in ["keep-all", "recency", "izzie", "kernle", "engram", "cosmo"]:
        assert make(pid).candidates.mode == "exact", pid
    pol = make("fsrs")
    pol.use_index("exact")
    assert pol.candidates.mode == "exact"
    # the defaults are shared by every policy of a class: read-only, so no run can change
    # another's
    with pytest.raises(TypeError):
        type(pol).default_index["min_rows"] = 100
    with pytest.raises(TypeError):
        type(make("izzie")).default_index["mode"] = "ivf"
    assert make("actr").candidates.min_rows == 2000


@pytest.mark.parametrize("policy_id", REFERENCE)
def test_through_the_cones_a_run_is_the_full_scans_byte_for_byte(policy_id):
    """The cones (forced on from 100 rows) answer the repetition check exactly: the run's
    trace and store equal the exact run's, bytes included; nothing is approximate, so no
    search is audited."""
    exact_pol, exact_trace = _run(policy_id)
    pol = make(policy_id, llm=MockLLM(seed=0), seed=0)
    pol.use_index("cones", min_rows=100)
    answered = []
    rows_near = pol.candidates.rows_near

    def counted(vector, threshold, mask):
        got = rows_near(vector, threshold, mask)
        answered.append(got is not None)
        return got

    pol.candidates.rows_near = counted  # type: ignore[method-assign]
    trace = run(pol, scenarios.load(SPEC))
    assert sum(answered) >= 300
    audit = pol.index_audit()
    assert audit["mode"] == "cones" and audit["trainings"] >= 2
    assert audit["searches"] == audit["checked"] == audit["decisions_checked"] == 0
    assert _digest(pol, trace) == _digest(exact_pol, exact_trace)


def test_a_run_the_default_index_answered_reports_its_audit(monkeypatch):
    """The exactness audit goes into the run's summary and manifest whenever the index
    answered, asked for or by default; a run it never answered carries none."""
    from memsim.workbench.runs import execution
    from memsim.workbench.runs.results import RunDef
    from policies.reference import ReferencePolicy

    d = RunDef("actr", SPEC, 0)
    quiet = execution.execute(d)
    assert "index_decision_differ_share" not in quiet.summary
    assert "index_audit" not in quiet.manifest
    monkeypatch.setattr(ReferencePolicy, "default_index", {"mode": "ivf", "min_rows": 100})
    got = execution.execute(d)
    assert got.manifest["index_audit"]["searches"] >= 300
    assert got.manifest["index_audit"]["decisions_checked"] >= 30
    assert got.summary["index_decision_differ_share"] <= 0.01


def _planted_ties():
    """An actr policy through the index with three live rows (same offset in their blocks of
    four, so the BLAS product computes them alike) holding one vector u: a tie at the top."""
    pol, _ = _run("actr", min_rows=100, nprobe=10_000, audit_every=1)
    s = pol.store
    live = pol._live()
    r = next(
        int(i)
        for i in np.flatnonzero(live)
        if i + 8 < (s.n // 4) * 4 and live[i + 4 : i + 9 : 4].all()
    )
    rows = np.array([r, r + 4, r + 8])
    u = np.random.default_rng(1).standard_normal(s.dim).astype(np.float32)
    u /= np.linalg.norm(u)
    s.set_embedding(rows, np.repeat(u[None, :], 3, axis=0))
    sims = s.embedding @ u
    assert sims[rows[0]] == sims[rows[1]] == sims[rows[2]] == sims[live].max()
    return pol, rows, u, live


def test_a_tie_goes_to_the_lower_row_with_the_full_scans_product():
    pol, rows, u, live = _planted_ties()
    want_row, want_sim = pol._repetition_exact(u, live)
    assert want_row == rows[0]
    before = pol.index_audit()["decisions_checked"]
    got_row, got_sim = pol._repetition(u, live)
    assert (got_row, got_sim.tobytes()) == (want_row, want_sim.tobytes())
    audit = pol.index_audit()
    assert audit["decisions_checked"] == before + 1 and audit["decisions_differ"] == 0
    # the planted repetition reinforces the lowest of the tied rows through ingest too
    ep = Episode(id="tie", time=400.0, text="x", claims=())
    pol.llm = _FixedLLM(u)
    (out,) = pol.ingest([ep], 400.0)
    assert (out.action, out.memory) == ("reinforce", rows[0])


def test_the_audit_catches_a_tie_broken_to_the_higher_row(monkeypatch):
    """A candidate index that broke the tie to the higher row (its rows in descending order)
    would reinforce another memory: the comparison above fails on it and the audit counts
    it."""
    pol, rows, u, live = _planted_ties()
    real = pol.candidates.rows_near

    def descending(vector, threshold, mask):
        found, sims = real(vector, threshold, mask)
        return found[::-1], sims[::-1]

    monkeypatch.setattr(pol.candidates, "rows_near", descending)
    got_row, _ = pol._repetition(u, live)
    assert got_row == rows[-1] != pol._repetition_exact(u, live)[0]
    assert pol.index_audit()["decisions_differ"] == 1


class _FixedLLM:
    """One claim per episode, embedded to a fixed vector."""

    def __init__(self, vector):
        self.vector = vector
        self.seed = 0

    def extract(self, episode):
        from memsim.engine.events import Claim

        return (Claim(key="t.t", value="1"),)

    def embed(self, items, keys):
        from memsim.engine.llm import Embedded

        return Embedded(
            np.repeat(self.vector[None, :], len(items), axis=0), np.ones(len(items), bool)
        )


@pytest.mark.parametrize("mode, knobs", [("ivf", {"audit_every": 1}), ("cones", {})])
def test_copies_of_a_policy_through_the_index_decide_alike(mode, knobs):
    """deepcopy and pickle keep the trained index: the copies' later decisions and audits
    equal the original's."""
    pol = make("actr", llm=MockLLM(seed=0), seed=0)
    pol.use_index(mode, min_rows=100, **knobs)
    run(pol, scenarios.load(SPEC))
    assert pol.index_audit()["trainings"] >= 1
    twins = [pol, copy.deepcopy(pol), pickle.loads(pickle.dumps(pol))]
    again = [e for e in scenarios.load(SPEC).events if isinstance(e, Episode)][:200]
    outs = []
    for p in twins:
        got = [(o.action, o.memory) for o in p.ingest(again, 500.0)]
        outs.append((got, p.index_audit(), p.store.embedding.tobytes()))
    assert outs[0] == outs[1] == outs[2]
    assert sum(a == "reinforce" for a, _ in outs[0][0]) > 0


def test_same_seed_same_bytes_through_the_index():
    a = _digest(*_run("actr-spacing", min_rows=100, audit_every=3))
    b = _digest(*_run("actr-spacing", min_rows=100, audit_every=3))
    assert a == b


def _planted_pai(seed: int, n: int, groups: list[tuple[int, float]], dups: int):
    """Personal AI (16 dimensions) over ``n`` random rows and, per (size, cosine) of
    ``groups``, that many rows at that cosine with a unit vector q, plus ``dups`` copies of
    one row at q's last group cosine (exact ties); a fifth of the rows invalidated, a tenth
    without an embedding. Its reinforcement check through the cones from 1 row."""
    from memsim.engine.candidate_index import CandidateIndex
    from policies.pai import PersonalAI

    rng = np.random.default_rng(seed)
    pol = PersonalAI(llm=MockLLM(seed=0, dim=16), seed=0)
    q = rng.standard_normal(16)
    q /= np.linalg.norm(q)
    # clustered, as claims about a few topics are (the cones then read a few lists)
    centers = rng.standard_normal((8, 16))
    rows = [centers[rng.integers(0, 8, n)] + 0.3 * rng.standard_normal((n, 16))]
    for size, cos in groups:
        w = rng.standard_normal((size, 16))
        w -= (w @ q)[:, None] * q
        w /= np.linalg.norm(w, axis=1, keepdims=True)
        rows.append(cos * q + math.sqrt(1 - cos**2) * w)
    if dups:
        rows.append(np.repeat(rows[-1][:1] if len(rows) > 1 else q[None, :], dups, axis=0))
    X = np.concatenate(rows)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = X[rng.permutation(len(X))]
    pol.store.add(
        0.0,
        X,
        texts=[f"m{i}" for i in range(len(X))],
        claims=[None] * len(X),
        provenance=[(f"e{i}",) for i in range(len(X))],
    )
    # rows whose embedding failed (never searched; written at creation, as _create does)
    # and invalidated rows, the planted ones among them
    pol.store["has_embedding"][rng.choice(len(X), len(X) // 10, replace=False)] = False
    pol.store.set_status(rng.choice(len(X), len(X) // 5, replace=False), "invalidated", 1.0)
    pol.reinforcing = CandidateIndex(pol.store, "cones", min_rows=1, seed=0)
    return pol, q.astype(np.float32), rng


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    groups=st.lists(
        st.tuples(
            st.integers(1, 6),
            st.sampled_from([0.97, 0.9, 0.86, 0.8502, 0.85, 0.8498, 0.7, 0.3]),
        ),
        max_size=3,
    ),
    dups=st.integers(0, 3),
)
def test_personal_ai_reinforcement_by_the_range_search_is_the_full_scans(seed, groups, dups):
    """PersonalAI._reinforced_in_range (the exact range search at reinforce_above through
    the cones) names the row and cosine the full scan's findSimilarBeliefs reinforces, or
    leaves the decision to it: rows at and around the threshold, exact ties, invalidated
    rows, rows added after the cones were made, vectors near q and random ones. A row
    apart from every other by far more than the rounding is always named."""
    pol, q, rng = _planted_pai(seed % 1000, 200, groups, dups)
    p = pol.params
    named: list[tuple[int, float]] = []

    def check(v: np.ndarray) -> None:
        top, sims = pol._similar(v, "t")  # a small store: the full scan
        want = (int(top[0]), float(sims[0])) if len(top) and sims[0] > p.reinforce_above else None
        got = pol._reinforced_in_range(v)
        assert got is None or got == want, (got, want)
        products = np.sort((pol.store.embedding @ v)[pol._searchable()])[::-1]
        answered = pol.reinforcing.rows_near(v, p.reinforce_above, pol._searchable())
        apart = products[0] - max(products[1], p.reinforce_above) > 1e-3
        if want is not None and apart and answered is not None:
            assert got == want
            named.append(got)

    vectors = [q, *(q + 0.05 * rng.standard_normal((3, 16)).astype(np.float32))]
    vectors += list(pol.store.embedding[rng.choice(pol.store.n, 3, replace=False)])
    for v in vectors:
        check(np.asarray(v / np.linalg.norm(v), dtype=np.float32))
    # rows added since the cones were made, one a copy of q's best row, and more invalidated
    best = int(np.argmax(np.where(pol._searchable(), pol.store.embedding @ q, -np.inf)))
    new = np.concatenate((pol.store.embedding[[best]], rng.standard_normal((3, 16))))
    new /= np.linalg.norm(new, axis=1, keepdims=True)
    pol.store.add(
        2.0, new, texts=list("abcd"), claims=[None] * 4, provenance=[(x,) for x in "abcd"]
    )
    pol.store.set_status(rng.choice(pol.store.n, 5, replace=False), "invalidated", 2.0)
    for v in vectors:
        check(np.asarray(v / np.linalg.norm(v), dtype=np.float32))
    assert named  # (a stored row's own vector, apart from the others, is named)


@pytest.mark.parametrize("policy_id", ["pai", "pai-code"])
def test_personal_ai_through_the_reinforcement_cones_a_run_is_the_full_scans(policy_id):
    """The reinforcement check through the cones (forced on from 100 rows) settles most of
    a run's beliefs, and the run's trace and store equal the full scans' bytes for bytes
    (use_index("exact") turns the check off)."""
    from memsim.engine.candidate_index import CandidateIndex

    spec = "synthetic:churn"
    exact = make(policy_id, llm=MockLLM(seed=0), seed=0)
    exact.use_index("exact")
    assert exact.reinforcing.mode == "exact"
    exact_trace = run(exact, scenarios.load(spec))
    pol = make(policy_id, llm=MockLLM(seed=0), seed=0)
    pol.reinforcing = CandidateIndex(pol.store, "cones", min_rows=100, seed=0)
    settled = []
    in_range = pol._reinforced_in_range

    def counted(vec, reach=None):
        got = in_range(vec, reach)
        settled.append(got is not None)
        return got

    pol._reinforced_in_range = counted  # type: ignore[method-assign]
    trace = run(pol, scenarios.load(spec))
    assert sum(settled) >= 500, sum(settled)
    assert _digest(pol, trace) == _digest(exact, exact_trace)
