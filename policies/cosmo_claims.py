"""Worked examples of 002 (Cosmo), measured through memsim.curve and the Cosmo policy.

Both salience modes are measured where they differ: the default ``closed_form``
(``salience_0 * exp(-rate * days_unused)``, 002 §Decay Formula, which the document's
examples use) and ``nightly`` (the literal §Offline/Nightly Decay Job, which multiplies the
stored salience by ``exp(-rate * days_since_last_access)`` every night and so compounds:
after N unaccessed nights the exponent is ``rate * N(N+1)/2``).
"""

from __future__ import annotations

import math

from memsim.engine.claims import KIND_READING, KIND_SELF, register_claim

DOC = "002_79c73a48129ece5d.txt"
ACTIVE = {"state": "active"}
NIGHTLY = {"decay_mode": "nightly"}
NO_CONSOLIDATION = {"consolidate_salience": "0"}

# The figure's decay curve plants an active memory: 002 Decay Formula, recall_frequency 0,
# no candidate penalty; and marks the document's decay examples.
CURVE_MEMORY = {"state": "active"}
DECAY_EXAMPLES = (
    {
        "day": 35,
        "start": 0.5,
        "value": 0.25,
        "source": "002 Access Pattern Examples (one-off mention)",
        "label": "cosmo: salience 0.5 -> 0.25 after 35 days unused",
        "claim": "cosmo.one_off_factor_35d",
    },
    {
        "day": 70,
        "start": 1.0,
        "value": 0.25,
        "source": "002 Decay Formula with Recall Frequency",
        "label": "cosmo: salience x 0.25 after 70 days unused (recall_frequency 0)",
        "claim": "cosmo.rf0_factor_70d",
    },
)


def _curve(pattern: str, days, memory: dict, params: dict | None = None):
    from memsim.engine.curve import curve

    return curve("cosmo", pattern, days, memory=memory, params=params or {})


def _strength(day: float, memory: dict, params: dict | None = None) -> float:
    return float(_curve("never", [day], memory, params)["strength"].iloc[0])


def _factor(day: float, memory: dict, params: dict | None = None) -> float:
    frame = _curve("never", [0.0, day], memory, params)
    return float(frame["strength"].iloc[1] / frame["strength"].iloc[0])


def _rate(memory: dict) -> float:
    """The daily decay rate the implementation applies: -ln(s(1) / s(0))."""
    return -math.log(_factor(1.0, memory))


def _first_day(
    status: str, pattern: str, end: int, memory: dict, params: dict | None = None
) -> float:
    frame = _curve(pattern, [float(d) for d in range(end + 1)], memory, params)
    hit = frame.index[frame["status"] == status]
    return float(frame["day"].iloc[hit[0]]) if len(hit) else math.inf


def _nights_below(rate: float, ratio: float) -> int:
    """Nights N until s0 exp(-rate N(N+1)/2) < ratio s0 (the compounding nightly job)."""
    n = 0
    while math.exp(-rate * n * (n + 1) / 2) >= ratio:
        n += 1
    return n


def _frequent_salience(days: int, every: int, confidence: float, boost: float = 0.1) -> float:
    """Plain replay of 002 §Salience Updates + spacing effect for an every-N-days access
    pattern (closed form between accesses), evaluated at ``days``."""
    s, rf, g, interval, state, t_last = 0.5, 0, 1.0, 0.0, "candidate", 0.0
    for t in range(every, days + 1, every):
        rate = 0.02 / (1 + (rf**g if rf else 0.0))
        if state == "candidate":
            rate = 0.0 if confidence >= 0.8 else rate * (1 + (1 - confidence) * 2)
        s = s * math.exp(-rate * (t - t_last))
        new_interval = t - t_last
        g += 0.1 if new_interval > interval else (-0.05 if new_interval < interval else 0.0)
        interval, t_last = new_interval, t
        rf += 1
        s = min(1.0, s + boost)
        state = "core" if rf >= 10 else "active"
    rate = 0.02 / (1 + rf**g)
    return s * math.exp(-rate * (days - t_last))


