"""Ebisu, MemoryBank and Generative Agents reference policies: kernels equal their
scalar twins and the ebisu package, published worked numbers, bad parameters."""

from __future__ import annotations

import math

import ebisu
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsim.engine.errors import ParamError
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.registry import make
from policies import ebisu_model, generative_agents
from policies.ebisu_model import EbisuParams
from policies.generative_agents import GenerativeAgentsParams
from policies.memorybank import MemoryBankParams
from policies.reference_claims import OneVectorLLM, TwoKeysLLM
from tests import kernel_helpers


def _ep(i: int, t: float, key: str = "a.b", value: str = "1", importance: float = 0.5):
    c = Claim(key=key, value=value, importance=importance)
    return Episode(id=f"e{i}", time=t, text="x", claims=(c,))


def _q(t: float, k: int = 1):
    return Query(id=f"q{t}", time=t, text="a?", keys=("a.b",), k=k)


# ---------------------------------------------------------------- Ebisu


def test_ebisu_recall_is_one_half_at_the_half_life_and_two_sevenths_at_twice():
    """Ebisu: Beta(3, 3) prior at t: predictRecall(t) = mean of Beta(3, 3) = 1/2;
    predictRecall(2t) = B(5, 3) / B(3, 3) = 2/7."""
    assert float(ebisu_model.ebisu_predict_recall(3.0, 3.0, 1.0, 1.0)) == pytest.approx(
        0.5, abs=1e-12
    )
    assert float(ebisu_model.ebisu_predict_recall(3.0, 3.0, 5.0, 10.0)) == pytest.approx(
        2 / 7, abs=1e-12
    )
    assert ebisu.predictRecall((3.0, 3.0, 5.0), 10.0, exact=True) == pytest.approx(2 / 7)


@given(st.floats(0.5, 50.0), st.floats(0.5, 50.0), st.floats(0.01, 100.0), st.floats(0.0, 300.0))
def test_ebisu_kernel_agrees_with_the_package_and_its_twin(a, b, t, dt):
    got = float(
        ebisu_model.ebisu_predict_recall(np.array([a]), np.array([b]), np.array([t]), dt)[0]
    )
    assert abs(got - ebisu.predictRecall((a, b, t), dt, exact=True)) <= 1e-9
    assert math.isclose(
        got, ebisu_model.ebisu_predict_recall_ref(a, b, t, dt), rel_tol=1e-9, abs_tol=1e-300
    )


def test_ebisu_policy_quizzes_match_the_package():
    """Creation, a reinforcement at day 2 and a retrieval at day 5 are two successful quizzes."""
    pol = make("ebisu", llm=OneVectorLLM())
    pol.ingest([_ep(0, 0.0)], 0.0)
    pol.ingest([_ep(1, 2.0)], 2.0)
    pol.recall([_q(5.0)], 5.0)
    m = ebisu.updateRecall((3.0, 3.0, 1.0), 1, 1, 2.0)
    m = ebisu.updateRecall(m, 1, 1, 3.0)
    s = pol.store
    assert (s["alpha"][0], s["beta"][0], s["t"][0]) == pytest.approx(m, abs=1e-12)
    assert pol.strength(9.0)[0] == pytest.approx(ebisu.predictRecall(m, 4.0, exact=True), abs=1e-9)


@pytest.mark.parametrize(
    "field, value", [("alpha", 0.0), ("beta", -1.0), ("half_life", 0.0), ("alpha", -2.0)]
)
def test_ebisu_bad_params(field, value):
    with pytest.raises(ParamError, match=f"EbisuParams.{field}={value}"):
        EbisuParams(**{field: value})


# ---------------------------------------------------------------- MemoryBank


def test_memorybank_ebbinghaus_retention_and_recall_strength():
    """Zhong et al. 2024: R = exp(-t / S), S = 1 at first: R(1 day) = e^-1 = 0.36788; a
    recall sets S = 2 and t = 0, so R two days after the recall is again e^-1."""
    pol = make("memorybank", {"forget_below": 0.0}, llm=OneVectorLLM())
    pol.ingest([_ep(0, 0.0)], 0.0)
    assert pol.strength(1.0)[0] == pytest.approx(0.36788, abs=5e-6)
    pol.recall([_q(1.0)], 1.0)
    assert pol.store["memory_strength"][0] == 2.0
    assert pol.strength(3.0)[0] == pytest.approx(math.exp(-1.0), abs=1e-12)


def test_memorybank_paper_forgets_under_the_threshold():
    pol = make("memorybank", llm=OneVectorLLM())
    pol.ingest([_ep(0, 0.0)], 0.0)
    assert pol.maintain(2.0, ["decay"])[0].action == "skip"  # e^-2 = 0.135 >= 0.05
    assert [o.action for o in pol.maintain(3.0, ["decay"])] == ["prune"]  # e^-3 = 0.0498


