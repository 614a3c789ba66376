"""Worked examples of 003 (Izzie), measured through memsim.curve and the Izzie policy."""

from __future__ import annotations

import math

from memsim.engine.claims import register_claim

DOC = "003_29547c4578628b7b.txt"
NAME_PREFERENCE = {
    "category": "preference",
    "importance": "0.9",
    "key": "owner.name",
    "value": "Masa",
}

# The figure's decay curve plants the memory of the document's worked example, and marks it.
# 003 Memory Strength Calculation
CURVE_MEMORY = {"category": "preference", "importance": 0.9}
DECAY_EXAMPLES = (
    {
        "day": 30,
        "start": 0.9,
        "value": 0.67,
        "source": "003 Memory Strength Calculation",
        "label": "izzie: preference 0.9 -> 0.67 after 30 days",
        "claim": "izzie.preference_30d_strength",
    },
)


def _strength(day: float, memory: dict | None = None, **kw) -> float:
    from memsim.engine.curve import curve

    return float(
        curve("izzie", "never", [day], memory=memory or NAME_PREFERENCE, **kw)["strength"].iloc[0]
    )


def _planted(column: str) -> float:
    """A column of the memory the document's first message saves."""
    from memsim.engine.curve import memory_claim
    from memsim.engine.events import Episode
    from policies.izzie import Izzie

    pol = Izzie(seed=0)
    claim = memory_claim(Izzie, NAME_PREFERENCE)
    row = pol.plant(Episode("call-me-masa", 0.0, "Call me Masa", claims=(claim,)), 0.0)
    return float(pol.store[column][row])


register_claim(
    id="izzie.preference_30d_decay_factor",
    policy="izzie",
    document=DOC,
    section="§Memory Strength Calculation",
    statement="Preference after 30 days: decayFactor = e^(-0.01 x 30) = e^(-0.3) ≈ 0.74",
    documented=0.74,
    measure=lambda: _strength(30.0) / _strength(0.0),
    formula=lambda: math.exp(-0.01 * 30),
    tol=0.005,
    note="the document rounds e^-0.3 = 0.7408 to two decimals",
)

register_claim(
    id="izzie.preference_30d_strength",
    policy="izzie",
    document=DOC,
    section="§Memory Strength Calculation",
    statement=(
        "Preference (importance 0.9) after 30 days: strength = 0.9 x 0.74 = 0.67 (still strong)"
    ),
    documented=0.67,
    measure=lambda: _strength(30.0),
    formula=lambda: 0.9 * math.exp(-0.01 * 30),
    tol=0.005,
    note=(
        "the document multiplies the rounded factor: 0.9 x 0.74 = 0.666 and 0.9 x e^-0.3 = 0.6667 "
        "both round to 0.67"
    ),
)

register_claim(
    id="izzie.name_recall_strength",
    policy="izzie",
    document=DOC,
    section="§Data Flow Example / Second Message",
    statement="'What's my name?' right after 'Call me Masa': retrieved with strength 0.9 "
    "(high importance, recent, slow decay)",
    documented=0.9,
    measure=lambda: _strength(0.0),
    formula=lambda: 0.9 * math.exp(-0.01 * 0.0),
    tol=0.005,
    note="the document gives no time between the two messages; measured the same day (0 days)",
)

register_claim(
    id="izzie.saved_decay_rate",
    policy="izzie",
    document=DOC,
    section="§Data Flow Example / Saved to Weaviate",
    statement='Saved preference record: "decayRate": 0.01 // Very slow decay for preferences',
    documented=0.01,
    measure=lambda: _planted("decay_rate"),
    formula=lambda: 0.01,
    tol=0.0,
    note="the category table's preference rate",
)

register_claim(
    id="izzie.saved_importance",
    policy="izzie",
    document=DOC,
    section="§Data Flow Example / Saved to Weaviate",
    statement='Saved record keeps the LLM\'s "importance": 0.9 (the preference default is 0.8)',
    documented=0.9,
    measure=lambda: _planted("importance"),
    formula=lambda: 0.9,
    tol=0.0,
    note=(
        "so the LLM's explicit importance overrides the category default (importance_source=claim)"
    ),
)

# -- izzie-code: Zeeeepa/izzie2 @ 1604fd6 (context-retrieval.ts, retrieval.ts, decay.ts) -------
IZZIE_CODE_DOC = "Zeeeepa/izzie2 1604fd6 src/lib/memory/decay.ts, src/lib/chat/context-retrieval.ts"


def _code_recall(day: float, importance: float, confidence: float) -> list[float]:
    """izzie-code: one event memory saved on day 0, asked for by keyword on ``day``; the
    scores it returns (empty when the search or the strength filter drops it)."""
    from memsim.engine.events import Claim, Episode, Query
    from memsim.engine.registry import make

    pol = make("izzie-code", seed=0)
    c = Claim(
        "cobalt.harbor", "blue", category="event", importance=importance, confidence=confidence
    )
    pol.ingest([Episode("e0", 0.0, "cobalt harbor is blue", (c,))], 0.0)
    q = Query("q", day, "what is my cobalt harbor?", keys=("cobalt.harbor",))
    return pol.recall([q], day)[0].scores.tolist()


register_claim(
    id="izzie-code.ranking_score",
    policy="izzie-code",
    document=IZZIE_CODE_DOC,
    section="decay.ts:100: score = strength x 0.5 + confidence x 0.3 + importance x 0.2",
    statement="a memory found the day it is saved (strength 1), confidence 0.9, importance 0.6, "
    "scores 0.5 + 0.27 + 0.12 = 0.89",
    documented=None,
    measure=lambda: _code_recall(0.0, 0.6, 0.9)[0],
    formula=lambda: 0.5 * 1.0 + 0.3 * 0.9 + 0.2 * 0.6,
    tol=1e-9,
    note="003 ranks by relevance x strength; the code's score reads no relevance",
)


def _first_day_filtered() -> float:
    return next(float(d) for d in range(0, 200) if not _code_recall(float(d), 0.0, 0.9))


register_claim(
    id="izzie-code.strength_filter_day",
    policy="izzie-code",
    document=IZZIE_CODE_DOC,
    section="context-retrieval.ts:66 minMemoryStrength 0.3 (retrieval.ts:139 strength >= 0.3)",
    statement="an event of importance 0 (rate 0.05) found by the search is dropped from the "
    "first day its strength exp(-0.05 d) is below 0.3: day 25",
    documented=None,
    measure=_first_day_filtered,
    formula=lambda: float(math.floor(math.log(1 / 0.3) / 0.05) + 1),
    tol=0.0,
    note="003 has no strength filter: a weak memory is ranked lower, never dropped",
)
