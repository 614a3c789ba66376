"""Published worked numbers of the reference models, measured through each
policy's real code path (a memory planted by ``ingest``, read back through ``strength``,
``activation``, the store or ``recall``) against the source's own formula in plain math.

``documented`` is the number the source states (the package's output or the paper's
printed value); None where the source prints only the formula, the row then recording what
the formula gives (the tests in tests/test_ref_*.py pin the same numbers).
"""

from __future__ import annotations

import math

from memsim.engine.claims import register_claim
from memsim.engine.events import Claim, Episode, Query

FSRS_DOC = "fsrs 6.3.2 (package), FSRS-6"
ACTR_DOC = "Anderson & Schooler 1991; Pavlik & Anderson 2005"
EBISU_DOC = "ebisu 2.2.0 (package)"
MEMORYBANK_DOC = "Zhong et al. AAAI 2024 (MemoryBank)"
GA_DOC = "Park et al. UIST 2023 (Generative Agents)"


class OneVectorLLM:
    """A scripted LLM whose every claim and query embeds to one vector: each later episode is
    a repetition, each query retrieves the memory (the policy tests use it too)."""

    dim = 4
    seed = 0

    def extract(self, episode):
        return episode.claims

    def embed(self, items, keys):
        import numpy as np

        from memsim.engine.llm import Embedded

        v = np.zeros((len(items), self.dim), dtype=np.float32)
        v[:, 0] = 1.0
        return Embedded(v, np.ones(len(items), dtype=bool))

    def embed_query(self, query):
        import numpy as np

        return np.array([1.0, 0, 0, 0], dtype=np.float32)


class TwoKeysLLM(OneVectorLLM):
    """Claims of key ``a.b`` embed along the query's axis, every other key orthogonal to it;
    all share one more axis (so relevance is 1 or 0 after min-max, nothing else differs)."""

    def embed(self, items, keys):
        import numpy as np

        from memsim.engine.llm import Embedded

        v = np.zeros((len(items), self.dim), dtype=np.float32)
        for i, it in enumerate(items):
            v[i, 0 if it.key == "a.b" else 1] = 1.0
            v[i, 2] = 1.0
        return Embedded(v, np.ones(len(items), dtype=bool))


def _planted(policy_id: str, times: tuple[float, ...] = (0.0,), **params: object):
    """``policy_id`` with one memory presented at each of ``times`` (a creation, then
    repetitions)."""
    from memsim.engine.registry import make

    pol = make(policy_id, dict(params) or None, llm=OneVectorLLM(), seed=0)
    for i, t in enumerate(times):
        c = Claim(key="owner.city", value="Paris", importance=0.5)
        pol.ingest([Episode(f"e{i}", t, "I live in Paris", claims=(c,))], t)
    return pol


def _crossing(pol, below: float, lo: float, hi: float) -> float:
    """The time in (lo, hi) where the planted memory's strength falls under ``below``,
    by bisection to machine precision."""
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(pol.strength(mid)[0]) >= below else (lo, mid)
    return (lo + hi) / 2


# ---------------------------------------------------------------- FSRS-6


def _w() -> tuple[float, ...]:
    from policies.fsrs6 import DEFAULT_W

    return DEFAULT_W


def _fsrs_r(t: float, s: float) -> float:
    w20 = _w()[20]
    factor = 0.9 ** (-1.0 / w20) - 1.0
    return (1.0 + factor * t / s) ** (-w20)


