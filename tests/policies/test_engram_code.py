"""engram-code follows Engram's public code: repository EthanGabis/claude-memory, commit
acac56b01d5599ad0c6616b4d6b91d523c394faf, files processor/belief-consolidator.ts,
processor/belief-utils.ts and mcp/server.ts (the recall handler). One test per rule of
that commit the streams reach, each against the documented policy ``engram`` (seed 001)
where the two differ. docs/policies/engram-code.md lists the rules and the lines."""

from __future__ import annotations

import numpy as np
import pytest

from memsim.engine import registry
from memsim.engine.events import Query
from memsim.engine.llm import CONTRADICTS, IRRELEVANT, PARTIAL, SUPPORTS
from policies.engram import Engram, EngramParams
from tests.policies.test_engram import DIM, StubLLM, _cluster_against, beliefs, plant, unit

COMMIT = "acac56b01d5599ad0c6616b4d6b91d523c394faf"


def make(policy_id: str = "engram-code", llm=None, **params) -> Engram:
    Params = registry.spec(policy_id).load().Params
    return Engram(Params(**params), llm=llm or StubLLM(DIM))


def test_the_variant_names_its_commit_and_files():
    doc = registry.spec("engram-code").load().Params.__doc__ or ""
    assert COMMIT in doc and "belief-consolidator.ts" in doc and "belief-utils.ts" in doc


# ----------------------------------------------------------- belief-consolidator.ts evidence
@pytest.mark.parametrize("policy_id, alpha", [("engram", 1.0), ("engram-code", 4.0)])
def test_a_new_belief_starts_at_alpha_1_plus_its_cluster_size(policy_id, alpha):
    """belief-consolidator.ts:585 (createNewBelief): ``initialAlpha = 1 +
    candidate.episodeIds.length``; 001 §Belief Lifecycle 1: alpha = 1, beta = 1."""
    pol = make(policy_id)
    plant(pol, vec=unit(1.0))
    _cluster_against(pol, 0.5)  # a 3-episode cluster, novel
    new = beliefs(pol)[-1]
    assert pol.store["alpha"][new] == alpha and pol.store["beta"][new] == 1.0
    assert pol.store["peak_confidence"][new] == pytest.approx(alpha / (alpha + 1.0))


@pytest.mark.parametrize(
    "reply, alpha, beta",
    [(SUPPORTS, 3.0, 0.0), (CONTRADICTS, 0.0, 3.0), (PARTIAL, 1.5, 1.5)],
)
def test_evidence_counts_every_episode_of_the_cluster(reply, alpha, beta):
    """belief-consolidator.ts reinforceBelief / contradictBelief: ``increment =
    episodeIds.length`` added to alpha / beta; matchCandidate's PARTIAL case adds
    ``episodeIds.length * 0.5`` to both. 001 §Belief Lifecycle 2-3: +1 per classification
    (PARTIAL: no change to alpha or beta)."""
    for policy_id, scale in (("engram-code", 1.0), ("engram", None)):
        pol = make(policy_id, StubLLM(DIM, relations={"topic.fact": reply}))
        b = plant(pol, vec=unit(1.0))
        _cluster_against(pol, 0.85)
        got = (pol.store["alpha"][b] - 1.0, pol.store["beta"][b] - 1.0)
        if scale is None:
            want = {SUPPORTS: (1.0, 0.0), CONTRADICTS: (0.0, 1.0), PARTIAL: (0.0, 0.0)}[reply]
        else:
            want = (alpha, beta)
        assert got == want, policy_id


def test_reinforcement_above_092_adds_the_cluster_size():
    """belief-consolidator.ts matchCandidate Case 1 calls reinforceBelief: +N."""
    pol = make()
    b = plant(pol, vec=unit(1.0))
    _cluster_against(pol, 0.95)
    assert pol.store["alpha"][b] == 4.0 and pol.store["last_reinforced"][b] == 1.0


# ------------------------------------------------------ belief-consolidator.ts matchCandidate
def test_every_classification_irrelevant_creates_a_new_belief():
    """belief-consolidator.ts:562: ``if (!matched) createNewBelief(...)``; 001 §How It Works
    4 gives IRRELEVANT no action, so the document's cluster makes no belief."""
    for policy_id, created in (("engram-code", 1), ("engram", 0)):
        pol = make(policy_id, StubLLM(DIM, relations={"topic.fact": IRRELEVANT}))
        plant(pol, vec=unit(1.0))
        out = _cluster_against(pol, 0.85)
        assert len(beliefs(pol)) == 1 + created, policy_id
        assert sum(o.detail == "every classification IRRELEVANT" for o in out) == created


def test_the_first_matching_classification_ends_the_match():
    """belief-consolidator.ts matchCandidate: ``if (matched) break``: only the most similar
    belief classified SUPPORTS / CONTRADICTS / PARTIAL takes the evidence, the rest are not
    asked; 001 classifies up to 5 and every one acts."""
    relations = {f"k{i}.x": SUPPORTS for i in range(3)}
    for policy_id, reinforced in (("engram-code", 1), ("engram", 3)):
        llm = StubLLM(DIM, relations=relations)
        pol = make(policy_id, llm)
        rows = [
            plant(pol, i, key=f"k{i}.x", vec=unit(0.85 - 0.01 * i, axis=0, other=2 + i))
            for i in range(3)
        ]
        _cluster_against(pol, 1.0, key="new.x", start=50)
        assert int((pol.store["alpha"][rows] > 1.0).sum()) == reinforced, policy_id
        assert pol.store["alpha"][rows[0]] > 1.0  # the most similar one first


