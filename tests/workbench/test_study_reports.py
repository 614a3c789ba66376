"""memsim sensitivity and memsim tune write their own reports (results/sensitivity.md,
results/tuning.md beside their folders): the command, the code, the design, the tables."""

from __future__ import annotations

import pandas as pd

from memsim.workbench.cli.main import main
from memsim.workbench.runs.results import code_fingerprint
from memsim.workbench.studies.provenance import read_provenance
from memsim.workbench.studies.tune import matters

SMALL = "synthetic:churn,episodes=300,queries=20,facts=30,horizon=30"


def test_a_field_matters_when_it_moves_a_metric_by_more_than_one_percent():
    sp = pd.DataFrame(
        {
            "metric": ["recall", "recall", "footprint_mean", "footprint_mean", "stale"],
            "spread": [0.011, 0.01, 3.0, 1.5, 0.03 - 0.02],
            "largest": [0.9, 0.9, 200.0, 200.0, 0.03],
        }
    )
    # recall and stale: 0.01 absolute (a spread of exactly 0.01 does not exceed it, even
    # when float subtraction makes it 0.009999...); footprint: 1% of its largest value
    assert matters(sp).tolist() == [True, False, True, False, False]


def test_sensitivity_writes_its_report_beside_its_folder(tmp_path, capsys):
    out = tmp_path / "sensitivity"
    bad = ["sensitivity", "--policies", "kernle,pai", "--scenarios", SMALL, "--n", "2"]
    bad += ["--fields", "forgetting_threshold", "--quiet", "--out", str(out)]
    assert main(bad) == 2  # pai has no such field: refused before anything runs
    assert "forgetting_threshold" in capsys.readouterr().err and not list(out.glob("*.csv"))
    argv = ["sensitivity", "--policies", "kernle", "--scenarios", SMALL, "--n", "2"]
    argv += ["--fields", "forgetting_threshold,half_life", "--sobol", "2"]
    assert main([*argv, "--quiet", "--out", str(out), "--jobs", "2"]) == 0
    text = (tmp_path / "sensitivity.md").read_text()
    # the command that rewrites it, without the options that change no number
    assert "    " + " ".join(["memsim", *argv, "--out", str(out)]) + "\n" in text
    assert (read_provenance(text) or ("", ""))[1] == code_fingerprint()
    assert "| kernle | 2: `forgetting_threshold`, `half_life` | 4 | none |" in text
    assert "| `forgetting_threshold` (0.15..0.6) |" in text  # half to twice its default
    assert "### kernle (2 fields, 4 runs)" in text and "## Variance-based indices" in text
    for name in ("kernle_oat.csv", "kernle_spread.csv", "sobol_kernle_churn.csv"):
        assert (out / name).is_file(), name


def test_tune_writes_its_report_and_every_trial(tmp_path):
    out = tmp_path / "tuning"
    argv = ["tune", "--policies", "pai", "--scenarios", SMALL, "--fields", "prune_threshold"]
    argv += ["--trials", "2", "--train-seeds", "0", "--test-seeds", "1", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    text = (tmp_path / "tuning.md").read_text()
    assert (read_provenance(text) or ("", ""))[1] == code_fingerprint()
    assert "--trials 2 --train-seeds 0 --test-seeds 1" in text and "## Summary" in text
    assert "| prune_threshold | 0..1 | 0.05 |" in text
    trials = pd.read_csv(out / "trials.csv")
    assert trials["trial"].tolist() == [0, 1] and bool(trials.loc[0, "documented"])
    assert set(trials.columns) >= {"policy", "pareto", "recall", "params"}
