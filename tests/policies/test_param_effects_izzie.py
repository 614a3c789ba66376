"""Defaults of ``izzie`` (seed document 003) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default, so moving that default
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

import math

from memsim.engine.events import Query
from policies.izzie import Izzie
from tests.policies.test_izzie import FakeLLM, ep


def test_the_semantic_search_finds_20_memories_before_the_strength_ranking():
    """003 §Context Retrieval, search first (limit 20, memsim's choice): the 21st most similar
    memory is never ranked, though its relevance x strength would beat every one found."""
    vectors = {"q": [1.0, 0.0, 0.0, 0.0]}
    for i in range(21):
        c = 0.99 - 0.01 * i if i < 20 else 0.5
        vectors[f"m{i}.x"] = [c, math.sqrt(1.0 - c * c), 0.0, 0.0]
    pol = Izzie(llm=FakeLLM(vectors))
    for i in range(21):
        # the 20 most similar barely matter (importance 0.1), the 21st matters most
        pol.ingest([ep(f"e{i}", 0.0, f"m{i}.x", importance=0.1 if i < 20 else 1.0)], 0.0)
    r = pol.recall([Query("q", 1.0, "q", keys=("q",), k=1)], 1.0)[0]
    assert r.ids.tolist() == [0]
