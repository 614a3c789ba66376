"""The README's headline table, computed from a compare output folder.

The table sits in README.md between two marker lines, so `python -m scripts.headline --write`
rewrites it from `results/standard/` and a test checks that the committed README says what the
committed results say. Synthetic columns are means over the synthetic profiles of each
scenario's mean (over every seed); the LoCoMo column pools every LoCoMo question (each
conversation weighs by its questions).

Significance: a recall cell carries ▲ (▼) when the policy's recall is significantly above
(below) the reference's (the first baseline in the table: keep-all in the standard run) by
``memsim.superiority`` on the same rows: the exact
two-sided Wilcoxon signed-rank test on the paired cluster means (synthetic: seed x profile;
LoCoMo: one cluster per conversation, whatever the seeds), Holm-corrected over every pair of
policies, p < 0.05. A note under the table gives the clusters, seeds and what is attainable.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from memsim.engine.registry import spec

from ..stats import ALPHA, cluster_ids, cluster_unit, superiority
from .tables import markdown_table

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
    if s.variant_of:  # a seed's variant follows its code; a reference model's, a second source
        parent = spec(s.variant_of)
        return f"{'code ' if parent.seed_document else ''}variant of {s.variant_of}"
    return "seed, documented" if s.seed_document else "reference model"


def _fmt(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


UP, DOWN = "▲", "▼"


def reference_policy(policies: list[str]) -> str | None:
    """The policy the significance marks compare with: the first baseline in table order."""
    return next((p for p in policies if spec(p).baseline), None)


def significance_marks(per_query: pd.DataFrame, reference: str | None) -> dict[str, str]:
    """policy -> UP / DOWN / "" : whether its recall is significantly above / below the
    reference's on these rows (``memsim.superiority``, Holm over all pairs)."""
    if reference is None or per_query.empty or reference not in set(per_query["policy"]):
        return {}
    sup = superiority(per_query, "recall")
    vs = sup[(sup["column"] == reference) & sup["significant"]].set_index("row")
    back = sup[(sup["row"] == reference)].set_index("column")["share"]
    return {
        p: (UP if vs.at[p, "share"] > back.get(p, 0.0) else DOWN) if p in vs.index else ""
        for p in dict.fromkeys(per_query["policy"])
    }


def _note(name: str, noun: str, rows: pd.DataFrame, marks: dict[str, str]) -> str:
    """One clause: the clusters, the seeds, how many marks, or why none can appear."""
    n = len(np.unique(cluster_ids(rows)))
    seeds = sorted(int(s) for s in rows["seed"].unique())
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
    unit = (
        f"seed x {noun}, {seed_text}"
        if cluster_unit(rows["scenario"].unique()) == "seed x stream"
        else f"one per {noun}, {seed_text}{' pooled' if len(seeds) > 1 else ''}"
    )
    policies = rows["policy"].nunique()
    pairs = policies * (policies - 1) // 2
    floor = pairs * 2.0 ** (1 - n) if n else 1.0
    if floor >= ALPHA:
        return (
            f"{name}: {n} clusters ({unit}), too few for any mark: the smallest attainable p is "
            f"{2.0 ** (1 - n):.2g}, {min(floor, 1.0):.2g} after Holm over {pairs} pairs"
        )
    up, down = sum(m == UP for m in marks.values()), sum(m == DOWN for m in marks.values())
    return f"{name}: {n} clusters ({unit}), {up} {UP} and {down} {DOWN}"


def headline_table(results: Path) -> str:
    """The Markdown table for the compare output in `results` (summary.csv, per_query.parquet),
    with significance marks on the recall columns and a note saying what they rest on."""
    summary = pd.read_csv(results / "summary.csv")
    per_query = pd.read_parquet(
        results / "per_query.parquet", columns=["scenario", "policy", "seed", "query_id", "recall"]
    )
    synthetic = summary[summary.scenario.str.startswith("synthetic:")]
    columns = [c for c in SYNTHETIC_COLUMNS if (synthetic.metric == c[0]).any()]
    means = {
        metric: synthetic[synthetic.metric == metric].groupby("policy")["mean"].mean()
        for metric, _, _ in columns
    }
    locomo = per_query[per_query.scenario.str.startswith("locomo:")]
    locomo_recall = locomo.groupby("policy")["recall"].mean()
    synthetic_rows = per_query[per_query.scenario.str.startswith("synthetic:")]
    reference = reference_policy(list(dict.fromkeys(summary.policy)))
    marks = significance_marks(synthetic_rows, reference)
    locomo_marks = significance_marks(locomo, reference)
    titles = ["policy", "what"] + [title for _, title, _ in columns]
    if len(locomo_recall):
        titles.append("LoCoMo recall@10 ↑")
    rows = []
    for policy in dict.fromkeys(summary.policy):
        cells = [policy, _kind(policy)]
        for m, _, d in columns:
            mark = marks.get(policy, "") if m == "recall" else ""
            cells.append(_fmt(means[m].get(policy), d) + (f" {mark}" if mark else ""))
        if len(locomo_recall):
            mark = locomo_marks.get(policy, "")
            cells.append(_fmt(locomo_recall.get(policy), 3) + (f" {mark}" if mark else ""))
        rows.append(cells)
    lines = markdown_table(titles, rows)
    notes = []
    if len(synthetic_rows) and reference in set(synthetic_rows.policy):
        notes.append(_note("synthetic", "profile", synthetic_rows, marks))
    if len(locomo) and reference in set(locomo.policy):
        notes.append(_note("LoCoMo", "conversation", locomo, locomo_marks))
    if notes:
        lines += [
            "",
            f"{UP} / {DOWN}: recall significantly above / below {reference}'s (exact "
            "two-sided Wilcoxon signed-rank test on the paired cluster means, Holm over every "
            f"pair of policies, p < {ALPHA}; `memsim.superiority`). " + "; ".join(notes) + ".",
        ]
    return "\n".join(lines) + "\n"


def replace_table(readme: str, table: str) -> str:
    """`readme` with the text between the headline markers replaced by `table`."""
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"README has no headline markers ({START!r} ... {END!r})")
    return pattern.sub(lambda _: f"{START}\n{table}{END}", readme, count=1)
