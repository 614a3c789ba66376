"""Worked examples and formula cases of 004 (Kernle), measured through memsim.curve and the
Kernle policy. 004 states few numbers; the rows record what its salience formula implies,
including THE FINDING: a never-accessed memory has salience 0 and is forgotten at the first
forgetting cycle, however confident and recent it is."""

from __future__ import annotations

import math

from memsim.engine.claims import register_claim

DOC = "004_e8e020057e4a0858.txt"
SAL = "§Forgetting System / Salience Formula"
HALF_LIFE = 30.0  # KernleParams.half_life default (004 gives no value)
FORGETTING_EVERY = 7.0  # KernleParams.forgetting_every default (004 gives no cadence)
THRESHOLD = 0.3  # 004 §Forgetting Cycle

# The figure's decay curve plants an accessed memory: 004 uses log(times_accessed + 1), and
# log(0 + 1) = 0 would never show decay.
CURVE_MEMORY = {"confidence": 0.9, "times_accessed": 1}


def salience(
    confidence: float, times_accessed: float, days_since_access: float, half_life: float = HALF_LIFE
) -> float:
    """004's formula in plain math (log is the natural log)."""
    return (confidence * math.log(times_accessed + 1)) / (days_since_access / half_life + 1)


def _curve(pattern: str, days, **memory):
    from memsim.engine.curve import curve

    memory.setdefault("key", "owner.city")
    memory.setdefault("category", "fact")
    return curve("kernle", pattern, days, memory={k: str(v) for k, v in memory.items()})


def _first_forgotten(pattern: str, end: int, **memory) -> float:
    frame = _curve(pattern, f"0:{end}:1", **memory)
    gone = frame[frame["status"] == "forgotten"]["day"]
    return float(gone.iloc[0]) if len(gone) else math.inf


def _formula_first_forgotten(confidence: float, end: int) -> float:
    """First forgetting-cycle day where a never-accessed memory's salience is < 0.3."""
    n = 1
    while n * FORGETTING_EVERY <= end:
        if salience(confidence, 0, n * FORGETTING_EVERY) < THRESHOLD:
            return n * FORGETTING_EVERY
        n += 1
    return math.inf


def _consolidated_confidence() -> float:
    """Three episodes of one pattern, then the daily consolidation: the new belief's confidence."""
    from memsim.engine import runner
    from memsim.engine.events import Claim, Episode, make_stream
    from memsim.engine.registry import make

    pol = make("kernle", seed=0)
    eps = [
        Episode(
            f"ep{i}",
            0.0,
            "tests failed again",
            claims=(Claim("work.testing", "shortcuts create more work", "event", confidence=0.6),),
        )
        for i in range(3)
    ]
    runner.run(pol, make_stream(eps, horizon=1.0))
    s = pol.store
    beliefs = [r for r in range(s.n) if s.kinds[s["kind"][r]] == "belief"]
    return float(s["confidence"][beliefs[-1]])


register_claim(
    id="kernle.never_accessed_salience",
    policy="kernle",
    document=DOC,
    section=SAL,
    statement="A confident (0.9), brand-new memory never accessed: times_accessed = 0 -> "
    "log(0 + 1) = 0 -> salience 0 ('High salience: Confident, ... recently used')",
    documented=None,
    measure=lambda: float(_curve("never", [0.0], confidence=0.9)["strength"].iloc[0]),
    formula=lambda: salience(0.9, 0, 0.0),
    tol=0.0,
    note=(
        "THE FINDING: the formula gives 0 to every memory never accessed, however confident and "
        "recent"
    ),
)

register_claim(
    id="kernle.never_accessed_forgotten_day",
    policy="kernle",
    document=DOC,
    section="§Forgetting Cycle (threshold=0.3)",
    statement=(
        "A memory of confidence 1.0, never accessed, is tombstoned at the first forgetting cycle"
    ),
    documented=None,
    measure=lambda: _first_forgotten("never", 30, confidence=1.0),
    formula=lambda: _formula_first_forgotten(1.0, 30),
    tol=0.0,
    note=(
        "first cycle = forgetting_every (7 days, memsim's choice): salience 0 < 0.3 at any "
        "confidence"
    ),
)

register_claim(
    id="kernle.value_protected",
    policy="kernle",
    document=DOC,
    section="§4 Values / §Protection",
    statement="Values are is_protected=True by default - they never decay via forgetting "
    "(1 = still active after a year without access)",
    documented=1.0,
    measure=lambda: float(
        _curve("never", [365.0], category="value", key="owner.value")["status"].iloc[0] == "active"
    ),
    formula=lambda: 1.0,
    tol=0.0,
    note="its salience is 0 like any never-accessed memory; protection alone keeps it",
)

register_claim(
    id="kernle.half_life_halves",
    policy="kernle",
    document=DOC,
    section=SAL,
    statement="salience(days_since_access = half_life) / salience(0 days): the hyperbolic "
    "denominator doubles, so 'half_life' is a true half-life",
    documented=0.5,
    measure=lambda: (lambda f: float(f["strength"].iloc[1] / f["strength"].iloc[0]))(
        _curve("at:0", [0.0, HALF_LIFE], confidence=0.9)
    ),
    formula=lambda: salience(0.9, 1, HALF_LIFE) / salience(0.9, 1, 0.0),
    tol=1e-12,
    note="004 names half_life but gives no value; memsim's default is 30 days",
)

register_claim(
    id="kernle.one_access_30d",
    policy="kernle",
    document=DOC,
    section=SAL,
    statement="confidence 0.9, accessed once at day 0, 30 days later (half_life 30): "
    "0.9 x ln 2 / 2",
    documented=None,
    measure=lambda: float(_curve("at:0", [30.0], confidence=0.9)["strength"].iloc[0]),
    formula=lambda: salience(0.9, 1, 30.0),
    tol=0.0,
    note="log read as the natural log (004 does not say); 0.312 is just above the 0.3 threshold",
)

register_claim(
    id="kernle.belief_add_confidence",
    policy="kernle",
    document=DOC,
    section="§Consolidation Process / Example Consolidation Session",
    statement='The agent adds the pattern it saw: kernle belief add "..." --confidence 0.8',
    documented=0.8,
    measure=_consolidated_confidence,
    formula=lambda: 0.8,
    tol=0.0,
    note="the mock agent adds a belief at belief_confidence after >= min_episodes (3) episodes",
)
