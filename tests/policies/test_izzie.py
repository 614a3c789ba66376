"""Izzie (003): unit tests, each naming the document section it checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.errors import ParamError
from memsim.engine.events import Claim, Episode, Forget, Query, make_stream
from memsim.engine.llm import Embedded
from memsim.engine.registry import make, spec
from memsim.engine.runner import run
from policies.izzie import CATEGORIES, Izzie, IzzieParams, strength_scalar


class FakeLLM:
    """A tiny controllable LLM: each claim key has a fixed unit vector (``vectors``);
    ``fail_extract`` / ``fail_embed`` name episode ids / item keys that fail."""

    dim = 4
    seed = 0

    def __init__(self, vectors=None, fail_extract=(), fail_embed=()):
        self.vectors = {
            k: np.asarray(v, dtype=np.float64) / np.linalg.norm(v)
            for k, v in (vectors or {}).items()
        }
        self.fail_extract = set(fail_extract)
        self.fail_embed = set(fail_embed)

    def _vec(self, key):
        if key not in self.vectors:
            rng = np.random.default_rng(sum(key.encode()))
            v = rng.normal(size=self.dim)
            self.vectors[key] = v / np.linalg.norm(v)
        return self.vectors[key]

    def extract(self, episode):
        if episode.id in self.fail_extract:
            return None
        return episode.claims or (Claim(key="", value=episode.text),)

    def embed(self, items, keys):
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        ok = np.ones(len(items), dtype=bool)
        for i, (it, k) in enumerate(zip(items, keys)):
            if k in self.fail_embed:
                ok[i] = False
                continue
            out[i] = self._vec(it.key or it.value if isinstance(it, Claim) else it)
        return Embedded(out, ok)

    def embed_query(self, query):
        return (
            np.mean([self._vec(k) for k in query.keys], axis=0)
            if query.keys
            else self._vec(query.text)
        )

    def synthesize(self, claims, *, key):
        return claims[-1]

    def classify(self, new, candidates, *, answer, key):
        from memsim.engine.mockllm import truth_relation

        assert answer == "relation"
        return [truth_relation(new, c) for c in candidates]


def ep(id, t, key, value="v", category="fact", importance=0.7, conversation=""):
    return Episode(
        id,
        t,
        f"{key} is {value}",
        claims=(Claim(key, value, category, importance),),
        conversation=conversation,
    )


def test_category_table_defaults():
    """003 §Memory Categories & Decay Rates and §Importance Levels, verbatim."""
    p = IzzieParams()
    table = {
        "preference": (0.01, 0.8),
        "fact": (0.02, 0.7),
        "relationship": (0.02, 0.7),
        "decision": (0.03, 0.6),
        "event": (0.05, 0.5),
        "sentiment": (0.1, 0.4),
        "reminder": (0.2, 0.6),
    }
    assert set(table) == set(CATEGORIES)
    for cat, (rate, imp) in table.items():
        assert p.decay_rate(cat) == rate and p.default_importance(cat) == imp
    assert (p.importance_high, p.importance_med, p.importance_low) == (0.9, 0.7, 0.6)


def test_preference_example_after_30_days():
    """003 §Memory Strength Calculation: importance 0.9, rate 0.01, 30 days -> 0.9 e^-0.3
    (doc: 0.67)."""
    pol = Izzie(llm=FakeLLM())
    pol.ingest([ep("e1", 0.0, "owner.name", "Masa", "preference", 0.9)], 0.0)
    assert pol.strength(30.0)[0] == pytest.approx(0.9 * math.exp(-0.3), rel=1e-12)
    assert round(pol.strength(30.0)[0], 2) == 0.67
    assert pol.store["decay_rate"][0] == 0.01


def test_saved_record_source_tracking():
    """003 §Save Memories: sourceType 'chat', sourceId = chat session, sourceDate = now."""
    pol = Izzie(llm=FakeLLM())
    pol.ingest([ep("e1", 2.5, "a.b", conversation="session-xyz"), ep("e2", 2.5, "a.c")], 2.5)
    assert pol.source_type == ["chat", "chat"]
    assert pol.source_id == ["session-xyz", "e2"]
    assert pol.store["source_date"].tolist() == [2.5, 2.5]
    assert pol.store.provenance == [{"e1"}, {"e2"}]


def test_no_deduplication():
    """003 §Future Enhancements lists automatic deduplication: every item is stored."""
    pol = Izzie(llm=FakeLLM())
    pol.ingest([ep("e1", 0.0, "owner.name", "Masa")], 0.0)
    pol.ingest([ep("e2", 1.0, "owner.name", "Masa")], 1.0)
    assert pol.store.n == 2 and pol.footprint() == 2


def test_importance_source_choices():
    """003 §Data Flow Example: the LLM's 0.9 is stored (default); the category default and
    the §Importance Levels snapping are opt-in."""
    e = ep("e1", 0.0, "owner.name", "Masa", "preference", 0.83)
    for source, want in (("claim", 0.83), ("category", 0.8), ("level", 0.9)):
        pol = Izzie(IzzieParams(importance_source=source), llm=FakeLLM())
        pol.ingest([e], 0.0)
        assert pol.store["importance"][0] == want


def test_categories_outside_the_table_are_mapped():
    """memsim choice documented in docs/policies/izzie.md: procedural -> fact, else fallback."""
    pol = Izzie(llm=FakeLLM())
    pol.ingest(
        [
            ep("e1", 0.0, "a.x", category="procedural"),
            ep("e2", 0.0, "a.y", category="value"),
            ep("e3", 0.0, "a.z", category="whatever"),
        ],
        0.0,
    )
    assert pol.store["decay_rate"].tolist() == [0.02, 0.01, 0.02]
    assert [CATEGORIES[c] for c in pol.store["category"]] == ["fact", "preference", "fact"]


def test_bad_params_raise():
    with pytest.raises(ParamError, match="category_aliases"):
        IzzieParams(category_aliases=("procedural:nothing",))
    with pytest.raises(ParamError, match="decay_rate_fact"):
        IzzieParams(decay_rate_fact=-0.1)
    with pytest.raises(ParamError, match="importance_source"):
        IzzieParams(importance_source="guess")


def test_retrieval_ranks_by_relevance_times_strength():
    """003 §Context Retrieval: rank by relevance x strength, not by relevance alone."""
    llm = FakeLLM({"q": [1, 0, 0, 0], "near": [0.9, 0.43589, 0, 0], "far": [0.6, 0.8, 0, 0]})
    pol = Izzie(llm=llm)
    # "near" is more relevant (0.9) but a fast-decaying reminder; "far" (0.6) a preference
    pol.ingest(
        [
            ep("e1", 0.0, "near", category="reminder", importance=0.6),
            ep("e2", 0.0, "far", category="preference", importance=0.9),
        ],
        0.0,
    )
    r = pol.recall([Query("q1", 10.0, "?", keys=("q",), k=2)], 10.0)[0]
    s_near = 0.9 * strength_scalar(0.6, 0.2, 10.0)
    s_far = 0.6 * strength_scalar(0.9, 0.01, 10.0)
    assert s_far > s_near
    assert r.ids.tolist() == [1, 0]
    assert r.scores == pytest.approx([s_far, s_near], rel=1e-5)


def test_retrieval_refreshes_last_accessed():
    """003 §Saved record lastAccessed; §Memory Strength: days since *access*."""
    pol = Izzie(llm=FakeLLM())
    pol.ingest([ep("e1", 0.0, "owner.name", "Masa", "preference", 0.9)], 0.0)
    pol.recall([Query("q1", 20.0, "?", keys=("owner.name",), k=1)], 20.0)
    assert pol.store["last_access"][0] == 20.0 and pol.store["access_count"][0] == 1
    assert pol.strength(20.0)[0] == 0.9
    assert pol.strength(50.0)[0] == pytest.approx(0.9 * math.exp(-0.3))


def test_batched_recall_equals_sequential():
    llm = FakeLLM({"a": [1, 0, 0, 0], "b": [0.7, 0.7, 0, 0]})
    eps = [ep("e1", 0.0, "a", category="event"), ep("e2", 0.0, "b", category="preference")]
    qs = [Query("q1", 9.0, "?", keys=("a",), k=1), Query("q2", 9.0, "?", keys=("b",), k=2)]
    p1, p2 = Izzie(llm=llm), Izzie(llm=llm)
    p1.ingest(eps, 0.0)
    p2.ingest(eps, 0.0)
    batch = p1.recall(qs, 9.0)
    seq = [p2.recall([q], 9.0)[0] for q in qs]
    for a, b in zip(batch, seq):
        assert a.ids.tolist() == b.ids.tolist() and np.array_equal(a.scores, b.scores)
    assert np.array_equal(p1.store["last_access"], p2.store["last_access"])


def test_batched_ingest_equals_one_by_one():
    eps = [ep(f"e{i}", 1.0, f"t.k{i % 3}", category=CATEGORIES[i % 7]) for i in range(7)]
    p1, p2 = Izzie(seed=3), Izzie(seed=3)
    p1.ingest(eps, 1.0)
    for e in eps:
        p2.ingest([e], 1.0)
    assert np.array_equal(p1.store.embedding, p2.store.embedding)
    assert np.array_equal(p1.strength(5.0), p2.strength(5.0))


def test_llm_failures_drop_the_item():
    """memsim choice: an unparseable LLM response saves nothing; a failed embedding cannot be
    saved."""
    pol = Izzie(llm=FakeLLM(fail_extract={"e1"}, fail_embed={"e2#0"}))
    outs = pol.ingest([ep("e1", 0.0, "a.x"), ep("e2", 0.0, "a.y"), ep("e3", 0.0, "a.z")], 0.0)
    assert [o.action for o in outs] == ["drop", "drop", "create"]
    assert pol.store.n == 1 and pol.store.provenance[0] == {"e3"}


def test_forget_is_terminal_and_hides_the_memory():
    """003 lists deletion as future: memsim's forget sets status 'forgotten' (terminal)."""
    s = make_stream(
        [
            ep("e1", 0.0, "owner.name"),
            Forget("f1", 1.0, "e1"),
            Query("q1", 2.0, "?", keys=("owner.name",), k=3),
        ]
    )
    pol = make("izzie", llm=FakeLLM())
    trace = run(pol, s)
    assert pol.store.status_of(0) == "forgotten"
    assert trace.queries[0].ids.tolist() == []
    with pytest.raises(AssertionError):
        pol.store.set_status(0, "active", 3.0)


