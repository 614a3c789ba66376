"""Defaults of ``cosmo`` (seed document 002) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default, so moving that default
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

import numpy as np
import pytest

from memsim.engine.events import Claim, Query
from tests.policies.test_cosmo import ask, ep, make, node, plant


def test_storyline_promotion_takes_at_most_100_anchors_a_night():
    """002 §Nightly Storyline Promotion: "ORDER BY source_count DESC LIMIT 100". 101 anchors
    pass every gate (five sources on three days, active, first mentioned four days before);
    the one with six sources comes first, and one of the rest waits for another night."""
    pol = make()
    keys = [f"topic{i}.fact" for i in range(101)]
    for j, day in enumerate([0.0, 0.5, 1.0, 2.0, 2.5]):
        pol.ingest([ep(j * 1000 + i, day, k) for i, k in enumerate(keys)], day)
    pol.ingest([ep(9999, 2.6, keys[0])], 2.6)  # one more source: the most
    anchors = [node(pol, k) for k in keys]
    pol.access(np.array(anchors), 3.0)
    got = pol.storyline_candidates(4.0).tolist()
    assert len(got) == 100 and got[0] == anchors[0]
    assert sorted(set(anchors) - set(got)) == [anchors[-1]]  # equal counts: by node order


def test_a_candidate_at_confidence_08_does_not_decay():
    """002 §Candidate Semantics: a candidate at confidence >= 0.8 does not decay; one just
    under it decays faster than the base rate."""
    pol = make()
    pol.ingest([ep(0, 0.0, "topic.sure", confidence=0.8)], 0.0)
    pol.ingest([ep(1, 0.0, "topic.unsure", confidence=0.79)], 0.0)
    sure, unsure = node(pol, "topic.sure"), node(pol, "topic.unsure")
    assert pol.store.status_of(sure) == pol.store.status_of(unsure) == "candidate"
    rates = pol.rates(np.array([sure, unsure]))
    assert rates[0] == 0.0 and rates[1] > pol.params.base_rate


def test_a_structured_claim_counts_as_three_subpoints():
    """memsim's choice for 002 §Phase 2 Step 1 (subpoints > 2): a claim with a key, value and
    category counts as three subpoints, so it passes the filter just."""
    pol = make()
    assert pol.subpoints(Claim("topic.fact", "v")) == 3
    assert pol.passes_extraction(Claim("topic.fact", "v", confidence=0.9))


def _storyline(pol) -> int:
    for j, day in enumerate([0.0, 1.0, 2.0, 2.5, 2.6]):
        pol.ingest([ep(j, day)], day)
    pol.access(np.array([node(pol)]), 3.0)
    return pol.promote_storylines(4.0)[0].memory


@pytest.mark.parametrize("days, attached", [(89.9, True), (90.1, False)])
def test_a_source_attaches_to_a_storyline_with_a_source_in_the_last_90_days(days, attached):
    """002 §Phase 2 Step 4.5: a new Source joins its anchor's storylines whose last source is
    within 90 days."""
    pol = make()
    st = _storyline(pol)
    last = float(pol.store["last_source_at"][st])
    pol.ingest([ep(50, last + days)], last + days)
    assert ("e50" in pol.store.provenance[st]) is attached


def test_a_refresh_summarizes_the_storyline_with_its_last_10_sources():
    """002 §Nightly Storyline Refresh: a dirty storyline is re-summarized from its summary and
    its last 10 Source summaries."""
    pol = make()
    st = _storyline(pol)
    for j in range(7):  # 5 + 7 = 12 sources
        pol.ingest([ep(50 + j, 5.0 + j)], 5.0 + j)
    assert pol.store["source_count"][st] == 12
    asked: list[list[str]] = []
    summarize = pol.llm.summarize

    def recording(texts, *, key):
        asked.append(list(texts))
        return summarize(texts, key=key)

    pol.llm.summarize = recording
    before = pol.store.text[st]
    pol.refresh_storylines(13.0)
    recent = [pol.store.text[r] for r in pol.includes[st][-10:]]
    assert asked == [[before, *recent]] and len(set(pol.includes[st])) == 12


def test_macro_promotion_takes_at_most_50_anchors_a_week():
    """002 §Weekly Macro Promotion: "LIMIT 50". 51 anchors with two storylines each (the
    second made by clearing has_meso, as the documented jobs never make one: see
    test_cosmo's macro test) and a first mention over 30 days ago: 50 are found."""
    pol = make()
    keys = [f"topic{i}.fact" for i in range(51)]
    for j, day in enumerate([0.0, 0.5, 1.0, 2.0, 2.5]):
        pol.ingest([ep(j * 1000 + i, day, k) for i, k in enumerate(keys)], day)
    anchors = np.array([node(pol, k) for k in keys])
    pol.access(anchors, 3.0)
    assert len(pol.promote_storylines(4.0)) == 51
    pol.store["has_meso"][anchors] = False
    assert len(pol.promote_storylines(5.0)) == 51
    found = pol.macro_candidates(40.0)
    assert len(found) == 50 and all(len(storylines) == 2 for _, storylines in found)


def test_recall_score_is_the_cosine_plus_a_tenth_of_the_salience():
    """memsim's choice (002 names no ranking formula): score = cosine + 0.1 x salience."""
    pol = make()
    pol.ingest([ep(0, 0.0, "topic.fact"), ep(1, 0.0, "other.fact")], 0.0)
    pol.ingest([ep(2, 3.0, "topic.fact")], 3.0)
    q = Query("q", 5.0, "topic.fact", keys=("topic.fact",), k=3)
    rows, scores = pol.score_rows(q, 5.0)
    qv = np.asarray(pol.llm.embed_query(q), dtype=np.float32)
    cos = (pol.store.embedding[rows] @ qv).astype(np.float64)
    salience = pol.salience_at(5.0, rows)
    assert len(rows) >= 2 and salience.min() > 0.1
    assert scores == pytest.approx(cos + 0.1 * salience, abs=1e-6)


@pytest.mark.parametrize("salience, archived", [(0.21, False), (0.19, True)])
def test_a_week_old_source_is_consolidated_below_salience_02(salience, archived):
    """002 §Memory Consolidation: a Source older than 7 days with salience < 0.2 is archived
    into its nodes."""
    pol = make()
    pol.ingest([ep(0, 0.0)], 0.0)
    src = int(np.flatnonzero(pol.store["kind"] == pol.store.kind_code("source"))[0])
    pol.refresh_descriptions(0.5)
    pol.store["salience0"][src] = 1.0
    scale = salience / float(pol.salience_at(7.5, np.array([src]))[0])
    pol.store["salience0"][src] = scale
    assert float(pol.salience_at(7.5, np.array([src]))[0]) == pytest.approx(salience)
    out = pol.consolidate_episodic(7.5)
    assert ([o.memory for o in out] == [src]) is archived


def test_the_default_search_leaves_archived_nodes_out():
    """002 §Memory States: archived is "excluded from default searches"; the default recall
    neither returns nor re-activates an archived node."""
    pol = make()
    n = plant(pol, state="archived", salience=0.005)
    r = ask(pol, 1.0)
    assert pol.store.status_of(n) == "archived" and n not in r.ids.tolist()
