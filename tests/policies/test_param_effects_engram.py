"""Defaults of ``engram`` (seed document 001) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default, so moving that default
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

import numpy as np
import pytest

from memsim.engine.events import Query
from tests.policies.test_engram import ep, make, plant, unit


def set_columns(pol, row: int, **cols) -> None:
    for k, v in cols.items():
        pol.store[k][row] = v


def test_revision_needs_a_confidence_once_above_05():
    """001 §Belief Lifecycle 4: a belief revises when its confidence fell under 0.4 after
    being "previously above 0.5": a peak of 0.52 is enough."""
    pol = make()
    b = plant(pol)
    # confidence 1 / 2.6 = 0.3846 < 0.4, three contradictions, five pieces of evidence
    set_columns(pol, b, alpha=1.0, beta=1.6, peak_confidence=0.52, n_contra=3, evidence=5)
    assert pol.should_revise(b)


@pytest.mark.parametrize("cosine, merges", [(0.93, True), (0.90, False)])
def test_merge_needs_a_cosine_above_092(cosine, merges):
    """001 §Configuration MERGE_MIN_SIMILARITY 0.92: two confident, settled beliefs of one
    scope merge only when their cosine is above it."""
    pol = make()
    plant(pol, 0, key="m0.x", alpha=4, beta=1, vec=unit(1.0))
    plant(pol, 1, key="m1.x", alpha=4, beta=1, vec=unit(cosine))
    assert (pol.merge_pair(10.0) is not None) is merges


def test_a_cycle_merges_one_pair_even_when_two_could_merge():
    """001 §Belief Lifecycle 6: "only one pair per cycle". Two disjoint pairs pass the gate
    (each pair near-identical, the pairs orthogonal); the cycle merges one."""
    pol = make()
    near = {0: 1.0, 1: 0.999}
    rows = [
        plant(pol, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(near[i % 2], i // 2, i // 2 + 2))
        for i in range(4)
    ]
    out = pol._gates(rows, 14.0)
    assert sum(o.action == "merge" for o in out) == 1
    assert pol.merge_pair(14.0) is not None  # the other pair waits for the next cycle


def test_recall_returns_two_beliefs_when_more_would_rank():
    """001 §Configuration MAX_BELIEF_BITES 2: four relevant beliefs outscore every episode
    (of another topic), and the recall still holds two of them."""
    pol = make()
    for i in range(4):
        plant(pol, i, key="topic.fact", value=f"v{i}")
    pol.ingest([ep(10 + i, 0.0, "other.thing", f"w{i}") for i in range(6)], 0.0)
    r = pol.recall([Query("q", 1.0, "topic fact", keys=("topic.fact",), k=6)], 1.0)[0]
    kinds = pol.store["kind"][r.ids]
    assert len(r.ids) == 6 and (kinds == pol.store.kind_code("belief")).sum() == 2


def test_an_episode_bite_scores_half_its_cosine_plus_three_tenths_of_its_strength():
    """memsim's choice (001 leaves episode scoring to handleMemoryRecall): an episode bite
    scores 0.5 x cosine + 0.3 x retrieval strength."""
    pol = make()
    pol.ingest([ep(i, 0.0, "topic.fact", f"v{i}") for i in range(2)], 0.0)
    q = Query("q", 4.0, "topic fact", keys=("topic.fact",), k=1)
    _, episode_scores = pol.score_query(q, 4.0)
    rows = np.flatnonzero(np.isfinite(episode_scores))
    assert len(rows) == 2
    cos = pol.store.embedding[rows].astype(np.float64) @ np.asarray(pol.llm.embed_query(q))
    r = pol.strength(4.0, rows)
    assert 0.0 < r.min() < 1.0
    assert episode_scores[rows] == pytest.approx(0.5 * cos + 0.3 * r, abs=1e-6)  # float32 cos
