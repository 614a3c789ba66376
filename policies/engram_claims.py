"""Worked examples and formulas of 001 (Engram), measured through memsim.curve and the
Engram policy's real code paths (plant, recall, the consolidation gates).

001 states formulas and thresholds rather than numeric examples, so most rows have no
``documented`` number: they record what the formula gives for a stated case.
"""

from __future__ import annotations

import math

from memsim.engine.claims import KIND_SELF, register_claim

DOC = "001_aacff6f19feabb69.txt"
S0 = 7.0  # EngramParams.initial_stability (a documented choice; 001 gives none)


def _curve(pattern: str, days, memory: dict | None = None, params: dict | None = None):
    from memsim.engine.curve import curve

    return curve("engram", pattern, days, memory=memory or {}, params=params or {})


def _strength(day: float, pattern: str = "never", memory: dict | None = None) -> float:
    return float(_curve(pattern, [day], memory)["strength"].iloc[-1])


def _stability_after(access_day: float, memory: dict | None = None) -> float:
    """S after one retrieval on ``access_day``: read back from R one day later, S = -1 / ln R."""
    r = _strength(access_day + 1.0, f"at:{access_day}", memory)
    return -1.0 / math.log(r)


def _planted(**attrs: str):
    from memsim.engine.curve import memory_claim
    from memsim.engine.events import Episode
    from policies.engram import Engram

    pol = Engram(seed=0)
    claim = memory_claim(Engram, attrs)
    row = pol.plant(Episode("plant", 0.0, "planted belief", claims=(claim,)), 0.0)
    return pol, row


def _confidence(**attrs: str) -> float:
    pol, row = _planted(**attrs)
    return float(pol.confidence([row])[0])


def _contradictions_until_revision() -> float:
    """Contradicting clusters (3 episodes each) a reinforced belief (alpha 2, beta 1, evidence
    3) takes before the revision gate fires, through the policy's own evidence and gate code."""
    from memsim.engine.events import Claim, Episode

    pol, belief = _planted(alpha="2", beta="1", evidence_count="3")
    n = 0
    t = 1.0
    while pol.store.status_of(belief) == "active" and n < 20:
        n += 1
        rows = []
        for j in range(3):
            eid = f"c{n}-{j}"
            pol.ingest([Episode(eid, t, "contradiction", (Claim("curve.memory", f"other{n}"),))], t)
            rows.extend(pol.episode_row_of[eid])
        pol._add_evidence(belief, "contra", rows, t)
        pol._gates([belief], t)
        t += 1.0
    return float(n) if pol.store.status_of(belief) == "revised" else math.inf


