"""Kernle (004): unit tests, each naming the document section it checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.errors import ParamError
from memsim.engine.events import Claim, Episode, Forget, Protect, Query, Recover, make_stream
from memsim.engine.registry import make, spec
from memsim.engine.runner import run
from policies.kernle import Kernle, KernleParams, salience_scalar
from tests.test_izzie import FakeLLM


def ep(id, t, key, value="v", category="fact", confidence=0.9):
    return Episode(
        id, t, f"{key} is {value}", claims=(Claim(key, value, category, confidence=confidence),)
    )


def kernle(**params):
    return Kernle(KernleParams(**params), llm=FakeLLM())


def test_salience_formula_natural_log():
    """004 §Salience Formula: (confidence x log(times_accessed + 1)) / (days / half_life + 1)."""
    pol = kernle(half_life=10.0)
    pol.ingest([ep("e1", 0.0, "a.b", confidence=0.8)], 0.0)
    pol.store["access_count"][0] = 3
    pol.store["last_access"][0] = 5.0
    assert pol.strength(25.0)[0] == pytest.approx(0.8 * math.log(4) / (20 / 10 + 1), rel=1e-12)
    assert pol.strength(25.0)[0] == salience_scalar(0.8, 3, 20.0, 10.0)


def test_finding_never_accessed_memory_has_zero_salience_and_is_forgotten_at_first_cycle():
    """THE FINDING (004 §Salience Formula + §Forgetting Cycle): times_accessed = 0 ->
    log(1) = 0 -> salience 0 < 0.3, so the first cycle tombstones a memory of confidence 1.0
    created the same day. docs/policies/kernle.md and the claims table state it too."""
    pol = kernle(forgetting_every=1.0)
    pol.ingest([ep("e1", 0.999, "owner.name", confidence=1.0)], 0.999)
    assert pol.strength(1.0)[0] == 0.0
    outs = pol.maintain(1.0, ["forget"])
    assert [o.action for o in outs] == ["forget"]
    assert pol.store.status_of(0) == "forgotten"


def test_access_floor_variant_keeps_a_fresh_memory():
    """Non-default variant (not in 004): counting every memory as accessed once."""
    pol = kernle(access_floor=1.0)
    pol.ingest([ep("e1", 0.0, "owner.name", confidence=0.9)], 0.0)
    assert pol.strength(7.0)[0] == pytest.approx(0.9 * math.log(2) / (7 / 30 + 1))
    pol.maintain(7.0, ["forget"])
    assert pol.store.status_of(0) == "active"


def test_process_raw_mapping_and_protection_by_kind():
    """004 §Raw -> Structured (as_type by category), §4 Values / §7 Drives protected by default."""
    pol = kernle()
    cats = ["fact", "preference", "decision", "event", "value", "drive", "procedural"]
    pol.ingest(
        [ep(f"e{i}", 0.0, f"k.{c}", category=c) for i, c in enumerate(cats)]
        + [Episode("t", 0.0, "just chatting")],
        0.0,
    )
    kinds = [pol.store.kinds[k] for k in pol.store["kind"]]
    assert kinds == ["belief", "belief", "note", "episode", "value", "drive", "note", "episode"]
    assert pol.store["protected"].tolist() == [False] * 4 + [True, True] + [False] * 2
    assert [r["processed_into"][0].split(":")[0] for r in pol.raw_entries] == kinds
    assert pol.source_type == ["direct_experience"] * 8


def test_threshold_is_strict():
    """004 §Forgetting Cycle: candidates have salience *below* the threshold; equal is kept."""
    pol = kernle()
    pol.ingest([ep("e1", 0.0, "a.b", confidence=0.7)], 0.0)
    pol.store["access_count"][0] = 1
    sal = pol.strength(3.0)[0]
    assert len(pol.get_forgetting_candidates(3.0, threshold=sal)) == 0
    assert pol.get_forgetting_candidates(3.0, threshold=np.nextafter(sal, 1.0)).tolist() == [0]


def test_dry_run_reports_without_changing():
    """004 §Forgetting Cycle: run_forgetting_cycle(dry_run=True) previews."""
    pol = kernle(dry_run=True)
    pol.ingest([ep("e1", 0.0, "a.b"), ep("e2", 0.0, "a.c")], 0.0)
    before = pol.store["status"].copy()
    outs = pol.maintain(7.0, ["forget"])
    assert [(o.action, o.memory) for o in outs] == [("candidate", 0), ("candidate", 1)]
    assert np.array_equal(pol.store["status"], before) and len(pol.store.status_log) == 2


def test_protected_never_forgotten_and_recover_restores():
    """004 §Protection, §Forgetting System (tombstoning, not deletion), recover()."""
    s = make_stream(
        [
            ep("e1", 0.0, "a.b"),
            ep("e2", 0.0, "a.c"),
            Protect("p1", 0.5, "e2"),
            Recover("r1", 7.5, "e1"),
            Query("q1", 7.6, "?", keys=("a.b",), k=1),
        ],
        horizon=8.0,
    )
    pol = make("kernle", llm=FakeLLM())
    trace = run(pol, s)
    log = [(t, r, pol.store.statuses.names[c]) for t, r, c in pol.store.status_log]
    assert (7.0, 0, "forgotten") in log and (7.5, 0, "active") in log
    assert pol.store.status_of(1) == "active" and pol.store["protected"][1]
    assert trace.queries[0].ids.tolist() == [0]  # recovered, retrievable again
    assert pol.store.n == 2 and pol.store.provenance[0] == {"e1"}


def test_recovered_never_accessed_memory_is_forgotten_again():
    """A consequence of the finding: recover restores the status, not the salience."""
    pol = kernle()
    pol.ingest([ep("e1", 0.0, "a.b")], 0.0)
    pol.maintain(7.0, ["forget"])
    pol.recover([Recover("r1", 8.0, "e1")], 8.0)
    assert pol.store.status_of(0) == "active"
    pol.maintain(14.0, ["forget"])
    assert pol.store.status_of(0) == "forgotten"


def test_user_forget_tombstones():
    pol = kernle()
    pol.ingest([ep("e1", 0.0, "a.b")], 0.0)
    outs = pol.forget([Forget("f1", 1.0, "e1")], 1.0)
    assert [o.action for o in outs] == ["forget"] and pol.store.status_of(0) == "forgotten"
    pol.recover([Recover("r1", 2.0, "e1")], 2.0)
    assert pol.store.status_of(0) == "active"


def test_recall_ranks_by_relevance_and_counts_access():
    """004 §Search Functionality: relevance ranking; each hit is one access."""
    llm = FakeLLM({"q": [1, 0, 0, 0], "x": [0.9, 0.43589, 0, 0], "y": [0.6, 0.8, 0, 0]})
    pol = Kernle(llm=llm)
    pol.ingest([ep("e1", 0.0, "y", confidence=1.0), ep("e2", 0.0, "x", confidence=0.1)], 0.0)
    r = pol.recall([Query("q1", 2.0, "?", keys=("q",), k=1)], 2.0)[0]
    assert r.ids.tolist() == [1]
    assert pol.store["access_count"].tolist() == [0, 1] and pol.store["last_access"][1] == 2.0


def _consolidation_policy(**params):
    pol = kernle(**params)
    pol.ingest([ep(f"e{i}", 0.0, "work.testing", "flaky", "event", 0.5) for i in range(3)], 0.0)
    return pol


def test_consolidation_adds_belief_from_pattern():
    """004 §Consolidation Process: the agent reads >= 3 episodes (--min-episodes 3) and adds
    a belief at --confidence 0.8, whose source_episodes are the episodes'."""
    pol = _consolidation_policy()
    outs = pol.maintain(1.0, ["consolidate"])
    assert [o.action for o in outs] == ["create"]
    b = outs[0].memory
    assert pol.store.kinds[pol.store["kind"][b]] == "belief"
    assert pol.store["confidence"][b] == 0.8 and pol.source_type[b] == "consolidation"
    assert pol.store.provenance[b] == {"e0", "e1", "e2"}
    assert pol.get_memory_lineage(b)["derived_from"] == [0, 1, 2]
    assert pol.store["reflected"][:3].all()
    assert [o.action for o in pol.maintain(2.0, ["consolidate"])] == ["skip"]


