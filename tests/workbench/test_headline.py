"""The README's headline table says what the committed results say."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsim.workbench.present.headline import END, START, headline_table, replace_table

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "standard"


def test_readme_table_matches_committed_results():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = headline_table(RESULTS)
    assert replace_table(readme, table) == readme, (
        "README.md's headline table is stale: run `python -m scripts.headline --write`"
    )


def test_table_has_a_row_per_policy_in_summary_order():
    import pandas as pd

    policies = list(dict.fromkeys(pd.read_csv(RESULTS / "summary.csv").policy))
    rows = [r for r in headline_table(RESULTS).splitlines()[2:] if r.startswith("|")]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == policies


def test_replace_table_needs_markers():
    with pytest.raises(ValueError, match="headline markers"):
        replace_table("# no markers here\n", "| a |\n")
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert replace_table(text, "| new |\n") == f"before\n{START}\n| new |\n{END}\nafter\n"


def _fake_results(tmp_path: Path, seeds: int) -> Path:
    """A compare folder: keep-all, pai (ahead by 0.3 in every cluster), recency (a coin flip
    against keep-all) on the four profiles x ``seeds`` seeds and two LoCoMo conversations."""
    import numpy as np
    import pandas as pd

    rows, summary = [], []
    streams = [f"synthetic:{p}" for p in ("steady", "churn", "noisy", "longgap")]
    streams += [f"locomo:x.json,sample=conv-{i}" for i in (1, 2)]
    for si, sc in enumerate(streams):
        for seed in range(seeds):
            g = np.random.default_rng([si, 0 if sc.startswith("locomo") else seed])
            base = g.uniform(0.2, 0.6, 10)
            for policy, values in (
                ("keep-all", base),
                ("pai", base + 0.3),
                ("recency", base + g.normal(0, 0.05, 10)),
            ):
                rows += [
                    {
                        "scenario": sc,
                        "policy": policy,
                        "seed": seed,
                        "query_id": f"q{q}",
                        "recall": float(v),
                    }
                    for q, v in enumerate(values)
                ]
    per_query = pd.DataFrame(rows)
    for (sc, policy), g in per_query.groupby(["scenario", "policy"], sort=False):
        summary.append(
            {"scenario": sc, "policy": policy, "metric": "recall", "mean": g.recall.mean()}
        )
    out = tmp_path / f"seeds{seeds}"
    out.mkdir()
    pd.DataFrame(summary).to_csv(out / "summary.csv", index=False)
    per_query.to_parquet(out / "per_query.parquet")
    return out


def test_significance_marks_need_enough_clusters(tmp_path):
    table = headline_table(_fake_results(tmp_path, 5))
    rows = {r.split(" | ")[0].lstrip("| "): r for r in table.splitlines() if r.startswith("|")}
    assert "▲" in rows["pai"].split(" | ")[2] and "▲" not in rows["recency"]
    assert "▼" not in table.split("\n\n")[0]
    assert "synthetic: 20 clusters (seed x profile, seeds 0-4), 1 ▲ and 0 ▼" in table
    # LoCoMo ignores the seed: two conversations are two clusters, whatever the seeds
    assert "LoCoMo: 2 clusters (one per conversation, seeds 0-4 pooled), too few" in table
    # one seed: 4 synthetic clusters cannot make anything significant, and the note says so
    table = headline_table(_fake_results(tmp_path, 1))
    assert "▲ " not in table.split("\n\n")[0] and "▲" not in table.split("\n\n")[0]
    assert "synthetic: 4 clusters (seed x profile, seed 0), too few for any mark" in table


def test_what_column_names_a_seed_variant_code_and_a_reference_variant_plain():
    from memsim.workbench.present.headline import _kind

    assert _kind("pai-code") == "code variant of pai"
    assert _kind("actr-spacing") == "variant of actr"  # Pavlik & Anderson, not a code variant
    assert _kind("memorybank-code") == "variant of memorybank"
    assert _kind("pai") == "seed, documented" and _kind("fsrs") == "reference model"
