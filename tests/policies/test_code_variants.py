"""Each system as built: each seed policy's code variant (its own id, registered
with ``variant_of`` = the documented id) changes only what the issue's facts say; one test
per fact, each against the documented policy where the two differ."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine import registry
from memsim.engine.curve import curve
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import Embedded
from memsim.engine.mockllm import MockLLM

VARIANTS = {
    "pai": "pai-code",
    "engram": "engram-code",
    "cosmo": "cosmo-code",
    "izzie": "izzie-code",
    "kernle": "kernle-code",
}


def make(policy_id: str, llm=None):
    return registry.make(policy_id, llm=llm or MockLLM(seed=0), seed=0)


def plant(policy, key: str = "topic.fact", now: float = 0.0, **fields) -> int:
    claim = Claim(key, fields.pop("value", "v"), **fields)
    return policy.plant(Episode(f"e-{key}-{now}", now, key, (claim,)), now)


class LineLLM:
    """Exact geometry: a claim with attr ``sim`` = s embeds as s e0 + sqrt(1 - s^2) e_k (k its
    ``slot``), queries as e0, so a claim's cosine with any query is exactly s."""

    dim, seed = 16, 0

    def extract(self, episode):
        return episode.claims

    def _vec(self, c: Claim) -> np.ndarray:
        s, k = float(c.attr("sim", 1.0)), int(c.attr("slot", 1))
        v = np.zeros(self.dim)
        v[0], v[k] = s, math.sqrt(1.0 - s * s)
        return v

    def embed(self, items, keys):
        vs = np.stack([self._vec(c) for c in items]).astype(np.float32)
        return Embedded(vs, np.ones(len(items), dtype=bool))

    def embed_query(self, query):
        v = np.zeros(self.dim, dtype=np.float32)
        v[0] = 1.0
        return v


# ---------------------------------------------------------------------------- registry


@pytest.mark.parametrize("base, variant", sorted(VARIANTS.items()))
def test_each_variant_is_registered_as_a_variant_of_its_documented_policy(base, variant):
    sp = registry.spec(variant)
    assert sp.variant_of == base and registry.spec(base).variant_of == ""
    assert sp.seed_document == registry.spec(base).seed_document
    assert [s.id for s in registry.variants_of(base)] == [variant]
    assert registry.spec(base).claims and not sp.claims  # the worked examples stay documented


def test_variants_differ_from_the_documented_params_only_in_the_facts_fields():
    changed = {}
    for base, variant in VARIANTS.items():
        a = registry.spec(base).load().Params().to_dict()
        b = registry.spec(variant).load().Params().to_dict()
        assert a.keys() == b.keys()
        changed[variant] = sorted(k for k in a if a[k] != b[k])
    assert changed == {
        "pai-code": [
            "grey_zone",
            "insight_multiplier",
            "neighbours_after",
            "recency_from",
            "type_cap_divisor",
        ],
        "engram-code": [
            "archive_long_stale_days",
            "evidence_per_episode",
            "gate_scope",
            "match_first",
            "merge_cooldown_from",
            "never_accessed_strength",
            "recall_confidence_strict",
            "stability_on_recall",
            "strict_day_gates",
        ],
        "cosmo-code": [
            "access_boost",
            "decay_archived",
            "decay_mode",
            "nightly_spacing",
            "penalize_missing_confidence",
            "recall_spacing",
            "spacing_form",
            "whole_days",
        ],
        "izzie-code": [
            "limit_before_filter",
            "preference_limit",
            "refresh_top",
            "search",
            "search_limit",
            "strength_form",
        ],
        "kernle-code": [
            "candidate_pool",
            "consolidation_window",
            "forget_kinds",
            "forget_limit",
            "log_offset",
            "oldest_per_kind",
            "pattern_rule",
        ],
    }


# ---------------------------------------------------------------------------- Personal AI


@pytest.mark.parametrize("policy_id", ["pai", "pai-code"])
def test_pai_code_decays_from_updated_at_not_last_access(policy_id):
    """Fact: the code decays from updated_at (as 000 §7 'daysSinceUpdate' does): a recall at
    day 50 does not restart the decay."""
    p = make(policy_id)
    row = plant(p, confidence=0.6)
    p.store["last_access"][row] = 50.0
    conf = p.store["confidence"][row]
    stab = p.store["stability"][row]
    assert p.effective(60.0)[row] == pytest.approx(conf * 0.5 ** (60.0 / (30.0 * stab)))


def test_pai_code_returns_the_decayed_confidence_but_does_not_score_with_it():
    """Fact: the decayed confidence is returned (strength) but not used in the recall score."""
    p = make("pai-code")
    rows = [plant(p, f"topic.f{i}", now=0.0) for i in range(3)]
    q = Query("q", 40.0, "topic f0", keys=("topic.f0",))
    vec = p.llm.embed_query(q)
    before = p.score_rows(q, vec, 40.0)
    p.store["confidence"][rows] = [0.1, 1.0, 0.5]
    assert np.array_equal(p.score_rows(q, vec, 40.0), before)
    eff = p.strength(40.0)
    assert eff[rows[0]] == pytest.approx(0.1 * 0.5 ** (40.0 / (30.0 * p.store["stability"][0])))


def test_pai_code_weights_insights_by_0_8_where_the_document_says_0_5():
    from policies.pai import recall_scores

    ones = np.ones(2)
    args = (ones * 0.5, ones * 5, ones * 3.0, ones, np.zeros(2), np.array([False, True]))
    for policy_id, factor in (("pai", 0.5), ("pai-code", 0.8)):
        s = recall_scores(*args, registry.spec(policy_id).load().Params())
        assert s[1] == pytest.approx(factor * s[0])


