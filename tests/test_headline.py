"""The README's headline table says what the committed results say."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsim.workbench.headline import END, START, headline_table, replace_table

REPO = Path(__file__).resolve().parent.parent
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
    rows = headline_table(RESULTS).splitlines()[2:]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == policies


def test_replace_table_needs_markers():
    with pytest.raises(ValueError, match="headline markers"):
        replace_table("# no markers here\n", "| a |\n")
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert replace_table(text, "| new |\n") == f"before\n{START}\n| new |\n{END}\nafter\n"