def test_memorybank_upload_variant_three_levels_seeded_and_cut_off():
    """The superseded upload (forget_memory.py@0cc7111): S in {1, 2, 3}; kept with
    probability R (seeded: same seed, same survivors); nothing survives 30 whole days
    without a recall."""

    def run(seed: int) -> list[int]:
        pol = make("memorybank", {"variant": "upload-0cc7111"}, llm=OneVectorLLM(), seed=seed)
        pol.ingest([_ep(0, 0.0)], 0.0)
        for d in (1.0, 2.0, 3.0, 4.0):
            pol.recall([_q(d)], d)
        assert pol.store["memory_strength"][0] == 3.0
        return [len(pol.maintain(5.0 + i, ["decay"])) for i in range(3)]

    assert run(1) == run(1)
    pol = make("memorybank", {"variant": "upload-0cc7111"}, llm=OneVectorLLM())
    pol.ingest([_ep(0, 0.0)], 0.0)
    doomed = pol._doomed(30.5)
    assert doomed.tolist() == [0]


def test_memorybank_bad_params():
    with pytest.raises(ParamError, match="initial_strength=0.0"):
        MemoryBankParams(initial_strength=0.0)


# ---------------------------------------------------------------- Generative Agents


def test_generative_agents_recency_after_one_day():
    """Park et al. 2023 §4.1: recency 0.995 per hour since last retrieval: after 24 hours
    0.995^24 = 0.88665."""
    pol = make("generative-agents", llm=OneVectorLLM())
    pol.ingest([_ep(0, 0.0)], 0.0)
    assert pol.strength(1.0)[0] == pytest.approx(0.88665, abs=5e-6)


def test_generative_agents_minmax_normalization():
    """Each component is min-max normalized over candidates: [2, 4, 6] -> [0, 0.5, 1]; a
    constant component gives 0.5 (released normalize_dict_floats)."""
    assert kernel_helpers.minmax_normalize([2.0, 4.0, 6.0]).tolist() == [0.0, 0.5, 1.0]
    assert kernel_helpers.minmax_normalize([3.0, 3.0]).tolist() == [0.5, 0.5]
    got = generative_agents.generative_agents_score(
        [1.0, 0.0], [0.0, 1.0], [0.2, 0.8], (0.5, 2.0, 3.0)
    )
    assert got.tolist() == [0.5, 5.0]


vals = st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=12)