# ------------------------------------------------------------------ mcp/server.ts recall
def test_recall_needs_confidence_strictly_above_04():
    """The recall handler: ``if (confidence <= BELIEF_CONFIG.MIN_CONFIDENCE_FOR_RECALL)
    continue``; 001 §Configuration (memsim's reading): >= 0.4 is surfaced."""
    for policy_id, surfaced in (("engram-code", False), ("engram", True)):
        pol = make(policy_id)
        at = plant(pol, 0, alpha=0.4, beta=0.6)
        above = plant(pol, 1, alpha=0.41, beta=0.59)
        q = Query("q", 1.0, "topic fact", keys=("topic.fact",), k=5)
        ids = pol.recall([q], 1.0)[0].ids.tolist()
        assert (at in ids) is surfaced and above in ids, policy_id


# -------------------------------------------------------------- belief-utils.ts shouldArchive
def test_archival_after_strictly_more_than_90_days():
    """belief-utils.ts:52: ``daysSinceReinforced > 90 && evidenceCount < 5``; 001 (memsim's
    reading): 90 days are enough."""
    code, doc = make(), make("engram")
    for pol in (code, doc):
        b = plant(pol, alpha=9, beta=1)
        pol.store["evidence"][b] = 4
    assert not code.archive_mask(90.0)[0] and code.archive_mask(90.01)[0]
    assert doc.archive_mask(90.0)[0]


def test_archival_of_a_mediocre_belief_after_180_days():
    """belief-utils.ts:54: ``confidence < 0.5 && daysSinceReinforced > 180`` archives
    whatever the evidence; 001 §Belief Lifecycle 8 has no such rule (evidence 5 keeps it)."""
    code, doc = make(), make("engram")
    for pol in (code, doc):
        b = plant(pol, alpha=4.9, beta=5.1)  # confidence 0.49
        pol.store["evidence"][b] = 9
        assert not pol.archive_mask(180.0)[b]
    assert code.archive_mask(180.01)[0] and not doc.archive_mask(400.0)[0]
    code.store["alpha"][0], code.store["beta"][0] = 5.0, 5.0  # confidence 0.5: not below
    assert not code.archive_mask(400.0)[0]


def test_archive_decayed_scans_every_active_belief():
    """belief-consolidator.ts archiveDecayed: ``SELECT * FROM beliefs WHERE status =
    'active'``, every one evaluated, those reinforced in this cycle too; 001 §How It Works
    6 evaluates the beliefs not reinforced in this cycle."""
    for policy_id, archived in (("engram-code", 1), ("engram", 0)):
        pol = make(policy_id)
        weak = plant(pol, alpha=1, beta=9)
        pol.store["last_reinforced"][weak] = 14.0  # reinforced in this cycle
        out = pol._gates([], 14.0)
        assert sum(o.action == "archive" for o in out) == archived, policy_id


# ------------------------------------------------------- belief-consolidator.ts checkAndMerge
def test_merge_checks_all_pairs():
    """belief-consolidator.ts checkAndMerge: every pair of active beliefs, whether the
    cycle touched them or not; 001 §How It Works 5: the gates run on affected beliefs."""
    for policy_id, merges in (("engram-code", 1), ("engram", 0)):
        pol = make(policy_id)
        for i in range(2):
            plant(pol, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i))
        out = pol._gates([], 14.0)
        assert sum(o.action == "merge" for o in out) == merges, policy_id


def test_merge_cooldown_is_strictly_more_than_7_days_since_update():
    """belief-utils.ts:101-102 (shouldMerge): ``(now - updatedAt) > cooldownMs`` for both;
    001 §Belief Lifecycle 6 (memsim's reading) counts from the last revision, so a belief
    updated this cycle may merge."""
    code = make()
    for i in range(2):
        plant(code, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i))
    assert code.merge_pair(7.0) is None and code.merge_pair(7.01) is not None
    doc = make("engram")
    for i in range(2):
        plant(doc, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i))
    doc.store["updated"][[0, 1]] = 7.0
    assert doc.merge_pair(7.0) is not None


def test_code_defaults_name_the_code_constants():
    p, d = registry.spec("engram-code").load().Params(), EngramParams()
    assert p.archive_long_stale_days == 180.0 and p.archive_long_stale_confidence == 0.5
    assert d.archive_long_stale_days == -1.0
    assert p.archive_stale_days == 90.0 and p.merge_cooldown_days == 7.0
    assert p.min_confidence_for_recall == 0.4 and p.max_classifications == 5
    assert (p.gate_scope, d.gate_scope) == ("all", "unreinforced")
    assert (p.merge_cooldown_from, d.merge_cooldown_from) == ("update", "revision")
    assert np.isclose(p.prior_alpha, 1.0)
