"""The scorecard: families, intervals, marks, identical variants, and the README headline
saying what the committed results say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from memsim.workbench.present.scorecard import (
    END,
    START,
    policy_family,
    read_results,
    replace_table,
    scorecard_console,
    scorecard_frame,
    scorecard_markdown,
)
from memsim.workbench.stats import stratified_interval

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "standard"


def test_readme_headline_is_the_committed_scorecard():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = scorecard_markdown(*read_results(RESULTS, REPO / "results" / "robustness.csv"))
    assert replace_table(readme, table) == readme, (
        "README.md's headline is stale: run `python -m scripts.headline --write`"
    )
    assert (RESULTS / "scorecard.md").read_text(encoding="utf-8") == f"# Scorecard\n\n{table}"


def test_replace_table_needs_markers():
    with pytest.raises(ValueError, match="headline markers"):
        replace_table("# no markers here\n", "| a |\n")
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert replace_table(text, "| new |\n") == f"before\n{START}\n| new |\n{END}\nafter\n"


def test_families():
    assert policy_family("pai") == "seed, documented"
    assert policy_family("pai-code") == "seed, as built"
    assert policy_family("actr-spacing") == "reference model"  # a second source, not code
    assert policy_family("memorybank-code") == "reference model"
    assert policy_family("fsrs") == "reference model"
    assert policy_family("keep-all") == "baseline"
    assert policy_family("clairvoyant") == "bound"


def _fake(seeds: int, copy_variant: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """keep-all; pai ahead by 0.3 in every cluster; pai-code a copy of pai; recency a coin
    flip against keep-all; four profiles x ``seeds`` seeds and two LoCoMo conversations."""
    rows = []
    streams = [f"synthetic:{p}" for p in ("steady", "churn", "noisy", "longgap")]
    streams += [f"locomo:x.json,sample=conv-{i}" for i in (1, 2)]
    for si, sc in enumerate(streams):
        for seed in range(seeds):
            g = np.random.default_rng([si, 0 if sc.startswith("locomo") else seed])
            base = g.uniform(0.2, 0.6, 10)
            noise = g.normal(0, 0.05, 10)
            values = {"keep-all": base, "pai": base + 0.3, "recency": base + noise}
            values["pai-code"] = base + 0.3 if copy_variant else base + 0.29
            for policy, v in values.items():
                rows += [
                    {
                        "protocol": "default",
                        "scenario": sc,
                        "policy": policy,
                        "seed": seed,
                        "query_id": f"q{q}",
                        "recall": float(x),
                        "hit": float(x),
                        "mrr": float(x),
                    }
                    for q, x in enumerate(v)
                ]
    per_query = pd.DataFrame(rows)
    summary = (
        per_query.groupby(["protocol", "scenario", "policy"], sort=False)["recall"]
        .mean()
        .reset_index()
        .rename(columns={"recall": "mean"})
        .assign(metric="recall")
    )
    return summary, per_query


def test_marks_need_enough_clusters_and_identical_variants_are_named():
    summary, per_query = _fake(5)
    frame = scorecard_frame(per_query).set_index(["policy", "column"])
    assert frame.at[("pai", "hit@10"), "mark"] == "▲"
    assert frame.at[("pai-code", "hit@10"), "mark"] == "= pai"
    assert frame.at[("recency", "hit@10"), "mark"] == ""
    # two LoCoMo conversations are two clusters whatever the seeds: no mark is attainable
    assert frame.at[("pai", "LoCoMo recall@10 at end"), "mark"] == ""
    assert frame.at[("pai", "LoCoMo recall@10 at end"), "clusters"] == 2
    text = scorecard_markdown(summary, per_query)
    assert "synthetic: 20 clusters (seed x profile), 1 ▲ and 0 ▼ in hit@10" in text
    assert "locomo: 2 clusters (conversation), too few for a mark after Holm over 3 pairs" in text
    # one seed: four synthetic clusters, nothing significant
    frame = scorecard_frame(_fake(1)[1])
    assert not frame["mark"].isin(["▲", "▼"]).any()


def test_a_variant_that_differs_is_tested_on_its_own():
    frame = scorecard_frame(_fake(5, copy_variant=False)[1]).set_index(["policy", "column"])
    assert frame.at[("pai-code", "hit@10"), "mark"] == "▲"


def test_rows_are_grouped_by_family_and_the_console_explains_its_columns():
    summary, per_query = _fake(2)
    text = scorecard_markdown(summary, per_query)
    rows = [r.split(" | ")[0].lstrip("| ") for r in text.splitlines() if r.startswith("| ")]
    assert rows[1:] == ["pai", "pai-code", "keep-all", "recency"]
    console = scorecard_console(summary, per_query)
    assert "hit: hit@10 (default protocol, synthetic)" in console
    assert "L:end: LoCoMo recall@10 at end (default protocol, locomo)" in console


def test_interval_is_a_t_interval_over_seeds_within_fixed_profiles():
    # keep-all on churn, seeds 0-4: the t-interval over the five seed means
    values = [0.765, 0.705, 0.660, 0.645, 0.740]
    rows = pd.DataFrame(
        {"scenario": "synthetic:churn", "seed": range(5), "query_id": "q0", "recall": values}
    )
    mean, lo, hi, n = stratified_interval(rows, "recall")
    assert n == 5 and mean == pytest.approx(0.703)
    assert (lo, hi) == pytest.approx((0.640, 0.766), abs=1e-3)
    # two profiles as strata: the profile difference is not noise
    other = rows.assign(scenario="synthetic:steady", recall=np.array(values) - 0.5)
    mean2, lo2, hi2, n2 = stratified_interval(pd.concat([rows, other]), "recall")
    assert n2 == 10 and mean2 == pytest.approx(0.453)
    assert hi2 - lo2 < hi - lo  # ten clusters, the same spread within each profile


def test_interval_of_a_stream_that_ignores_the_seed_pools_its_seeds_first():
    rows = pd.DataFrame(
        {
            "scenario": [f"locomo:x.json,sample=conv-{c}" for c in (1, 1, 2, 2, 3, 3)] * 2,
            "seed": [0] * 6 + [1] * 6,
            "query_id": ["a", "b"] * 6,
            "recall": [1, 0, 1, 1, 0, 0] * 2,
        }
    )
    mean, lo, hi, n = stratified_interval(rows, "recall")
    assert n == 3 and mean == pytest.approx(0.5)  # three conversations, seeds are replicates
    assert 0.0 <= lo < 0.5 < hi <= 1.0


def test_robustness_verdicts_read_the_direction_and_count_profiles():
    from memsim.workbench.present.scorecard import robustness_verdicts

    table = pd.DataFrame(
        {
            "metric": ["recall"] * 4 + ["stale"],
            "conclusion": [
                "pai has higher recall@10 than keep-all on steady",
                "pai has higher recall@10 than keep-all on churn",
                "keep-all has higher recall@10 than kernle on churn",
                "pai has higher recall@10 than kernle on churn",
                "pai has lower stale@10 than keep-all on churn",
            ],
            "verdict": ["robust", "fragile", "robust", "robust", "robust"],
        }
    )
    assert robustness_verdicts(table) == {"pai": "fragile ▲ 1, robust ▲ 1", "kernle": "robust ▼ 1"}
