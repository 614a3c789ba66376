"""pai-code follows Personal AI's public code: repository devjarus/pai, commit
113345d79440597f761fc2933486169d07a3bc46, files packages/core/src/memory/memory.ts and
packages/core/src/memory/remember.ts. One test per rule of that commit the streams reach,
each against the documented policy ``pai`` (seed 000) where the two differ.
docs/policies/pai-code.md lists the rules and the lines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine import registry
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import CONTRADICTS, IRRELEVANT, NONE, PARTIAL, SUPPORTS
from memsim.engine.ranking import topk
from policies.pai import TYPE_CODE, PaiParams, PersonalAI
from tests.policies.test_code_variants import LineLLM

COMMIT = "113345d79440597f761fc2933486169d07a3bc46"


class GreyLLM(LineLLM):
    """LineLLM's exact geometry (a claim with attr ``sim`` = s embeds as s e0 + sqrt(1 - s^2)
    e_slot, queries as e0), where attr ``vec`` gives the vector itself, and scripted
    classifier replies: ``relations`` maps a candidate claim's key to its reply (default
    IRRELEVANT); in index mode the reply is the first CONTRADICTS one."""

    def __init__(self, relations: dict[str, str] | None = None):
        self.relations = relations or {}
        self.asked: list[list[str]] = []

    def _vec(self, c: Claim) -> np.ndarray:
        if c.attr("vec") is not None:  # a given unit vector
            return np.asarray(c.attr("vec"), dtype=np.float64)
        return super()._vec(c)

    def classify(self, new, candidates, *, answer, key):
        keys = [c.key for c in candidates]
        self.asked.append(keys)
        replies = [self.relations.get(k, IRRELEVANT) for k in keys]
        if answer == "relation":
            return replies
        return next((str(i + 1) for i, r in enumerate(replies) if r == CONTRADICTS), NONE)

    def summarize(self, texts, *, key):
        return NONE


def make(policy_id: str, llm=None) -> PersonalAI:
    pol = registry.make(policy_id, llm=llm or GreyLLM(), seed=0)
    assert isinstance(pol, PersonalAI)
    return pol


def belief(key: str, sim: float, slot: int) -> Claim:
    return Claim(key, "v", attrs=(("sim", sim), ("slot", slot)))


def remember(pol: PersonalAI, name: str, claim: Claim, now: float) -> list:
    return pol.ingest([Episode(name, now, claim.key, (claim,))], now)


def seed_existing(pol: PersonalAI, supports: int = 1) -> int:
    """One stored belief at e0 (the new beliefs below sit at cosine 0.8 to it), with
    ``supports`` supporting episodes."""
    out = remember(pol, "e0", belief("old.fact", 1.0, 1), 0.0)
    row = out[0].memory
    pol.store.add_provenance(row, {f"s{i}" for i in range(1, supports)}, 0.0)
    return row


def test_the_variant_names_its_commit_and_files():
    doc = registry.spec("pai-code").load().Params.__doc__ or ""
    assert COMMIT in doc and "memory.ts" in doc and "remember.ts" in doc


# ------------------------------------------------------- memory.ts semanticSearch recency
@pytest.mark.parametrize("policy_id, anchor", [("pai", 0.0), ("pai-code", 40.0)])
def test_recency_of_a_never_accessed_belief_counts_from_updated_at(policy_id, anchor):
    """memory.ts:763-766 (semanticSearch): ``accessTs = last_accessed ?? updated_at``; 000
    §2's daysSinceAccess counts a never-accessed belief from its creation (memsim's reading,
    recency_from="created"). A belief created at day 0 and reinforced at day 40 (updated_at)
    is 10 days old at day 50 for the code, 50 for the document."""
    pol = make(policy_id)
    row = seed_existing(pol)
    pol._reinforce(row, 40.0)
    q = Query("q", 50.0, "old fact", keys=("old.fact",))
    score = pol.score_rows(q, pol.llm.embed_query(q), 50.0)[row]
    p = pol.params
    want = (
        p.w_cosine * 1.0
        + p.w_importance * pol.store["importance"][row] / p.importance_scale
        + p.w_recency * math.exp(-p.recency_rate * (50.0 - anchor))
        + p.w_stability * pol.store["stability"][row] / p.stability_scale
    )
    assert score == pytest.approx(want, rel=1e-6)
    # once accessed, both count from the access
    pol.store["last_access"][row] = 45.0
    after = pol.score_rows(q, pol.llm.embed_query(q), 50.0)[row]
    assert after == pytest.approx(
        want
        + p.w_recency
        * (math.exp(-p.recency_rate * 5.0) - math.exp(-p.recency_rate * (50.0 - anchor))),
        rel=1e-6,
    )


@pytest.mark.parametrize("seed", range(4))
def test_the_fused_recall_keeps_the_code_recency(seed):
    """The fast path (pai_fastscore.pai_topk_from_cos, over PaiColumns) counts a
    never-accessed row from updated_at under pai-code too: recall returns exactly the top k
    of score_rows, with its scores, on a store of rows updated after creation."""
    rng = np.random.default_rng(seed)
    pol = make("pai-code")
    n = 400  # above the fused kernel's pruning size (8k + 256)
    X = rng.standard_normal((n, pol.store.dim))
    X[:, 0] += 1.5
    s = pol.store
    s.add(0.0, X, texts=[""] * n, claims=[None] * n, provenance=[()] * n)
    pol._tokens.extend([frozenset()] * n)
    s["updated"][:n] = rng.uniform(0.0, 90.0, n)
    s["importance"][:n] = rng.integers(1, 11, n)
    accessed = rng.random(n) < 0.3
    s["last_access"][:n] = np.where(accessed, rng.uniform(0.0, 90.0, n), np.nan)
    q = Query("q", 100.0, "what", keys=("a",), k=10)
    v = pol.llm.embed_query(q)
    want_scores = pol.score_rows(q, v, 100.0)
    want = topk(want_scores, 10, s.tie_keys(f"{pol.seed}:{q.id}"))
    got = pol.recall([q], 100.0)[0]
    assert got.ids.tolist() == want.tolist()
    np.testing.assert_array_equal(got.scores, np.minimum.accumulate(want_scores[want]))


# ------------------------------------------------- remember.ts processNewBelief grey zone
def test_grey_zone_reinforcement_reinforces_the_existing_belief():
    """remember.ts:315-356 (processNewBelief): in the grey zone a candidate classified
    REINFORCEMENT is reinforced (+0.1, updated_at now) and no belief is created; 000 §1's
    checkContradiction knows only contradiction or NONE, so the document creates one."""
    llm = GreyLLM({"old.fact": SUPPORTS})
    code, doc = make("pai-code", llm), make("pai", GreyLLM({"old.fact": SUPPORTS}))
    for pol in (code, doc):
        row = seed_existing(pol)
        out = remember(pol, "e1", belief("new.fact", 0.8, 2), 5.0)
        if pol is code:
            assert [o.action for o in out] == ["reinforce"] and out[0].memory == row
            assert pol.store["confidence"][row] == pytest.approx(0.7)
            assert pol.store["updated"][row] == 5.0 and pol.store.n == 1
        else:
            assert [o.action for o in out][0] == "create" and pol.store.n == 2
            assert pol.store["confidence"][row] == pytest.approx(0.6)


@pytest.mark.parametrize("supports, drop", [(3, 0.2), (4, 0.2), (5, 1 / 6), (9, 0.1)])
def test_grey_zone_contradiction_weakens_by_min_0_2_and_1_over_n_plus_1(supports, drop):
    """remember.ts:315-356: a CONTRADICTION of a belief with n >= 3 supporting episodes
    weakens it by min(0.2, 1/(n+1)) (floor 0.1) and resets updated_at; the challenger starts
    at min(0.6, 1/(n+1) + 0.4). 000 §1: -0.2 whatever n, the challenger at 0.6."""
    for policy_id in ("pai-code", "pai"):
        pol = make(policy_id, GreyLLM({"old.fact": CONTRADICTS}))
        row = seed_existing(pol, supports)
        out = remember(pol, "e1", belief("new.fact", 0.8, 2), 5.0)
        new = next(o.memory for o in out if o.action == "create")
        conf = pol.store["confidence"]
        if policy_id == "pai-code":
            assert conf[row] == pytest.approx(0.6 - drop)
            assert conf[new] == pytest.approx(min(0.6, 1 / (supports + 1) + 0.4))
            assert pol.store["updated"][row] == 5.0
        else:
            assert conf[row] == pytest.approx(0.4) and conf[new] == pytest.approx(0.6)
            assert pol.store["updated"][row] == 0.0
        assert pol.store["superseded_by"][row] == new


def test_grey_zone_contradiction_of_a_weak_belief_invalidates_it():
    """remember.ts: fewer than 3 supporting episodes: the contradicted belief is
    invalidated and the challenger created at 0.6."""
    pol = make("pai-code", GreyLLM({"old.fact": CONTRADICTS}))
    row = seed_existing(pol, 2)
    out = remember(pol, "e1", belief("new.fact", 0.8, 2), 5.0)
    new = next(o.memory for o in out if o.action == "create")
    assert pol.store.status_of(row) == "invalidated" and pol.store["confidence"][new] == 0.6


def test_grey_zone_classifies_candidates_in_turn_and_at_most_three():
    """remember.ts: ``similar.filter(s > 0.7).slice(0, 3)``, each classified in turn,
    INDEPENDENT going on to the next: a CONTRADICTION fourth in line is never asked, so the
    new belief is created and linked as an unmatched one."""
    relations = {f"b{i}.fact": IRRELEVANT for i in range(3)} | {"b3.fact": CONTRADICTS}
    llm = GreyLLM(relations)
    pol = make("pai-code", llm)
    rows = []
    for i in range(4):  # four stored beliefs at cosines 0.84, 0.82, 0.80, 0.78 to e0
        c = 0.84 - 0.02 * i
        vec = np.zeros(GreyLLM.dim)
        vec[0], vec[1 + i] = c, math.sqrt(1.0 - c * c)
        stored = Claim(f"b{i}.fact", "v", attrs=(("vec", tuple(vec.tolist())),))
        rows.append(remember(pol, f"e{i}", stored, 0.0)[0].memory)
    out = remember(pol, "e9", belief("new.fact", 1.0, 9), 1.0)  # at e0
    assert llm.asked and all(len(a) <= 3 for a in llm.asked)
    assert "b3.fact" not in llm.asked[-1]
    assert [o.action for o in out][0] == "create"
    assert all(pol.store.status_of(r) == "active" for r in rows)
    assert pol.store["confidence"][rows[3]] == pytest.approx(0.6)


def test_grey_zone_partial_is_independent():
    """remember.ts classifyRelationship has three answers; memsim's PARTIAL (and IRRELEVANT,
    and an invalid reply) is INDEPENDENT: nothing happens to the candidate."""
    pol = make("pai-code", GreyLLM({"old.fact": PARTIAL}))
    row = seed_existing(pol)
    out = remember(pol, "e1", belief("new.fact", 0.8, 2), 5.0)
    assert out[0].action == "create" and pol.store["confidence"][row] == 0.6


def test_grey_zone_defaults_name_the_code_constants():
    p, d = registry.spec("pai-code").load().Params(), PaiParams()
    assert (p.grey_zone, d.grey_zone) == ("relationship", "contradiction")
    assert (p.recency_from, d.recency_from) == ("updated", "created")
    assert p.grey_candidates == 3 and p.challenger_base == 0.4  # remember.ts
    assert p.weaken_step == 0.2 and p.support_threshold == 3 and p.default_confidence == 0.6


# ------------------------------------------------------------ memory.ts semanticSearch output
def code_with(**params) -> PersonalAI:
    from policies.pai import PaiCodeParams

    return PersonalAI(PaiCodeParams(**params), llm=GreyLLM(), seed=0)


def at_cosine(pol: PersonalAI, key: str, c: float, axis: int) -> int:
    """A belief at cosine ``c`` to the query (e0), its other part on its own axis."""
    vec = np.zeros(GreyLLM.dim)
    vec[0], vec[axis] = c, math.sqrt(1.0 - c * c)
    claim = Claim(key, "v", attrs=(("vec", tuple(vec.tolist())),))
    return remember(pol, f"e-{key}", claim, 0.0)[0].memory


@pytest.mark.parametrize("after, want", [(False, ["a", "n"]), (True, ["a", "b"])])
def test_linked_neighbours_follow_the_direct_results(after, want):
    """memory.ts semanticSearch: ``[...results, ...neighbors]`` then the limit: a neighbour
    only fills a place the direct results leave. 000 §2 "Combine results + neighbors, limit
    to N" (memsim's reading, one list by score): a strong parent's neighbour displaces a
    weaker direct hit."""
    pol = code_with(neighbours_after=after)
    assert registry.spec("pai-code").load().Params().neighbours_after
    rows = {k: at_cosine(pol, k, c, ax) for k, c, ax in (("a", 0.95, 1), ("b", 0.35, 2))}
    rows["n"] = at_cosine(pol, "n", 0.0, 3)  # below the cosine floor: only a neighbour
    pol._link(rows["a"], rows["n"])
    got = pol.recall([Query("q", 1.0, "q", keys=("a",), k=2)], 1.0)[0]
    names = {r: k for k, r in rows.items()}
    assert [names[r] for r in got.ids.tolist()] == want
    assert np.all(np.diff(got.scores) <= 0)


@pytest.mark.parametrize("divisor, want", [(0, ["m0", "m1", "m2"]), (3, ["m0", "f0", "f1"])])
def test_recall_keeps_at_most_a_third_insight_or_meta(divisor, want):
    """memory.ts prioritizeRecallTypes: at most max(1, floor(limit / 3)) insight or meta
    beliefs, the passed-over ones filling what is left; 000 §2 has no such cap."""
    assert registry.spec("pai-code").load().Params().type_cap_divisor == 3
    pol = code_with(type_cap_divisor=divisor)
    rows = {}
    for i, c in enumerate((0.6, 0.59, 0.58, 0.57)):
        rows[f"m{i}"] = at_cosine(pol, f"m{i}", c, 1 + i)
        pol.store["type"][rows[f"m{i}"]] = TYPE_CODE["meta"]
    for i, c in enumerate((0.5, 0.49)):
        rows[f"f{i}"] = at_cosine(pol, f"f{i}", c, 5 + i)
    got = pol.recall([Query("q", 1.0, "q", keys=("a",), k=3)], 1.0)[0]
    names = {r: k for k, r in rows.items()}
    assert [names[r] for r in got.ids.tolist()] == want


def test_the_type_cap_fills_with_passed_over_rows():
    """prioritizeRecallTypes' second loop: with too few other rows the passed-over insight
    or meta rows fill the limit, in score order."""
    pol = code_with(type_cap_divisor=3)
    rows = [at_cosine(pol, f"m{i}", 0.6 - 0.01 * i, 1 + i) for i in range(3)]
    pol.store["type"][rows] = TYPE_CODE["meta"]
    f = at_cosine(pol, "f", 0.5, 5)
    got = pol.recall([Query("q", 1.0, "q", keys=("a",), k=3)], 1.0)[0]
    assert got.ids.tolist() == [rows[0], f, rows[1]]


def test_the_type_cap_is_a_third_of_the_limit():
    """prioritizeRecallTypes: ``Math.max(1, Math.floor(limit / 3))``: 3 of a limit of 10."""
    pol = code_with()
    metas = [at_cosine(pol, f"m{i}", 0.6 - 0.005 * i, 1 + i) for i in range(6)]
    pol.store["type"][metas] = TYPE_CODE["meta"]
    facts = [at_cosine(pol, f"f{i}", 0.5 - 0.005 * i, 7 + i) for i in range(6)]
    got = pol.recall([Query("q", 1.0, "q", keys=("a",), k=10)], 1.0)[0].ids.tolist()
    assert got == metas[:3] + facts + metas[3:4]