# -- §Decay Formula: recall_frequency = 0, decay_gradient = 1.0 ------------------------------
for days, documented in ((35, 0.5), (70, 0.25), (105, 0.125)):
    register_claim(
        id=f"cosmo.rf0_factor_{days}d",
        policy="cosmo",
        document=DOC,
        section="§Decay Formula with Recall Frequency",
        statement=(
            f"recall_frequency=0, decay_gradient=1.0: after {days} days unused salience x "
            f"{documented}"
        ),
        documented=documented,
        measure=lambda d=days: _factor(d, ACTIVE),
        formula=lambda d=days: math.exp(-0.02 * d),
        tol=0.005,
        note="ln 2 / 0.02 = 34.66 days: the document rounds the half-life to 35",
    )
    register_claim(
        id=f"cosmo.rf0_factor_{days}d_nightly",
        policy="cosmo",
        document=DOC,
        section="§Offline/Nightly Decay Job (literal, compounding)",
        statement=(
            f"the same example under the literal nightly job: after {days} days salience x "
            f"{documented}"
        ),
        documented=documented,
        measure=lambda d=days: _factor(d, ACTIVE, NIGHTLY),
        formula=lambda d=days: math.exp(-0.02 * d * (d + 1) / 2),
        tol=0.005,
        kind=KIND_READING,
        note=(
            "the nightly job multiplies by exp(-rate x days since last access) every night, so "
            "the exponent grows as N(N+1)/2: the document's examples only hold for the closed form"
        ),
    )

register_claim(
    id="cosmo.rf0_halflife_nights_nightly",
    policy="cosmo",
    document=DOC,
    section="§Offline/Nightly Decay Job (literal, compounding)",
    statement="half-life of an unaccessed node (document: 35 days) under the literal nightly job",
    documented=35.0,
    measure=lambda: _first_day_below(0.5, ACTIVE, NIGHTLY, 40),
    formula=lambda: float(_nights_below(0.02, 0.5)),
    kind=KIND_READING,
    tol=1.0,
    note="first night at which salience is below half its initial value",
)


def _first_day_below(ratio: float, memory: dict, params: dict | None, end: int) -> float:
    frame = _curve("never", [float(d) for d in range(end + 1)], memory, params)
    s0 = frame["strength"].iloc[0]
    hit = frame.index[frame["strength"] < ratio * s0]
    return float(frame["day"].iloc[hit[0]]) if len(hit) else math.inf


# -- recall_frequency = 5, decay_gradient = 1.5 -----------------------------------------------
RF5 = {"state": "active", "recall_frequency": "5", "decay_gradient": "1.5"}
register_claim(
    id="cosmo.rf5_rate",
    policy="cosmo",
    document=DOC,
    section="§Decay Formula with Recall Frequency",
    statement="recall_frequency=5, decay_gradient=1.5: decay_rate = 0.02 / (1 + 5^1.5) ≈ 0.0015",
    documented=0.0015,
    measure=lambda: _rate(RF5),
    formula=lambda: 0.02 / (1 + 5**1.5),
    tol=0.00005,
    note="0.02 / 12.18 = 0.00164, which rounds to 0.0016, not 0.0015",
)
for days, documented in ((35, 0.95), (70, 0.90)):
    register_claim(
        id=f"cosmo.rf5_factor_{days}d",
        policy="cosmo",
        document=DOC,
        section="§Decay Formula with Recall Frequency",
        statement=(
            f"recall_frequency=5, decay_gradient=1.5: after {days} days salience x {documented}"
        ),
        documented=documented,
        measure=lambda d=days: _factor(d, RF5),
        formula=lambda d=days: math.exp(-0.02 / (1 + 5**1.5) * d),
        tol=0.005,
        note="the document's factors follow from its rounded rate 0.0015 (exp(-0.0525) = 0.949, "
        "exp(-0.105) = 0.900); the exact rate 0.00164 gives 0.944 and 0.891",
    )

