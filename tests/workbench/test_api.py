"""The Python API: compare grids, determinism serial vs parallel, resume, statistics."""

import numpy as np
import pandas as pd
import pytest

import memsim
from memsim.engine.errors import ParamError, UnknownIdError
from memsim.workbench import stats
from memsim.workbench.runs import execution
from memsim.workbench.runs.results import RunDef

SMALL = "synthetic:steady,episodes=150,queries=20,facts=20,topics=4,horizon=40"


def test_run_returns_per_query_metrics():
    q = memsim.run("keep-all", "scripted/name-preference")
    assert {"policy", "scenario", "seed", "query_id", "recall", "stale", "needed_forgotten"} <= set(
        q
    )
    assert (q["policy"] == "keep-all").all() and len(q) == 2
    assert q["recall"].between(0, 1).all()


def test_compare_serial_and_process_pool_give_identical_tables(tmp_path):
    kw = dict(seeds=[0, 1], resume=False)
    s1, q1 = memsim.compare(["keep-all", "pai"], [SMALL], jobs=1, root=tmp_path / "a", **kw)
    s2, q2 = memsim.compare(["keep-all", "pai"], [SMALL], jobs=2, root=tmp_path / "b", **kw)
    pd.testing.assert_frame_equal(q1, q2)
    pd.testing.assert_frame_equal(s1, s2)
    # and the per-run files are byte-identical
    for d in execution.grid(["keep-all", "pai"], [SMALL], [0, 1]):
        for f in ("queries.parquet", "footprint.parquet", "summary.json"):
            assert (d.path(tmp_path / "a") / f).read_bytes() == (
                d.path(tmp_path / "b") / f
            ).read_bytes()


def test_compare_through_a_dask_executor_equals_serial(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    s1, q1 = memsim.compare(["recency"], [SMALL], seeds=[0])
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
    ) as client:
        s2, q2 = memsim.compare(["recency"], [SMALL], seeds=[0], executor=client.get_executor())
    pd.testing.assert_frame_equal(q1, q2)


def test_resume_skips_complete_runs(tmp_path, monkeypatch):
    memsim.compare(["keep-all"], [SMALL], seeds=[0], root=tmp_path)
    monkeypatch.setattr(execution, "execute", lambda d: pytest.fail(f"{d} was rerun"))
    summary, per_query = memsim.compare(["keep-all"], [SMALL], seeds=[0], root=tmp_path)
    assert len(per_query) == 20


def test_summary_has_ci_counts_and_baseline_flags():
    summary, per_query = memsim.compare(["keep-all", "recency", "pai"], [SMALL], seeds=[0])
    rec = summary[(summary.metric == "recall")].set_index("policy")
    assert set(rec.index) == {"keep-all", "recency", "pai"}
    assert (rec["n"] == rec["n"].iloc[0]).all()  # every policy on the same queries
    assert ((rec["ci_low"] <= rec["mean"] + 1e-12) & (rec["mean"] <= rec["ci_high"] + 1e-12)).all()
    assert rec.loc["keep-all", "beats_baselines"] is None
    assert rec.loc["pai", "beats_baselines"] in (True, False)
    assert set(summary["better"]) == {"higher", "lower"}


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    v = np.random.default_rng(3).random(200)
    a, b = stats.bootstrap_ci(v), stats.bootstrap_ci(v)
    assert a == b and a[0] < v.mean() < a[1]
    assert stats.bootstrap_ci(np.array([0.5, 0.5])) == (0.5, 0.5)
    assert all(np.isnan(stats.bootstrap_ci(np.array([np.nan]))))


def test_paired_matrix_on_a_hand_made_table():
    rows = []
    for qid, a, b in [("q1", 1.0, 0.0), ("q2", 1.0, 1.0), ("q3", 0.0, 1.0), ("q4", 1.0, 0.0)]:
        rows += [
            {"scenario": "s", "seed": 0, "query_id": qid, "policy": "A", "recall": a},
            {"scenario": "s", "seed": 0, "query_id": qid, "policy": "B", "recall": b},
        ]
    m = memsim.paired(pd.DataFrame(rows), "recall")
    assert m.loc["A", "B"] == 0.5 and m.loc["B", "A"] == 0.25