register_claim(
    id="engram.uniform_prior_confidence",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 1",
    statement=(
        "A new belief is created with alpha=1, beta=1 (uniform prior): confidence = "
        "alpha/(alpha+beta)"
    ),
    documented=0.5,
    measure=lambda: _confidence(),
    formula=lambda: 1 / (1 + 1),
    tol=1e-12,
)
register_claim(
    id="engram.confidence_alpha5_beta1",
    policy="engram",
    document=DOC,
    section="§Architecture Decisions",
    statement="Confidence is alpha / (alpha + beta): four supports on the prior (alpha 5, beta 1)",
    documented=None,
    measure=lambda: _confidence(alpha="5", beta="1"),
    formula=lambda: 5 / 6,
    tol=1e-12,
    note="001 gives no numeric example; '[Belief (0.85): statement]' is only the display format",
)
register_claim(
    id="engram.retrieval_strength_t_eq_S",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 7",
    statement="R(t) = e^(-t/S): a never-retrieved belief at t = S days",
    documented=None,
    measure=lambda: _strength(S0),
    formula=lambda: math.exp(-1.0),
    tol=1e-12,
    note=f"initial S = {S0} days is memsim's choice (001 gives none)",
)
register_claim(
    id="engram.retrieval_strength_30d",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 7",
    statement="R(t) = e^(-t/S) after 30 days without retrieval, S = 30 planted",
    documented=None,
    measure=lambda: _strength(30.0, memory={"stability": "30"}),
    formula=lambda: math.exp(-30 / 30),
    tol=1e-12,
)
register_claim(
    id="engram.stability_after_1d_gap",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 7",
    statement="S *= 1 + 0.1 ln(1 + hours_since_last/24): a retrieval 24 hours after creation",
    documented=None,
    measure=lambda: _stability_after(1.0),
    formula=lambda: S0 * (1 + 0.1 * math.log(1 + 24 / 24)),
    tol=1e-9,
)
register_claim(
    id="engram.stability_after_30d_gap",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 7",
    statement="longer gaps give larger gains: a retrieval 30 days after creation",
    documented=None,
    measure=lambda: _stability_after(30.0),
    formula=lambda: S0 * (1 + 0.1 * math.log(1 + 30 * 24 / 24)),
    tol=1e-9,
)
register_claim(
    id="engram.stability_cap",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 7",
    statement="stability capped at 365 days: S = 360 retrieved after 300 days",
    documented=365.0,
    measure=lambda: _stability_after(300.0, {"stability": "360"}),
    formula=lambda: min(365.0, 360 * (1 + 0.1 * math.log(1 + 300))),
    tol=1e-6,
)
register_claim(
    id="engram.revision_contradictions",
    policy="engram",
    document=DOC,
    section="§Belief Lifecycle 4",
    statement=(
        "Revision when confidence < 0.4 after > 0.5, >= 3 contradicting episodes, evidence "
        ">= 5: "
        "contradicting clusters a once-reinforced belief (alpha 2, beta 1) absorbs before revision"
    ),
    documented=None,
    measure=_contradictions_until_revision,
    formula=lambda: float(next(n for n in range(1, 20) if 2 / (3 + n) < 0.4)),
    tol=0.0,
    note="2/(3+n) < 0.4 first at n = 3 (confidence 0.33, above the 0.3 archive line)",
)
register_claim(
    id="engram.cycle_call_budget",
    policy="engram",
    document=DOC,
    section="§Configuration",
    statement="MAX_CYCLE_BUDGET_MS 120,000 with PER_CALL_TIMEOUT_MS 10,000: LLM calls per cycle",
    documented=None,
    measure=lambda: float(_planted()[0].call_budget),
    formula=lambda: 120_000 / 10_000,
    tol=0.0,
    note="memsim models every call as taking its full timeout (a choice)",
)


# -- contradictions inside 001 -------------------------------------------------------------------
def _archived_at_evidence(evidence: int) -> float:
    """1 if a stale belief (not reinforced for 200 days, confident) with this much evidence is
    archived by the policy's archival gate, else 0."""
    pol, row = _planted(alpha="9", beta="1", evidence_count=str(evidence))
    return float(bool(pol.archive_mask(200.0)[row]))


register_claim(
    id="engram.archive_min_evidence_boundary",
    policy="engram",
    document=DOC,
    section="§Configuration ARCHIVE_MIN_EVIDENCE vs §Belief Lifecycle 8",
    statement="a stale belief with exactly 5 pieces of evidence is archived (1) or kept (0): "
    "§Configuration 'Evidence count above which stale beliefs are not archived' archives it",
    documented=1.0,
    measure=lambda: _archived_at_evidence(5),
    formula=lambda: 0.0,
    tol=0.0,
    kind=KIND_SELF,
    note="§Belief Lifecycle 8 archives only beliefs with 'fewer than 5 pieces of evidence', so "
    "evidence 5 is kept; §Configuration protects only evidence above 5. memsim follows the "
    "lifecycle section (evidence < 5)",
)


def _beliefs_deleted_by_forget() -> float:
    """Beliefs deleted when the user forgets one of a belief's episodes (the forget handler)."""
    from memsim.engine.events import Forget

    pol, row = _planted()
    (episode,) = sorted(pol.store.provenance[row])
    pol.forget([Forget("f1", 1.0, episode)], 1.0)
    kinds = pol.store["kind"][: pol.store.n] == pol.store.kind_code("belief")
    return float((kinds & pol.store.mask(["deleted"])).sum())


register_claim(
    id="engram.beliefs_never_deleted",
    policy="engram",
    document=DOC,
    section="§Architecture Decisions (never deleted) vs §Files Changed handleMemoryForget",
    statement="Beliefs are never deleted, only deprioritized (beliefs deleted by a forget)",
    documented=0.0,
    measure=_beliefs_deleted_by_forget,
    formula=lambda: 1.0,
    tol=0.0,
    kind=KIND_SELF,
    note="the same document's handleMemoryForget 'deletes belief' (and §Testing: 'verify the "
    "belief is deleted'); memsim follows the forget handler (forget_deletes_beliefs = True)",
)