# -- confidence penalty (candidates only) -------------------------------------------------------
C05 = {"confidence": "0.5"}
register_claim(
    id="cosmo.candidate_c05_rate",
    policy="cosmo",
    document=DOC,
    section="§Decay Formula / Examples with confidence",
    statement="state=candidate, confidence=0.5, recall_frequency=0: decay_rate = 0.02 x 2.0 = 0.04",
    documented=0.04,
    measure=lambda: _rate(C05),
    formula=lambda: 0.02 * (1 + (1 - 0.5) * 2),
    tol=1e-9,
)
register_claim(
    id="cosmo.candidate_c05_factor_17d",
    policy="cosmo",
    document=DOC,
    section="§Decay Formula / Examples with confidence",
    statement=(
        "confidence=0.5 candidate: after 17 days unused salience x 0.5 (half-life cut in half)"
    ),
    documented=0.5,
    measure=lambda: _factor(17, C05),
    formula=lambda: math.exp(-0.04 * 17),
    tol=0.01,
    note="ln 2 / 0.04 = 17.3 days",
)
register_claim(
    id="cosmo.candidate_c05_factor_35d",
    policy="cosmo",
    document=DOC,
    section="§Decay Formula / Examples with confidence",
    statement="confidence=0.5 candidate: after 35 days unused salience x 0.25 (archives quickly)",
    documented=0.25,
    measure=lambda: _factor(35, C05),
    formula=lambda: math.exp(-0.04 * 35),
    tol=0.005,
)
for conf, penalty in ((0.4, 2.2), (0.7, 1.6)):
    register_claim(
        id=f"cosmo.candidate_penalty_c{int(conf * 10):02d}",
        policy="cosmo",
        document=DOC,
        section="§Candidate Semantics",
        statement=f"confidence = {conf}: decay_rate = 0.02 x {penalty} ({penalty}x faster)",
        documented=penalty,
        measure=lambda c=conf: _rate({"confidence": str(c)}) / 0.02,
        formula=lambda c=conf: 1 + (1 - c) * 2,
        tol=1e-9,
    )
register_claim(
    id="cosmo.active_c04_factor_35d",
    policy="cosmo",
    document=DOC,
    section="§Decay Formula / Examples with confidence",
    statement=(
        "state=active, confidence=0.4: confidence no longer matters, after 35 days salience x 0.5"
    ),
    documented=0.5,
    measure=lambda: _factor(35, {"state": "active", "confidence": "0.4"}),
    formula=lambda: math.exp(-0.02 * 35),
    tol=0.005,
)
register_claim(
    id="cosmo.high_confidence_candidate_365d",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement=(
        "High-confidence candidate (confidence 0.9, never accessed): no decay, persists "
        "indefinitely"
    ),
    documented=1.0,
    measure=lambda: _factor(365, {"confidence": "0.9"}),
    formula=lambda: 1.0,
    tol=1e-12,
    note="measured as the salience factor after a year",
)

