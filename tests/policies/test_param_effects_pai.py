"""Defaults of ``pai`` (seed document 000) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default and shows the behaviour the seed section
names, so moving that default (``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

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
