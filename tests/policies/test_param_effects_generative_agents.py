"""Defaults of ``generative-agents`` (Park et al. 2023 §4.1) that only a behaviour at the
default reveals: each test leaves the fields it pins at their defaults."""

from __future__ import annotations

import pytest

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.registry import make
from policies.reference_claims import OneVectorLLM, TwoKeysLLM


def _ep(i: int, t: float, key: str, importance: float) -> Episode:
    return Episode(f"e{i}", t, "x", (Claim(key, "1", importance=importance),))


def test_paper_score_weighs_recency_importance_and_relevance_alike():
    """§4.1: score = alpha_recency * recency + alpha_importance * importance + alpha_relevance
    * relevance, each min-max normalized, every alpha 1. Row 0 (relevant, unimportant,
    older) scores 0 + 0 + 1; row 1 (irrelevant, important, newer) 1 + 1 + 0."""
    pol = make("generative-agents", llm=TwoKeysLLM())
    pol.ingest([_ep(0, 0.0, "a.b", 0.1)], 0.0)
    pol.ingest([_ep(1, 1.0, "c.d", 0.9)], 1.0)
    r = pol.recall([Query("q", 2.0, "a?", keys=("a.b",), k=2)], 2.0)[0]
    assert r.ids.tolist() == [1, 0]
    assert r.scores.tolist() == pytest.approx([2.0, 1.0], abs=1e-12)


def test_code_recency_is_0995_to_the_power_of_the_rank():
    """retrieve.py (released code): recency = recency_decay ^ rank in the order of last access
    (rank 1 the least recently accessed), recency_decay 0.995 as the released personas'
    scratch.json set it, min-max normalized: of three memories equal in every other way, the
    middle one's recency is (0.995^2 - 0.995^3) / (0.995 - 0.995^3)."""
    pol = make("generative-agents-code", llm=OneVectorLLM())
    for i in range(3):
        pol.ingest([_ep(i, float(i), "a.b", 0.5)], float(i))
    r = pol.recall([Query("q", 3.0, "a?", keys=("a.b",), k=3)], 3.0)[0]
    assert r.ids.tolist() == [0, 1, 2]
    middle = (0.995**2 - 0.995**3) / (0.995 - 0.995**3)
    # weights 0.5 recency, 3 relevance, 2 importance; a constant component normalizes to 0.5
    assert r.scores[1] == pytest.approx(0.5 * middle + 3 * 0.5 + 2 * 0.5, abs=1e-9)