# -- access pattern examples -------------------------------------------------------------------
SOURCE = {"kind": "source"}
register_claim(
    id="cosmo.one_off_factor_35d",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement="One-off mention (never retrieved): salience decays from 0.5 -> 0.25 in 35 days",
    documented=0.25,
    measure=lambda: _strength(35, SOURCE),
    formula=lambda: 0.5 * math.exp(-0.02 * 35),
    tol=0.005,
    note=(
        "a base-rate decay needs a node the candidate rule does not touch: a Source (no "
        "extraction "
        "confidence); a semantic candidate at confidence < 0.8 decays faster, >= 0.8 not at all"
    ),
)
register_claim(
    id="cosmo.one_off_archived_day",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement="One-off mention: state candidate -> archived after 100 days (salience < 0.01)",
    documented=100.0,
    measure=lambda: _first_day("archived", "never", 220, SOURCE, NO_CONSOLIDATION),
    formula=lambda: float(math.ceil(math.log(0.5 / 0.01) / 0.02)),
    tol=1.0,
    note="0.5 exp(-0.02 t) < 0.01 needs t > 195.6 days: the formula archives at day 196, not 100 "
    "(episodic consolidation switched off to isolate the salience rule). The reading used "
    "everywhere: the example's node is the one that halves in 35 days (base rate 0.02: a Source, "
    "or a semantic node the candidate rule does not slow or speed), archived on day 196",
)
register_claim(
    id="cosmo.one_off_consolidated_day",
    policy="cosmo",
    document=DOC,
    section="§Memory Consolidation",
    statement="(implied) a one-off Source under default settings is archived by episodic "
    "consolidation (older than 7 days, salience < 0.2) before the salience rule can archive it",
    documented=None,
    measure=lambda: _first_day("archived", "never", 120, SOURCE),
    formula=lambda: float(math.ceil(math.log(0.5 / 0.2) / 0.02)),
    tol=1.0,
    note="0.5 exp(-0.02 t) < 0.2 at t > 45.8: a Source is consolidated on night 46; 002 makes no "
    "claim about this day (its '100 days' is the salience < 0.01 rule, "
    "cosmo.one_off_archived_day)",
)
register_claim(
    id="cosmo.one_off_archived_day_nightly",
    policy="cosmo",
    document=DOC,
    section="§Offline/Nightly Decay Job (literal, compounding)",
    statement="One-off mention archived after 100 days, under the literal nightly job",
    documented=100.0,
    measure=lambda: _first_day("archived", "never", 60, SOURCE, {**NIGHTLY, **NO_CONSOLIDATION}),
    formula=lambda: float(_nights_below(0.02, 0.01 / 0.5)),
    kind=KIND_READING,
    tol=1.0,
    note="compounding: 0.5 exp(-0.02 N(N+1)/2) < 0.01 at N = 20",
)
C04 = {"confidence": "0.4"}
register_claim(
    id="cosmo.low_confidence_halflife",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement=(
        "Low-confidence candidate (confidence=0.4): salience 0.5 -> 0.25 in ~17 days (2x faster)"
    ),
    documented=17.0,
    measure=lambda: math.log(2) / _rate(C04),
    formula=lambda: math.log(2) / (0.02 * 2.2),
    tol=1.0,
    note="the penalty at confidence 0.4 is 2.2x, not 2x: ln 2 / 0.044 = 15.8 days",
)
register_claim(
    id="cosmo.low_confidence_archived_day",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement=(
        "Low-confidence candidate (confidence=0.4, never accessed): archived after ~50 days "
        "(salience < 0.01)"
    ),
    documented=50.0,
    measure=lambda: _first_day("archived", "never", 100, C04),
    formula=lambda: float(math.ceil(math.log(0.5 / 0.01) / 0.044)),
    tol=5.0,
    note="known disagreement: 0.5 exp(-0.044 t) < 0.01 needs t > 88.9 days, archived on night 89",
)
register_claim(
    id="cosmo.low_confidence_archived_day_nightly",
    policy="cosmo",
    document=DOC,
    section="§Offline/Nightly Decay Job (literal, compounding)",
    statement="Low-confidence candidate archived after ~50 days, under the literal nightly job",
    documented=50.0,
    measure=lambda: _first_day("archived", "never", 60, C04, NIGHTLY),
    formula=lambda: float(_nights_below(0.044, 0.01 / 0.5)),
    kind=KIND_READING,
    tol=5.0,
    note="compounding: 0.5 exp(-0.044 N(N+1)/2) < 0.01 at N = 13",
)
FREQUENT = {"confidence": "0.9"}
register_claim(
    id="cosmo.high_frequency_core_day",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement=(
        "High-frequency topic (accessed every 3 days): candidate -> active -> core (10+ "
        "accesses, ~30 days)"
    ),
    documented=30.0,
    measure=lambda: _first_day("core", "every:3", 40, FREQUENT),
    formula=lambda: 3.0 * 10,
    tol=3.0,
)
register_claim(
    id="cosmo.high_frequency_salience_30d",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples",
    statement="High-frequency topic: salience quickly rises to 1.0 and stays there",
    documented=1.0,
    measure=lambda: float(_curve("every:3", [30.0], FREQUENT)["strength"].iloc[0]),
    formula=lambda: _frequent_salience(30, 3, 0.9),
    tol=0.01,
    note=(
        "with alpha = 0.1 (the top of the documented [0.05, 0.1]); alpha = 0.05 gives 0.93 at day "
        "30"
    ),
)
register_claim(
    id="cosmo.high_frequency_core_day_nightly",
    policy="cosmo",
    document=DOC,
    section="§Offline/Nightly Decay Job (literal, compounding)",
    statement="High-frequency topic becomes core at ~30 days, under the literal nightly job",
    documented=30.0,
    measure=lambda: _first_day("core", "every:3", 40, FREQUENT, NIGHTLY),
    formula=lambda: 3.0 * 10,
    kind=KIND_READING,
    tol=3.0,
    note="state changes count retrievals only: both modes agree",
)