register_claim(
    id="fsrs.good_review_stability",
    policy="fsrs",
    document=FSRS_DOC,
    section="default parameters: S0(Good) = w2",
    statement="A new card rated Good has stability S = w2 = 2.3065 days",
    documented=2.3065,
    measure=lambda: float(_planted("fsrs").store["stability"][0]),
    formula=lambda: _w()[2],
    tol=5e-5,
)
register_claim(
    id="fsrs.good_review_10d_retrievability",
    policy="fsrs",
    document=FSRS_DOC,
    section="R(t, S) = (1 + F t / S)^-w20, F = 0.9^(-1/w20) - 1",
    statement="One Good review, then 10 days: R = 0.77437 (Scheduler.get_card_retrievability)",
    documented=0.77437,
    measure=lambda: float(_planted("fsrs").strength(10.0)[0]),
    formula=lambda: _fsrs_r(10.0, _w()[2]),
    tol=5e-6,
)
register_claim(
    id="fsrs.retrievability_at_stability",
    policy="fsrs",
    document=FSRS_DOC,
    section="definition of stability: R(S, S) = 0.9",
    statement="Stability is the interval at which R falls to 90%: R(S, S) = 0.9",
    documented=0.9,
    # one Good review, whole days: S = 2.3065, so R after exactly S days, with fractional days
    measure=lambda: float(_planted("fsrs", whole_days=False).strength(_w()[2])[0]),
    formula=lambda: _fsrs_r(_w()[2], _w()[2]),
    tol=1e-9,
)
register_claim(
    id="fsrs.initial_difficulty_good",
    policy="fsrs",
    document=FSRS_DOC,
    section="D0(G) = w4 - e^(w5 (G - 1)) + 1, G = 3 (Good)",
    statement="A new card rated Good has difficulty D0(Good) = w4 - e^(2 w5) + 1 = 2.1181",
    documented=None,
    measure=lambda: float(_planted("fsrs").store["difficulty"][0]),
    formula=lambda: _w()[4] - math.exp(_w()[5] * 2) + 1,
    tol=0.0,
    note="the package prints no number; the fsrs package's Card.difficulty after one Good "
    "review equals it (tests/policies/test_fsrs_actr.py)",
)

# ---------------------------------------------------------------- ACT-R

_TAU, _S, _A = -0.704, 0.255, 0.1768


def _logistic(b: float) -> float:
    return 1.0 / (1.0 + math.exp(-(b - _TAU) / _S))


register_claim(
    id="actr.one_presentation_one_day",
    policy="actr",
    document=ACTR_DOC,
    section="B = ln(sum t_j^-d), d = 0.5; P = 1/(1 + e^(-(B - tau)/s)), Pavlik & Anderson Table 2",
    statement="One presentation one unit (day) ago: B = ln(1) = 0, P = 0.94052 "
    "(tau = -0.704, s = 0.255)",
    documented=None,
    measure=lambda: float(_planted("actr").strength(1.0)[0]),
    formula=lambda: _logistic(0.0),
    tol=0.0,
    note="the sources print the formulas, not this number "
    "(tests/policies/test_fsrs_actr.py pins it)",
)
register_claim(
    id="actr.two_presentations_activation",
    policy="actr",
    document=ACTR_DOC,
    section="Anderson & Schooler 1991: B = ln(sum_j (t - t_j)^-d)",
    statement="Presentations 4 and 1 days ago: B = ln(4^-0.5 + 1^-0.5) = ln 1.5 = 0.405465",
    documented=None,
    measure=lambda: float(_planted("actr", (0.0, 3.0)).activation(4.0)[0]),
    formula=lambda: math.log(4**-0.5 + 1.0),
    tol=0.0,
    note="the source prints the formula, not this number",
)
register_claim(
    id="actr.one_presentation_forgotten_day",
    policy="actr",
    document=ACTR_DOC,
    section="P < forget_below (0.05, memsim choice): -0.5 ln t < tau + s ln(1/19)",
    statement="A memory presented once falls under P = 0.05 after "
    "exp((0.704 + 0.255 ln 19) / 0.5) = 18.35 days",
    documented=None,
    measure=lambda: _crossing(_planted("actr"), 0.05, 1.0, 1000.0),
    formula=lambda: math.exp((-_TAU - _S * math.log(0.05 / 0.95)) / 0.5),
    tol=0.0,
    note="a finding: the daily decay job forgets it on day 19",
)
register_claim(
    id="actr-spacing.first_decay_is_a",
    policy="actr-spacing",
    document=ACTR_DOC,
    section="Pavlik & Anderson 2005 eq. 2-3: d_1 = c e^(m_0) + a = a (m_0 = -inf)",
    statement="One presentation 4 days ago decays at d_1 = a = 0.1768: B = -0.1768 ln 4",
    documented=None,
    measure=lambda: float(_planted("actr-spacing").activation(4.0)[0]),
    formula=lambda: -_A * math.log(4.0),
    tol=0.0,
    note="a = 0.1768, c = 0.2170: srs-benchmark's fit",
)
register_claim(
    id="actr-spacing.one_presentation_forgotten_day",
    policy="actr-spacing",
    document=ACTR_DOC,
    section="Pavlik & Anderson 2005 eq. 2-3 with P < forget_below (0.05, memsim choice)",
    statement="A memory presented once falls under P = 0.05 after "
    "exp((0.704 + 0.255 ln 19) / 0.1768) = 3746.9 days (actr: 18.35)",
    documented=None,
    measure=lambda: _crossing(_planted("actr-spacing"), 0.05, 1.0, 1e6),
    formula=lambda: math.exp((-_TAU - _S * math.log(0.05 / 0.95)) / _A),
    tol=0.0,
    note="a finding: with srs-benchmark's a the spacing variant barely forgets within a year",
)

