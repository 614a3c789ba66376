"""Every metric on small hand-computed cases (expected numbers written out by hand)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsim.engine import metrics as M
from memsim.engine.events import Claim, Episode, Query, Stream
from memsim.engine.metric_registry import METRICS, metric_names
from memsim.engine.runner import QueryRecord, Trace
from memsim.engine.store import Statuses
from memsim.engine.truth import GroundTruth

UNITS = {"A": frozenset({"e1", "e2"}), "B": frozenset({"e3"})}


def P(*sets):
    return tuple(frozenset(s) for s in sets)


def test_registry_has_descriptions_and_directions():
    for name in (
        "recall",
        "hit",
        "mrr",
        "ndcg",
        "stale",
        "needed_forgotten",
        "footprint_mean",
        "footprint_final",
        "noise_retention",
    ):
        m = METRICS[name]
        assert m.description and m.better in ("higher", "lower") and m.level in ("query", "run")
    assert METRICS["recall"].better == "higher" and METRICS["stale"].better == "lower"


def test_ranking_metrics_second_and_third_memories_cover():
    prov = P({"e9"}, {"e3"}, {"e1", "e3"})
    assert M.recall_at_k(prov, UNITS, 3) == 1.0
    assert M.hit_at_k(prov, UNITS, 3) == 1.0
    assert M.mrr(prov, UNITS, 3) == 0.5
    # gains at ranks 2 (B) and 3 (A): 1/log2(3) + 1/log2(4); ideal: 1/log2(2) + 1/log2(3)
    expected = (0.6309297535714575 + 0.5) / (1.0 + 0.6309297535714575)
    assert M.ndcg_at_k(prov, UNITS, 3) == pytest.approx(expected)
    assert expected == pytest.approx(0.693426, abs=1e-6)


def test_ranking_metrics_cut_at_k():
    prov = P({"e9"}, {"e3"}, {"e1", "e3"})
    assert M.recall_at_k(prov, UNITS, 1) == 0.0
    assert M.hit_at_k(prov, UNITS, 1) == 0.0
    assert M.mrr(prov, UNITS, 1) == 0.0
    assert M.ndcg_at_k(prov, UNITS, 1) == 0.0
    # k = 2: only B is covered
    assert M.recall_at_k(prov, UNITS, 2) == 0.5
    assert M.ndcg_at_k(prov, UNITS, 2) == pytest.approx(0.6309297535714575 / 1.6309297535714575)


def test_ndcg_gives_no_gain_for_a_unit_already_covered():
    prov = P({"e1"}, {"e2"}, {"e3"})
    # gains at ranks 1 (A) and 3 (B); rank 2 covers A again: 1 + 0.5 over 1 + 0.6309
    assert M.ndcg_at_k(prov, UNITS, 3) == pytest.approx(1.5 / 1.6309297535714575)
    assert M.mrr(prov, UNITS, 3) == 1.0
    # gain counts the units a memory newly covers: one memory covering both units at rank 1
    # earns 2 against an ideal of 1 + 0.6309, capped at 1 (nothing can do better)
    assert M.ndcg_at_k(P({"e1", "e3"}), UNITS, 3) == 1.0
    # the same memory at rank 2: 2 / log2(3) = 1.2619 over 1.6309
    assert M.ndcg_at_k(P({"x"}, {"e1", "e3"}), UNITS, 3) == pytest.approx(
        (2 / 1.5849625007211563) / 1.6309297535714575
    )


def test_ideal_dcg_is_capped_by_k():
    units = {u: frozenset({u}) for u in "abcd"}
    # k = 2 with four units: ideal is two gains; both found at ranks 1 and 2 -> 1.0
    assert M.ndcg_at_k(P({"a"}, {"b"}), units, 2) == 1.0
    assert M.recall_at_k(P({"a"}, {"b"}), units, 2) == 0.5


def test_no_units_give_nan():
    for f in (M.recall_at_k, M.hit_at_k, M.mrr, M.ndcg_at_k):
        assert math.isnan(f(P({"e1"}), {}, 3))


def test_stale():
    rel, sup = frozenset({"e1", "e2", "e3"}), frozenset({"e5", "e6"})
    # {e5}: stale; {e5, e1}: holds a current value -> not stale; {e9}: unrelated; {e6}: stale
    assert M.stale_at_k(P({"e5"}, {"e5", "e1"}, {"e9"}, {"e6"}), rel, sup, 4) == 0.5
    assert M.stale_at_k(P({"e5"}, {"e5", "e1"}, {"e9"}, {"e6"}), rel, sup, 1) == 1.0
    assert M.stale_at_k((), rel, sup, 4) == 0.0


STATUSES = Statuses(("active", "archived"), retrievable=frozenset({"active"}))


def hand_trace(queries=(), footprint=(), horizon=5.0):
    return Trace(
        policy_id="hand",
        policy_version=None,
        stream_name="s",
        horizon=horizon,
        statuses=STATUSES,
        queries=list(queries),
        footprint=list(footprint),
        # rows 0, 1 (day 0), 2 (day 1) created active; row 0 archived day 2, row 1 day 3
        status_log=[
            (0.0, 0, 0),
            (0.0, 1, 0),
            (1.0, 2, 0),
            (2.0, 0, 1),
            (3.0, 1, 1),
            (4.0, 3, 0),
            (4.0, 4, 0),
            (4.5, 4, 1),
        ],
        provenance_log=[
            (0.0, 0, "e1"),
            (0.0, 1, "e2"),
            (1.0, 2, "e3"),
            (4.0, 3, "n1"),
            (4.0, 4, "n2"),
        ],
    )


def rec(qid, status_len, prov_len, ids=(), provenance=(), k=3, t=0.0):
    return QueryRecord(
        qid,
        t,
        np.array(ids, dtype=np.int64),
        np.zeros(len(ids)),
        provenance,
        k,
        "",
        0,
        status_len,
        prov_len,
    )


def test_needed_forgotten_from_the_logs():
    logs = M.LogIndex(hand_trace())
    rel = frozenset({"e1", "e2"})
    # after 4 status entries: row 0 archived, row 1 still active -> nothing lost
    assert logs.needed_forgotten(rel, rec("a", 4, 3)) == 0.0
    # after 5: both archived -> needed but forgotten
    assert logs.needed_forgotten(rel, rec("b", 5, 3)) == 1.0
    # no memory ever held e4 -> nothing was forgotten
    assert logs.needed_forgotten(frozenset({"e4"}), rec("c", 5, 3)) == 0.0
    # e3's memory did not exist yet when only 2 provenance entries were logged
    assert logs.needed_forgotten(frozenset({"e3"}), rec("d", 2, 2)) == 0.0
    assert logs.needed_forgotten(frozenset(), rec("e", 5, 3)) == 0.0


def test_footprint_mean_is_time_weighted():
    # 0 on [0,1), 2 on [1,3), 5 on [3,5] (the last sample at t=3 wins): (0 + 4 + 10) / 5
    samples = [(1.0, 2, 2), (3.0, 4, 4), (3.0, 5, 5)]
    assert M.footprint_mean(samples, 5.0) == pytest.approx(2.8)
    assert M.footprint_mean([], 5.0) == 0.0
    assert M.footprint_mean([(0.0, 3, 3)], 0.0) == 3.0


def small_stream():
    return Stream(
        (
            Episode("e1", 0.0, "Boston", (Claim("owner.city", "Boston"),)),
            Episode("e2", 1.0, "Denver", (Claim("owner.city", "Denver"),)),
            Episode("n1", 1.0, "rain", (Claim("chat.weather", "rain", noise=True),)),
            Episode("n2", 1.0, "sun", (Claim("chat.weather", "sun", noise=True),)),
            Query("q1", 2.0, "city?", keys=("owner.city",), k=2, group="single-hop"),
            Query("q2", 3.0, "pet?", keys=("pets.dog",), k=2),
        ),
        horizon=5.0,
    )


def test_evaluate_and_summarize_on_a_hand_trace():
    gt = GroundTruth(small_stream())
    q1 = QueryRecord(
        "q1",
        2.0,
        np.array([0, 1]),
        np.array([0.9, 0.8]),
        P({"e1"}, {"e2"}),
        2,
        "single-hop",
        3,
        3,
        3,
    )
    q2 = QueryRecord("q2", 3.0, np.array([], dtype=np.int64), np.array([]), (), 2, "", 2, 5, 3)
    tr = hand_trace([q1, q2], footprint=[(1.0, 2, 2), (3.0, 4, 4), (3.0, 5, 5)])
    df = M.evaluate(tr, gt)
    assert list(df.columns) == list(M.COLUMNS)
    r = df.iloc[0]
    # unit owner.city = {e2}; e1 (Boston) is superseded
    assert (r.query_id, r.group, r.k, r.n_units, r.returned) == ("q1", "single-hop", 2, 1, 2)
    assert (r.recall, r.hit, r.mrr) == (1.0, 1.0, 0.5)
    assert r.ndcg == pytest.approx(
        0.6309297535714575
    )  # one gain at rank 2, ideal one gain at rank 1
    assert r.stale == 0.5
    assert r.needed_forgotten == 0.0
    assert r.evidence_age == 1.0 and r.footprint == 3
    r = df.iloc[1]
    assert r.n_units == 0 and math.isnan(r.recall) and math.isnan(r.evidence_age) and r.stale == 0.0
    s = M.summarize_run(tr, gt)
    assert s["footprint_mean"] == pytest.approx(2.8)
    assert s["footprint_final"] == 5.0
    # n1 sits in row 3 (active at the end), n2 in row 4 (archived at 4.5)
    assert s["noise_retention"] == 0.5
    assert tuple(s) == metric_names("scored", level="run")


_eps = st.frozensets(st.sampled_from([f"e{i}" for i in range(8)]), max_size=3)


@given(
    st.lists(_eps, max_size=6),
    st.dictionaries(st.sampled_from("ABCD"), _eps.filter(bool), min_size=1),
    st.integers(1, 6),
)
def test_ranking_metric_invariants(prov, units, k):
    prov = tuple(prov)
    r, h, m, n = (
        M.recall_at_k(prov, units, k),
        M.hit_at_k(prov, units, k),
        M.mrr(prov, units, k),
        M.ndcg_at_k(prov, units, k),
    )
    assert 0.0 <= r <= 1.0 and 0.0 <= n <= 1.0 + 1e-12 and 0.0 <= m <= 1.0
    assert h == float(r > 0) == float(m > 0) == float(n > 0)
    # recall never falls when k grows (nDCG may: its ideal grows too)
    assert M.recall_at_k(prov, units, k + 1) >= r


@given(st.lists(st.sampled_from("ABCDEF"), min_size=1, max_size=6, unique=True), st.integers(1, 8))
def test_one_memory_per_unit_is_ideal(names, k):
    units = {u: frozenset({u + "1", u + "2"}) for u in names}  # disjoint units
    ranking = tuple(frozenset({u + "2"}) for u in names)
    assert M.ndcg_at_k(ranking, units, k) == pytest.approx(1.0)
    assert M.recall_at_k(ranking, units, k) == min(k, len(names)) / len(names)


def test_a_memory_stating_a_superseded_value_is_stale_whatever_its_provenance():
    # key k: old value "a" (episode e_old), current value "b" (episode e_new). A belief that
    # still states "a" but was reinforced by e_new holds e_new in its provenance.
    units = {"k": frozenset({"e_new"})}
    prov = P({"e_old", "e_new"}, {"e_new"})
    stated = [("k", "a"), ("k", "b")]
    judged, flags = M.judge_statements(prov, stated, units, {"k": "b"})
    assert flags == [True, False]
    assert judged[0] == frozenset({"e_old"}) and judged[1] == frozenset({"e_new"})
    assert M.recall_at_k(judged, units, 1) == 0.0  # rank 1 does not answer k
    assert M.mrr(judged, units, 2) == 0.5
    assert M.stale_at_k(judged, frozenset({"e_new"}), {"e_old"}, 2, flags) == 0.5
    # a text-only memory (stated None) and a memory of another key are left alone
    judged, flags = M.judge_statements(P({"e_new"}, {"x"}), [None, ("j", "z")], units, {"k": "b"})
    assert flags == [False, False] and judged[0] == frozenset({"e_new"})


def test_stale_flags_are_the_per_memory_test_of_stale():
    rel, sup = frozenset({"e1"}), frozenset({"e5"})
    prov = P({"e5"}, {"e5", "e1"}, {"e9"}, {"e1"})
    assert M.stale_flags(prov, rel, sup) == [True, False, False, False]
    # a memory flagged as stating a superseded value is stale whatever its provenance
    assert M.stale_flags(prov, rel, sup, [False, False, False, True]) == [
        True,
        False,
        False,
        True,
    ]


def test_rank_inversion_on_rankings():
    units, rel, sup = {"k": frozenset({"e_new"})}, frozenset({"e_new"}), {"e_old"}

    def inv(*sets, k=3, misstated=(), counted=True):
        return M.rank_inversion(P(*sets), units, rel, sup, k, misstated, counted=counted)

    assert inv({"e_old"}, {"e_new"}) == 1.0  # stale above current
    assert inv({"e_new"}, {"e_old"}) == 0.0  # current first
    assert inv({"x"}, {"e_new"}, {"e_old"}) == 0.0  # stale below current
    # the current value retrievable but not in the top k ranks below every returned memory
    assert inv({"x"}, {"e_old"}) == 1.0
    assert inv({"x"}, {"e_old"}, {"e_new"}, k=2) == 1.0
    assert inv({"x"}, {"y"}) == 0.0  # nothing stale returned
    assert inv() == 0.0  # nothing returned
    # a memory stating the old value (its provenance judged without e_new) above the current
    assert inv({"e_old"}, {"e_new"}, misstated=[True, False]) == 1.0
    assert math.isnan(inv({"e_old"}, {"e_new"}, counted=False))
    assert M.inversion_counted({"k"}, frozenset({"k"}))
    assert not M.inversion_counted(set(), frozenset({"k"}))  # current value not retrievable
    assert not M.inversion_counted({"k"}, frozenset())  # no older value


def inversion_stream():
    return Stream(
        (
            Episode("e1", 0.0, "Boston", (Claim("owner.city", "Boston"),)),
            Episode("e2", 1.0, "Denver", (Claim("owner.city", "Denver"),)),
            Episode("e3", 1.0, "Rex", (Claim("pets.dog", "Rex"),)),
            Query("q1", 2.0, "city?", keys=("owner.city",), k=2),
            Query("q2", 2.0, "dog?", keys=("pets.dog",), k=2),
            Query("q3", 3.0, "city?", keys=("owner.city",), k=2),
        ),
        horizon=4.0,
    )


def inversion_run(returns):
    """evaluate's rank_inversion per query for a policy returning ``returns[q]`` (rows) at
    q1, q2, q3. Rows 0, 1, 2 hold e1, e2, e3; row 1 (Denver, the current city) is archived
    between q2 and q3."""
    gt = GroundTruth(inversion_stream())
    held = {0: "e1", 1: "e2", 2: "e3"}
    logs = {"q1": (3, 3, 2.0), "q2": (3, 3, 2.0), "q3": (4, 3, 3.0)}
    queries = [
        QueryRecord(
            q,
            t,
            np.array(returns[q], dtype=np.int64),
            np.zeros(len(returns[q])),
            tuple(frozenset({held[r]}) for r in returns[q]),
            2,
            "",
            3,
            status_len,
            prov_len,
        )
        for q, (status_len, prov_len, t) in logs.items()
    ]
    trace = Trace(
        policy_id="hand",
        policy_version=None,
        stream_name="s",
        horizon=4.0,
        statuses=STATUSES,
        queries=queries,
        footprint=[],
        status_log=[(0.0, 0, 0), (1.0, 1, 0), (1.0, 2, 0), (2.5, 1, 1)],
        provenance_log=[(0.0, 0, "e1"), (1.0, 1, "e2"), (1.0, 2, "e3")],
    )
    df = M.evaluate(trace, gt).set_index("query_id")
    return df["rank_inversion"], df["stale"], df["recall"]


def test_rank_inversion_from_a_hand_trace():
    # q1: Denver current and retrievable, Boston superseded -> counted
    # q2: the dog never had another name -> NaN; q3: Denver archived -> NaN
    inv, stale, _ = inversion_run({"q1": [0, 1], "q2": [2], "q3": [0]})
    assert inv["q1"] == 1.0 and stale["q1"] == 0.5
    assert math.isnan(inv["q2"]) and math.isnan(inv["q3"])
    assert stale["q3"] == 1.0  # stale@k still counts it; the inversion does not
    inv, _, _ = inversion_run({"q1": [1, 0], "q2": [2], "q3": [0]})
    assert inv["q1"] == 0.0
    inv, _, _ = inversion_run({"q1": [0], "q2": [], "q3": []})  # Denver kept, not returned
    assert inv["q1"] == 1.0


def test_returning_little_never_scores_better_than_ranking_current_first():
    # Returning nothing (or only unrelated memories) scores 0 where the query counts, as
    # ranking the current value first does: no stale memory is returned above it. Where the
    # query does not count (current value not retrievable, no older value) both are NaN, so
    # returning little can tie but never beat; recall (0 against 1) tells them apart.
    first_inv, _, first_recall = inversion_run({"q1": [1, 0], "q2": [2], "q3": [0]})
    for returns in ({"q1": [], "q2": [], "q3": []}, {"q1": [2], "q2": [], "q3": [2]}):
        inv, stale, recall = inversion_run(returns)
        assert inv.equals(first_inv)
        assert list(inv.isna()) == [False, True, True] and inv["q1"] == 0.0
        assert recall["q1"] == 0.0 < first_recall["q1"] == 1.0
        assert stale["q1"] == 0.0  # stale@k alone would call it perfect


@given(
    st.lists(_eps, max_size=6),
    st.dictionaries(st.sampled_from("ABCD"), _eps.filter(bool), min_size=1),
    st.frozensets(st.sampled_from([f"e{i}" for i in range(8)])),
    st.integers(1, 6),
)
def test_rank_inversion_invariants(prov, units, superseded, k):
    prov = tuple(prov)
    relevant = frozenset().union(*units.values())
    superseded = superseded - relevant
    inv = M.rank_inversion(prov, units, relevant, superseded, k, counted=True)
    stale = M.stale_at_k(prov, relevant, superseded, k)
    assert inv in (0.0, 1.0)
    assert inv <= float(stale > 0)  # an inversion needs a stale memory in the top k
    if prov[:1] and M.hit_at_k(prov, units, 1):
        assert inv == 0.0  # the current value first: nothing ranks above it
    if stale > 0 and M.hit_at_k(prov, units, k) == 0:
        assert inv == 1.0  # stale returned, current below every returned memory