@given(vals, st.data())
def test_generative_agents_kernels_equal_their_scalar_twins(rec, data):
    n = len(rec)
    imp = data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    rel = data.draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))
    w = (0.5, 2.0, 3.0)
    got = generative_agents.generative_agents_score(np.array(rec), np.array(imp), np.array(rel), w)
    want = generative_agents.generative_agents_score_ref(rec, imp, rel, w)
    for g, x in zip(got, want):
        assert math.isclose(g, x, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize(
    "order, scores",
    [
        # as released (rank 1 = least recently accessed): row 0: recency 0.99^1 -> 1,
        # importance 0, relevance 1 -> 0.5 + 3 = 3.5; row 1: 0 + 2 + 0 = 2
        ("oldest_first", [3.5, 2.0]),
        # the paper's direction: row 0 recency 0 -> 3; row 1: 0.5 + 2 + 0 = 2.5
        ("newest_first", [3.0, 2.5]),
    ],
)
def test_generative_agents_code_variant_ranks_by_weights(order, scores):
    """Released code, gw = [0.5, 3, 2]: relevance (3) outweighs importance (2) and recency (0.5)."""
    params = {"variant": "code", "code_rank_order": order}
    pol = make("generative-agents", params, llm=TwoKeysLLM())
    pol.ingest([_ep(0, 0.0, "a.b", importance=0.1)], 0.0)  # relevant, unimportant, older
    pol.ingest([_ep(1, 1.0, "c.d", importance=0.9)], 1.0)  # irrelevant, important, newer
    r = pol.recall([_q(2.0, k=2)], 2.0)[0]
    assert r.ids.tolist() == [0, 1]
    assert r.scores.tolist() == pytest.approx(scores)
    assert pol.footprint() == 2 and pol.schedule == ()


def _check_code_recency_against_the_full_sort(monkeypatch) -> list[int]:
    """Patch GenerativeAgents._scores to assert, at every query, that its scores equal those
    of the stable lexsort of (last use, creation, tie key) over the live rows (the code
    variant's recency rank computed from scratch, as before the order was kept)."""
    from policies.generative_agents import GenerativeAgents

    kept = GenerativeAgents._scores
    checked: list[int] = []

    def checking(self, sims, live, now, k):
        got = kept(self, sims, live, now, k)
        p, s, idx = self.params, self.store, np.flatnonzero(live)
        ties = s.tie_keys(f"{self.seed}:recency-rank", idx)
        access = self._last_use()[idx]
        if p.code_rank_order == "newest_first":
            access = -access
        order = np.lexsort((ties, -s["created"][idx], access))
        rank = np.empty(len(idx))
        rank[order] = np.arange(1, len(idx) + 1)
        want = np.full(len(sims), -np.inf)
        want[idx] = generative_agents.generative_agents_score(
            np.power(p.code_recency_decay, rank),
            s["importance"][idx],
            sims[idx],
            (p.code_w_recency, p.code_w_importance, p.code_w_relevance),
        )
        assert got.tobytes() == want.tobytes()
        checked.append(len(idx))
        return got

    monkeypatch.setattr(GenerativeAgents, "_scores", checking)
    return checked


def test_generative_agents_code_recency_kept_between_queries_is_the_full_sort(monkeypatch):
    """The code variant's recency order is kept between queries (retrieved and new rows put
    in front); at every query it scores as the full sort it replaces, on a stream with user
    forgets and with reinforcements (reinforce_cosine 0.9: one refreshes last use)."""
    import scenarios
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run
    from tests.policies.test_generative_agents_recall import _with_forgets

    checked = _check_code_recency_against_the_full_sort(monkeypatch)
    with_forgets = _with_forgets(scenarios.load("synthetic:churn,episodes=600"))
    for over in ({}, {"reinforce_cosine": 0.9}, {"code_rank_order": "newest_first"}):
        pol = make("generative-agents-code", over, llm=MockLLM(seed=0), seed=0)
        actions = {o.action for o in run(pol, with_forgets).outcomes}
        assert "forget" in actions
        assert "reinforce" in actions or "reinforce_cosine" not in over
    assert len(checked) > 150


def _scoring_every_row(pol):
    """The policy ranking through ReferencePolicy._rank_query (``_scores`` of every live row,
    the path the code variant takes once a user forgot some rows;
    tests/policies/test_generative_agents_recall.py checks the other against it)."""
    import types

    from policies.reference import ReferencePolicy

    pol._rank_query = types.MethodType(ReferencePolicy._rank_query, pol)
    return pol


def test_generative_agents_code_recency_retrieved_row_ties_an_unretrieved_newer_one(monkeypatch):
    """Newest first: row 0 (created at 0) is retrieved at 1, when row 1 was created: both
    were last used at 1, and row 1, the newer, comes first; a kept order that put the
    retrieved row at the recent end without a full sort would put it first."""
    checked = _check_code_recency_against_the_full_sort(monkeypatch)
    pol = _scoring_every_row(
        make("generative-agents-code", {"code_rank_order": "newest_first"}, llm=TwoKeysLLM())
    )
    pol.ingest([_ep(0, 0.0, "a.b")], 0.0)
    pol.ingest([_ep(1, 1.0, "c.d")], 1.0)
    assert pol.recall([_q(1.0, k=1)], 1.0)[0].ids.tolist() == [0]
    pol.recall([_q(1.0, k=2)], 1.0)
    assert pol._order.tolist() == [1, 0] and checked == [2, 2]


def test_generative_agents_code_recency_new_row_ties_a_retrieved_older_one(monkeypatch):
    """Oldest first (the released code): row 0 (created at 0) is retrieved twice at 1, then
    row 1 is created at 1: both last used at 1, the newer (row 1) comes first; a kept order
    that put the new row at the recent end without a full sort would put it last."""
    checked = _check_code_recency_against_the_full_sort(monkeypatch)
    pol = _scoring_every_row(make("generative-agents-code", llm=TwoKeysLLM()))
    assert pol.params.code_rank_order == "oldest_first"
    pol.ingest([_ep(0, 0.0, "a.b")], 0.0)
    pol.recall([_q(1.0, k=1)], 1.0)
    pol.recall([_q(1.0, k=1)], 1.0)
    pol.ingest([_ep(1, 1.0, "c.d")], 1.0)
    pol.recall([_q(1.0, k=2)], 1.0)
    assert pol._order.tolist() == [1, 0] and checked == [1, 1, 2]


def test_generative_agents_bad_params():
    with pytest.raises(ParamError, match="recency_decay=0.0"):
        GenerativeAgentsParams(recency_decay=0.0)


@pytest.mark.parametrize(
    "pid",
    ["actr", "actr-spacing", "fsrs", "ebisu", "memorybank", "memorybank-code", "generative-agents"],
)
def test_retention_of_some_rows_is_every_rows_retention_at_those_rows(pid):
    """Recall scores the live rows' retention only (ReferencePolicy._scores); it must be the
    same numbers, bit for bit, as every row's retention read at those rows."""
    import scenarios
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run

    pol = make(pid, llm=MockLLM(seed=0), seed=0)
    run(pol, scenarios.load("synthetic:steady,episodes=600,queries=60,horizon=60"))
    rows = np.flatnonzero(pol._live())[::3]
    assert len(rows) > 5
    for now in (60.0, 61.5, 90.0):
        np.testing.assert_array_equal(pol.retention(now, rows), pol.retention(now)[rows])


def test_generative_agents_code_powers_of_rank_are_np_power_of_each_rank():
    """The kept table of decay ** rank gives np.power's numbers bit for bit, as it grows
    (by doubling, then to a size above twice its own) and when the base changes."""
    pol = make("generative-agents-code", llm=TwoKeysLLM())
    for base, n in ((0.99, 1), (0.99, 3), (0.99, 5), (0.99, 4), (0.99, 1000), (0.5, 7), (0.99, 9)):
        want = np.power(base, np.arange(1, n + 1, dtype=np.float64))
        assert pol._powers_of_rank(base, n).tobytes() == want.tobytes()