def test_unknown_ids_and_bad_overrides_are_clear():
    with pytest.raises(UnknownIdError, match="unknown policy id 'nope'"):
        memsim.compare(["nope"], [SMALL])
    with pytest.raises(ParamError, match="bands.NAME, faults.NAME, modes.NAME or text_embedder"):
        execution.build_llm(0, {}, {"temperature": 0.1})
    with pytest.raises(ParamError, match="Faults.embed_fail=1.5"):
        execution.build_llm(0, {}, {"faults.embed_fail": 1.5})
    # mock modes (docs/mock-llm.md): unknown mode or a rate outside [0, 1], one line each
    for bad, text in (
        ({"modes.nope": 1}, "modes.nope=1"),
        ({"modes.query_value": 1.5}, "query_value=1.5"),
        ({"modes.resolution_error": -0.5}, "resolution_error=-0.5"),
    ):
        with pytest.raises(ParamError, match=text) as exc:
            execution.build_llm(0, {}, bad)
        assert "\n" not in str(exc.value)


def test_llm_overrides_reach_the_mock():
    llm = execution.build_llm(4, {"bands": {"paraphrase": 0.9}}, {"faults.embed_fail": 0.25})
    assert llm.bands.paraphrase == 0.9 and llm.faults.embed_fail == 0.25 and llm.seed == 4


def test_run_definitions_carry_the_policy_version():
    (d,) = execution.grid(["pai"], ["scripted/name-preference"], [0])
    assert d == RunDef("pai-v3", "scripted/name-preference", 0)


def test_grid_gives_the_index_to_the_policies_it_reaches():
    """compare --index: the settings go to each policy some search of which goes
    through that mode; the others keep their default; settings reaching none are refused."""
    ivf = {"mode": "ivf", "min_rows": 100}
    defs = execution.grid(["keep-all", "izzie", "pai", "fsrs"], [SMALL], [0], index=ivf)
    got = {d.policy.rsplit("-v", 1)[0]: d.index for d in defs}
    assert got == {
        "keep-all": (),
        "izzie": (),  # (its recall scans: no search of it goes through an index)
        "pai": (("min_rows", 100), ("mode", "ivf")),
        "fsrs": got["pai"],
    }
    cones = execution.grid(["pai", "fsrs"], [SMALL], [0], index={"mode": "cones"})
    assert [bool(d.index) for d in cones] == [False, True]
    # exact turns a default index off (pai's ivf, fsrs's cones) and is the others' default
    exact = execution.grid(
        ["keep-all", "izzie", "pai", "fsrs"], [SMALL], [0], index={"mode": "exact"}
    )
    assert [d.index for d in exact] == [(), (), (("mode", "exact"),), (("mode", "exact"),)]
    assert execution.grid(["keep-all"], [SMALL], [0], index={"mode": "exact"})[0].index == ()
    with pytest.raises(ParamError, match="no search of recency goes through"):
        execution.grid(["recency"], [SMALL], [0], index=ivf)
    with pytest.raises(UnknownIdError, match="'hnsw'"):
        execution.grid(["izzie"], [SMALL], [0], index={"mode": "hnsw"})
    with pytest.raises(ParamError, match="nprobe=0"):
        execution.grid(["izzie"], [SMALL], [0], index={"mode": "ivf", "nprobe": 0})


def test_index_audit_in_the_summary_is_undefined_where_nothing_was_audited():
    """A run's summary carries the audit's shares; a kind of search the index never audited
    (the recall of Personal AI and FSRS: their recall scans) is NaN, not 0%, so a mean
    over runs skips it."""
    ivf = {"mode": "ivf", "min_rows": 20, "audit_every": 1}
    summary, _ = memsim.compare(["pai", "fsrs"], [SMALL], seeds=[0], index=ivf, calibrate=False)
    share = summary.set_index(["policy", "metric"])["mean"]
    assert np.isnan(share["pai", "index_query_differ_share"])
    assert 0.0 <= share["pai", "index_decision_differ_share"] <= 1.0
    assert np.isnan(share["fsrs", "index_query_differ_share"])
    assert 0.0 <= share["fsrs", "index_decision_differ_share"] <= 1.0
    better = summary.set_index("metric")["better"]
    assert set(better[["index_query_differ_share", "index_decision_differ_share"]]) == {"lower"}
