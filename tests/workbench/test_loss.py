"""Where recall is lost: covered / ranked out / forgotten / never kept,
on hand-built traces, one case per share; the four shares sum to 1."""

import math

import numpy as np
import pytest

from memsim.engine import metrics as M
from memsim.engine.events import Claim, Episode, Query, Stream
from memsim.engine.runner import QueryRecord, Trace
from memsim.engine.store import Statuses
from memsim.engine.truth import GroundTruth

STATUSES = Statuses(("active", "archived"), retrievable=frozenset({"active"}))


def stream() -> Stream:
    # four keys, one episode each; the query asks all four (k = 1)
    eps = tuple(
        Episode(f"e{i}", float(i), f"fact {i}", (Claim(f"k{i}", f"v{i}"),)) for i in range(4)
    )
    q = Query("q", 5.0, "everything?", keys=("k0", "k1", "k2", "k3"), k=1)
    return Stream((*eps, q), horizon=6.0)


def trace(returned: tuple[int, ...], stated=()) -> Trace:
    """Rows 0 (e0), 1 (e1), 2 (e2) created; row 1 archived before the query; e3 never kept.
    Row 3 holds e2 too but is created after the query (its provenance entry comes later)."""
    prov = {0: frozenset({"e0"}), 1: frozenset({"e1"}), 2: frozenset({"e2"})}
    rec = QueryRecord(
        "q",
        5.0,
        np.array(returned, dtype=np.int64),
        np.ones(len(returned)),
        tuple(prov[r] for r in returned),
        1,
        "",
        2,
        4,  # status entries: rows 0-2 created, row 1 archived
        3,  # provenance entries: e0, e1, e2 (row 3's comes after the query)
        stated,
    )
    return Trace(
        policy_id="hand",
        policy_version=None,
        stream_name="s",
        horizon=6.0,
        statuses=STATUSES,
        queries=[rec],
        footprint=[(0.0, 1, 1), (5.0, 2, 3)],
        status_log=[(0.0, 0, 0), (1.0, 1, 0), (2.0, 2, 0), (4.0, 1, 1), (5.5, 3, 0)],
        provenance_log=[(0.0, 0, "e0"), (1.0, 1, "e1"), (2.0, 2, "e2"), (5.5, 3, "e3")],
    )


def shares(returned: tuple[int, ...], stated=()) -> tuple[float, ...]:
    row = M.evaluate(trace(returned, stated), GroundTruth(stream())).iloc[0]
    return (row.recall, row.ranked_out, row.forgotten, row.never_kept)


def test_each_case_on_a_hand_trace():
    # top 1 = row 0 covers k0; k2's memory is retrievable but ranked below k (ranked out);
    # k1's memory existed and was archived (forgotten); k3's memory came after the query
    assert shares((0,)) == (0.25, 0.25, 0.25, 0.25)
    # top 1 = row 2: now k0 is the ranked-out one
    assert shares((2,)) == (0.25, 0.25, 0.25, 0.25)
    # nothing returned: both retrievable units are ranked out
    assert shares(()) == (0.0, 0.5, 0.25, 0.25)


def test_a_returned_memory_stating_a_superseded_value_answers_nothing():
    # row 0 states k0 = "old": it covers nothing, yet it is retrievable -> ranked out
    assert shares((0,), stated=(("k0", "old"),)) == (0.0, 0.5, 0.25, 0.25)


def test_pure_function_cases_and_sum():
    units = {u: frozenset({u}) for u in "abcd"}
    assert M.loss_shares(units, {"a"}, {"a", "b"}, {"a", "b", "c"}) == (0.25, 0.25, 0.25)
    assert M.loss_shares(units, {"a", "b", "c", "d"}, set(), set()) == (0.0, 0.0, 0.0)
    assert M.loss_shares(units, set(), set(), set()) == (0.0, 0.0, 1.0)
    # retrievable wins over existed: a unit with one archived and one live memory is ranked out
    assert M.loss_shares(units, set(), {"a"}, {"a"}) == (0.25, 0.0, 0.75)
    assert all(math.isnan(x) for x in M.loss_shares({}, set(), set(), set()))


def test_unit_states_cut_the_logs_at_the_query():
    logs = M.LogIndex(trace(()))
    units = GroundTruth(stream()).units("q")
    retrievable, existed = logs.unit_states(units, trace(()).queries[0])
    assert retrievable == {"k0", "k2"}
    assert existed == {"k0", "k1", "k2"}


@pytest.mark.parametrize("policy", ["keep-all", "pai", "kernle"])
def test_shares_sum_to_one_on_a_real_run(policy: str):
    from memsim.workbench.runs.execution import run

    q = run(policy, "synthetic:churn,episodes=300,queries=20,facts=30,horizon=30", seed=0)
    q = q[q.n_units > 0]
    assert len(q)
    total = q.recall + q.ranked_out + q.forgotten + q.never_kept
    assert np.allclose(total, 1.0)
    # needed_forgotten (every relevant memory lost) implies some forgotten share
    assert (q.forgotten[q.needed_forgotten == 1.0] > 0).all()
