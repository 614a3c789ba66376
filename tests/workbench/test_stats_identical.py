"""A variant whose per-query results equal its parent's on every query (pai-code and pai here,
by the registry's ``variant_of``) is reported as identical and left out of the family of pairs
Holm corrects over: it takes its parent's verdict instead of a separate one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from memsim.workbench import stats

CLUSTERS = 7  # the smallest exact two-sided p is 2 / 2^7: Holm over 3 pairs passes, over 6 not


def _frame() -> pd.DataFrame:
    """keep-all and recency a coin flip; pai better than both in every seed x profile cluster;
    pai-code a copy of pai on every query and metric."""
    rng = np.random.default_rng(4)
    rows = []
    for seed in range(CLUSTERS):
        for q in range(6):
            noise = rng.uniform(0.2, 0.6, 2)
            for policy, recall in (
                ("keep-all", noise[0]),
                ("recency", noise[1]),
                ("pai", 0.7 + 0.01 * seed),
            ):
                rows.append(
                    {
                        "scenario": "synthetic:churn",
                        "seed": seed,
                        "query_id": f"q{q}",
                        "policy": policy,
                        "recall": recall,
                        "stale": 0.1 * (q % 2),
                    }
                )
    frame = pd.DataFrame(rows)
    return pd.concat([frame, frame[frame.policy == "pai"].assign(policy="pai-code")])


def test_a_copied_variant_is_identical_to_its_parent():
    assert stats.identical_variants(_frame()) == {"pai-code": "pai"}


@pytest.mark.parametrize("column", ["recall", "stale"])
def test_one_differing_query_on_any_metric_makes_it_a_variant_of_its_own(column):
    frame = _frame().reset_index(drop=True)
    i = frame.index[frame.policy == "pai-code"][3]
    frame.loc[i, column] += 0.5
    assert stats.identical_variants(frame) == {}


def test_a_variant_missing_a_query_is_not_identical():
    frame = _frame().reset_index(drop=True)
    drop = frame.index[frame.policy == "pai-code"][0]
    assert stats.identical_variants(frame.drop(index=drop)) == {}


def test_an_identical_variant_takes_its_parents_verdict_outside_the_family():
    sup = stats.superiority(_frame()).set_index(["row", "column"])
    assert sup.loc[("pai", "keep-all"), "significant"]
    assert sup.loc[("pai", "keep-all"), "p_holm"] == pytest.approx(3 * 2 / 2**CLUSTERS)
    for other in ("keep-all", "recency"):
        copied, parent = sup.loc[("pai-code", other)], sup.loc[("pai", other)]
        assert copied["identical_to"] == "pai"
        assert copied[["share", "n", "p", "p_holm", "significant"]].tolist() == (
            parent[["share", "n", "p", "p_holm", "significant"]].tolist()
        )
        assert sup.loc[(other, "pai-code"), "p_holm"] == sup.loc[(other, "pai"), "p_holm"]
    against = sup.loc[("pai-code", "pai")]
    assert (against["share"], against["p"], against["significant"]) == (0.0, 1.0, False)
    assert np.isnan(against["p_holm"])
    assert (sup.loc[("pai", "keep-all"), "identical_to"]) == ""


def test_counting_the_copy_in_the_family_would_cost_the_parent_its_verdict():
    sup = stats.superiority(_frame(), exclude_identical=False).set_index(["row", "column"])
    assert not sup["significant"].any()
    assert (sup["identical_to"] == "").all()
    assert sup.loc[("pai", "keep-all"), "p_holm"] == pytest.approx(6 * 2 / 2**CLUSTERS)
    given = stats.superiority(_frame(), exclude_identical={"pai-code": "pai"})
    assert given.equals(stats.superiority(_frame()))


def test_the_superiority_section_names_the_identical_variant_and_the_family_size():
    from memsim.workbench.present.calibration import superiority_markdown

    text = "\n".join(superiority_markdown(_frame()))
    assert "Holm correction over all 3 pairs" in text
    assert "left out of the 3 pairs, each row and column its parent's): pai-code = pai" in text