def test_consolidation_waits_for_min_episodes():
    pol = _consolidation_policy(min_episodes=4)
    assert [o.action for o in pol.maintain(1.0, ["consolidate"])] == ["skip"]
    assert pol.store.n == 3


def test_consolidation_reinforces_then_revises():
    """004 §3 Beliefs: times_reinforced; revision chain supersedes / superseded_by, is_active."""
    pol = _consolidation_policy()
    b = pol.maintain(1.0, ["consolidate"])[0].memory
    pol.ingest([ep(f"f{i}", 1.5, "work.testing", "flaky", "event") for i in range(3)], 1.5)
    outs = pol.maintain(2.0, ["consolidate"])
    assert [(o.action, o.memory) for o in outs] == [("reinforce", b)]
    assert pol.store["times_reinforced"][b] == 1 and "f0" in pol.store.provenance[b]
    pol.ingest([ep(f"g{i}", 2.5, "work.testing", "solid", "event") for i in range(3)], 2.5)
    outs = pol.maintain(3.0, ["consolidate"])
    assert [o.action for o in outs] == ["create", "supersede"]
    new = outs[0].memory
    assert pol.store.status_of(b) == "superseded" and not pol.store["is_active"][b]
    assert pol.store["superseded_by"][b] == new and pol.store["supersedes"][new] == b
    assert pol.get_belief_history(new) == [b, new]
    # superseded is terminal: neither forgetting nor recovery touches it
    pol.store["protected"][new] = True
    pol.maintain(7.0, ["forget"])
    assert pol.store.status_of(b) == "superseded"


