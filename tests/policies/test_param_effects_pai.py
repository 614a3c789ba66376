"""Defaults of ``pai`` (seed document 000) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default and shows the behaviour the seed section
names, so moving that default (``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

import math

import numpy as np

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import Faults
from memsim.engine.mockllm import MockLLM
from policies.pai import PaiParams, PersonalAI, importance_1_10
from tests.policies.test_pai import C, FakeLLM


def ep(eid: str, t: float, claim: Claim) -> Episode:
    return Episode(eid, t, f"text of {eid}", (claim,))


def mock() -> MockLLM:
    return MockLLM(seed=0, faults=Faults())


def test_s3_synthesize_makes_at_most_5_meta_beliefs_a_run():
    """000 §3 synthesize: "up to 5" clusters a run; seven themes give five meta-beliefs."""
    pol = PersonalAI(PaiParams(synthesis_threshold=0.5), llm=mock())
    for t in "abcdefg":
        pol.ingest([ep(f"{t}1", 0, Claim(f"{t}.x", "1"))], 0.0)
        pol.ingest([ep(f"{t}2", 0, Claim(f"{t}.y", "2"))], 0.0)
    out = pol.maintain(1.0, ["synthesize"])
    assert [o.action for o in out] == ["synthesize"] * 5


def test_s1_find_similar_beliefs_gives_the_classifier_at_most_5():
    """000 §1 findSimilarBeliefs(embedding, limit=5): seven beliefs sit in the grey zone of a
    new claim (cosine 0.81 each); the classifier is asked about five of them."""
    llm = FakeLLM()
    pol = PersonalAI(llm=llm)
    for k in range(1, 8):
        pol.ingest([ep(f"e{k}", 0, C(f"b{k}.x", "v", sim=0.9, slot=k))], 0.0)
    llm.classify_calls.clear()
    out = pol.ingest([ep("new", 0, C("n.x", "v", sim=0.9, slot=20))], 0.0)
    assert [o.action for o in out][0] == "create"
    assert [len(candidates) for _, candidates in llm.classify_calls] == [5]


def test_s1_importance_is_clamped_to_10():
    """000 §1 "clamp importance 1-10": a reply over the scale (1.06 -> 11) is stored as 10.
    A claim's importance is validated into [0, 1] by the stream, so only the function that
    reads the LLM's reply sees one (a direct call)."""
    assert importance_1_10(1.06, PaiParams()) == 10
    assert importance_1_10(1.0, PaiParams()) == 10


def test_s2_graph_traversal_starts_from_the_top_3_results():
    """000 §2: the linked neighbours of the top-3 results join at 0.8 x their parent's
    score; the fourth result's neighbour does not."""
    pol = PersonalAI(llm=FakeLLM())
    for i, sim in enumerate([0.6, 0.55, 0.5, 0.45]):  # found by the query, unlinked
        pol.ingest([ep(f"p{i}", 0, C(f"p{i}.x", "v", sim, 1 + i))], 0.0)
    for i in range(4):  # cosine 0 with the query: reached only through a link
        pol.ingest([ep(f"n{i}", 0, C(f"n{i}.x", "v", 0.0, 10 + i))], 0.0)
        pol._link(i, 4 + i)
    r = pol.recall([Query("q", 0, "x", keys=("a",), k=8)], 0.0)[0]
    assert sorted(r.ids.tolist()) == [0, 1, 2, 3, 4, 5, 6]


def test_s3_reflect_loads_at_most_200_beliefs():
    """000 §3 reflect "loads up to 200 active beliefs": of 201 stale beliefs, 200 are
    flagged."""
    pol = PersonalAI(llm=FakeLLM(dim=256))
    for i in range(201):  # pairwise cosine 0.01: no two alike
        pol.ingest([ep(f"e{i}", 0, C(f"k{i}.x", "v", 0.1, 1 + i))], 0.0)
    assert pol.store.n == 201
    _, stale = pol.reflect(100.0)  # 0.6 x 0.5 ^ (100 / 30) = 0.059 < 0.10
    assert len(stale) == 200


def test_s4_find_contradictions_pairs_beliefs_at_cosine_040_to_085():
    """000 §4 findContradictions (curator plugin): pairs of active beliefs with cosine in
    [0.40, 0.85]. Of a belief's pairs at 0.42, 0.38 and 0.90 only the first is reported
    (0.90 set by hand: two beliefs that alike would have reinforced at ingest)."""
    pol = PersonalAI(llm=FakeLLM())
    pol.ingest([ep("a", 0, C("a.x", "v", 1.0, 1))], 0.0)
    pol.ingest([ep("b", 0, C("b.x", "v", 0.42, 2))], 0.0)
    pol.ingest([ep("c", 0, C("c.x", "v", 0.38, 3))], 0.0)
    pol.ingest([ep("d", 0, C("d.x", "v", 0.0, 4))], 0.0)
    v = np.zeros(32)
    v[0], v[5] = 0.9, math.sqrt(1.0 - 0.81)
    pol.store.set_embedding([3], v[None, :])
    assert [{a, b} for a, b, _ in pol.find_contradictions(0.0)] == [{0, 1}]


def test_s8_a_conversation_idle_for_a_day_offers_its_last_turns():
    """000 §8 "every conversation chunk (when >= 4 turns)": memsim's choice, a conversation
    with no turn for a day has ended; the next reflect run consolidates its four turns."""
    pol = PersonalAI(llm=mock())
    text = "We talked about the garden project and tomato plants number {}"
    turns = [Episode(f"c{i}", 0.0, text.format(i), (), conversation="k") for i in range(4)]
    pol.ingest(turns, 0.0)
    assert pol.summaries == []
    out = pol.maintain(1.05, ["reflect"])
    assert [(o.event, o.action) for o in out][:1] == [("k#end", "consolidate")]


def test_s4_episode_context_needs_a_cosine_above_030():
    """000 §4 getMemoryContext: summary episodes with cosine > 0.30 to the query (a
    summary's vector set by hand at 0.31, then 0.29)."""
    pol = PersonalAI(llm=mock())
    text = "We talked about the garden project and tomato plants number {}"
    turns = [Episode(f"c{i}", 0.0, text.format(i), (), conversation="k") for i in range(5)]
    pol.ingest(turns, 0.0)
    (summary,) = pol.summaries
    q = Query("q", 1.0, "garden project tomato plants", answers=("c0",))
    qv = np.asarray(pol.llm.embed_query(q), dtype=np.float64)
    qv /= np.linalg.norm(qv)
    other = np.zeros_like(qv)
    other[int(np.argmin(np.abs(qv)))] = 1.0
    other -= (other @ qv) * qv
    other /= np.linalg.norm(other)
    for cos, found in ((0.31, True), (0.29, False)):
        summary.embedding = (cos * qv + math.sqrt(1.0 - cos * cos) * other).astype(np.float32)
        assert bool(pol.episode_context(q)) is found, cos
