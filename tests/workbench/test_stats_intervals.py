"""The interval every summary and pooled table prints covers the true mean at the number of
clusters a comparison has (5 seeds, 20 seed x profile units), where a percentile bootstrap
does not; and the units it uses are independent (a seedless stream's seeds are replicates)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from memsim.workbench import stats

TRUE_MEAN = 0.6
TABLES = 2000


def _tables(clusters: int, rng: np.random.Generator, unequal: bool = False):
    """Simulated per-query tables: ``clusters`` independent units, each with its own effect
    (between-cluster sd 0.1) shared by its queries (within sd 0.25); the pooled mean's
    expectation is TRUE_MEAN."""
    for _ in range(TABLES):
        sizes = rng.integers(10, 60, clusters) if unequal else np.full(clusters, 30)
        effects = rng.normal(0.0, 0.1, clusters)
        values = np.concatenate(
            [TRUE_MEAN + e + rng.normal(0.0, 0.25, k) for e, k in zip(effects, sizes)]
        )
        yield values, np.repeat(np.arange(clusters), sizes)


@pytest.mark.parametrize("clusters", [5, 20])
def test_the_t_interval_covers_the_true_mean_at_few_clusters(clusters):
    rng = np.random.default_rng(clusters)
    covered = [
        lo <= TRUE_MEAN <= hi
        for v, c in _tables(clusters, rng)
        for lo, hi, _ in [stats.cluster_t_ci(v, c)]
    ]
    assert 0.93 <= np.mean(covered) <= 0.97


def test_the_t_interval_covers_with_clusters_of_unequal_size():
    rng = np.random.default_rng(11)
    covered = [
        lo <= TRUE_MEAN <= hi
        for v, c in _tables(20, rng, unequal=True)
        for lo, hi, _ in [stats.cluster_t_ci(v, c)]
    ]
    assert 0.93 <= np.mean(covered) <= 0.97


def test_the_percentile_bootstrap_under_covers_at_five_clusters():
    """The interval the tables used to print: the coverage test above would reject it."""
    rng = np.random.default_rng(5)
    covered = []
    for i, (v, c) in enumerate(_tables(5, rng)):
        if i == 400:  # the bootstrap is slow; 400 tables give a standard error of about 0.02
            break
        lo, hi, _ = stats.cluster_bootstrap_ci(v, c, n_resamples=500, seed=i)
        covered.append(lo <= TRUE_MEAN <= hi)
    assert np.mean(covered) < 0.9


def test_equal_clusters_give_the_plain_t_interval_over_cluster_means():
    # keep-all recall@10 on synthetic:churn per seed, the example of the under-covering
    # bootstrap: its t interval over the five seed means
    seeds = np.array([0.765, 0.705, 0.660, 0.645, 0.740])
    lo, hi, k = stats.cluster_t_ci(np.repeat(seeds, 4), np.repeat(np.arange(5), 4))
    half = sps.t.ppf(0.975, 4) * seeds.std(ddof=1) / np.sqrt(5)
    assert k == 5
    assert (lo, hi) == pytest.approx((seeds.mean() - half, seeds.mean() + half))
    assert (round(lo, 3), round(hi, 3)) == (0.640, 0.766)
    blo, bhi, _ = stats.cluster_bootstrap_ci(seeds, np.arange(5))
    assert hi - lo > 1.3 * (bhi - blo)


def test_no_interval_from_one_unit_and_none_wider_than_nothing():
    assert all(np.isnan(stats.cluster_t_ci(np.array([0.1, 0.9]), np.zeros(2))[:2]))
    assert stats.cluster_t_ci(np.array([0.5, 0.5, 0.5]), np.arange(3)) == (0.5, 0.5, 3)
    assert stats.cluster_t_ci(np.array([np.nan]), np.zeros(1)) == (
        pytest.approx(np.nan, nan_ok=True),
        pytest.approx(np.nan, nan_ok=True),
        0,
    )


def _rows(scenario: str, seeds, questions: int, value) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "scenario": scenario,
                "seed": s,
                "query_id": f"q{q}",
                "policy": "p",
                "recall": value(s, q),
            }
            for s in seeds
            for q in range(questions)
        ]
    )


def test_units_of_one_stream_seedless_seeded_and_one_run():
    loco = _rows("scripted/access-patterns", range(5), 8, lambda s, q: (q % 3) / 2)
    units, unit = stats.interval_units(loco)
    assert unit == "query" and len(np.unique(units)) == 8
    assert stats.sample_size(loco) == (8, 8)  # five replicate seeds: each question once
    syn = _rows("synthetic:churn", range(5), 8, lambda s, q: (q % 3) / 2)
    units, unit = stats.interval_units(syn)
    assert unit == "seed" and len(np.unique(units)) == 5
    assert stats.sample_size(syn) == (40, 5)
    one = syn[syn.seed == 0]
    assert stats.interval_units(one)[1] == "query, one run"
    assert stats.sample_size(one) == (8, 8)
    both = pd.concat([loco, syn])
    assert stats.interval_units(both)[1] == "mixed"
    assert stats.sample_size(both) == (48, 6)


def test_replicate_seeds_do_not_narrow_a_seedless_streams_interval():
    rng = np.random.default_rng(0)
    per_q = rng.uniform(0, 1, 12)
    five = _rows("scripted/access-patterns", range(5), 12, lambda s, q: per_q[q])
    one = five[five.seed == 0]
    runs = pd.DataFrame({"policy": ["p"], "scenario": ["scripted/access-patterns"], "seed": [0]})
    r5, r1 = (stats.summarize(f, runs).set_index("metric").loc["recall"] for f in (five, one))
    assert (r5["n"], r5["clusters"], r5["cluster_unit"]) == (12, 12, "query")
    assert (r5["ci_low"], r5["ci_high"]) == pytest.approx((r1["ci_low"], r1["ci_high"]))


def test_summary_and_pooled_intervals_are_the_t_interval():
    rng = np.random.default_rng(3)
    effects = rng.normal(0, 0.1, 5)
    syn = _rows("synthetic:churn", range(5), 10, lambda s, q: 0.5 + effects[s] + 0.01 * q)
    runs = pd.DataFrame({"policy": ["p"] * 5, "scenario": "synthetic:churn", "seed": range(5)})
    row = stats.summarize(syn, runs).set_index("metric").loc["recall"]
    means = syn.groupby("seed")["recall"].mean().to_numpy()
    half = sps.t.ppf(0.975, 4) * means.std(ddof=1) / np.sqrt(5)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
        (means.mean() - half, means.mean() + half)
    )
    assert (row["n"], row["clusters"], row["cluster_unit"]) == (50, 5, "seed")
    pooled = stats.pooled_table(syn, ["policy"], ["recall"]).iloc[0]
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx((row["ci_low"], row["ci_high"]))
    assert (pooled["n"], pooled["clusters"]) == (50, 5)