# ---------------------------------------------------------------- Ebisu


def _ebisu_recall(k: float) -> float:
    """Beta(3, 3) at half-life h: predictRecall(k h) = B(3 + k, 3) / B(3, 3)."""
    lg = math.lgamma
    return math.exp(lg(3 + k) + lg(6) - lg(6 + k) - lg(3))


register_claim(
    id="ebisu.recall_at_half_life",
    policy="ebisu",
    document=EBISU_DOC,
    section="defaultModel(t) = (3, 3, t); predictRecall(model, t, exact=True)",
    statement="At the half-life of the default model recall is the Beta(3, 3) mean, 1/2",
    documented=0.5,
    measure=lambda: float(_planted("ebisu").strength(1.0)[0]),
    formula=lambda: _ebisu_recall(1.0),
    tol=1e-12,
)
register_claim(
    id="ebisu.recall_at_twice_half_life",
    policy="ebisu",
    document=EBISU_DOC,
    section="predictRecall(model, 2t, exact=True) = B(alpha + 2, beta) / B(alpha, beta)",
    statement="At twice the half-life: B(5, 3) / B(3, 3) = 2/7 = 0.285714",
    documented=2.0 / 7.0,
    measure=lambda: float(_planted("ebisu").strength(2.0)[0]),
    formula=lambda: _ebisu_recall(2.0),
    tol=1e-9,
)

# ---------------------------------------------------------------- MemoryBank


def _memorybank_after_recall() -> float:
    pol = _planted("memorybank", forget_below=0.0)
    pol.recall([Query("q", 1.0, "where do I live?", keys=("owner.city",), k=1)], 1.0)
    return float(pol.strength(3.0)[0])


def _memorybank_forget_day() -> float:
    pol = _planted("memorybank")
    return next(float(d) for d in range(1, 100) if len(pol._doomed(float(d))))


register_claim(
    id="memorybank.retention_one_day",
    policy="memorybank",
    document=MEMORYBANK_DOC,
    section="§Memory Updating with a Forgetting Mechanism: R = e^(-t/S), S = 1 at first",
    statement="A memory never recalled, one day later: R = e^-1 = 0.36788",
    documented=None,
    measure=lambda: float(_planted("memorybank").strength(1.0)[0]),
    formula=lambda: math.exp(-1.0),
    tol=0.0,
    note="the paper prints the formula, not this number",
)
register_claim(
    id="memorybank.retention_after_recall",
    policy="memorybank",
    document=MEMORYBANK_DOC,
    section="§Memory Updating: a recall adds 1 to S and resets t to 0",
    statement="Recalled on day 1 (S = 2), two days later: R = e^(-2/2) = 0.36788",
    documented=None,
    measure=_memorybank_after_recall,
    formula=lambda: math.exp(-2.0 / 2.0),
    tol=0.0,
    note="the paper prints the rule, not this number",
)
register_claim(
    id="memorybank.forgotten_day",
    policy="memorybank",
    document=MEMORYBANK_DOC,
    section="§Memory Updating; forget_below 0.05 (memsim choice: the paper gives no threshold)",
    statement="A memory never recalled is forgotten at the first daily pass with "
    "e^-t < 0.05: day ceil(ln 20) = 3",
    documented=None,
    measure=_memorybank_forget_day,
    formula=lambda: float(math.ceil(math.log(20.0))),
    tol=0.0,
)

MEMORYBANK_CODE_DOC = "MemoryBank-SiliconFriend forget_memory.py @3869efc (released code)"
MEMORYBANK_UPLOAD_DOC = "MemoryBank-SiliconFriend forget_memory.py @0cc7111 (superseded upload)"


def _memorybank_recalled(policy_id: str, recalls: int, **params: object):
    """``policy_id`` with one memory made on day 0 and retrieved on days 1..``recalls``
    (each retrieval is a recall: forget_memory.py ``update_memory_when_searched``)."""
    pol = _planted(policy_id, (0.0,), **params)
    for d in range(1, recalls + 1):
        pol.recall([Query(f"q{d}", float(d), "where?", keys=("owner.city",), k=1)], float(d))
    return pol


