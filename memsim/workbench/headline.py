"""The README's headline table, computed from a compare output folder.

The table sits in README.md between two marker lines, so `python -m scripts.headline --write`
rewrites it from `results/standard/` and a test checks that the committed README says what the
committed results say. Synthetic columns are means over the synthetic profiles of each
scenario's mean; the LoCoMo column pools every LoCoMo question (each conversation weighs by its
questions).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from memsim.engine.registry import spec

START = "<!-- headline:start (python -m scripts.headline --write) -->"
END = "<!-- headline:end -->"

# (metric in summary.csv, column title, digits); a metric the summary lacks is left out.
SYNTHETIC_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("recall", "recall@10 ↑", 3),
    ("stale", "stale@10 ↓", 3),
    ("needed_forgotten", "needed but forgotten ↓", 3),
    ("footprint_mean", "mean footprint ↓", 0),
    ("noise_retention", "noise kept ↓", 3),
    ("gap", "gap to clairvoyant at equal footprint ↓", 3),
)


def _kind(policy: str) -> str:
    s = spec(policy)
    if s.baseline:
        return "baseline"
    if s.clairvoyant:
        return "reference bound"
    if s.variant_of:
        return f"code variant of {s.variant_of}"
    return "seed, documented" if s.seed_document else "reference model"


def _fmt(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def headline_table(results: Path) -> str:
    """The Markdown table for the compare output in `results` (summary.csv, per_query.parquet)."""
    summary = pd.read_csv(results / "summary.csv")
    per_query = pd.read_parquet(
        results / "per_query.parquet", columns=["scenario", "policy", "recall"]
    )
    synthetic = summary[summary.scenario.str.startswith("synthetic:")]
    columns = [c for c in SYNTHETIC_COLUMNS if (synthetic.metric == c[0]).any()]
    means = {
        metric: synthetic[synthetic.metric == metric].groupby("policy")["mean"].mean()
        for metric, _, _ in columns
    }
    locomo = per_query[per_query.scenario.str.startswith("locomo:")]
    locomo_recall = locomo.groupby("policy")["recall"].mean()
    titles = ["policy", "what"] + [title for _, title, _ in columns]
    if len(locomo_recall):
        titles.append("LoCoMo recall@10 ↑")
    lines = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    for policy in dict.fromkeys(summary.policy):
        cells = [policy, _kind(policy)]
        cells += [_fmt(means[m].get(policy), d) for m, _, d in columns]
        if len(locomo_recall):
            cells.append(_fmt(locomo_recall.get(policy), 3))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def replace_table(readme: str, table: str) -> str:
    """`readme` with the text between the headline markers replaced by `table`."""
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"README has no headline markers ({START!r} ... {END!r})")
    return pattern.sub(lambda _: f"{START}\n{table}{END}", readme, count=1)