def test_verify_memory_and_uncertain_memories():
    """004 §Meta-Memory: verify_memory raises confidence; get_uncertain_memories(0.5)."""
    pol = kernle(verify_step=0.25)
    pol.ingest([ep("e1", 0.0, "a.b", confidence=0.4), ep("e2", 0.0, "a.c", confidence=0.9)], 0.0)
    assert pol.get_uncertain_memories().tolist() == [0]
    assert pol.verify_memory(0, 3.0) == 0.65
    assert pol.get_uncertain_memories().tolist() == []
    assert pol.verify_memory(1, 4.0) == 1.0  # capped at 1
    assert pol.store["verification_count"].tolist() == [1, 1]
    assert pol.confidence_history[0] == [(0.0, 0.4), (3.0, 0.65)]


def test_extraction_failure_keeps_the_raw_capture_as_episode():
    pol = Kernle(llm=FakeLLM(fail_extract={"e1"}))
    outs = pol.ingest([ep("e1", 0.0, "a.b")], 0.0)
    assert [o.action for o in outs] == ["create"]
    assert pol.store.kinds[pol.store["kind"][0]] == "episode" and pol.store.text[0] == "a.b is v"


def test_embedding_failure_falls_back_to_text():
    """004 §Search Functionality: falls back to text matching."""
    pol = Kernle(llm=FakeLLM(fail_embed={"e1#0"}))
    outs = pol.ingest([ep("e1", 0.0, "a.b")], 0.0)
    assert [o.action for o in outs] == ["create"]
    pol2 = Kernle(llm=FakeLLM(fail_embed={"e1#0", "e1#0:text"}))
    assert [o.action for o in pol2.ingest([ep("e1", 0.0, "a.b")], 0.0)] == ["drop"]


def test_params_and_schedule():
    with pytest.raises(ParamError, match="half_life"):
        KernleParams(half_life=0.0)
    with pytest.raises(ParamError, match="forgetting_threshold"):
        KernleParams(forgetting_threshold=-1)
    p = KernleParams()
    assert (
        p.forgetting_threshold,
        p.min_episodes,
        p.belief_confidence,
        p.uncertainty_threshold,
    ) == (0.3, 3, 0.8, 0.5)
    pol = kernle(forgetting_every=2.0, consolidation_every=0.5)
    assert [(j.name, j.every) for j in pol.schedule] == [("consolidate", 0.5), ("forget", 2.0)]


def test_registration():
    sp = spec("kernle")
    assert sp.capabilities == frozenset({"forget", "protect", "recover"})
    assert sp.seed_document.startswith("004_")


class _NoClassify(FakeLLM):
    """An agent that cannot read the relation (every reply unparseable)."""

    def classify(self, new, candidates, *, answer, key):
        return ["???" for _ in candidates]


