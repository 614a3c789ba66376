"""Tuning (Optuna, resumable SQLite study, held-out seeds) and sensitivity reports."""

from __future__ import annotations

import pytest

from memsim.engine.errors import ParamError
from memsim.workbench.sweep import SweepSpec, one_at_a_time, points
from memsim.workbench.tune import spreads, tune, tuning_markdown

SMALL = "synthetic:churn,episodes=300,queries=20,facts=30,horizon=30"


def test_a_killed_tuning_resumes_from_its_study(tmp_path):
    a = tune(
        "pai",
        [SMALL],
        fields=["prune_threshold"],
        trials=2,
        train_seeds=[0],
        test_seeds=[1],
        out=tmp_path,
    )
    assert a.trials == 2
    b = tune(
        "pai",
        [SMALL],
        fields=["prune_threshold"],
        trials=3,
        train_seeds=[0],
        test_seeds=[1],
        out=tmp_path,
    )
    assert b.trials == 3  # the two stored trials count, one more runs
    assert (tmp_path / "optuna.db").is_file()
    md = tuning_markdown([b])
    assert "| prune_threshold | 0.05 |" in md and "held-out" in md
    assert set(b.held_out["parameters"]) == {"documented", "tuned"}


def test_multi_objective_gives_a_pareto_front(tmp_path):
    r = tune(
        "pai",
        [SMALL],
        objectives=["recall", "footprint_mean"],
        fields=["prune_threshold"],
        trials=3,
        train_seeds=[0],
        test_seeds=[1],
        out=tmp_path,
    )
    assert len(r.pareto) >= 1 and {"recall", "footprint_mean"} <= set(r.pareto)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"objectives": ["speed"]}, "unknown objective"),
        ({"train_seeds": [0], "test_seeds": [0]}, "must differ"),
        ({"fields": ["no_such"]}, "no_such"),
    ],
)
def test_bad_tuning_requests(tmp_path, kw, match):
    with pytest.raises(ParamError, match=match):
        tune("pai", [SMALL], trials=1, out=tmp_path, **kw)


def test_invalid_combinations_are_dropped_only_when_asked():
    with pytest.raises(ParamError, match="grey_lo"):
        points(SweepSpec("pai", {"reinforce_above": None}, n=3))
    kept = points(SweepSpec("pai", {"reinforce_above": None}, n=3, drop_invalid=True))
    assert [p["reinforce_above"] for p in kept] == [1.0]


def test_one_at_a_time_spread_ranks_the_field_that_moves_the_metric():
    oat = one_at_a_time("pai", SMALL, [0], fields=["prune_threshold", "meta_confidence"], n=3)
    sp = spreads(oat)
    rec = sp[sp["metric"] == "footprint_mean"]
    assert rec.iloc[0]["field"] == "prune_threshold" and rec.iloc[0]["spread"] > 0
