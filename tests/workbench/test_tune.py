"""Tuning (Optuna, resumable SQLite study, held-out seeds) and sensitivity reports."""

from __future__ import annotations

import pandas as pd
import pytest

from memsim.engine.errors import ParamError
from memsim.workbench.present.tune import tuning_markdown
from memsim.workbench.studies.sweep import SweepSpec, one_at_a_time, points, sensitivity_ranges
from memsim.workbench.studies.tune import _pick, spreads, tune

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
    assert "| prune_threshold | 0..1 | 0.05 |" in md and "Held out" in md
    assert set(b.held_out["parameters"]) == {"documented", "tuned"}
    # the gap to the clairvoyant reference at each run's own footprint is reported
    assert "clairvoyant_gap" in set(b.held_out["metric"]) and "clairvoyant_gap" in md


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


def test_fields_without_a_finite_range_move_from_half_to_twice_their_default():
    r = sensitivity_ranges("cosmo")
    assert r["base_rate"] == (0.01, 0.04, float)  # 002 §Decay Formula: base_rate = 0.02
    assert r["core_retrievals"] == (5.0, 20.0, int)
    assert r["min_extraction_confidence"][:2] == (0.0, 1.0)  # its declared range wins
    assert "decay_mode" not in r  # not numeric
    with pytest.raises(ParamError, match="decay_mode"):
        one_at_a_time("cosmo", SMALL, [0], fields=["decay_mode"], n=3)


def test_the_tuned_point_is_no_worse_than_the_documented_one_on_the_other_objectives():
    import optuna
    from optuna.distributions import FloatDistribution

    study = optuna.create_study(directions=["maximize", "minimize"])
    dist = {"x": FloatDistribution(0.0, 1.0)}
    for x, recall, footprint in [(0.5, 0.8, 100.0), (0.9, 0.95, 300.0), (0.6, 0.85, 90.0)]:
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": x}, distributions=dist, values=[recall, footprint]
            )
        )
    pareto = pd.DataFrame(
        [
            {**t.params, "recall": t.values[0], "footprint_mean": t.values[1]}
            for t in study.best_trials
        ]
    ).sort_values(["recall", "footprint_mean"], ascending=[False, True])
    objectives, directions = ("recall", "footprint_mean"), ("maximize", "minimize")
    # documented x=0.5 has footprint 100: the higher-recall x=0.9 needs 300, so x=0.6 is picked
    assert _pick(pareto, study, {"x": 0.5}, objectives, directions)["x"] == 0.6
    # no documented trial in the study: the best recall
    assert _pick(pareto, study, {"x": 0.1}, objectives, directions)["x"] == 0.9


def test_a_tuning_through_the_index_names_its_study_by_it(tmp_path):
    """tune(index=...): its trials and held-out runs carry the settings, its study
    is named by them (one without keeps its name), and a mode that changes nothing for the
    policy is refused before the study starts."""
    import json

    ivf = {"mode": "ivf", "min_rows": 50}
    kw = dict(fields=["prune_threshold"], trials=1, train_seeds=[0], test_seeds=[1])
    r = tune("pai", [SMALL], out=tmp_path, index=ivf, **kw)
    assert r.trials == 1
    runs = [json.loads(m.read_text()) for m in (tmp_path / "cache").rglob("manifest.json")]
    mine = [m for m in runs if m["definition"]["policy"].startswith("pai")]
    # the trial (seed 0: the documented point, trial 0) and the held-out run (seed 1: the
    # documented and the tuned point, one point after a single trial)
    assert len(mine) == 2
    assert all(m["index_audit"]["min_rows"] == 50 for m in mine)
    import optuna

    (study,) = optuna.get_all_study_summaries(r.storage)
    assert study.study_name.endswith(":index=min_rows=50,mode=ivf")
    with pytest.raises(ParamError, match="no search of pai goes through"):
        tune("pai", [SMALL], out=tmp_path / "b", index={"mode": "cones"}, **kw)