# -- contradictions inside 002 -------------------------------------------------------------------
def _min_kept_candidate_confidence() -> float:
    """The lowest extraction confidence whose claim still makes a semantic node, through the
    policy's own extraction filter (searched on a 0.01 grid)."""
    from memsim.engine.events import Claim
    from policies.cosmo import Cosmo

    pol = Cosmo(seed=0)
    for i in range(101):
        c = i / 100
        if pol.passes_extraction(Claim("topic.fact", "v", confidence=c)):
            return c
    return math.inf


register_claim(
    id="cosmo.low_confidence_candidate_exists",
    policy="cosmo",
    document=DOC,
    section="§Access Pattern Examples vs §Phase 2 Step 1",
    statement="Low-confidence candidate (confidence=0.4): a node extracted at confidence 0.4",
    documented=0.4,
    measure=_min_kept_candidate_confidence,
    formula=lambda: 0.7,
    tol=1e-12,
    kind=KIND_SELF,
    note="the extraction filter keeps only claims with confidence >= 7/10, so no candidate below "
    "0.7 can exist; the example's 0.4 candidate is planted by hand in memsim's claims",
)


def _penalty_ratio(confidence: float) -> float:
    """Decay rate of a never-accessed semantic candidate at ``confidence`` over a Source's."""
    return _rate({"confidence": str(confidence)}) / _rate(SOURCE)


for conf in (0.7, 0.79):
    register_claim(
        id=f"cosmo.semantic_vs_episodic_rate_{conf:.2f}",
        policy="cosmo",
        document=DOC,
        section="§Salience and Decay (semantic nodes decay more slowly) vs §Candidate Semantics",
        statement="semantic nodes decay more slowly than episodic ones (rate ratio semantic / "
        f"episodic <= 1), for a never-accessed candidate at confidence {conf:.2f}",
        documented=1.0,
        measure=lambda c=conf: _penalty_ratio(c),
        formula=lambda c=conf: 1.0 + (1.0 - c) * 2.0,  # 002 candidate penalty, slope 2
        tol=0.0,
        kind=KIND_SELF,
        note="documented 1.0 stands for 'not faster'; by the document's own candidate penalty a "
        "semantic candidate at confidence 0.7-0.8 decays 1.4-1.6x faster than a Source",
    )


def _max_storylines_per_anchor() -> float:
    """Through the documented jobs (nightly Storyline promotion), the most Storylines any
    anchor gets in 120 days of daily mentions and daily recalls of one topic."""
    from memsim.engine.events import Claim, Episode, Query, make_stream
    from memsim.engine.runner import run
    from policies.cosmo import Cosmo

    events: list = []
    for d in range(120):
        for j in range(2):
            c = Claim("work.project", f"update {d}.{j}", category="fact", confidence=0.9)
            events.append(Episode(f"e{d}.{j}", d + 0.1 * j, f"project update {d}.{j}", (c,)))
        events.append(Query(f"q{d}", d + 0.5, "project?", keys=("work.project",), k=5))
    pol = Cosmo(seed=0)
    run(pol, make_stream(events, name="one-anchor", horizon=121.0))
    counts = [len(v) for v in pol.storylines_of.values()]
    return float(max(counts, default=0))


register_claim(
    id="cosmo.macro_reachable",
    policy="cosmo",
    document=DOC,
    section="§Weekly Macro promotion vs §Nightly Storyline promotion (has_meso)",
    statement="a Macro forms over 2+ Storylines about one anchor (storylines one anchor can get)",
    documented=2.0,
    measure=_max_storylines_per_anchor,
    formula=lambda: 1.0,
    tol=0.0,
    kind=KIND_SELF,
    note="Storyline promotion requires has_meso = false and sets it, so an anchor gets at most one "
    "Storyline and no Macro can form through the documented jobs (120 days of daily mentions "
    "and recalls of one topic give one Storyline)",
)


