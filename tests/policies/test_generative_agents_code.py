"""generative-agents-code follows github.com/joonspk-research/generative_agents at commit
51072d422e28abb7cd3fdf2b92f1d6e90a7cced8 (retrieve.py's last change; scratch.py and the
persona scratch.json files as first committed in 6d7d7ad). The recency decay the released
agents run with: scratch.py line 60 sets 0.99, line 161 loads the bootstrap scratch.json
when it exists and line 197 takes its ``recency_decay``, 0.995 in every shipped persona
(base_the_ville_n25 .../scratch.json line 27)."""

from __future__ import annotations

import pytest

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.registry import make
from policies.reference_claims import OneVectorLLM


def _middle_score(**params: object) -> float:
    """Three memories a day apart, never retrieved, alike otherwise: relevance and importance
    are constant (0.5 each after normalize_dict_floats), so the middle one's score is
    0.5 x its normalized recency + 3 x 0.5 + 2 x 0.5."""
    pol = make("generative-agents-code", dict(params) or None, llm=OneVectorLLM(), seed=0)
    for i in range(3):
        c = Claim(key=f"k.{i}", value="x", importance=0.5)
        pol.ingest([Episode(f"e{i}", float(i), "x", claims=(c,))], float(i))
    r = pol.recall([Query("q", 3.0, "k?", keys=("k.0",), k=3)], 3.0)[0]
    by_episode = {min(pol.store.provenance[int(m)]): float(v) for m, v in zip(r.ids, r.scores)}
    return by_episode["e1"]


def _formula(d: float) -> float:
    # extract_recency: d^1, d^2, d^3 by rank; normalize_dict_floats: (d^2 - d^3) / (d - d^3)
    return 0.5 * (d**2 - d**3) / (d - d**3) + 3 * 0.5 + 2 * 0.5


def test_the_released_agents_decay_recency_by_0_995_per_rank():
    """scratch.py@51072d4 line 197: ``self.recency_decay = scratch_load["recency_decay"]``,
    0.995 in the shipped personas; retrieve.py extract_recency: recency_decay ** i."""
    assert _middle_score() == pytest.approx(_formula(0.995), abs=1e-12)
    assert _middle_score() != pytest.approx(_formula(0.99), abs=1e-9)


def test_an_agent_without_a_bootstrap_file_decays_by_0_99():
    """scratch.py@51072d4 line 60 ``self.recency_decay = 0.99``: the value 0.99 of
    ``code_recency_decay`` names an agent created without a scratch.json."""
    assert _middle_score(code_recency_decay=0.99) == pytest.approx(_formula(0.99), abs=1e-12)
