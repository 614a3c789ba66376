"""izzie-code follows Izzie's code in Zeeeepa/izzie2 (a fork of bobmatnyc/izzie2) at commit
1604fd6323de75da14fb4fc9bc709b7074de9051: src/lib/chat/context-retrieval.ts,
src/lib/memory/retrieval.ts and src/lib/memory/decay.ts. One test per fact, each naming file
and line, each able to fail when the fact is reverted (a documented value or the document's
reading gives another answer)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine import registry
from memsim.engine.events import Claim, Episode, Forget, Query
from policies.izzie import BM25Index, tokens
from tests.policies.test_code_variants import LineLLM


def make(policy_id: str = "izzie-code", **params):
    return registry.make(policy_id, llm=LineLLM(), seed=0, params=params or None)


def add(policy, i: int, value: str, now: float = 0.0, **fields) -> int:
    """Store one memory whose content is ``k<i>: <value>`` (the keyword search reads it)."""
    fields.setdefault("category", "preference")
    fields.setdefault("importance", 0.9)
    claim = Claim(f"k{i}", value, attrs=(("slot", 1 + i % 15),), **fields)
    (out,) = policy.ingest([Episode(f"e{i}", now, value, (claim,))], now)
    return out.memory


def ask(policy, text: str, now: float, k: int = 10) -> list[int]:
    (ranking,) = policy.recall([Query(f"q{now}", now, text, keys=("k0",), k=k)], now)
    return ranking.ids.tolist()


def test_the_variant_names_the_repository_and_commit_it_follows():
    doc = registry.spec("izzie-code").load().Params.__doc__
    assert "Zeeeepa/izzie2" in doc and "1604fd6323de75da14fb4fc9bc709b7074de9051" in doc
    assert "bobmatnyc/izzie2" in doc


def test_bm25_is_exact():
    """retrieval.ts:78: collection.query.bm25 (Weaviate: k1 1.2, b 0.75, idf
    ln(1 + (N - n + 0.5) / (n + 0.5))), checked by hand on three documents."""
    index = BM25Index()
    index.add(["cobalt harbor", "cobalt cobalt tower river", "river"])
    got = index.scores(tokens("Cobalt?"), 1.2, 0.75)
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    avgdl = 7 / 3

    def term(tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    assert got == pytest.approx([term(1, 2), term(2, 4), 0.0])


def test_the_policy_scores_with_weaviates_k1_and_b():
    """retrieval.ts:78 sets no BM25 parameters, so Weaviate's defaults k1 = 1.2 and b = 0.75
    apply: the policy's scores are the hand formula's with those."""
    p = make()
    rows = [add(p, 0, "cobalt harbor"), add(p, 1, "cobalt cobalt tower river"), add(p, 2, "x")]
    texts = [p.store.text[r] for r in rows]  # "k0: cobalt harbor", ...
    lengths = [len(tokens(t)) for t in texts]
    avgdl = sum(lengths) / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    want = [
        idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl)) if tf else 0.0
        for tf, dl in zip((1, 2, 0), lengths)
    ]
    assert p.keyword_scores("cobalt") == pytest.approx(want)


def test_the_search_is_by_keyword_not_by_embedding():
    """retrieval.ts:78-79: the search is BM25 over the memory's content; a memory that
    shares no word with the message is never found, however close its embedding (the
    document's semantic search finds it)."""
    for policy_id, want in (("izzie", True), ("izzie-code", False)):
        p = make(policy_id)
        row = add(p, 0, "value7")
        assert (row in ask(p, "what is my cobalt harbor?", 1.0)) is want


def test_query_terms_drop_stop_words_and_short_words():
    """context-retrieval.ts:167-233 extractQueryTerms: stop words and words of two letters or
    fewer go; capitalized runs are added, lower-cased (a capitalized stop word too, as the
    code does: its runs are not filtered)."""
    p = make()
    assert p.query_terms("What is my cobalt harbor?") == "cobalt harbor? what"
    assert p.query_terms("Where does Maria Lopez live") == "maria lopez live where maria lopez"
    assert p.query_terms("is it") == "is it"  # nothing left: the message itself
    assert p.query_terms("who owns the red car") == "owns red car"  # 3 letters are enough
    assert p.params.query_min_term_length == 3


def test_the_search_limit_is_10():
    """context-retrieval.ts:65 and :272: searchMemories(limit: maxMemories = 10)."""
    p = make(preference_limit=0)
    for i in range(12):
        add(p, i, f"cobalt harbor {i}")
    assert len(ask(p, "cobalt harbor", 1.0, k=20)) == 10
    assert p.params.search_limit == 10


def test_strength_below_0_3_is_dropped_after_the_limit():
    """context-retrieval.ts:66 minMemoryStrength 0.3, applied after the search's limit
    (retrieval.ts:137-141): a weak memory is not returned; at memsim's old 0.1 it was."""
    for min_strength, want in ((0.3, []), (0.1, [0])):
        p = make(min_strength=min_strength, preference_limit=0)
        add(p, 0, "cobalt harbor", category="event", importance=0.0)  # exp(-0.05 x 30) = 0.22
        assert ask(p, "cobalt harbor", 30.0) == want
    # either side of 0.3: exp(-0.05 x 23.4) = 0.310 is kept, exp(-0.05 x 24.8) = 0.289 not
    for day, want in ((23.4, [0]), (24.8, [])):
        p = make(preference_limit=0)
        add(p, 0, "cobalt harbor", category="event", importance=0.0)
        assert ask(p, "cobalt harbor", day) == want
    # a strong memory found only beyond the limit stays out: the limit comes first
    p = make(preference_limit=0)
    weak = [add(p, i, "cobalt harbor cobalt", category="event", importance=0.0) for i in range(10)]
    strong = add(p, 10, "cobalt harbor and much else besides", now=29.0)
    assert p.strength(30.0)[weak].max() < 0.3 <= p.strength(30.0)[strong]
    assert ask(p, "cobalt harbor", 30.0) == []


def test_results_are_ranked_by_strength_confidence_and_importance():
    """decay.ts:100: score = strength x 0.5 + confidence x 0.3 + importance x 0.2; the keyword
    score does not rank. The better keyword match, less confident, comes second."""
    p = make(preference_limit=0)
    a = add(p, 0, "cobalt harbor cobalt harbor", confidence=0.5)
    b = add(p, 1, "cobalt and twenty other words about nothing in particular here", confidence=1.0)
    index = BM25Index()
    index.add([p.store.text[a], p.store.text[b]])
    assert np.argmax(index.scores(tokens("cobalt harbor"), 1.2, 0.75)) == 0  # BM25 ranks a first
    assert ask(p, "cobalt harbor", 1.0) == [b, a]
    (ranking,) = p.recall([Query("q", 1.0, "cobalt harbor", keys=("k0",))], 1.0)
    s = p.strength(1.0)
    assert ranking.scores[0] == pytest.approx(0.5 * s[b] + 0.3 * 1.0 + 0.2 * 0.9)


def test_a_search_refreshes_its_top_5_only():
    """retrieval.ts:175-176: rankedMemories.slice(0, 5) get refreshMemoryAccess; the others
    returned keep their lastAccessed (003: every retrieved memory is refreshed)."""
    p = make(preference_limit=0)
    rows = [add(p, i, f"cobalt harbor {i}") for i in range(8)]
    got = ask(p, "cobalt harbor", 2.0)
    assert sorted(got) == rows
    refreshed = p.store["last_access"][got] == 2.0
    assert refreshed.tolist() == [True] * 5 + [False] * 3
    doc = registry.make("izzie", llm=LineLLM(), seed=0)  # 003: every one returned
    for i in range(8):
        add(doc, i, f"cobalt harbor {i}")
    got = ask(doc, "cobalt harbor", 2.0)
    assert len(got) == 8 and np.all(doc.store["last_access"][got] == 2.0)


def test_the_preference_search_comes_first():
    """context-retrieval.ts:275-281 and :303-314: every message also searches 'user
    preferences name' (limit 5) for preference memories of importance >= 0.8, merged before
    the message's own results."""
    got = {}
    for limit in (5, 0):
        p = make(preference_limit=limit)
        own = add(p, 0, "cobalt harbor", category="fact")
        name = add(p, 1, "user name is Bob", importance=0.8)  # 0.8: in (>=)
        add(p, 2, "user name nickname", importance=0.75)  # below 0.8: out
        got[limit] = ask(p, "cobalt harbor", 1.0)
    assert got == {5: [name, own], 0: [own]}
    # the preference search returns at most 5, however many match
    p = make()
    for i in range(7):
        add(p, i, f"user name {i}")
    assert len(ask(p, "nothing matches this", 1.0)) == 5


def test_forgotten_memories_take_places_in_the_limit():
    """retrieval.ts:92: deleted memories are dropped after the search's limit, so ten
    forgotten better matches leave nothing for the eleventh."""
    p = make(preference_limit=0)
    for i in range(10):
        add(p, i, "cobalt harbor cobalt harbor")
    last = add(p, 10, "cobalt harbor and more words")
    p.forget([Forget(f"f{i}", 1.0, f"e{i}") for i in range(10)], 1.0)
    assert ask(p, "cobalt harbor", 2.0) == []
    assert np.all(p.store.retrievable()[[last]])
