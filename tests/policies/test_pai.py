"""Rules of policy ``pai`` (seed document 000_ec17278fb0252727.txt), one test per rule,
named after the document section. ``FakeLLM`` puts claims at exact cosines for boundary
tests; MockLLM with Bands/Faults covers the rest."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.engine.errors import ParamError
from memsim.engine.events import Claim, Episode, Forget, Query, make_stream
from memsim.engine.llm import NONE, Embedded, Faults
from memsim.engine.mockllm import MockLLM
from policies.pai import (
    TYPE_CODE,
    PaiParams,
    PersonalAI,
    effective_confidence,
    importance_1_10,
    parse_index,
    recall_scores,
)


class FakeLLM:
    """LLM stand-in with exact geometry: a claim with attr ``sim`` = s and ``slot`` = k
    embeds as ``s * e0 + sqrt(1 - s^2) * e_k`` (slots are orthogonal), so two claims in
    different slots have cosine s1 * s2. ``reply`` is the classify answer; queries embed
    as e0 (or None when ``query_fails``)."""

    def __init__(self, dim: int = 32, reply: str = NONE, query_fails: bool = False) -> None:
        self.dim, self.seed = dim, 0
        self.reply = reply
        self.query_fails = query_fails
        self.classify_calls: list[tuple[Claim, tuple[Claim, ...]]] = []

    def vec(self, c: Claim) -> np.ndarray:
        s, k = float(c.attr("sim", 1.0)), int(c.attr("slot", 1))
        v = np.zeros(self.dim)
        v[0] = s
        v[k] = math.sqrt(max(0.0, 1.0 - s * s))
        return v

    def extract(self, episode):
        return episode.claims

    def embed(self, items, keys):
        vs = np.stack(
            [self.vec(c) if isinstance(c, Claim) else self.vec(Claim("x")) for c in items]
        )
        return Embedded(vs.astype(np.float32), np.ones(len(items), dtype=bool))

    def embed_query(self, query):
        if self.query_fails:
            return None
        v = np.zeros(self.dim, dtype=np.float32)
        v[0] = 1.0
        return v

    def classify(self, new, candidates, *, answer, key):
        self.classify_calls.append((new, tuple(candidates)))
        return self.reply

    def summarize(self, texts, *, key):
        return " ".join(texts)[:60]

    def synthesize(self, claims, *, key):
        return Claim("meta.x", "general", category="meta", attrs=(("sim", 1.0), ("slot", 31)))


def C(key: str, value: str, sim: float = 1.0, slot: int = 1, **kw) -> Claim:
    return Claim(key, value, attrs=(("sim", sim), ("slot", slot)), **kw)


def ep(
    eid: str,
    t: float,
    *claims: Claim,
    text: str = "",
    conversation: str = "",
    speaker: str = "user",
) -> Episode:
    return Episode(
        eid, t, text or f"text of {eid}", tuple(claims), speaker=speaker, conversation=conversation
    )


def mock(**faults) -> MockLLM:
    return MockLLM(seed=0, faults=Faults(**faults))


def actions(outcomes) -> list[str]:
    return [o.action for o in outcomes]


# ------------------------------------------------------------------ §1 ingestion bands


def test_s1_create_first_belief_at_default_confidence_06():
    pol = PersonalAI(llm=mock())
    out = pol.ingest([ep("e1", 0, Claim("owner.name", "Alex", importance=0.7))], 0.0)
    assert actions(out) == ["create"]
    s = pol.store
    assert s["confidence"][0] == 0.6 and s["stability"][0] == 1.0 and s["importance"][0] == 7
    assert s.status_of(0) == "active" and s.provenance[0] == {"e1"}


def test_s1_unset_importance_is_the_parse_failure_default_5():
    """000 §1 (importance 1-10, default 5 when the LLM gives none): a claim whose extraction
    set no importance (None) is stored at importance 5."""
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    assert Claim("owner.name", "Alex").importance is None
    assert pol.store["importance"][0] == 5


def test_s1_reinforce_above_085():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    out = pol.ingest([ep("e2", 3, Claim("owner.name", "Alex"))], 3.0)
    assert actions(out) == ["reinforce"]
    s = pol.store
    assert s.n == 1
    assert s["confidence"][0] == pytest.approx(0.7)
    assert s["updated"][0] == 3.0  # reset updated_at
    assert s.provenance[0] == {"e1", "e2"}  # episode linked to the belief


def test_s1_reinforce_caps_confidence_at_10():
    pol = PersonalAI(llm=mock())
    for i in range(8):
        pol.ingest([ep(f"e{i}", i, Claim("owner.name", "Alex"))], float(i))
    assert pol.store.n == 1
    assert pol.store["confidence"][0] == 1.0


def test_s1_similarity_exactly_at_reinforce_threshold_is_grey_zone():
    # 0.875 is exact in float32 and float64, so the cosine equals the threshold exactly.
    llm = FakeLLM(reply=NONE)
    pol = PersonalAI(PaiParams(reinforce_above=0.875, link_hi=0.875), llm=llm)
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    out = pol.ingest([ep("e2", 0, C("a.x", "2", 0.875, 2))], 0.0)
    assert "reinforce" not in actions(out)
    assert len(llm.classify_calls) == 1  # grey zone: the classifier was asked
    assert pol.store.n == 2
    # a hair above reinforces
    out = pol.ingest([ep("e3", 0, C("a.x", "3", 1.0, 3))], 0.0)
    assert actions(out) == ["reinforce"]


def test_s1_similarity_at_grey_lower_end_is_checked_below_is_not():
    llm = FakeLLM(reply=NONE)
    pol = PersonalAI(PaiParams(grey_lo=0.625), llm=llm)
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    pol.ingest([ep("e2", 0, C("a.y", "2", 0.625, 2))], 0.0)
    assert len(llm.classify_calls) == 1
    pol.ingest([ep("e3", 0, C("a.z", "3", 0.6, 3))], 0.0)
    assert len(llm.classify_calls) == 1  # 0.60 < 0.625: no contradiction check


class SpyMock(MockLLM):
    """MockLLM that records classify calls."""

    def __init__(self, **kw):
        super().__init__(seed=0, **kw)
        self.calls: list[tuple[Claim, tuple[Claim, ...]]] = []

    def classify(self, new, candidates, *, answer, key):
        self.calls.append((new, tuple(candidates)))
        return super().classify(new, candidates, answer=answer, key=key)


def test_s1_grey_zone_candidates_batched_in_one_call():
    llm = SpyMock()
    pol = PersonalAI(llm=llm)
    for i in range(3):  # Paris: 3 supporting episodes
        pol.ingest([ep(f"p{i}", 0, Claim("owner.city", "Paris"))], 0.0)
    pol.ingest([ep("r", 0, Claim("owner.city", "Rome"))], 0.0)  # weakens Paris, coexists
    llm.calls.clear()
    out = pol.ingest([ep("b", 0, Claim("owner.city", "Berlin"))], 0.0)
    assert len(llm.calls) == 1  # one batched prompt ...
    assert {c.value for c in llm.calls[0][1]} == {"Paris", "Rome"}  # ... with both candidates
    assert "weaken" in actions(out) or "invalidate" in actions(out)


def test_s1_contradiction_with_fewer_than_3_supports_invalidates():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.city", "Paris"))], 0.0)
    pol.ingest([ep("e2", 1, Claim("owner.city", "Paris"))], 1.0)  # 2 supporting episodes
    out = pol.ingest([ep("e3", 2, Claim("owner.city", "Rome"))], 2.0)
    assert actions(out)[:3] == ["invalidate", "create", "supersede"]
    s = pol.store
    assert s.status_of(0) == "invalidated" and s.status_of(1) == "active"
    assert s["superseded_by"][0] == 1 and s["supersedes"][1] == 0
    assert s["supersedes"][0] == -1 and s["superseded_by"][1] == -1


def test_the_kept_searchable_mask_follows_new_rows_and_status_changes():
    """_searchable is kept between searches (read-only) and taken anew when a row is added
    or a status changes: an invalidated belief is never searched again."""
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.city", "Paris"))], 0.0)
    first = pol._searchable()
    assert first.tolist() == [True] and not first.flags.writeable
    assert pol._searchable() is first  # nothing changed: the same array
    pol.ingest([ep("e2", 1, Claim("owner.job", "baker"))], 1.0)
    assert pol._searchable().tolist() == [True, True]
    pol.store.set_status(0, "invalidated", 2.0)
    assert pol._searchable().tolist() == [False, True]
    fresh = pol.store.mask() & pol.store["has_embedding"]
    assert pol._searchable().tolist() == fresh.tolist()


def test_s1_contradiction_with_3_supports_weakens_and_coexists():
    pol = PersonalAI(llm=mock())
    for i in range(3):
        pol.ingest([ep(f"e{i}", i, Claim("owner.city", "Paris"))], float(i))
    assert pol.store["confidence"][0] == pytest.approx(0.8)
    out = pol.ingest([ep("e9", 5, Claim("owner.city", "Rome"))], 5.0)
    assert actions(out)[:3] == ["weaken", "create", "supersede"]
    s = pol.store
    assert s.status_of(0) == "active" and s.status_of(1) == "active"
    assert s["confidence"][0] == pytest.approx(0.6)
    assert s["superseded_by"][0] == 1 and s["supersedes"][1] == 0
    # the weakened belief stays in the link band of the new one: linked (Zettelkasten)
    assert 0 in pol.links[1]


def test_s1_weaken_floor_01():
    pol = PersonalAI(llm=mock())
    for i in range(3):
        pol.ingest([ep(f"e{i}", i, Claim("owner.city", "Paris"))], float(i))
    pol.store["confidence"][0] = 0.15
    pol.ingest([ep("e9", 5, Claim("owner.city", "Rome"))], 5.0)
    assert pol.store["confidence"][0] == 0.1


def test_s1_invalid_classifier_answer_counts_as_none():
    pol = PersonalAI(llm=mock(invalid_answer=1.0))
    pol.ingest([ep("e1", 0, Claim("owner.city", "Paris"))], 0.0)
    out = pol.ingest([ep("e2", 1, Claim("owner.city", "Rome"))], 1.0)
    assert "invalidate" not in actions(out) and "weaken" not in actions(out)
    assert pol.store.status_of(0) == "active" and pol.store.n == 2
    assert any("treated as NONE" in o.detail for o in out)


@pytest.mark.parametrize(
    "reply,n,expected",
    [
        ("1", 2, 0),
        ("2", 2, 1),
        (" 2 ", 2, 1),
        ("0", 2, None),
        ("3", 2, None),
        ("NONE", 2, None),
        ("7x", 2, None),
        ("", 2, None),
        ("-1", 2, None),
        ("１", 2, None),
        (None, 2, None),
    ],
)
def test_s1_parse_index_invalid_replies_are_none(reply, n, expected):
    assert parse_index(reply, n) == expected


def test_s1_no_contradiction_in_grey_zone_creates_without_touching_old():
    llm = FakeLLM(reply=NONE)
    pol = PersonalAI(llm=llm)
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    out = pol.ingest([ep("e2", 0, C("a.x", "2", 0.8, 2))], 0.0)
    assert actions(out) == ["create", "link"]
    assert pol.store["confidence"][0] == 0.6 and pol.store.status_of(0) == "active"


def test_s1_extraction_failure_falls_back_to_raw_text_factual_5_owner():
    pol = PersonalAI(llm=mock(extract_fail=1.0))
    e = Episode("e1", 0, "Alex told me he likes tea", (Claim("alex.drink", "tea", subject="Alex"),))
    out = pol.ingest([e], 0.0)
    assert actions(out) == ["create"]
    s = pol.store
    assert s.text[0] == "Alex told me he likes tea"
    assert s["type"][0] == TYPE_CODE["factual"]
    assert s["importance"][0] == 5
    assert pol.subjects[s["subject"][0]] == "owner"


def test_s1_embedding_failure_creates_at_06_and_skips_dedup():
    pol = PersonalAI(PaiParams(embed_fail_confidence=0.55), llm=mock(embed_fail=1.0))
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    out = pol.ingest([ep("e2", 0, Claim("owner.name", "Alex"))], 0.0)
    assert actions(out) == ["create"]  # no reinforcement: dedup skipped
    s = pol.store
    assert s.n == 2 and not s["has_embedding"].any()
    assert (s["confidence"] == 0.55).all()
    # never found by vector search: a working query embedding returns nothing
    pol.llm = mock()
    r = pol.recall([Query("q", 1, "name", keys=("owner.name",))], 1.0)[0]
    assert len(r.ids) == 0


def test_s1_default_embedding_failure_confidence_is_06():
    assert PaiParams().embed_fail_confidence == 0.6 == PaiParams().default_confidence


def test_s1_insight_is_skipped():
    pol = PersonalAI(llm=mock())
    out = pol.ingest(
        [ep("e1", 0, Claim("owner.x", "y", category="insight"), Claim("owner.name", "Alex"))], 0.0
    )
    assert actions(out) == ["drop", "create"]
    assert pol.store.n == 1


@pytest.mark.parametrize(
    "category,type_name",
    [
        ("fact", "factual"),
        ("preference", "preference"),
        ("procedural", "procedural"),
        ("decision", "architectural"),
        ("relationship", "factual"),
        ("sentiment", "preference"),
        ("reminder", "procedural"),
        ("something-new", "factual"),
    ],
)
def test_s1_category_maps_onto_fact_type(category, type_name):
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.k", "v", category=category))], 0.0)
    assert pol.store["type"][0] == TYPE_CODE[type_name]


@pytest.mark.parametrize(
    "imp,expected",
    [(0.0, 1), (0.04, 1), (0.05, 1), (0.15, 2), (0.5, 5), (0.74, 7), (0.95, 10), (1.0, 10)],
)
def test_s1_importance_to_1_10_clamped(imp, expected):
    assert importance_1_10(imp, PaiParams()) == expected


def test_s1_subject_lowercased():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("alex.drink", "tea", subject="  Alex "))], 0.0)
    assert pol.subjects[pol.store["subject"][0]] == "alex"


def test_s1_links_at_most_3_neighbours_in_band():
    llm = FakeLLM()
    pol = PersonalAI(llm=llm)
    # five unrelated beliefs (mutual cosines s_i * s_j < 0.40) at 0.65 .. 0.45 from e0
    for k, s in enumerate((0.45, 0.5, 0.55, 0.6, 0.65), start=1):
        pol.ingest([ep(f"e{k}", 0, C(f"t.{k}", "v", s, k))], 0.0)
    assert pol.links == {}
    out = pol.ingest([ep("new", 0, C("t.new", "v", 1.0, 20))], 0.0)
    assert actions(out) == ["create", "link", "link", "link"]
    assert pol.links[5] == {4, 3, 2}  # the top 3 by similarity
    assert all(5 in pol.links[r] for r in (2, 3, 4))  # symmetric


def test_s1_link_band_lower_end_inclusive_and_below_not_linked():
    pol = PersonalAI(PaiParams(link_lo=0.375), llm=FakeLLM())
    pol.ingest([ep("e1", 0, C("t.1", "v", 0.375, 1))], 0.0)
    pol.ingest([ep("e2", 0, C("t.2", "v", 0.25, 2))], 0.0)
    pol.ingest([ep("e3", 0, C("t.3", "v", 1.0, 3))], 0.0)
    assert pol.links.get(2) == {0}


# ------------------------------------------------------------------ §2 recall


def _one_belief(importance=0.7, subject="owner", **params):
    pol = PersonalAI(PaiParams(**params), llm=FakeLLM())
    pol.ingest([ep("e1", 0, C("a.x", "1", 0.9, 1, importance=importance, subject=subject))], 0.0)
    return pol


def test_s2_score_is_the_documented_weighted_sum():
    pol = _one_belief()
    r = pol.recall([Query("q", 10, "what", keys=("a.x",))], 10.0)[0]
    cos = float(np.float32(0.9))
    expected = 0.5 * cos + 0.2 * 7 / 10 + 0.1 * math.exp(-0.023 * 10) + 0.05 * 1.0 / 5 + 0.15 * 0
    assert r.ids.tolist() == [0]
    assert r.scores[0] == pytest.approx(expected, rel=1e-6)


def test_s2_subject_match_adds_015_from_query_subject_or_text():
    pol = _one_belief(subject="Alex")
    base = pol.score_rows(Query("q0", 0, "what", keys=("a",)), pol.llm.embed_query(None), 0.0)[0]
    by_field = pol.score_rows(
        Query("q1", 0, "what", keys=("a",), subject="alex"), pol.llm.embed_query(None), 0.0
    )[0]
    by_text = pol.score_rows(
        Query("q2", 0, "What does Alex drink?", keys=("a",)), pol.llm.embed_query(None), 0.0
    )[0]
    assert by_field - base == pytest.approx(0.15) and by_text - base == pytest.approx(0.15)
    other = pol.score_rows(
        Query("q3", 0, "What does Alexandra drink?", keys=("a",)), pol.llm.embed_query(None), 0.0
    )[0]
    assert other == base


def test_s2_insight_type_score_halved():
    pol = _one_belief()
    q = Query("q", 0, "x", keys=("a",))
    before = pol.score_rows(q, pol.llm.embed_query(q), 0.0)[0]
    pol.store["type"][0] = TYPE_CODE["insight"]
    assert pol.score_rows(q, pol.llm.embed_query(q), 0.0)[0] == pytest.approx(0.5 * before)


def test_s2_cosine_floor_020_excludes_whatever_the_other_factors():
    pol = PersonalAI(PaiParams(cosine_floor=0.25), llm=FakeLLM())
    pol.ingest([ep("e1", 0, C("a.x", "1", 0.25, 1, importance=1.0, subject="a"))], 0.0)
    pol.ingest([ep("e2", 0, C("a.y", "1", 0.125, 2, importance=1.0, subject="a"))], 0.0)
    r = pol.recall([Query("q", 0, "a", keys=("a",), subject="a")], 0.0)[0]
    assert r.ids.tolist() == [0]  # 0.25 kept (>=), 0.125 excluded


def test_s2_top_n_and_neighbours_at_08_of_parent():
    llm = FakeLLM()
    pol = PersonalAI(llm=llm)
    pol.ingest([ep("e1", 0, C("a.x", "1", 0.9, 1))], 0.0)  # found by the query
    # a neighbour of belief 0 that the query itself cannot find (cosine with e0 is 0):
    # place it with a vector orthogonal to e0 and cos 0.5 with belief 0's residual axis.
    nb = C("a.nb", "v", 0.0, 2)
    pol.ingest([ep("e2", 0, nb)], 0.0)
    pol._link(0, 1)
    r = pol.recall([Query("q", 0, "x", keys=("a",), k=5)], 0.0)[0]
    assert r.ids.tolist() == [0, 1]
    assert r.scores[1] == pytest.approx(0.8 * r.scores[0])
    # limited to N
    r1 = pol.recall([Query("q1", 0, "x", keys=("a",), k=1)], 0.0)[0]
    assert r1.ids.tolist() == [0]


def test_s2_access_recording_count_stability_last_accessed():
    pol = _one_belief()
    for t in range(3):
        pol.recall([Query(f"q{t}", 5 + t, "x", keys=("a",))], 5.0 + t)
    s = pol.store
    assert s["access_count"][0] == 3
    assert s["stability"][0] == pytest.approx(1.3)
    assert s["last_access"][0] == 7.0


def test_s2_stability_capped_at_5():
    pol = _one_belief()
    s = pol.store
    s["stability"][0] = 4.95
    pol.recall([Query("q", 1, "x", keys=("a",))], 1.0)
    assert s["stability"][0] == 5.0
    pol.recall([Query("q2", 2, "x", keys=("a",))], 2.0)
    assert s["stability"][0] == 5.0


def test_s2_recency_from_creation_until_first_access_then_from_last_access():
    pol = _one_belief()
    q = Query("q", 0, "x", keys=("a",))
    v = pol.llm.embed_query(q)
    s30 = pol.score_rows(q, v, 30.0)[0]
    s0 = pol.score_rows(q, v, 0.0)[0]
    assert s0 - s30 == pytest.approx(0.1 * (1 - math.exp(-0.023 * 30)))
    pol.recall([q], 30.0)  # access at day 30
    assert pol.score_rows(q, v, 30.0)[0] > s30


def test_s2_embedding_failure_uses_text_search_fallback_without_access():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.drink", "green tea", subject="owner"))], 0.0)
    pol.ingest([ep("e2", 0, Claim("owner.city", "Paris"))], 0.0)
    pol.llm = FakeLLM(query_fails=True)
    r = pol.recall([Query("q", 1, "Which tea do I drink?", keys=("owner.drink",))], 1.0)[0]
    assert r.ids.tolist() == [0]
    assert pol.store["access_count"][0] == 0


def test_s2_text_search_ties_follow_the_tie_rule_not_the_newest_row():
    """Equal keyword matches (000 states no order) go in the seeded order of memory
    identity: the same answer whichever belief was stored first (pai v2 put the newest row
    first, a recency ranking in disguise when a question shares only a name)."""

    def answer(order):
        pol = PersonalAI(llm=mock())
        for i in order:
            pol.ingest([ep(f"e{i}", 0, Claim(f"maria.k{i}", f"v{i}", subject="maria"))], 0.0)
        pol.llm = FakeLLM(query_fails=True)
        r = pol.recall([Query("q", 1, "what is maria's plan?", keys=("maria.k0",), k=3)], 1.0)[0]
        return [sorted(pol.store.provenance[i]) for i in r.ids.tolist()]

    fwd, rev = answer(range(6)), answer(range(5, -1, -1))
    assert fwd == rev and len(fwd) == 3


def test_s2_batched_queries_equal_one_by_one():
    def build():
        pol = PersonalAI(llm=mock())
        for i, (k, v) in enumerate(
            [
                ("owner.name", "Alex"),
                ("owner.city", "Paris"),
                ("work.role", "dev"),
                ("owner.drink", "tea"),
                ("work.team", "infra"),
            ]
        ):
            pol.ingest([ep(f"e{i}", i, Claim(k, v))], float(i))
        return pol

    qs = [
        Query(f"q{i}", 10, "q", keys=(k,), k=3)
        for i, k in enumerate(["owner.name", "work.role", "owner.name"])
    ]
    a, b = build(), build()
    ra = a.recall(qs, 10.0)
    rb = [b.recall([q], 10.0)[0] for q in qs]
    for x, y in zip(ra, rb):
        assert x.ids.tolist() == y.ids.tolist() and np.array_equal(x.scores, y.scores)
    assert np.array_equal(a.store["stability"], b.store["stability"])


# ------------------------------------------------------------------ §7 decay


def test_s7_effective_confidence_half_life_30_times_stability():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    assert pol.strength(0.0)[0] == 0.6
    assert pol.strength(30.0)[0] == pytest.approx(0.3)
    pol.store["stability"][0] = 3.0
    assert pol.strength(90.0)[0] == pytest.approx(0.3)


def test_s7_strength_covers_terminal_rows_by_formula():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.city", "Paris"))], 0.0)
    pol.ingest([ep("e2", 0, Claim("owner.city", "Rome"))], 0.0)
    assert pol.store.status_of(0) == "invalidated"
    assert pol.strength(30.0).tolist() == pytest.approx([0.3, 0.3])


# ------------------------------------------------------------------ §3 maintenance


def test_s3_merge_duplicates_winner_highest_effective_confidence():
    # reinforce only above 0.95 so two paraphrases (~0.92) coexist; reflect merges at >= 0.85
    pol = PersonalAI(PaiParams(reinforce_above=0.95), llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    pol.ingest([ep("e2", 0, Claim("owner.name", "Alex"))], 0.0)
    pol.ingest([ep("e3", 0, Claim("owner.name", "Alex"))], 0.0)
    s = pol.store
    assert s.n == 3
    s["confidence"][1] = 0.9
    out = pol.maintain(1.0, ["reflect"])
    assert sorted((o.action, o.memory) for o in out) == [
        ("merge", 0),
        ("merge", 2),
        ("reinforce", 1),
    ]
    assert s.status_of(0) == s.status_of(2) == "invalidated" and s.status_of(1) == "active"
    assert s["superseded_by"][0] == 1 and s["superseded_by"][2] == 1
    assert s.provenance[1] == {"e1", "e2", "e3"}
    assert s["confidence"][1] == pytest.approx(1.0)
    assert s["updated"][1] == 1.0


def test_s3_reflect_flags_stale_below_010_and_loads_at_most_200():
    pol = PersonalAI(PaiParams(reflect_limit=2), llm=mock())
    for i, k in enumerate(["a.x", "b.x", "c.x"]):
        pol.ingest([ep(f"e{i}", i, Claim(k, "v"))], float(i))
    assert sorted(pol._reflect_rows(3.0).tolist()) == [1, 2]  # the most recently updated
    # 0.6 * 0.5^(t/30) < 0.10 <=> t > 30 * log2(6) = 77.55 days after the last update
    _, stale = pol.reflect(2 + 77.5)
    assert stale == [1]  # row 1 is 78.5 days old, row 2 77.5
    _, stale = pol.reflect(2 + 77.6)
    assert sorted(stale) == [1, 2]


@settings(max_examples=40, deadline=None)
@given(
    claims=st.lists(
        st.tuples(st.sampled_from(["a.x", "a.y", "b.x", "c.z"]), st.sampled_from("pq")),
        min_size=2,
        max_size=40,
    ),
    threshold=st.floats(0.3, 0.99),
    order_seed=st.integers(0, 2**16),
)
def test_s3_reflect_clusters_are_the_leader_clustering_in_load_order(claims, threshold, order_seed):
    """reflect's clusters (§3): in load order, each belief not yet in a cluster with another
    such belief at cosine >= the threshold leads a cluster of all of them. Against that
    loop written plainly (reflect passes over the beliefs that have no such neighbour)."""
    pol = PersonalAI(PaiParams(reinforce_above=0.999), llm=mock())
    for i, (key, value) in enumerate(claims):
        pol.ingest([ep(f"e{i}", i, Claim(key, value))], float(i))
    rows = np.random.default_rng(order_seed).permutation(pol.store.n)
    E = pol.store.embedding[rows]
    sim = (E @ E.T).astype(np.float64)
    used = np.zeros(len(rows), dtype=bool)
    expected = []
    for a in range(len(rows)):
        if used[a]:
            continue
        members = [m for m in range(len(rows)) if m != a and not used[m] and sim[a, m] >= threshold]
        if members:
            used[a] = True
            used[members] = True
            expected.append([int(rows[a])] + [int(rows[m]) for m in members])
    clusters, stale = pol.reflect(float(len(claims)), threshold, rows)
    assert clusters == expected and all(type(r) is int for c in clusters for r in c)
    eff = pol.effective(float(len(claims)))
    assert stale == [int(r) for r in rows if eff[r] < pol.params.stale_threshold]


def test_s3_synthesize_meta_belief():
    pol = PersonalAI(PaiParams(synthesis_threshold=0.5), llm=mock())
    pol.ingest([ep("e1", 0, Claim("work.role", "dev"))], 0.0)
    pol.ingest([ep("e2", 0, Claim("work.team", "infra"))], 0.0)
    out = pol.maintain(1.0, ["synthesize"])
    assert actions(out) == ["synthesize"]
    s = pol.store
    m = out[0].memory
    assert (
        s["confidence"][m] == 0.8 and s["stability"][m] == 3.0 and s["type"][m] == TYPE_CODE["meta"]
    )
    assert s.provenance[m] == {"e1", "e2"}
    assert pol.links[m] == {0, 1}
    # the same cluster is not synthesized again (resynthesize=False)
    assert actions(pol.maintain(8.0, ["synthesize"])) == ["skip"]


def test_s3_synthesize_at_most_5_clusters():
    pol = PersonalAI(PaiParams(synthesis_threshold=0.5, synthesis_max_clusters=2), llm=mock())
    for t in ("a", "b", "c"):
        pol.ingest([ep(f"{t}1", 0, Claim(f"{t}.x", "1"))], 0.0)
        pol.ingest([ep(f"{t}2", 0, Claim(f"{t}.y", "2"))], 0.0)
    out = pol.maintain(1.0, ["synthesize"])
    assert actions(out) == ["synthesize", "synthesize"]


def test_s3_prune_below_005():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    # 0.6 * 0.5^(t/30) < 0.05 <=> t > 30 * log2(12) = 107.55 days
    assert actions(pol.maintain(107.5, ["prune"])) == ["skip"]
    out = pol.maintain(107.6, ["prune"])
    assert actions(out) == ["prune"] and pol.store.status_of(0) == "pruned"
    assert pol.footprint() == 0


def test_s3_unknown_job_is_an_error():
    with pytest.raises(ValueError, match="no job 'decay'"):
        PersonalAI(llm=mock()).maintain(1.0, ["decay"])


def test_s3_forget_episode_forgets_every_belief_holding_it():
    pol = PersonalAI(llm=mock())
    pol.ingest([ep("e1", 0, Claim("owner.name", "Alex"))], 0.0)
    pol.ingest([ep("e2", 1, Claim("owner.name", "Alex"))], 1.0)  # reinforced: provenance e1, e2
    pol.ingest([ep("e3", 1, Claim("work.x", "y"))], 1.0)
    out = pol.forget([Forget("f", 2, "e2")], 2.0)
    assert [(o.action, o.memory) for o in out] == [("forget", 0)]
    assert pol.store.status_of(0) == "forgotten" and pol.store.status_of(1) == "active"
    # terminal: forgetting again or pruning leaves it forgotten
    pol.maintain(500.0, ["prune"])
    assert pol.store.status_of(0) == "forgotten"


def test_s5_statuses_terminal_and_retrievable():
    st = PersonalAI.statuses
    assert st.names == ("active", "invalidated", "forgotten", "pruned")
    assert st.terminal == {"invalidated", "forgotten", "pruned"} and st.retrievable == {"active"}


# ------------------------------------------------------------------ §8 consolidation


def test_s8_conversation_of_5_turns_consolidated_without_a_belief():
    pol = PersonalAI(llm=mock())
    turns = [
        ep(
            f"c{i}",
            0,
            text=f"We talked about the garden project and tomato plants number {i}",
            conversation="conv1",
            speaker="user" if i % 2 == 0 else "assistant",
        )
        for i in range(5)
    ]
    out = pol.ingest(turns[:4], 0.0)
    assert "consolidate" not in actions(out) and pol.summaries == []
    n_before = pol.store.n
    out = pol.ingest(turns[4:], 0.0)
    assert "consolidate" in actions(out)
    assert pol.store.n <= n_before + 1  # at most the turn's own belief
    assert not any(o.action == "create" and "summary" in o.detail for o in out)
    (sm,) = pol.summaries
    assert sm.episode_ids == tuple(f"c{i}" for i in range(5))
    hits = pol.episode_context(Query("q", 1, "garden project tomato plants", answers=("c0",)))
    assert hits and hits[0][0] == sm.id and hits[0][1] > 0.30
    pol.forget([Forget("f", 2, "c1")], 2.0)
    assert (
        pol.episode_context(Query("q2", 2, "garden project tomato plants", answers=("c0",))) == []
    )


def test_s8_chunk_shorter_than_4_turns_not_consolidated():
    pol = PersonalAI(PaiParams(consolidation_every_turns=3), llm=mock())
    turns = [
        ep(f"c{i}", 0, text=f"long enough sentence about gardening tomatoes {i}", conversation="k")
        for i in range(3)
    ]
    out = pol.ingest(turns, 0.0)
    assert pol.summaries == [] and "skip" in actions(out)


def test_s8_trivial_conversation_summary_none_is_dropped():
    pol = PersonalAI(llm=mock())
    turns = [ep(f"c{i}", 0, text="ok", conversation="k") for i in range(5)]
    out = pol.ingest(turns, 0.0)
    assert pol.summaries == [] and any(o.action == "drop" and "NONE" in o.detail for o in out)


# ------------------------------------------------------------------ batch == sequential


def _episodes():
    rng = np.random.default_rng(7)
    keys = ["owner.name", "owner.city", "owner.drink", "work.role", "work.team"]
    vals = ["a", "b", "c"]
    out = []
    for i in range(40):
        k = keys[rng.integers(len(keys))]
        out.append(
            Episode(
                f"e{i}",
                float(i // 4),
                f"episode {i} about {k}",
                (Claim(k, vals[rng.integers(3)], importance=float(rng.random())),),
                conversation=f"conv{i % 2}",
            )
        )
    return out


def assert_batched_equals_one_by_one(a: PersonalAI, b: PersonalAI, eps) -> None:
    """``a`` ingests each same-time batch at once, ``b`` episode by episode: identical
    outcomes, store columns, provenance and links."""
    oa, ob = [], []
    for t in sorted({e.time for e in eps}):
        batch = [e for e in eps if e.time == t]
        oa += a.ingest(batch, t)
        for e in batch:
            ob += b.ingest([e], t)
    assert oa == ob
    for col in a.store.columns:
        assert np.array_equal(a.store[col], b.store[col], equal_nan=True), col
    assert a.store.provenance == b.store.provenance and a.links == b.links


@pytest.mark.parametrize(
    "faults", [{}, {"embed_fail": 0.2, "extract_fail": 0.2, "invalid_answer": 0.3}]
)
def test_batched_ingest_equals_one_by_one(faults):
    a, b = PersonalAI(llm=mock(**faults)), PersonalAI(llm=mock(**faults))
    assert_batched_equals_one_by_one(a, b, _episodes())
    assert [s.id for s in a.summaries] == [s.id for s in b.summaries]


def test_runner_smoke_and_determinism():
    from memsim.engine import runner

    eps = _episodes()
    evs = (
        eps[:20]
        + [Query("q1", 5.0, "name?", keys=("owner.name",))]
        + eps[20:]
        + [Forget("f1", 10.0, "e3"), Query("q2", 10.0, "role?", keys=("work.role",))]
    )
    evs.sort(key=lambda e: e.time)
    stream = make_stream(evs, name="pai-smoke", horizon=200.0)
    t1 = runner.run(PersonalAI(llm=mock()), stream)
    t2 = runner.run(PersonalAI(llm=mock()), stream)
    assert t1.content() == t2.content()
    assert len(t1.queries) == 2
    acts = {o.action for o in t1.outcomes}
    assert {"create", "reinforce", "prune"} <= acts


def test_params_validate_ranges_and_orders():
    with pytest.raises(ParamError):
        PaiParams(reinforce_above=1.5)
    with pytest.raises(ParamError):
        PaiParams(grey_lo=0.9)
    with pytest.raises(ParamError):
        PaiParams(fallback_type="meta")


def test_kernels_match_scalar_formulas():
    p = PaiParams()
    assert effective_confidence(np.array([0.6]), np.array([1.0]), np.array([0.0]), 30.0)[
        0
    ] == pytest.approx(0.3)
    s = recall_scores(
        np.array([0.5]),
        np.array([10.0]),
        np.array([0.0]),
        np.array([5.0]),
        np.array([1.0]),
        np.array([False]),
        p,
    )[0]
    assert s == pytest.approx(0.25 + 0.2 + 0.1 + 0.05 + 0.15)


def test_s4_find_contradictions_pairs_in_040_085():
    pol = PersonalAI(llm=FakeLLM(reply=NONE))
    pol.ingest([ep("e1", 0, C("a.x", "1", 1.0, 1))], 0.0)
    pol.ingest([ep("e2", 0, C("a.y", "2", 0.75, 2))], 0.0)  # 0.75 with row 0
    pol.ingest([ep("e3", 0, C("a.z", "3", 0.25, 3))], 0.0)  # 0.25 with row 0, 0.1875 with row 1
    pairs = {(min(a, b), max(a, b)) for a, b, _ in pol.find_contradictions(1.0)}
    assert pairs == {(0, 1)}


# ------------------------------------------------------------- §4 bands, exact boundaries


def test_s4_band_decisions_at_exact_boundaries_float64():
    """§4 thresholds table: Reinforce "> 0.85", Contradiction check "0.70 - 0.85", linking
    "0.40 - 0.85", decided on float64 similarities at the exact boundary values."""
    p = PaiParams()
    from policies.pai import in_grey_zone, in_link_band, is_reinforce

    assert not is_reinforce(0.85, p) and in_grey_zone(0.85, p) and not in_link_band(0.85, p)
    assert is_reinforce(np.nextafter(0.85, 1.0), p)
    assert in_grey_zone(0.70, p) and not in_grey_zone(np.nextafter(0.70, 0.0), p)
    assert in_link_band(0.40, p) and not in_link_band(np.nextafter(0.40, 0.0), p)


class _VecLLM(FakeLLM):
    def __init__(self, vectors, reply=NONE):
        super().__init__(dim=4, reply=reply)
        self.vectors = vectors

    def vec(self, c):
        return np.asarray(self.vectors[c.key], dtype=np.float64)


def test_s4_band_decision_uses_float64_not_float32_rounding():
    """§4 "> 0.85" reinforces: a pair whose float64 cosine is just below 0.85 (0.85 - 6e-9)
    but whose float32 dot rounds to 0.85000002 goes to the contradiction check, not to
    reinforcement (pai v1 decided on the float32 product)."""
    b0, b1 = np.float32(0.645), np.float32(0.645)
    b2 = np.float32(1.7 - float(b0) - float(b1))
    a = np.full(4, 0.5, dtype=np.float32)
    b = np.array([b0, b1, b2, 0.0], dtype=np.float32)
    cos64 = float(a.astype(np.float64) @ b.astype(np.float64))
    cos32 = np.float32(0.0)
    for x, y in zip(a, b):
        cos32 = np.float32(cos32 + np.float32(x * y))
    assert cos64 < 0.85 < float(cos32)
    llm = _VecLLM({"k.a": a, "k.b": b})
    pol = PersonalAI(llm=llm)
    pol.ingest([ep("e1", 0, Claim("k.a", "x"))], 0.0)
    out = pol.ingest([ep("e2", 1, Claim("k.b", "y"))], 1.0)
    assert actions(out) == ["create", "link"] and len(llm.classify_calls) == 1


# ------------------------------------------------------------ §8 the >= 4 turns rule


def test_s8_scripted_conversations_meet_the_four_turns_rule():
    """000 §8 consolidateConversation: ">= 4 turns?" No -> null, Yes -> summary; reached by
    scripted conversation-min-turns (4 turns consolidated at the conversation's end, 3
    declined, 9 = a 5-turn chunk then a 4-turn last chunk)."""
    from memsim.engine.runner import run
    from scenarios import scripted

    sc = scripted.load("conversation-min-turns")
    pol = PersonalAI(llm=mock())
    trace = run(pol, sc.stream)
    got = sorted(
        (o.event, o.action, o.detail)
        for o in trace.outcomes
        if o.detail.startswith(("summary episode", "conversation chunk"))
    )
    assert got == [
        ("conv-four#end", "consolidate", "summary episode conv-four#summary0 of 4 turns"),
        ("conv-nine#end", "consolidate", "summary episode conv-nine#summary1 of 4 turns"),
        ("conv-three#end", "skip", "conversation chunk of 3 turns < 4 (000 §8)"),
        ("n5", "consolidate", "summary episode conv-nine#summary0 of 5 turns"),
    ]
    assert len(pol.summaries) == 3
    assert PersonalAI(PaiParams(conversation_end_days=0.0), llm=mock()).params  # literal mode


# ------------------------------------------------------------ §3 reflect / merge


def test_s3_reflect_loads_in_one_order_at_any_store_size():
    """§3 reflect "Load up to 200 active beliefs": below and above the limit the loaded
    beliefs come in creation order (v1 reversed the order above 200, so synthesis broke a
    majority tie towards the superseded value on large stores); beliefs created at one time
    come in the seeded order of their identity, never their row."""
    pol = PersonalAI(PaiParams(reflect_limit=3), llm=FakeLLM())
    for i in range(5):
        pol.ingest([ep(f"e{i}", i, C(f"k.{i}", "v", sim=0.0, slot=i + 1))], float(i))
    pol.store["updated"][:] = [5.0, 1.0, 4.0, 3.0, 2.0]
    assert pol._reflect_rows(6.0).tolist() == [0, 2, 3]  # the 3 most recently updated
    pol.store["updated"][:] = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert pol._reflect_rows(6.0).tolist() == [2, 3, 4]
    assert PersonalAI(PaiParams(reflect_limit=10), llm=FakeLLM())._reflect_rows(0.0).size == 0
    # one batch at one time: the order is a permutation fixed by the seed, not the rows
    same = PersonalAI(PaiParams(), llm=FakeLLM())
    same.ingest([ep(f"e{i}", 4, C(f"k.{i}", "v", sim=0.0, slot=i + 1)) for i in range(5)], 4.0)
    rev = PersonalAI(PaiParams(), llm=FakeLLM())
    rev.ingest(
        [ep(f"e{i}", 4, C(f"k.{i}", "v", sim=0.0, slot=i + 1)) for i in range(4, -1, -1)], 4.0
    )
    ids = [sorted(same.store.provenance[r]) for r in same._reflect_rows(5.0)]
    assert ids == [sorted(rev.store.provenance[r]) for r in rev._reflect_rows(5.0)]


class _ParaphraseSynth(FakeLLM):
    """synthesize() restates its first source (a paraphrase: cosine 0.98 with it)."""

    def synthesize(self, claims, *, key):
        return Claim(
            claims[0].key, claims[0].value, category="meta", attrs=(("sim", 0.9), ("slot", 1))
        )


def test_s3_merge_duplicates_fires_on_a_meta_belief_that_restates_its_source():
    """§3 Synthesize (meta-belief, embedded) then Reflect (duplicates >= 0.85) and
    mergeDuplicates: a meta-belief that restates one of its sources is a duplicate of it, so
    mergeDuplicates fires (docs/policies/pai.md once said it cannot: ingest merges every
    paraphrase at the same 0.85 threshold, but meta-beliefs do not go through ingest)."""
    pol = PersonalAI(llm=_ParaphraseSynth())
    pol.ingest(
        [ep("e1", 0, C("a.x", "1", sim=0.8, slot=1)), ep("e2", 0, C("a.y", "2", sim=0.8, slot=2))],
        0.0,
    )
    assert "synthesize" in actions(pol.maintain(7.0, ["synthesize"]))
    meta = pol.store.n - 1
    out = pol.maintain(8.0, ["reflect"])
    merges = [(o.memory, o.detail) for o in out if o.action == "merge"]
    assert merges == [(0, f"merged into {meta}")]  # the meta-belief (0.8) wins over 0.6
