"""Worked examples of 000 (Personal AI), measured through the pai policy's real code paths
(memsim.curve, PersonalAI.ingest / recall / maintain / score_rows)."""

from __future__ import annotations

import math

from memsim.engine.claims import register_claim

DOC = "000_ec17278fb0252727.txt"

# Decay examples drawn on the decay-curve figure (memsim.workbench.present.figures).
DECAY_EXAMPLES = (
    {
        "day": 30,
        "start": 0.6,
        "value": 0.3,
        "source": "000 §7 Decay Formula",
        "label": "pai: confidence 0.6 -> 0.3 after 30 days (stability 1.0)",
        "claim": "pai.decay_stability1_30d",
    },
)


# -- measurements through the policy ------------------------------------------------------------


def _curve(days, pattern: str = "never", **memory):
    from memsim.engine.curve import curve

    return curve("pai", pattern, days, memory={k: str(v) for k, v in memory.items()})


def _strength(day: float, **memory) -> float:
    return float(_curve([day], **memory)["strength"].iloc[-1])


def _half_life(stability: float | None = None, probe: float = 30.0) -> float:
    """Half-life (days) of a planted belief, read off its decay between day 0 and ``probe``."""
    memory = {} if stability is None else {"stability": stability}
    frame = _curve([0.0, probe], "never", **memory)
    s0, s1 = frame["strength"].tolist()
    return probe * math.log(0.5) / math.log(s1 / s0)


def _policy(**params):
    from memsim.engine.mockllm import MockLLM
    from policies.pai import PaiParams, PersonalAI

    return PersonalAI(PaiParams(**params), llm=MockLLM(seed=0))


def _episode(eid: str, t: float, key: str, value: str, **kw):
    from memsim.engine.events import Claim, Episode

    return Episode(eid, t, f"{key} is {value}", (Claim(key, value, **kw),))


def _meta_half_life() -> float:
    """Half-life of a meta-belief made by the real synthesize job (§3), not a planted one."""
    pol = _policy(synthesis_threshold=0.5)
    pol.ingest([_episode("e1", 0.0, "work.role", "dev")], 0.0)
    pol.ingest([_episode("e2", 0.0, "work.team", "infra")], 0.0)
    out = pol.maintain(0.0, ["synthesize"])
    row = next(o.memory for o in out if o.action == "synthesize")
    s0, s30 = pol.strength(0.0)[row], pol.strength(30.0)[row]
    return 30.0 * math.log(0.5) / math.log(s30 / s0)


def _meta_column(column: str) -> float:
    pol = _policy(synthesis_threshold=0.5)
    pol.ingest([_episode("e1", 0.0, "work.role", "dev")], 0.0)
    pol.ingest([_episode("e2", 0.0, "work.team", "infra")], 0.0)
    out = pol.maintain(0.0, ["synthesize"])
    row = next(o.memory for o in out if o.action == "synthesize")
    return float(pol.store[column][row])


def _accesses_to_max_stability() -> float:
    """Daily recalls of one belief until its stability reaches the 5.0 cap (§2 access
    recording), counted through PersonalAI.recall."""
    from memsim.engine.events import Query

    pol = _policy()
    pol.ingest([_episode("e1", 0.0, "owner.name", "Alex")], 0.0)
    cap = pol.params.stability_cap
    n = 0
    while pol.store["stability"][0] < cap and n < 1000:
        n += 1
        r = pol.recall([Query(f"q{n}", float(n), "name?", keys=("owner.name",), k=1)], float(n))[0]
        assert r.ids.tolist() == [0], "the belief must be returned to be accessed"
    return float(n)


def _float_steps_to_cap(start: float = 1.0, step: float = 0.1, cap: float = 5.0) -> float:
    """The document's rule, stability = min(5.0, stability + 0.1), in IEEE float64."""
    s, n = start, 0
    while s < cap:
        s, n = min(cap, s + step), n + 1
    return float(n)


def _recency(days_since_access: float) -> float:
    """The recency factor as PersonalAI.score_rows computes it: every other weight set to 0
    and w_recency to 1, a belief accessed at day 0, scored ``days_since_access`` later."""
    from memsim.engine.events import Query

    pol = _policy(
        w_cosine=0.0,
        w_importance=0.0,
        w_stability=0.0,
        w_subject=0.0,
        w_recency=1.0,
        cosine_floor=-1.0,
    )
    pol.ingest([_episode("e1", 0.0, "owner.name", "Alex")], 0.0)
    q = Query("q", 0.0, "name?", keys=("owner.name",), k=1)
    pol.recall([q], 0.0)  # accessed today (day 0)
    return float(pol.score_rows(q, pol.llm.embed_query(q), days_since_access)[0])


def _subject_boost() -> float:
    from memsim.engine.events import Query

    pol = _policy()
    pol.ingest([_episode("e1", 0.0, "alex.drink", "tea", subject="Alex")], 0.0)
    plain = Query("q0", 0.0, "What does he drink?", keys=("alex.drink",))
    named = Query("q1", 0.0, "What does Alex drink?", keys=("alex.drink",))
    v = pol.llm.embed_query(plain)
    return float(pol.score_rows(named, v, 0.0)[0] - pol.score_rows(plain, v, 0.0)[0])