# ---------------------------------------------------------------------------- Engram


def test_engram_code_starts_stability_at_7_days():
    p = make("engram-code")
    row = plant(p)
    assert p.params.initial_stability == 7.0 and p.store["stability"][row] == 7.0


def test_engram_code_gives_a_never_accessed_memory_r_0_5():
    doc, code = make("engram"), make("engram-code")
    rd, rc = plant(doc), plant(code)
    assert doc.strength(30.0)[rd] == pytest.approx(math.exp(-30.0 / 7.0))
    assert code.strength(30.0)[rc] == 0.5
    code._access(np.array([rc]), 30.0)  # once accessed, R decays from the access
    assert code.strength(37.0)[rc] == pytest.approx(math.exp(-1.0))


def test_engram_code_updates_stability_only_on_expand_not_on_recall():
    doc, code = make("engram"), make("engram-code")
    rd, rc = plant(doc), plant(code)
    for p, r in ((doc, rd), (code, rc)):
        p._access(np.array([r]), 10.0)
        p._access(np.array([r]), 20.0)
    assert doc.store["stability"][rd] > 7.0
    assert code.store["stability"][rc] == 7.0
    assert code.store["access_count"][rc] == 2 and code.store["last_access"][rc] == 20.0


def test_engram_code_ranks_with_the_additive_formula_and_its_neutral_r():
    """Fact: the code has two recall formulas; the variant ranks with the one its recall
    handler sorts by, 0.5 (confidence x sim) + 0.3 R + 0.2 bm25 (docs/policies/engram-code.md),
    so a never-accessed belief differs from the documented score by exactly 0.3 (0.5 - R)."""
    doc, code = make("engram"), make("engram-code")
    rd, rc = plant(doc), plant(code)
    q = Query("q", 30.0, "topic fact", keys=("topic.fact",))
    bd, _ = doc.score_query(q, 30.0)
    bc, _ = code.score_query(q, 30.0)
    assert bc[rc] - bd[rd] == pytest.approx(0.3 * (0.5 - math.exp(-30.0 / 7.0)))


# ---------------------------------------------------------------------------- Cosmo


def test_cosmo_code_compounds_the_decay_nightly():
    """Fact: the nightly job multiplies salience by exp(-rate x days since access) every
    night: after 3 nights unaccessed the exponent is rate x (1 + 2 + 3)."""
    memory = {"state": "active", "confidence": "0.9"}
    doc = curve("cosmo", "never", [0.0, 3.0], memory=memory)["strength"].to_numpy()
    code = curve("cosmo-code", "never", [0.0, 3.0], memory=memory)["strength"].to_numpy()
    assert doc[1] / doc[0] == pytest.approx(math.exp(-0.02 * 3))
    assert code[1] / code[0] == pytest.approx(math.exp(-0.02 * 6))


# the spacing rule, Source confidence, whole days, archived nodes and the retrieval boost:
# tests/policies/test_cosmo_code.py (each fact with its line at the pinned commit)


# ---------------------------------------------------------------------------- Izzie


def test_izzie_code_importance_slows_the_rate():
    """Fact: strength = exp(-rate x (1 - 0.5 x importance) x days) (Zeeeepa/izzie2 @ 1604fd6,
    src/lib/memory/decay.ts:50-55)."""
    memory = {"category": "preference", "importance": "0.9"}
    doc = curve("izzie", "never", [30.0], memory=memory)["strength"].iloc[0]
    code = curve("izzie-code", "never", [30.0], memory=memory)["strength"].iloc[0]
    assert doc == pytest.approx(0.9 * math.exp(-0.01 * 30))
    assert code == pytest.approx(math.exp(-0.01 * (1 - 0.5 * 0.9) * 30))


# the keyword search, its limit, the strength filter, the weighted ranking, the refresh and
# the preference search: tests/policies/test_izzie_code.py (each with its line at the commit)


# ---------------------------------------------------------------------------- Kernle


# kernle-code's facts: tests/policies/test_kernle_code.py


# ---------------------------------------------------------------------------- memsim drift


def test_drift_pairs_each_documented_policy_with_its_variant_through_the_registry():
    from memsim.workbench.studies.drift import variant_pairs

    assert [(a.id, b.id) for a, b in variant_pairs()] == sorted(VARIANTS.items())


def test_drift_paired_rows_give_the_paired_difference_and_its_wilcoxon_p():
    import pandas as pd

    from memsim.workbench.studies.drift import paired_rows

    n = 12
    base = pd.DataFrame(
        {
            "policy": "a",
            "scenario": "s",
            "seed": 0,
            "query_id": [f"q{i}" for i in range(n)],
            "recall": np.linspace(0.0, 1.0, n),
            "stale": 0.0,
            "footprint": 10.0,
        }
    )
    variant = base.assign(policy="b", recall=base["recall"] + 0.1 * np.arange(1, n + 1) / n)
    rows = paired_rows(pd.concat([base, variant]), "a", "b").set_index("metric")
    assert rows.loc["recall@10", "diff"] == pytest.approx(0.1 * (n + 1) / 2 / n)
    assert rows.loc["recall@10", "p"] < 0.01 and rows.loc["recall@10", "n"] == n
    assert np.isnan(rows.loc["stale@10", "p"]) and rows.loc["footprint", "diff"] == 0.0
