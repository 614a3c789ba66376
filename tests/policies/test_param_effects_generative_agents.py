"""Defaults of ``generative-agents`` (Park et al. 2023 §4.1) that only a behaviour at the
default reveals: each test leaves the fields it pins at their defaults."""

from __future__ import annotations

import pytest

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.registry import make
from policies.reference_claims import TwoKeysLLM


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