def _reinforce_delta() -> float:
    pol = _policy()
    pol.ingest([_episode("e1", 0.0, "owner.name", "Alex")], 0.0)
    before = float(pol.store["confidence"][0])
    pol.ingest([_episode("e2", 1.0, "owner.name", "Alex")], 1.0)
    return float(pol.store["confidence"][0]) - before


def _weaken_delta() -> float:
    pol = _policy()
    for i in range(3):
        pol.ingest([_episode(f"e{i}", float(i), "owner.city", "Paris")], float(i))
    before = float(pol.store["confidence"][0])
    pol.ingest([_episode("e9", 5.0, "owner.city", "Rome")], 5.0)
    return before - float(pol.store["confidence"][0])


def _first_day(status: str, last: int = 200) -> float:
    frame = _curve(list(range(0, last + 1)))
    hit = frame[frame["status"] == status]
    return float(hit["day"].iloc[0]) if len(hit) else math.nan


def _first_day_pattern(status: str, pattern: str, last: int) -> float:
    frame = _curve(list(range(0, last + 1)), pattern=pattern)
    hit = frame[frame["status"] == status]
    return float(hit["day"].iloc[0]) if len(hit) else math.nan


def _first_stale_day(last: int = 200) -> float:
    pol = _policy()
    pol.ingest([_episode("e1", 0.0, "owner.name", "Alex")], 0.0)
    for day in range(last + 1):
        if 0 in pol.reflect(float(day))[1]:
            return float(day)
    return math.nan


def _turns_to_first_summary() -> float:
    from memsim.engine.events import Episode

    pol = _policy()
    for i in range(1, 50):
        e = Episode(
            f"c{i}",
            0.0,
            f"We planned the garden beds and tomato seedlings, step {i}",
            conversation="chat",
        )
        pol.ingest([e], 0.0)
        if pol.summaries:
            return float(i)
    return math.nan


# -- the claims -----------------------------------------------------------------------------------

register_claim(
    id="pai.decay_stability1_30d",
    policy="pai",
    document=DOC,
    section="§7 Decay Formula",
    statement="stability = 1.0 (default): after 30 days, a belief at confidence 0.6 decays to 0.3",
    documented=0.3,
    measure=lambda: _strength(30.0),
    formula=lambda: 0.6 * 0.5 ** (30 / (30 * 1.0)),
    tol=1e-9,
)

register_claim(
    id="pai.half_life_stability1",
    policy="pai",
    document=DOC,
    section="§3 Decay / §7",
    statement="stability=1.0 -> 30-day half-life",
    documented=30.0,
    measure=lambda: _half_life(None),
    formula=lambda: 30 * 1.0,
    tol=1e-6,
)

register_claim(
    id="pai.half_life_stability3",
    policy="pai",
    document=DOC,
    section="§3 Decay / §7",
    statement="stability=3.0 (meta-beliefs) -> 90-day half-life (planted at stability 3.0)",
    documented=90.0,
    measure=lambda: _half_life(3.0),
    formula=lambda: 30 * 3.0,
    tol=1e-6,
)

register_claim(
    id="pai.half_life_meta_belief",
    policy="pai",
    document=DOC,
    section="§3 Synthesize / §7",
    statement="a synthesized meta-belief (stability=3.0) has a 90-day half-life",
    documented=90.0,
    measure=_meta_half_life,
    formula=lambda: 30 * 3.0,
    tol=1e-6,
    note="measured on a meta-belief made by the real synthesize job",
)

register_claim(
    id="pai.meta_confidence",
    policy="pai",
    document=DOC,
    section="§3 Synthesize",
    statement="CREATE meta-belief confidence=0.8",
    documented=0.8,
    measure=lambda: _meta_column("confidence"),
    formula=lambda: 0.8,
    tol=0.0,
)

register_claim(
    id="pai.half_life_stability5",
    policy="pai",
    document=DOC,
    section="§3 Decay / §7",
    statement="stability=5.0 (max) -> 150-day half-life",
    documented=150.0,
    measure=lambda: _half_life(5.0),
    formula=lambda: 30 * 5.0,
    tol=1e-6,
)

register_claim(
    id="pai.accesses_to_max_stability",
    policy="pai",
    document=DOC,
    section="§7 Decay Formula",
    statement="stability = 5.0 (max, reached after 40 accesses), +0.1 per retrieval from 1.0",
    documented=40.0,
    measure=_accesses_to_max_stability,
    formula=_float_steps_to_cap,
    tol=0.0,
    note="in exact arithmetic (5.0 - 1.0) / 0.1 = 40, but in float64 forty +0.1 steps from 1.0 "
    "give 4.999999999999999 < 5.0, so the 41st access reaches the cap (half-life after 40 "
    "accesses: 149.99999999999997 days)",
)