def test_registration():
    sp = spec("izzie")
    assert sp.capabilities == frozenset({"forget"}) and sp.seed_document.startswith("003_")
    assert isinstance(make("izzie"), Izzie)


def test_unset_importance_falls_back_to_the_category_default():
    """003 §Memory Categories & Decay Rates (Default Importance): an extraction that sets no
    importance (None) takes the category default, e.g. reminder 0.6 -> 0.6 e^-2 at day 10
    (v1 always stored the Claim default 0.5, giving 0.0677)."""
    pol = Izzie(llm=FakeLLM())
    e = Episode("e1", 0.0, "check email", claims=(Claim("todo.email", "check", "reminder"),))
    pol.ingest([e], 0.0)
    assert pol.store["importance"][0] == 0.6
    assert pol.strength(10.0)[0] == pytest.approx(0.6 * math.exp(-2.0), rel=1e-12)
    from memsim.engine.curve import memory_claim

    assert memory_claim(Izzie, {"category": "reminder"}).importance is None


def test_curve_reminder_day_10_cli(capsys):
    """003 §Memory Categories: `memsim curve izzie --memory category=reminder --days 10`."""
    from memsim.workbench.cli.main import main

    main(["curve", "izzie", "--memory", "category=reminder", "--days", "10"])
    row = capsys.readouterr().out.strip().splitlines()[-1].split(",")
    assert round(float(row[1]), 4) == 0.0812


