"""One definition of n, printed the same everywhere: on one small comparison (2 policies, a
scripted stream that ignores the seed and a small synthetic one, 2 seeds) summary.csv,
summary.md, a pooled table, the drift table and the robustness table give the same n
(distinct questions) and clusters (the units the intervals use)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import memsim
from memsim.workbench import stats
from memsim.workbench.present.report import write_comparison
from memsim.workbench.present.robustness import counts_sentence
from memsim.workbench.studies.drift import paired_rows, side_by_side
from memsim.workbench.studies.robustness import conclusions_table

SCRIPTED = "scripted/access-patterns"
SYNTHETIC = "synthetic:steady,episodes=300,queries=30,facts=30,horizon=40"
POLICIES = ["keep-all", "recency"]


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    summary, per_query = memsim.compare(POLICIES, [SCRIPTED, SYNTHETIC], seeds=[0, 1], root=root)
    out = write_comparison(
        tmp_path_factory.mktemp("out"), summary, per_query, definition={"test": True}
    )
    return summary, per_query, out


def _csv_counts(out) -> dict[str, tuple[int, int]]:
    csv = pd.read_csv(out / "summary.csv")
    recall = csv[csv.metric == "recall"]
    counts = {}
    for scenario, g in recall.groupby("scenario"):
        assert g["n"].nunique() == 1 and g["clusters"].nunique() == 1  # same for each policy
        counts[scenario] = (int(g["n"].iloc[0]), int(g["clusters"].iloc[0]))
    return counts


def test_n_counts_distinct_questions_a_seedless_streams_once(comparison):
    _, per_query, out = comparison
    counts = _csv_counts(out)
    one = per_query[per_query.policy == POLICIES[0]]
    scripted = one[one.scenario == SCRIPTED]
    synthetic = one[one.scenario == SYNTHETIC]
    # the scripted stream is the same under both seeds: its questions count once, each a unit
    assert counts[SCRIPTED] == (scripted["query_id"].nunique(),) * 2
    assert len(scripted) == 2 * scripted["query_id"].nunique()
    # the synthetic stream changes with the seed: a question per seed, the seeds the units
    assert counts[SYNTHETIC] == (len(synthetic[["seed", "query_id"]].drop_duplicates()), 2)


def test_summary_md_prints_the_counts_of_summary_csv(comparison):
    _, _, out = comparison
    counts = _csv_counts(out)
    text = (out / "summary.md").read_text()
    for scenario, (n, clusters) in counts.items():
        section = text.split(f"### {scenario}\n", 1)[1].split("\n### ", 1)[0]
        found = re.search(r"n = (\d+) distinct questions per policy .*?clusters = (\d+) ", section)
        assert found, section
        assert (int(found.group(1)), int(found.group(2))) == (n, clusters)


def test_pooled_drift_and_robustness_tables_print_the_same_counts(comparison):
    _, per_query, out = comparison
    counts = _csv_counts(out)
    pooled = stats.pooled_table(per_query, ["scenario", "policy"], ["recall"])
    for r in pooled.itertuples():
        assert (r.n, r.clusters) == counts[r.scenario]
    drift = paired_rows(per_query, *POLICIES)
    for r in drift[drift.metric == "recall@10"].itertuples():
        assert (r.n, r.clusters) == counts[r.scenario]
    runs = per_query[["policy", "scenario", "seed"]].drop_duplicates()
    lines = side_by_side(per_query, runs.assign(footprint_mean=1.0, noise_retention=0.0))
    for line in lines[4:-1]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        scenario = SCRIPTED if cells[0] == SCRIPTED else SYNTHETIC
        assert (int(cells[-2]), int(cells[-1])) == counts[scenario]
    table = conclusions_table({"default": (per_query, runs)}, (("recall", None),))
    for r in table.itertuples():
        assert (r.n, r.clusters) == counts[r.scenario]
    sentence = counts_sentence(table)
    for scenario, (n, clusters) in counts.items():
        assert f"{scenario.split(':', 1)[-1]} n = {n}, clusters = {clusters}" in sentence


def test_drift_pools_a_seedless_streams_replicates_before_its_test():
    """Five replicate seeds of one conversation are one question each, not five: the same
    paired differences repeated give the same p as one seed's, not a smaller one."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, 15)
    diff = rng.normal(0.05, 0.1, 15)

    def frame(seeds):
        return pd.DataFrame(
            [
                {
                    "policy": policy,
                    "scenario": SCRIPTED,
                    "seed": s,
                    "query_id": f"q{q}",
                    "recall": base[q] + (diff[q] if policy == "b" else 0.0),
                    "stale": 0.0,
                    "footprint": 1.0,
                }
                for s in seeds
                for q in range(15)
                for policy in ("a", "b")
            ]
        )

    five = paired_rows(frame(range(5)), "a", "b").set_index("metric").loc["recall@10"]
    one = paired_rows(frame([0]), "a", "b").set_index("metric").loc["recall@10"]
    assert (five["n"], five["clusters"]) == (15, 15)
    assert five["p"] == pytest.approx(one["p"])
    assert five["diff_ci"] == pytest.approx(one["diff_ci"])
