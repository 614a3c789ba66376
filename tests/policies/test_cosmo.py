"""Cosmo (seed 002) unit tests; each names the document section it checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.errors import MemsimError
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.llm import Modes
from memsim.engine.mockllm import MockLLM
from policies.cosmo import Cosmo, CosmoParams, decay_rate
from tests.policies.test_engram import StubLLM

DIM = 64


def make(**params) -> Cosmo:
    return Cosmo(CosmoParams(**params), llm=StubLLM(DIM))


def ep(
    i, t, key="topic.fact", value="v", speaker="user", confidence=0.9, category="fact", **attrs
) -> Episode:
    return Episode(
        f"e{i}",
        float(t),
        f"{key} {value}",
        (Claim(key, value, category=category, confidence=confidence, attrs=tuple(attrs.items())),),
        speaker=speaker,
    )


def plant(pol: Cosmo, i=0, t=0.0, key="topic.fact", confidence=0.9, **attrs) -> int:
    return pol.plant(
        ep(i, t, key, confidence=confidence, **{k: str(v) for k, v in attrs.items()}), t
    )


def node(pol: Cosmo, key="topic.fact", kind="entity", user="user") -> int:
    return pol.node_of[(user, kind, key)]


def ask(pol: Cosmo, t: float, key="topic.fact", k=1, qid=None):
    return pol.recall([Query(qid or f"q{t}", float(t), key, keys=(key,), k=k)], float(t))[0]


# -- §Phase 2 Step 1-2 and §Initial Values --------------------------------------------------------
def test_initial_values_and_owner_node():
    pol = make()
    pol.ingest([ep(0, 0.0)], 0.0)
    s, n = pol.store, node(pol)
    assert (
        s.status_of(n) == "candidate" and s["salience"][n] == 0.5 and s["decay_gradient"][n] == 1.0
    )
    assert (
        s["recall_frequency"][n] == 0
        and s["access_count"][n] == 0
        and np.isnan(s["last_access"][n])
    )
    assert s["last_recall_interval"][n] == 0 and s["confidence"][n] == 0.9
    owner = pol.owner_of["user"]
    assert (
        s.status_of(owner) == "core"
        and s["salience"][owner] == 1.0
        and s["confidence"][owner] == 1.0
    )
    assert pol.strength(1000.0)[owner] == 1.0  # keep_forever
    src = np.flatnonzero(s["kind"] == s.kind_code("source"))[0]
    assert s.status_of(src) == "candidate" and np.isnan(s["confidence"][src])


@pytest.mark.parametrize(
    "confidence, subpoints, kept",
    [(0.7, None, True), (0.69, None, False), (0.9, 3, True), (0.9, 2, False)],
)
def test_extraction_filter(confidence, subpoints, kept):
    """confidence >= 7/10 and more than 2 subpoints (002 §Phase 2 Step 1)."""
    pol = make()
    extra = {} if subpoints is None else {"subpoints": subpoints}
    pol.ingest([ep(0, 0.0, confidence=confidence, **extra)], 0.0)
    assert (("user", "entity", "topic.fact") in pol.node_of) is kept


def test_text_only_claims_make_no_semantic_node():
    pol = make()
    pol.ingest([Episode("x", 0.0, "just chatting about nothing")], 0.0)
    assert pol.store.n == 2  # owner + source


def test_merge_same_canonical_name_same_node_per_user():
    pol = make()
    pol.ingest([ep(0, 0.0, value="a")], 0.0)
    pol.ingest([ep(1, 2.0, value="b")], 2.0)
    pol.ingest([ep(2, 2.0, speaker="other")], 2.0)
    n = node(pol)
    assert pol.store["updated"][n] == 2.0 and pol.store.provenance[n] == {"e0", "e1"}
    assert node(pol, user="other") != n
    assert pol.store["source_count"][n] == 2 and pol.store["distinct_days"][n] == 2


def test_category_maps_to_node_kind():
    pol = make()
    pol.ingest(
        [ep(0, 0.0, "a.b", category="relationship"), ep(1, 0.0, "c.d", category="preference")], 0.0
    )
    assert ("user", "person", "a.b") in pol.node_of and ("user", "concept", "c.d") in pol.node_of


# -- §Salience Updates and §Transition Rules -------------------------------------------------------
def test_retrieval_updates_and_state_transitions():
    pol = make()
    n = plant(pol, confidence=0.9)
    ask(pol, 1.0)
    s = pol.store
    assert (
        s["access_count"][n] == 1 and s["recall_frequency"][n] == 1 and s["last_access"][n] == 1.0
    )
    assert s["salience"][n] == pytest.approx(0.6) and s.status_of(n) == "active"
    for t in range(2, 10):
        ask(pol, float(t))
    assert s.status_of(n) == "active" and s["access_count"][n] == 9
    ask(pol, 10.0)
    assert s.status_of(n) == "core"
    assert s["salience"][n] == 1.0  # capped


def test_access_boost_range_is_documented():
    with pytest.raises(MemsimError):
        CosmoParams(access_boost=0.2)
    with pytest.raises(MemsimError):
        CosmoParams(access_boost=0.04)


def test_archived_reaccess_only_on_include_archived_path():
    for include, state in ((False, "archived"), (True, "active")):
        pol = make(include_archived=include)
        n = plant(pol, state="archived", salience=0.005)
        r = ask(pol, 1.0)
        assert pol.store.status_of(n) == state
        assert (n in r.ids.tolist()) is include


# -- §Offline/Nightly Decay Job and §Candidate Semantics -------------------------------------------
def test_decay_rate_boundaries():
    kw = dict(base_rate=0.02, confident=0.8, penalty=2.0)
    rf = np.array([0, 0, 0, 0, 5])
    g = np.array([1.0, 1.0, 1.0, -0.5, 1.5])
    cand = np.array([True, True, False, True, False])
    conf = np.array([0.8, 0.79, 0.1, 0.5, 0.1])
    r = decay_rate(rf, g, cand, conf, **kw)
    assert r[0] == 0.0  # >= 0.8: no decay
    assert r[1] == pytest.approx(0.02 * (1 + 0.21 * 2))  # < 0.8: penalty
    assert r[2] == 0.02  # active: confidence ignored
    assert r[3] == 0.0  # rf = 0, g < 0: 0^g = inf, rate 0 (the limit)
    assert r[4] == pytest.approx(0.02 / (1 + 5**1.5))


def test_decay_rate_matches_scalar_reference():
    from policies.cosmo_claims import _frequent_salience  # noqa: F401  (module imports cleanly)

    rng = np.random.default_rng(0)
    rf = rng.integers(0, 20, 200)
    g = rng.uniform(0.5, 2.5, 200)
    cand = rng.random(200) < 0.5
    conf = rng.random(200)
    vec = decay_rate(rf, g, cand, conf, base_rate=0.02, confident=0.8, penalty=2.0)
    for i in range(200):
        base = 0.02 / (1 + rf[i] ** g[i])
        if cand[i]:
            ref = 0.0 if conf[i] >= 0.8 else base * (1 + (1 - conf[i]) * 2)
        else:
            ref = base
        assert vec[i] == pytest.approx(ref, rel=1e-12)


def test_spacing_effect_on_decay_gradient():
    pol = make()
    n = plant(pol, state="active")
    g = pol.store["decay_gradient"]
    ask(pol, 5.0)  # interval 5 > 0: +0.1
    assert g[n] == pytest.approx(1.1)
    ask(pol, 10.0)  # 5 == 5: unchanged
    assert g[n] == pytest.approx(1.1)
    ask(pol, 12.0)  # 2 < 5: -0.05
    assert g[n] == pytest.approx(1.05)
    assert pol.store["last_recall_interval"][n] == 2.0


def test_archive_strictly_below_001():
    pol = make()
    keep = plant(pol, 0, key="a.x", confidence=0.9, salience=0.01)
    gone = plant(pol, 1, key="b.x", confidence=0.9, salience=0.0099)
    pol.maintain(1.0, ["nightly"])
    assert pol.store.status_of(keep) == "candidate" and pol.store.status_of(gone) == "archived"


def test_closed_form_vs_nightly_compounding():
    closed, nightly = make(), make(decay_mode="nightly")
    a = plant(closed, state="active")
    b = plant(nightly, state="active")
    for d in range(1, 4):
        closed.maintain(float(d), ["nightly"])
        nightly.maintain(float(d), ["nightly"])
    assert closed.strength(3.0)[a] == pytest.approx(0.5 * math.exp(-0.02 * 3))
    assert nightly.strength(3.0)[b] == pytest.approx(0.5 * math.exp(-0.02 * (1 + 2 + 3)))


def test_strength_never_rises_at_archival():
    pol = make()
    n = plant(pol, confidence=0.4)
    before = pol.strength(89.0)[n]
    for d in range(1, 91):
        pol.maintain(float(d), ["nightly"])
    assert pol.store.status_of(n) == "archived"
    assert pol.strength(89.0)[n] <= before + 1e-15 and pol.strength(90.0)[n] < pol.strength(89.0)[n]


# -- §TTL Policy Table -----------------------------------------------------------------------------
def test_ttl_precedence():
    pol = make()
    forever = plant(pol, 0, key="a.x", confidence=0.3, ttl_policy="keep_forever", salience=0.001)
    eph_src = plant(pol, 1, key="b.x", kind="source", ttl_policy="ephemeral", salience=1.0)
    eph_sem = plant(pol, 2, key="c.x", confidence=0.9, ttl_policy="ephemeral", salience=1.0)
    s = pol.store
    assert s["salience"][forever] == 1.0
    for d in range(1, 30):
        pol.maintain(float(d), ["nightly"])
    assert s.status_of(eph_src) == "candidate"
    pol.maintain(30.0, ["nightly"])
    assert s.status_of(eph_src) == "archived"  # 30 days episodic, despite high salience
    for d in range(31, 90):
        pol.maintain(float(d), ["nightly"])
    assert s.status_of(eph_sem) == "candidate"
    pol.maintain(90.0, ["nightly"])
    assert s.status_of(eph_sem) == "archived"  # 90 days semantic
    assert s.status_of(forever) == "candidate" and pol.strength(400.0)[forever] == 1.0


def test_bad_ttl_policy_is_a_clear_error():
    with pytest.raises(MemsimError, match="ttl_policy"):
        make().ingest([ep(0, 0.0, ttl_policy="sometimes")], 0.0)


# -- §Hierarchical Memory Promotion ----------------------------------------------------------------
def _mentions(pol, days, key="topic.fact", start=0):
    for j, d in enumerate(days):
        pol.ingest([ep(start + j, d, key)], d)


def _activate(pol, t, key="topic.fact"):
    n = node(pol, key)
    pol.access(np.array([n]), t)
    return n


def test_storyline_promotion_rules():
    pol = make()
    _mentions(pol, [0.0, 0.5, 1.0, 2.0, 2.5])
    n = _activate(pol, 2.9)
    assert pol.storyline_candidates(3.0).tolist() == []  # first mention exactly 3 days ago
    assert pol.storyline_candidates(3.01).tolist() == [n]
    out = pol.promote_storylines(4.0)
    st = out[0].memory
    assert pol.store.kinds[pol.store["kind"][st]] == "storyline" and pol.store["has_meso"][n]
    assert pol.store.provenance[st] == {f"e{i}" for i in range(5)}
    assert pol.storyline_candidates(5.0).tolist() == []  # has_meso


@pytest.mark.parametrize(
    "days, activate",
    [
        ([0.0, 0.5, 1.0, 2.0], True),  # 4 sources
        ([0.0, 0.2, 0.5, 1.0, 1.5], True),  # 2 distinct days
        ([0.0, 0.5, 1.0, 2.0, 2.5], False),
    ],
)  # candidate anchor
def test_storyline_promotion_needs_every_gate(days, activate):
    pol = make()
    _mentions(pol, days)
    if activate:
        _activate(pol, 3.0)
    assert pol.storyline_candidates(10.0).tolist() == []


def test_source_attaches_to_storyline_and_refresh_clears_dirty():
    pol = make()
    _mentions(pol, [0.0, 1.0, 2.0, 2.5, 2.6])
    _activate(pol, 3.0)
    st = pol.promote_storylines(4.0)[0].memory
    _mentions(pol, [5.0], start=50)
    assert pol.store["is_dirty"][st] and "e50" in pol.store.provenance[st]
    assert pol.store["source_count"][st] == 6 and pol.store["last_source_at"][st] == 5.0
    pol.refresh_storylines(6.0)
    assert not pol.store["is_dirty"][st]


def test_macro_promotion_rules_and_single_storyline_finding():
    """Weekly Macro: >= 2 storylines about an anchor, first mention > 30 days ago. With
    has_meso an anchor gets one storyline, so the documented flow never reaches two."""
    pol = make()
    _mentions(pol, [0.0, 1.0, 2.0, 2.5, 2.6])
    n = _activate(pol, 3.0)
    st = pol.promote_storylines(4.0)[0].memory
    assert pol.macro_candidates(40.0) == []
    # a second storyline about the same anchor (not reachable through the documented jobs)
    pol.store["has_meso"][n] = False
    st2 = pol.promote_storylines(5.0)[0].memory
    assert pol.macro_candidates(30.0) == []  # exactly 30 days: not more than 30
    assert pol.macro_candidates(30.5) == [(n, [st, st2])]
    m = pol.promote_macros(31.0)[0].memory
    assert pol.store.kinds[pol.store["kind"][m]] == "macro" and pol.store["has_macro"][n]
    _mentions(pol, [32.0], start=90)
    assert pol.store["is_dirty"][m]
    pol.refresh_macros(33.0)
    assert not pol.store["is_dirty"][m]


def test_granularity_selects_level():
    pol = make(granularity=2)
    _mentions(pol, [0.0, 1.0, 2.0, 2.5, 2.6])
    _activate(pol, 3.0)
    st = pol.promote_storylines(4.0)[0].memory
    r = ask(pol, 5.0, k=5)
    assert r.ids.tolist() == [st]


# -- §Memory Consolidation (episodic -> semantic) --------------------------------------------------
def test_episodic_consolidation():
    pol = make()
    pol.ingest([ep(0, 0.0)], 0.0)
    src = int(np.flatnonzero(pol.store["kind"] == pol.store.kind_code("source"))[0])
    n = node(pol)
    pol.refresh_descriptions(0.5)
    pol.store["salience0"][src] = 0.19
    assert pol.consolidate_episodic(7.0) == []  # not older than 7 days
    out = pol.consolidate_episodic(7.5)
    assert [o.memory for o in out] == [src] and pol.store.status_of(src) == "archived"
    assert "e0" in pol.store.provenance[n] and pol.store["is_dirty"][n]


# -- §Nightly Description Consolidation --------------------------------------------------------
@pytest.mark.parametrize("mode, value", [("latest", "c"), ("first", "a"), ("majority", "b")])
def test_description_is_the_llms_synthesis_of_the_notes_in_date_order(mode, value):
    """002 §Nightly Description Consolidation: "Gather current description + all notes
    (sorted by date_added)", "LLM synthesizes updated description", "Regenerate embedding from
    updated description". The notes a, b, b, c (in that order) go to the LLM's synthesize;
    which value the description states is the mock's modes.synthesis, not Cosmo's choice."""
    llm = MockLLM(seed=0, modes=Modes(synthesis=mode))
    pol = Cosmo(CosmoParams(), llm=llm)
    for i, v in enumerate(["a", "b", "b", "c"]):
        pol.ingest([ep(i, i * 0.1, value=v)], i * 0.1)
    n = node(pol)
    assert [c.value for c in pol.notes[n]] == ["a", "b", "b", "c"]
    pol.refresh_descriptions(0.5)
    s = pol.store
    assert s.claim[n].value == value and s.text[n] == f"{s.claim[n].subject} topic.fact {value}"
    assert not s["is_dirty"][n] and s["updated"][n] == 0.5
    want = llm.embed([s.claim[n]], keys=[f"node:{n}:4"]).vectors[0]
    assert np.allclose(s.embedding[n], want)


# -- §Note Retention / §Note Cleanup ----------------------------------------------------------
def test_a_note_expires_after_the_default_lifetime_of_a_month():
    """002 §Note Retention: each note has its own expires_at; the agent's default lifetime is
    "month" ("for typical contextual information (default)"); §Note Cleanup removes notes
    whose expires_at has passed (kept while expires_at > now), after the description
    consolidation. A month is 30 days (Saturn getExpiresAt; 002 names no length)."""
    pol = make()
    assert pol.params.note_lifetime == "month" and pol.params.note_month_days == 30.0
    pol.ingest([ep(0, 0.0, value="a")], 0.0)
    pol.ingest([ep(1, 10.0, value="b")], 10.0)
    n = node(pol)
    assert pol.cleanup_notes(29.0) == []
    out = pol.cleanup_notes(30.0)  # the day-0 note's expires_at is day 30: passed
    assert [(o.action, o.memory) for o in out] == [("prune", n)]
    assert [c.value for c in pol.notes[n]] == ["b"] and pol.store["updated"][n] == 30.0
    pol.cleanup_notes(40.0)
    assert pol.notes[n] == []


def test_an_expired_note_no_longer_reaches_the_synthesis():
    """The nightly job runs the cleanup after the description consolidation (002 §Note
    Cleanup: 'Runs after description consolidation'), so the next synthesis of the node sees
    only the notes still live."""
    seen = []
    pol = make()
    pol.ingest([ep(0, 0.0, value="a")], 0.0)
    pol.maintain(31.0, ["nightly"])  # consolidates (a), then drops it
    pol.ingest([ep(1, 31.5, value="b")], 31.5)
    real = pol.llm.synthesize
    pol.llm.synthesize = lambda claims, key: (
        seen.append([c.value for c in claims]) or real(claims, key=key)
    )
    pol.maintain(32.0, ["nightly"])
    assert seen == [["b"]]


@pytest.mark.parametrize("lifetime, kept_at", [("week", 6.9), ("year", 364.9), ("forever", 1e6)])
def test_a_claims_own_lifetime_wins(lifetime, kept_at):
    pol = make()
    pol.ingest([ep(0, 0.0, lifetime=lifetime)], 0.0)
    pol.cleanup_notes(kept_at)
    assert len(pol.notes[node(pol)]) == 1
    if lifetime != "forever":
        pol.cleanup_notes(kept_at + 0.1)
        assert pol.notes[node(pol)] == []


def test_an_unknown_lifetime_is_refused():
    with pytest.raises(MemsimError, match="lifetime 'decade'"):
        make().ingest([ep(0, 0.0, lifetime="decade")], 0.0)


# -- user actions, batching, planting --------------------------------------------------------------
def test_forget_deletes_rows_holding_the_episode():
    pol = make()
    pol.ingest([ep(0, 0.0), ep(1, 0.0, "other.x")], 0.0)
    out = pol.forget([Forget("f", 1.0, "e0")], 1.0)
    gone = {o.memory for o in out}
    assert node(pol) in gone and node(pol, "other.x") not in gone
    assert pol.store.status_of(pol.owner_of["user"]) == "core"
    pol.ingest([ep(2, 2.0)], 2.0)  # a new mention makes a new node
    assert pol.store.status_of(node(pol)) == "candidate"


def _state(pol):
    s = pol.store
    return (
        s.n,
        [s.status_of(i) for i in range(s.n)],
        [sorted(p) for p in s.provenance],
        {c: s[c].tolist() for c in ("salience", "source_count", "distinct_days")},
        s.embedding.tobytes(),
    )


def test_batched_ingest_equals_one_by_one():
    eps = [ep(i, 3.0, f"t{i % 3}.x", f"v{i % 2}") for i in range(9)]
    a, b = make(), make()
    out_a = a.ingest(eps, 3.0)
    out_b = [o for e in eps for o in b.ingest([e], 3.0)]
    assert out_a == out_b and _state(a) == _state(b)


def test_plant_attributes_and_errors():
    pol = make()
    n = plant(pol, salience=0.7, state="active", recall_frequency=5, decay_gradient=1.5)
    s = pol.store
    assert s["salience"][n] == 0.7 and s.status_of(n) == "active" and s["recall_frequency"][n] == 5
    assert pol.rates()[n] == pytest.approx(0.02 / (1 + 5**1.5))
    with pytest.raises(MemsimError, match="state"):
        plant(pol, 1, state="dormant")
    with pytest.raises(MemsimError, match="salience"):
        plant(pol, 2, salience=1.5)


def test_consolidation_trigger_2_five_sources_sharing_an_entity():
    """002 §Memory Consolidation, trigger 2: "Multiple sources (5+) with overlapping
    entities". Five live Sources mentioning one node are consolidated that night (archived,
    their provenance on the node), young and salient as they are (trigger 1 would need
    > 7 days and salience < 0.2); four are not; Sources of other nodes stay."""
    pol = make()
    _mentions(pol, [0.0, 0.2, 0.4, 0.6])
    _mentions(pol, [0.6], key="other.fact", start=50)
    assert pol.consolidate_episodic(1.0) == []
    _mentions(pol, [0.8], start=4)
    n = node(pol)
    srcs = sorted(set(pol.mentions[n]))
    out = pol.consolidate_episodic(1.0)
    assert len(srcs) == 5 and sorted(o.memory for o in out) == srcs
    assert all(pol.store.status_of(r) == "archived" for r in srcs)
    assert {f"e{i}" for i in range(5)} <= pol.store.provenance[n]
    assert pol.store.status_of(n) == "candidate" and pol.store["is_dirty"][n]
    other = pol.mentions[node(pol, "other.fact")][0]
    assert pol.store.status_of(other) == "candidate"
    # only unconsolidated Sources count: a sixth mention alone does not trigger again
    _mentions(pol, [1.5], start=5)
    assert pol.consolidate_episodic(2.0) == []


def test_consolidation_trigger_2_threshold_and_off_switch():
    for params, archived in (
        ({"consolidate_min_sources": 6}, 0),
        ({}, 5),
        ({"consolidate_min_sources": 0}, 0),
    ):
        pol = make(**params)
        _mentions(pol, [0.0, 0.2, 0.4, 0.6, 0.8])
        assert len(pol.consolidate_episodic(1.0)) == archived, params
    from policies.cosmo import CosmoCodeParams

    assert CosmoCodeParams().consolidate_min_sources == CosmoParams().consolidate_min_sources == 5


def test_salience_of_the_searchable_rows_is_every_rows_salience_at_those_rows():
    """A query scores its searchable rows' salience only (score_query); the same numbers, bit
    for bit, as every row's salience read at those rows, in both decay modes."""
    import scenarios
    from memsim.engine.runner import run

    for mode in ("closed_form", "nightly"):
        pol = Cosmo(CosmoParams(decay_mode=mode), llm=MockLLM(seed=0), seed=0)
        run(pol, scenarios.load("synthetic:steady,episodes=600,queries=60,horizon=60"))
        rows = np.flatnonzero(pol.searchable())[::2]
        assert len(rows) > 5
        for now in (60.0, 75.0):
            np.testing.assert_array_equal(pol.salience_at(now, rows), pol.salience_at(now)[rows])
            np.testing.assert_array_equal(pol.rates(rows), pol.rates()[rows])