def _staged(ranking, cos, importance, search_limit=2):
    """Three preferences (rate 0.01) at cosines ``cos`` to the query, importances
    ``importance``; the id ranked first at day 10 with k=1."""
    vecs = {"q": [1, 0, 0, 0]}
    vecs.update({f"m{i}": [c, math.sqrt(1 - c * c), 0, 0] for i, c in enumerate(cos)})
    pol = Izzie(IzzieParams(ranking=ranking, search_limit=search_limit), llm=FakeLLM(vecs))
    pol.ingest(
        [ep(f"e{i}", 0.0, f"m{i}", "preference", importance=m) for i, m in enumerate(importance)],
        0.0,
    )
    return pol.recall([Query("q1", 10.0, "?", keys=("q",), k=1)], 10.0)[0].ids.tolist()


def test_retrieval_semantic_search_then_relevance_times_strength():
    """003 §Context Retrieval: "Semantic search for relevant memories; Apply temporal decay;
    Rank by relevance x strength": only what the search found (top search_limit by cosine)
    is ranked, by cosine x strength. one_stage (v1) ranks the whole store;
    search_then_strength ranks the found ones by strength alone."""
    assert IzzieParams().ranking == "search_then_score"
    # cos x strength: 0.95 x 0.452 = 0.430, 0.9 x 0.543 = 0.489, 0.7 x 0.860 = 0.602
    cos, imp = (0.95, 0.9, 0.7), (0.5, 0.6, 0.95)
    assert _staged("search_then_score", cos, imp) == [1]  # m2 is not found by the search
    assert _staged("one_stage", cos, imp) == [2]
    assert _staged("search_then_score", cos, imp, search_limit=3) == [2]
    # found {m0, m1}: cos x strength prefers m0 (0.430 > 0.5 x 0.543), strength prefers m1
    cos, imp = (0.95, 0.5, 0.3), (0.5, 0.6, 0.6)
    assert _staged("search_then_score", cos, imp) == [0]
    assert _staged("search_then_strength", cos, imp) == [1]


