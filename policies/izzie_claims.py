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