def _memorybank_code_retention_after_recall() -> float:
    """Recalled once on day 1 (S = 2), read one day later."""
    return float(_memorybank_recalled("memorybank-code", 1).retention(2.0)[0])


def _memorybank_upload_cutoff_day() -> float:
    """The first daily pass that drops a memory never recalled, with every draw keeping it
    (draw 0 < R): the 30-day cut-off of the superseded upload alone."""
    import numpy as np

    pol = _planted("memorybank-code", variant="upload-0cc7111")
    pol._draws = lambda now, rows: np.zeros(len(rows))
    return next(float(d) for d in range(1, 100) if len(pol._doomed(float(d))))


register_claim(
    id="memorybank-code.stronger_fades_faster",
    policy="memorybank-code",
    document=MEMORYBANK_CODE_DOC,
    section="line 36: return math.exp(-t / 5*S), read as Python reads it: exp(-(t / 5) x S)",
    statement="Recalled once (S = 2), one day later: R = exp(-(1 / 5) x 2) = 0.67032, below "
    "the R = exp(-1 / 5) = 0.81873 of a memory never recalled one day after its mention: "
    "a recall makes a memory fade faster",
    documented=None,
    measure=_memorybank_code_retention_after_recall,
    formula=lambda: math.exp(-(1.0 / 5.0) * 2.0),
    tol=1e-12,
    note="the paper's R = exp(-t / S) (memorybank) gives exp(-1 / 2) = 0.60653 and grows with "
    "S; the code's docstring says the same ('the higher the memory strength, the slower the "
    "rate of forgetting'), its operator precedence does the opposite",
)
register_claim(
    id="memorybank-code.strength_uncapped",
    policy="memorybank-code",
    document=MEMORYBANK_CODE_DOC,
    section="line 69: memory_strength += 1 per recall; lines 49-50 memory_level = 3 unused",
    statement="A memory mentioned once, then recalled on five days: S = 1 + 5 = 6 (no cap)",
    documented=None,
    measure=lambda: float(_memorybank_recalled("memorybank-code", 5).store["memory_strength"][0]),
    formula=lambda: 1.0 + 5.0,
    tol=0.0,
    note="the superseded upload 0cc7111 capped S at three levels (variant upload-0cc7111)",
)
register_claim(
    id="memorybank-code.upload_strength_levels",
    policy="memorybank-code",
    document=MEMORYBANK_UPLOAD_DOC,
    section="lines 49, 52-55: three strength levels; a recall moves a memory one level up",
    statement="variant upload-0cc7111: mentioned once, recalled on five days: "
    "S = min(1 + 5, 3) = 3",
    documented=None,
    measure=lambda: float(
        _memorybank_recalled("memorybank-code", 5, variant="upload-0cc7111").store[
            "memory_strength"
        ][0]
    ),
    formula=lambda: min(1.0 + 5.0, 3.0),
    tol=0.0,
    note="the paper's S grows without a cap (memorybank)",
)
register_claim(
    id="memorybank-code.upload_cutoff_day",
    policy="memorybank-code",
    document=MEMORYBANK_UPLOAD_DOC,
    section="lines 50, 83: if days_diff < self.total_date (30), else dropped",
    statement="variant upload-0cc7111: a memory never recalled is dropped at the first daily "
    "pass 30 whole days after its mention, day 30, even where its draw would keep it",
    documented=None,
    measure=_memorybank_upload_cutoff_day,
    formula=lambda: 30.0,
    tol=0.0,
    note="before the cut-off it is kept at each pass with probability R; the released code "
    "(3869efc) sets total_date = 30 and never reads it (tests/policies/test_memorybank_code.py)",
)

# ---------------------------------------------------------------- Generative Agents


def _ga_top_score() -> float:
    """The released code's weights on two memories: relevant, unimportant and older (rank
    1: retrieve.py ranks by last access ascending) against irrelevant, important and newer
    (rank 2); the top score."""
    from memsim.engine.registry import make

    pol = make("generative-agents-code", llm=TwoKeysLLM(), seed=0)
    for i, (key, imp) in enumerate((("a.b", 0.1), ("c.d", 0.9))):
        c = Claim(key=key, value="x", importance=imp)
        pol.ingest([Episode(f"e{i}", float(i), "x", claims=(c,))], float(i))
    r = pol.recall([Query("q", 2.0, "a?", keys=("a.b",), k=2)], 2.0)[0]
    return float(r.scores[0])