def test_message_context_retrieval_variant_refreshes_last_accessed():
    """003 §Architecture Overview, Chat API step 2 "Build context (retrieve existing
    memories)" for every message: with message_context_k=1 the memory an incoming message
    retrieves has lastAccessed refreshed; off by default (docs/policies/izzie.md)."""
    for k, accessed in ((0, 0), (1, 1)):
        pol = Izzie(IzzieParams(message_context_k=k), llm=FakeLLM())
        pol.ingest([ep("e1", 0.0, "owner.name", "Masa", "preference", 0.9)], 0.0)
        pol.ingest([Episode("e2", 5.0, "owner.name")], 5.0)  # the text embeds like the key
        assert pol.store["access_count"][0] == accessed
        assert pol.strength(5.0)[0] == (0.9 if k else pytest.approx(0.9 * math.exp(-0.05)))


def test_izzie_recall_never_goes_through_a_candidate_index():
    """Izzie's recall is its exact scan whatever index it is given (the IVF recall mode
    lost to the scan's kept products: docs/performance.md), and the workbench refuses
    ``--index mode=ivf`` for it, naming the policies whose searches do use one."""
    import scenarios
    from memsim.engine import registry
    from memsim.engine.mockllm import MockLLM
    from memsim.workbench.runs.execution import check_index

    assert Izzie.index_modes == frozenset()
    stream = scenarios.load("synthetic:steady,episodes=600,queries=60,horizon=30")
    pol = registry.make("izzie", llm=MockLLM(seed=0), seed=0)
    pol.use_index("ivf", min_rows=100, audit_every=1)
    run(pol, stream)
    assert pol.index_audit()["searches"] == 0
    with pytest.raises(ParamError, match="no search of izzie goes through .* searches do: .*pai"):
        check_index("izzie", {"mode": "ivf"})