@pytest.mark.parametrize("policy_id", ["cosmo", "cosmo-code"])
def test_kept_trigger_2_and_storyline_sums_equal_counting_again(policy_id):
    """Consolidation's trigger 2 reads each node's live Sources kept from the status log
    (_crowded_nodes), and a storyline's refresh its sources' sum carried on from the refresh
    before (_storyline_centroid): at every call of a run with recalls (archived Sources come
    back), forgets (deleted Sources and nodes) and nightly jobs, the nodes and their Sources
    are those of every node's mentions masked again, and the centroid is the one of every
    source summed again, bit for bit."""
    import scenarios
    from memsim.engine import registry
    from memsim.engine.events import Stream
    from memsim.engine.runner import run

    stream = scenarios.load("synthetic:steady,episodes=2400,queries=400,horizon=60")
    episodes = [e for e in stream.events if isinstance(e, Episode)]
    forgets = [
        Forget(id=f"forget{i}", time=e.time + 3.5, episode_id=e.id)
        for i, e in enumerate(episodes[::37])
        if e.time + 3.5 <= stream.horizon
    ]
    events = sorted(stream.events + tuple(forgets), key=lambda e: e.time)
    pol = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    kept_nodes, kept_centroid = pol._crowded_nodes, pol._storyline_centroid
    checked = {"nodes": 0, "centroids": 0}

    def crowded_nodes():
        s, need = pol.store, pol.params.consolidate_min_sources
        live = s.mask(["candidate", "active", "core"], kinds=["source"])
        again = [
            (node, sorted({r for r in pol.mentions[node] if live[r]}))
            for node in sorted(pol.mentions)
        ]
        got = kept_nodes()
        assert got == [(n, srcs) for n, srcs in again if len(srcs) >= need]
        checked["nodes"] += len(got)
        return got

    def storyline_centroid(st):
        got = kept_centroid(st)
        np.testing.assert_array_equal(got, pol._centroid(pol.includes[st]))
        checked["centroids"] += 1
        return got

    pol._crowded_nodes, pol._storyline_centroid = crowded_nodes, storyline_centroid
    run(pol, Stream(tuple(events), name="with forgets", horizon=stream.horizon))
    assert checked["nodes"] > 10 and checked["centroids"] > 10, checked
    assert (pol.store["status"] == pol.store.statuses.code("deleted")).any()