register_claim(
    id="generative-agents.recency_one_day",
    policy="generative-agents",
    document=GA_DOC,
    section="§4.1: recency = 0.995^hours since last retrieval",
    statement="24 hours after its last retrieval a memory's recency is 0.995^24 = 0.88665",
    documented=None,
    measure=lambda: float(_planted("generative-agents").strength(1.0)[0]),
    formula=lambda: 0.995**24,
    tol=0.0,
    note="the paper prints the decay factor, not this number",
)
register_claim(
    id="generative-agents-code.weights",
    policy="generative-agents-code",
    document=GA_DOC,
    section="released code retrieve.py: gw = [0.5, 3, 2], min-max normalized components",
    statement="Relevant but unimportant and older (0.5 x 1 + 3 x 1 + 2 x 0) beats irrelevant "
    "but important and newer (0.5 x 0 + 3 x 0 + 2 x 1): top score 3.5",
    documented=None,
    measure=_ga_top_score,
    formula=lambda: 0.5 * 1.0 + 3.0 * 1.0 + 2.0 * 0.0,
    tol=0.0,
    note="relevance outweighs the rest in the released code (the paper weights all three 1)",
)


def _ga_older_minus_newer() -> float:
    """The released code's score of the older of two memories (created a day apart, never
    retrieved, same vector and importance) minus the newer's: recency's part alone."""
    from memsim.engine.registry import make

    pol = make("generative-agents-code", llm=OneVectorLLM(), seed=0)
    for i in range(2):
        c = Claim(key=f"k.{i}", value="x", importance=0.5)
        pol.ingest([Episode(f"e{i}", float(i), "x", claims=(c,))], float(i))
    r = pol.recall([Query("q", 2.0, "k?", keys=("k.0",), k=2)], 2.0)[0]
    by_episode = {min(pol.store.provenance[int(m)]): float(v) for m, v in zip(r.ids, r.scores)}
    return by_episode["e0"] - by_episode["e1"]


register_claim(
    id="generative-agents-code.recency_order",
    policy="generative-agents-code",
    document=GA_DOC,
    section="released code retrieve.py: new_retrieve sorts nodes by last_accessed ascending; "
    "extract_recency gives recency_decay ** i, i = 1.. in that order",
    statement="Of two memories a day apart, never retrieved, alike otherwise, the OLDER scores "
    "0.5 x (1 - 0) = 0.5 above the newer: the code's recency favours the least recently "
    "accessed memory, the paper's (§4.1) the most recent",
    documented=None,
    measure=_ga_older_minus_newer,
    formula=lambda: 0.5 * (1.0 - 0.0),
    tol=1e-12,
    note="generative-agents-code follows the code (code_rank_order='oldest_first'); "
    "'newest_first' is the paper's direction",
)


def _ga_middle_recency() -> float:
    """The released code's normalized recency of the middle of three memories a day apart,
    never retrieved: (d^2 - d^3) / (d - d^3) = d / (1 + d) for the decay d it runs with."""
    from memsim.engine.registry import make

    pol = make("generative-agents-code", llm=OneVectorLLM(), seed=0)
    for i in range(3):
        c = Claim(key=f"k.{i}", value="x", importance=0.5)
        pol.ingest([Episode(f"e{i}", float(i), "x", claims=(c,))], float(i))
    r = pol.recall([Query("q", 3.0, "k?", keys=("k.0",), k=3)], 3.0)[0]
    by_episode = {min(pol.store.provenance[int(m)]): float(v) for m, v in zip(r.ids, r.scores)}
    # relevance and importance are constant: 0.5 each after normalization (weights 3, 2)
    return (by_episode["e1"] - 3 * 0.5 - 2 * 0.5) / 0.5


register_claim(
    id="generative-agents-code.recency_decay",
    policy="generative-agents-code",
    document=GA_DOC,
    section="released code @51072d4 scratch.py line 197 loads recency_decay from the persona's "
    "scratch.json (0.995 in every shipped persona); line 60's 0.99 applies only without one",
    statement="Of three memories a day apart, never retrieved, the middle one's normalized "
    "recency is d / (1 + d) = 0.49875 at the released agents' d = 0.995 (0.49749 at 0.99)",
    documented=None,
    measure=_ga_middle_recency,
    formula=lambda: 0.995 / (1 + 0.995),
    tol=1e-12,
    note="the paper (§4.1) decays 0.995 per hour since last access; the code 0.995 per rank",
)
