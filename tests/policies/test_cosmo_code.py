"""cosmo-code follows CaptainCrouton89/Saturn (the backend 002 documents) at commit
4be0950d494294e4dbaa4488eed0835973d777ec, file backend/src/services/decayService.ts (the
nightly job, ``buildNodeDecayQuery``); the retrieval boost comes from
backend/src/repositories/ConceptRepository.ts (``incrementAccess``) as the index holds it at
77ad7c1fb7c980ba57a12a29b2c1930d3d73d138. One test per fact, each naming file and line, each
against the documented ``cosmo`` (or the code's own formula) so that reverting the fact fails
it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine import registry
from memsim.engine.events import Claim, Episode
from memsim.engine.mockllm import MockLLM


def make(policy_id: str, **params):
    return registry.make(policy_id, llm=MockLLM(seed=0), seed=0, params=params or None)


def plant(policy, now: float = 0.0, key: str = "topic.fact", **attrs) -> int:
    claim = Claim(key, "v", confidence=attrs.pop("confidence", 1.0), attrs=tuple(attrs.items()))
    return policy.plant(Episode(f"e-{key}-{now}", now, key, (claim,)), now)


def boost(days: float) -> float:
    """decayService.ts:73-77, written out: 0.05 + 0.95 min(1, (1 - e^-d/20) / (1 - e^-90/20))."""
    return 0.05 + 0.95 * min(1.0, (1 - math.exp(-days / 20)) / (1 - math.exp(-90 / 20)))


def test_the_variant_names_the_repository_and_commit_it_follows():
    doc = registry.spec("cosmo-code").load().Params.__doc__
    assert "CaptainCrouton89/Saturn" in doc and "4be0950d494294e4dbaa4488eed0835973d777ec" in doc


def test_thirty_nights_after_a_recall_the_gradient_is_2_63_not_4_05():
    """decayService.ts:74-83: each night a node recalled before gains 0.1 x boost(interval),
    boost in [0.05, 1], not a flat 0.1. Gradient 1.05 at a recall, thirty nights: 2.63 (the
    flat rule gave 4.05). keep_forever keeps the node out of archival for the thirty nights."""
    p = make("cosmo-code")
    row = plant(p, state="active", decay_gradient=1.05, ttl_policy="keep_forever")
    p.access(np.array([row]), 0.0)
    for night in range(1, 31):
        p.maintain(float(night), ["nightly"])
    got = p.store["decay_gradient"][row]
    assert got == pytest.approx(1.05 + sum(0.1 * boost(d) for d in range(1, 31)))
    assert round(got, 2) == 2.63
    flat = make("cosmo-code", spacing_form="document")
    row = plant(flat, state="active", decay_gradient=1.05, ttl_policy="keep_forever")
    flat.access(np.array([row]), 0.0)
    for night in range(1, 31):
        flat.maintain(float(night), ["nightly"])
    assert flat.store["decay_gradient"][row] == pytest.approx(4.05)


def test_an_equal_interval_lowers_the_gradient():
    """decayService.ts:84-87: interval_days <= last_recall_interval lowers the gradient by
    0.05 x (1 - boost) (002: an equal interval leaves it unchanged)."""
    p = make("cosmo-code")
    row = plant(p, state="active", decay_gradient=2.0, last_recall_interval=5.0)
    p.access(np.array([row]), 0.0)
    p.maintain(5.0, ["nightly"])  # interval 5 = last 5
    assert p.store["decay_gradient"][row] == pytest.approx(2.0 - 0.05 * (1 - boost(5.0)))


def test_the_gradient_never_falls_below_0_5():
    """decayService.ts:86 and :94: CASE WHEN new_decay_gradient < 0.5 THEN 0.5."""
    p = make("cosmo-code")
    row = plant(p, state="active", decay_gradient=0.51, last_recall_interval=40.0)
    p.access(np.array([row]), 0.0)
    p.maintain(1.0, ["nightly"])  # interval 1 < 40: 0.51 - 0.05 x (1 - 0.097) < 0.5
    assert p.store["decay_gradient"][row] == 0.5
    assert p.params.gradient_floor == 0.5


def test_a_node_never_accessed_keeps_its_gradient():
    """decayService.ts:67-70: interval_days is null without a last_accessed_at, and the
    gradient moves only when it is not (lines 82-89)."""
    p = make("cosmo-code")
    row = plant(p, state="active")
    for night in (1.0, 2.0, 3.0):
        p.maintain(night, ["nightly"])
    assert p.store["decay_gradient"][row] == 1.0


def test_a_retrieval_leaves_the_gradient_alone():
    """ConceptRepository.ts:598-619 (at 77ad7c1): incrementAccess sets access_count,
    recall_frequency, last_accessed_at, salience and state, never decay_gradient or
    last_recall_interval; 002 (and cosmo) apply the spacing rule at the recall."""
    doc, code = make("cosmo"), make("cosmo-code")
    rd, rc = plant(doc, state="active"), plant(code, state="active")
    doc.access(np.array([rd]), 10.0)
    code.access(np.array([rc]), 10.0)
    assert doc.store["decay_gradient"][rd] == pytest.approx(1.1)
    assert code.store["decay_gradient"][rc] == 1.0
    assert code.store["last_recall_interval"][rc] == 0.0


def test_a_retrieval_adds_0_075_salience():
    """ConceptRepository.ts:599 (at 77ad7c1): salienceBoost = 0.075 ('Mid-point of [0.05,
    0.1] range'); 002 leaves alpha in [0.05, 0.1] and cosmo takes 0.1."""
    doc, code = make("cosmo"), make("cosmo-code")
    rd, rc = plant(doc, state="active"), plant(code, state="active")
    doc.access(np.array([rd]), 0.0)
    code.access(np.array([rc]), 0.0)
    assert doc.store["salience"][rd] == pytest.approx(0.6)
    assert code.store["salience"][rc] == pytest.approx(0.575)