def _merges_of_affected_beliefs(**params: object) -> float:
    """Merges one cycle's gates perform on two near-identical, confident beliefs that the
    cycle has just given evidence to (its affected beliefs), with ``params`` set."""
    from memsim.engine.curve import memory_claim
    from memsim.engine.events import Episode
    from policies.engram import Engram, EngramParams

    pol = Engram(EngramParams(**params), seed=0)  # type: ignore[arg-type]
    rows = [
        pol.plant(Episode(f"plant{i}", 0.0, "planted", (memory_claim(Engram, {}),)), 0.0)
        for i in range(2)
    ]
    pol.store.embedding[rows[1]] = pol.store.embedding[rows[0]]  # the same statement
    for r in rows:
        pol.store["alpha"][r] = 9.0
        pol.store["updated"][r] = 30.0  # touched by this cycle's evidence
    out = pol._gates(rows, 30.0)
    return float(sum(o.action == "merge" for o in out))


register_claim(
    id="engram.merge_on_affected_beliefs",
    policy="engram",
    document=DOC,
    section="§How It Works 5 (gates on affected beliefs) and §Belief Lifecycle 6 (neither "
    "revised in the last 7 days)",
    statement="(implied) merge can fire: two affected beliefs at cosine > 0.92, confidence > 0.6",
    documented=1.0,
    measure=_merges_of_affected_beliefs,
    formula=lambda: 1.0,
    tol=0.0,
    kind=KIND_SELF,
    note="§Belief Lifecycle 6 asks that neither belief was revised in the last 7 days; beliefs "
    "never revised pass, so the merge gate acts on the beliefs a cycle affects (memsim's "
    "reading, merge_cooldown_from='revision')",
)
register_claim(
    id="engram.merge_cooldown_since_update",
    policy="engram",
    document=DOC,
    section="§How It Works 5 (gates on affected beliefs) vs §Configuration MERGE_COOLDOWN_DAYS "
    "(days since last update)",
    statement="(implied) merge can fire: two affected beliefs at cosine > 0.92, confidence > 0.6",
    documented=1.0,
    measure=lambda: _merges_of_affected_beliefs(merge_cooldown_from="update"),
    formula=lambda: 0.0,
    tol=0.0,
    kind=KIND_SELF,
    note="read as 'days since last update', the cooldown shuts out every affected belief (it "
    "gained evidence in this cycle), so merge can never fire on them; memsim keeps this "
    "reading as merge_cooldown_from='update' and defaults to §Belief Lifecycle 6's",
)


def _stale_beliefs_archived(**params: object) -> float:
    """Beliefs archived by one cycle's gates when a confident belief with one piece of
    evidence has not been reinforced for 100 days and the cycle touched another belief."""
    from memsim.engine.curve import memory_claim
    from memsim.engine.events import Episode
    from policies.engram import Engram, EngramParams

    pol = Engram(EngramParams(**params), seed=0)  # type: ignore[arg-type]
    stale, touched = (
        pol.plant(Episode(f"plant{i}", 0.0, "planted", (memory_claim(Engram, {}),)), 0.0)
        for i in range(2)
    )
    pol.store["alpha"][[stale, touched]] = 9.0
    pol.store["last_reinforced"][touched] = 100.0  # reinforced in this cycle
    out = pol._gates([touched], 100.0)
    return float(sum(o.action == "archive" and o.memory == stale for o in out))


register_claim(
    id="engram.archive_unreinforced_beliefs",
    policy="engram",
    document=DOC,
    section="§How It Works 6 (beliefs not reinforced in this cycle) and §Belief Lifecycle 8 "
    "(90 days, evidence < 5)",
    statement="a belief nobody mentions again is archived after 90 days with evidence < 5 "
    "(archived: 1)",
    documented=1.0,
    measure=_stale_beliefs_archived,
    formula=lambda: 1.0,
    tol=0.0,
    kind=KIND_SELF,
    note="§How It Works 5 puts archival among the gates 'on affected beliefs', under which a "
    "belief no cycle touches is never archived (gate_scope='affected', 0); §How It Works 6 "
    "evaluates every belief not reinforced in the cycle, memsim's default "
    "(gate_scope='unreinforced')",
)