def test_consolidation_goes_through_the_llm_not_the_claim_key():
    """004 §Consolidation Process (the agent reasons; memsim: through the LLM protocol): when
    the LLM's relation replies are unreadable, the agent neither reinforces nor supersedes,
    so an LLM fault reaches consolidation (it used to compare claim keys and values)."""
    pol = Kernle(KernleParams(), llm=_NoClassify())
    pol.ingest([ep(f"e{i}", 0.0, "work.testing", "flaky", "event") for i in range(3)], 0.0)
    b = pol.maintain(1.0, ["consolidate"])[0].memory
    pol.ingest([ep(f"g{i}", 1.5, "work.testing", "solid", "event") for i in range(3)], 1.5)
    outs = pol.maintain(2.0, ["consolidate"])
    assert [o.action for o in outs] == ["create"]
    assert pol.store.status_of(b) == "active" and pol.store["times_reinforced"][b] == 0


def test_consolidation_supersedes_a_directly_captured_fact():
    """004 §3 Beliefs (revision chain) + §Consolidation Process (existing beliefs are in the
    scaffold): a fact captured as a belief that an older belief contradicts supersedes it."""
    pol = kernle()
    pol.ingest([ep("e1", 0.0, "home.city", "Paris")], 0.0)
    pol.ingest([ep("e2", 1.0, "home.city", "Lyon")], 1.0)
    pol.ingest([ep("e3", 1.0, "pet.name", "Rex")], 1.0)
    outs = pol.maintain(1.0, ["consolidate"])
    assert [(o.action, o.memory) for o in outs if o.action == "supersede"] == [("supersede", 0)]
    assert pol.store["superseded_by"][0] == 1 and pol.store.status_of(2) == "active"
    assert pol.store["reflected"][:3].all()
    assert not [o for o in pol.maintain(2.0, ["consolidate"]) if o.action == "supersede"]


class _NoQueryVector(FakeLLM):
    def embed_query(self, query):
        return None


def test_search_falls_back_to_text_matching():
    """004 §Search Functionality: "Uses sqlite-vec for semantic search when available, falls
    back to text matching": a query that cannot be embedded is matched on its words."""
    pol = Kernle(KernleParams(), llm=_NoQueryVector())
    pol.ingest([ep("e1", 0.0, "home.city", "Paris"), ep("e2", 0.0, "pet.name", "Rex")], 0.0)
    r = pol.recall([Query("q1", 1.0, "Where is Paris?", keys=("home.city",), k=10)], 1.0)[0]
    assert r.ids.tolist() == [0]  # pet.name shares no word: not a match
    assert r.scores.tolist() == [pytest.approx(1 / 3)]
    assert pol.store["access_count"].tolist() == [1, 0]


def test_doc_salience_sequence_every_7_days():
    """004 §Salience Formula at confidence 0.9, accessed on each 7-day cycle: 0.9 ln 2,
    0.9 ln 3, 0.9 ln 4 = 1.248 (docs/policies/kernle.md once said 1.36)."""
    seq = [salience_scalar(0.9, n, 0.0, 30.0) for n in (1, 2, 3)]
    assert [round(x, 3) for x in seq] == [0.624, 0.989, 1.248]
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs/policies/kernle.md").read_text()
    assert "1.248" in doc and "1.36" not in doc


def test_revision_screen_in_blocks_decides_as_the_float64_scan(monkeypatch):
    """Performance only (issue 16): belief revision screens the older beliefs with one float32
    product per block of new beliefs, then decides on float64 cosines. The same run with no
    screen (margin 2: every active belief reaches the float64 decision, as a plain scan)
    and with blocks of one belief gives the same trace."""
    import scenarios
    from memsim.engine import similarity
    from memsim.engine.mockllm import MockLLM
    from policies import kernle as kernle_mod

    stream = scenarios.load("synthetic:churn,episodes=600,queries=30,horizon=60")

    def trace():
        return run(make("kernle", llm=MockLLM(seed=0), seed=0), stream).content()

    screened = trace()
    monkeypatch.setattr(kernle_mod, "REVISE_SCREEN_ELEMENTS", 1)
    assert trace() == screened
    monkeypatch.setattr(similarity, "screen_margin", lambda dim: 2.0)
    unscreened = trace()
    assert unscreened == screened
    assert any(
        o.action == "supersede"
        for o in run(make("kernle", llm=MockLLM(seed=0), seed=0), stream).outcomes
    ), "the stream never revises a belief: the test checks nothing"