def test_a_source_candidate_is_penalized_at_confidence_0_5():
    """decayService.ts:55-58: coalesce(n.confidence, 0.5): a Source (no confidence) in state
    candidate decays 1 + (1 - 0.5) x 2 = 2 times faster; 002 gives Sources no confidence, so
    cosmo decays them at the base rate."""
    doc, code = make("cosmo"), make("cosmo-code")
    rd, rc = plant(doc, kind="source"), plant(code, kind="source")
    assert doc.rates()[rd] == pytest.approx(0.02)
    assert code.rates()[rc] == pytest.approx(0.02 * 2.0)
    assert code.params.missing_confidence == 0.5


def test_the_nightly_job_counts_whole_days():
    """decayService.ts:42-48: days_unused = duration.between(...).days (+ months x 30), whole
    days: a node created at day 0.5 has 0 days unused at the night of day 1 and does not
    decay; 002's literal job (cosmo, decay_mode nightly) decays it by half a day."""
    code, frac = make("cosmo-code"), make("cosmo", decay_mode="nightly")
    rc, rf = plant(code, 0.5, state="active"), plant(frac, 0.5, state="active")
    code.maintain(1.0, ["nightly"])
    frac.maintain(1.0, ["nightly"])
    assert code.store["salience"][rc] == 0.5
    assert frac.store["salience"][rf] == pytest.approx(0.5 * math.exp(-0.02 * 0.5))


def test_the_nightly_job_skips_archived_nodes():
    """decayService.ts:29: WHERE ... coalesce(n.state, 'candidate') <> 'archived'; 002's job
    runs 'For all nodes with salience > 0'."""
    doc = make("cosmo", decay_mode="nightly")
    code = make("cosmo-code")
    rd, rc = plant(doc, state="archived"), plant(code, state="archived")
    doc.maintain(2.0, ["nightly"])
    code.maintain(2.0, ["nightly"])
    assert doc.store["salience"][rd] < 0.5
    assert code.store["salience"][rc] == 0.5