# -- 002 §Note Retention (default lifetime "month") --------------------------------------------
def _note_kept_nights() -> float:
    """Nights a note noted on day 0 (no lifetime given) stays on its node: the first night
    whose cleanup finds it gone."""
    from memsim.engine.events import Claim, Episode
    from policies.cosmo import Cosmo

    pol = Cosmo(seed=0)
    c = Claim("topic.fact", "v", category="fact", confidence=0.9)
    pol.ingest([Episode("e0", 0.0, "topic fact v", (c,))], 0.0)
    node = pol.node_of[("user", "entity", "topic.fact")]
    for night in range(1, 400):
        pol.cleanup_notes(float(night))
        if not pol.notes[node]:
            return float(night)
    return math.inf


register_claim(
    id="cosmo.note_month_lifetime",
    policy="cosmo",
    document=DOC,
    section="§Note Retention / §Note Cleanup",
    statement='a note without a chosen lifetime gets the default "month" and is removed by the '
    "nightly cleanup once expires_at has passed",
    documented=None,
    measure=_note_kept_nights,
    formula=lambda: 30.0,
    tol=0.0,
    note="002 names the lifetime, not its length: a month is 30 days as in Cosmo's code "
    "(Saturn getExpiresAt); a note is kept while expires_at > now, so it goes on night 30",
)

# -- cosmo-code: CaptainCrouton89/Saturn @ 4be0950d, backend/src/services/decayService.ts ------
COSMO_CODE_DOC = "CaptainCrouton89/Saturn 4be0950d backend/src/services/decayService.ts"


def _code_spacing_boost(days: float) -> float:
    return 0.05 + 0.95 * min(1.0, (1 - math.exp(-days / 20)) / (1 - math.exp(-90 / 20)))


def _code_gradient_after_nights(nights: int) -> float:
    """cosmo-code: a node at gradient 1.05 (keep_forever: never archived) recalled on day 0,
    then ``nights`` nightly jobs."""
    import numpy as np

    from memsim.engine.events import Claim, Episode
    from memsim.engine.registry import make

    pol = make("cosmo-code", seed=0)
    attrs = (("state", "active"), ("decay_gradient", 1.05), ("ttl_policy", "keep_forever"))
    row = pol.plant(Episode("e", 0.0, "topic fact", (Claim("topic.fact", "v", attrs=attrs),)), 0.0)
    pol.access(np.array([row]), 0.0)
    for night in range(1, nights + 1):
        pol.maintain(float(night), ["nightly"])
    return float(pol.store["decay_gradient"][row])


register_claim(
    id="cosmo-code.gradient_30_nights",
    policy="cosmo-code",
    document=COSMO_CODE_DOC,
    section="lines 73-94: +0.1 x spacing boost per longer interval, floored at 0.5",
    statement="thirty nights after a recall a node's gradient goes from 1.05 to "
    "1.05 + sum of 0.1 x boost(d), d = 1..30 = 2.63",
    documented=None,
    measure=lambda: _code_gradient_after_nights(30),
    formula=lambda: 1.05 + sum(0.1 * _code_spacing_boost(d) for d in range(1, 31)),
    tol=1e-9,
    note="002 §Offline/Nightly Decay Job 4 adds a flat 0.1 per longer interval (4.05 here)",
)


def _code_source_rate() -> float:
    from memsim.engine.curve import curve

    frame = curve("cosmo-code", "never", [0.0, 1.0], memory={"kind": "source"})
    return -math.log(float(frame["strength"].iloc[1] / frame["strength"].iloc[0]))


register_claim(
    id="cosmo-code.source_candidate_rate",
    policy="cosmo-code",
    document=COSMO_CODE_DOC,
    section="lines 55-58: coalesce(n.confidence, 0.5) in the candidate penalty",
    statement="a Source in state candidate (no confidence) decays at "
    "0.02 x (1 + (1 - 0.5) x 2) = 0.04 a day",
    documented=None,
    measure=_code_source_rate,
    formula=lambda: 0.02 * (1 + (1 - 0.5) * 2),
    tol=1e-9,
    note="002 gives a Source no confidence: cosmo decays it at the base rate 0.02",
)