register_claim(
    id="pai.recency_today",
    policy="pai",
    document=DOC,
    section="§2 Recency calculation",
    statement="A belief accessed today scores 1.0 (recency)",
    documented=1.0,
    measure=lambda: _recency(0.0),
    formula=lambda: math.exp(-0.023 * 0),
    tol=0.0,
)

register_claim(
    id="pai.recency_30d",
    policy="pai",
    document=DOC,
    section="§2 Recency calculation",
    statement="one accessed 30 days ago scores approximately 0.5: recency = exp(-0.023 x 30)",
    documented=0.5,
    measure=lambda: _recency(30.0),
    formula=lambda: math.exp(-0.023 * 30),
    tol=0.005,
    note="exp(-0.69) = 0.5016: 'approximately' holds to 0.002",
)

register_claim(
    id="pai.recency_half_life",
    policy="pai",
    document=DOC,
    section="§2 Recency calculation",
    statement="recency = exp(-0.023 x days) gives an approximately 30-day half-life",
    documented=30.0,
    measure=lambda: 30.0 * math.log(0.5) / math.log(_recency(30.0)),
    formula=lambda: math.log(2) / 0.023,
    tol=0.5,
    note="ln 2 / 0.023 = 30.14 days; the decay half-life of §7 is exactly 30 x stability",
)

register_claim(
    id="pai.subject_boost",
    policy="pai",
    document=DOC,
    section="§2 Subject-aware boosting",
    statement="a query naming the belief's subject gives subjectMatch = 1.0 (contributing +0.15)",
    documented=0.15,
    measure=_subject_boost,
    formula=lambda: 0.15 * 1.0,
    tol=1e-9,
    note="measured as the score difference between a query naming 'Alex' and one that does not",
)

register_claim(
    id="pai.reinforce_step",
    policy="pai",
    document=DOC,
    section="§1 / §4 Reinforce (merge) > 0.85",
    statement="Existing belief gets +0.1 confidence",
    documented=0.1,
    measure=_reinforce_delta,
    formula=lambda: min(1.0, 0.6 + 0.1) - 0.6,
    tol=1e-9,
)

register_claim(
    id="pai.weaken_step",
    policy="pai",
    document=DOC,
    section="§1 processNewBelief",
    statement="WEAKEN old belief: confidence -= 0.2 (min 0.1), >= 3 supporting episodes",
    documented=0.2,
    measure=_weaken_delta,
    formula=lambda: 0.8 - max(0.1, 0.8 - 0.2),
    tol=1e-9,
    note="the old belief had 3 supporting episodes (0.6 + 0.1 + 0.1 = 0.8 before weakening)",
)

register_claim(
    id="pai.prune_day_default_belief",
    policy="pai",
    document=DOC,
    section="§3 Prune / §4",
    statement="(implied) a default belief (0.6, stability 1.0, never accessed) is pruned once "
    "0.6 x 0.5^(t/30) < 0.05, i.e. after 30 x log2(12) = 107.5 days",
    documented=None,
    measure=lambda: _first_day("pruned"),
    formula=lambda: float(math.ceil(30 * math.log2(0.6 / 0.05))),
    tol=0.0,
    note="first daily prune job after day 107.5 is day 108 (prune_every = 1 day)",
)

register_claim(
    id="pai.stale_day_default_belief",
    policy="pai",
    document=DOC,
    section="§3 Reflect / §4",
    statement="(implied) a default belief is flagged stale (< 0.10) after 30 x log2(6) = 77.5 days",
    documented=None,
    measure=_first_stale_day,
    formula=lambda: float(math.ceil(30 * math.log2(0.6 / 0.10))),
    tol=0.0,
    note="first whole day on which reflect() reports it",
)

register_claim(
    id="pai.consolidation_turns",
    policy="pai",
    document=DOC,
    section="§8 Conversation Consolidation",
    statement="a conversation chunk is consolidated when >= 4 turns, triggered every 5th chat turn",
    documented=5.0,
    measure=_turns_to_first_summary,
    formula=lambda: float(next(n for n in range(5, 100, 5) if n >= 4)),
    tol=0.0,
    note="the first summary episode appears at the 5th turn of a conversation",
)

register_claim(
    id="pai.prune_day_daily_recalled_belief",
    policy="pai",
    document=DOC,
    section="§7 / §3 Prune",
    statement="(implied) 'frequently accessed beliefs naturally resist decay': a default belief "
    "recalled every day still decays (access raises stability, never resets updated_at) "
    "and is pruned once 0.6 x 0.5^(t/150) < 0.05, i.e. after 150 x log2(12) = 537.7 days",
    documented=None,
    measure=lambda: _first_day_pattern("pruned", "every:1", 600),
    formula=lambda: float(math.ceil(150 * math.log2(0.6 / 0.05))),
    tol=0.0,
    note="stability reaches the 5.0 cap at the 41st daily access, long before day 538; only "
    "re-stating the fact (reinforce, merge) resets the decay clock",
)
