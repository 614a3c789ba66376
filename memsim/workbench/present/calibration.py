"""The calibration sections of a comparison's summary.md: the clairvoyant bound and where
recall is lost, LoCoMo by category and evidence age, the frontier's references and the
superiority matrices."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..runs.execution import BOUND
from ..stats import (
    ALPHA,
    GAP,
    add_gap,
    cluster_ids,
    cluster_unit,
    family,
    pooled_table,
    superiority,
)
from ..studies.calibrate import calibration_table, frontier_scenarios, pooled_frontier
from .style import AGE_BINS, age_bin_labels, ordered_policies, short_scenario
from .tables import markdown_table

# the gap's split (stats.add_gap): what the policy no longer kept, and kept but ranked out
GAP_PARTS = {"gap_retention": "gap: not kept", "gap_ranking": "gap: ranked out"}
LOSS_LABELS = {
    "recall": "covered in top k",
    "ranked_out": "ranked out",
    "forgotten": "forgotten",
    "never_kept": "never kept",
}


def panels(scenarios: Iterable[Any]) -> list[tuple[str, list[str]]]:
    """(label, scenario specs) of the calibration views: every non-scripted stream alone,
    except LoCoMo's conversations, pooled into one (clusters: seed x conversation)."""
    out: list[tuple[str, list[str]]] = []
    names = [str(s) for s in dict.fromkeys(scenarios)]
    loco = [s for s in names if family(s) == "locomo"]
    for s in frontier_scenarios(names):
        if family(s) != "locomo":
            out.append((short_scenario(s), [s]))
    if loco:
        n = len(loco)
        out.append((f"LoCoMo ({n} conversation{'s' if n > 1 else ''} pooled)", loco))
    return out


def _cell(mean: float, lo: float, hi: float) -> str:
    if not np.isfinite(mean):
        return "–"
    cell = f"{mean:.3f}"
    if np.isfinite(lo) and lo != hi:
        cell += f" [{lo:.3f}, {hi:.3f}]"
    return cell


def _wide(table: pd.DataFrame, index: str, columns: str) -> pd.DataFrame:
    return table.assign(
        cell=[_cell(m, lo, hi) for m, lo, hi in zip(table["mean"], table.ci_low, table.ci_high)]
    ).pivot(index=index, columns=columns, values="cell")


def _md_table(wide: pd.DataFrame, first: str, order: Sequence[str]) -> list[str]:
    cols = list(wide.columns)
    rows = []
    for r in order:
        if r in wide.index:
            row: dict[Any, Any] = wide.loc[r].to_dict()
            rows.append([str(r), *("–" if pd.isna(row[c]) else str(row[c]) for c in cols)])
    return markdown_table([first, *map(str, cols)], rows)


ROUNDING = 1e-9  # float64 error of bound - (recall + ranked_out): below it a part is zero


def negative_marks(per_query: pd.DataFrame, table: pd.DataFrame, metric: str) -> dict[str, str]:
    """Policy -> how a negative ``metric`` is marked: "‡" for a negative pooled mean (from
    ``table``, a calibration_table), "‡ i/n" when the pooled mean is not negative but i of
    its n clusters' means are, so a negative part is never averaged away unmarked."""
    marks: dict[str, str] = {}
    means = table[table.metric == metric].set_index("policy")["mean"]
    if metric not in per_query:
        return marks
    frame = per_query.assign(_cluster=cluster_ids(per_query))
    by_cluster = frame.groupby(["policy", "_cluster"], observed=True)[metric].mean()
    for p, g in zip(means.index.astype(str), means.to_numpy(np.float64)):
        if not np.isfinite(g):
            continue
        if g < -ROUNDING:
            marks[p] = "‡"
            continue
        c = by_cluster.loc[p].to_numpy(np.float64) if p in by_cluster.index else np.array([])
        c = c[np.isfinite(c)]
        negative = int((c < -ROUNDING).sum())
        if negative:
            marks[p] = f"‡ {negative}/{len(c)}"
    return marks


def calibration_markdown(per_query: pd.DataFrame, frontier: pd.DataFrame | None = None) -> str:
    """The calibration sections of summary.md: the bound and where recall is lost per
    stream (LoCoMo pooled), LoCoMo by category and evidence age, the frontier's references,
    and the superiority matrices."""
    lines: list[str] = []
    views = panels(per_query["scenario"].unique())
    if not views:
        return ""
    order = ordered_policies(per_query["policy"].unique())
    lines += [
        "## The clairvoyant bound and where recall is lost\n",
        "bound = recall@k of the clairvoyant reference run at this policy's own retrievable "
        "footprint over time (matched mode): the best any retention of raw episode memories "
        "could reach at that footprint; gap = bound - recall, split into gap: not kept "
        "(bound - recall - ranked out: what the clairvoyant keeps at that footprint and this "
        "policy no longer kept) and gap: ranked out (kept but ranked below k); the two sum "
        "to the gap. ‡ = a negative mean (shown, never netted against the other part), "
        "‡ i/n = a mean that is not negative though i of its n clusters' means are: the "
        "policy exceeds the bound there, its memories cover several episodes each "
        "(consolidation, dedup that adds provenance), which raw-memory retention cannot. "
        "Of the asked "
        "units: covered in the top k (= recall), ranked out (a retrievable memory covered "
        "it, ranked below k), "
        "forgotten (a memory covered it, none retrievable at the query), never kept (no "
        "memory ever covered it); the four sum to 1. stale: share of returned memories "
        "asserting only superseded values. Mean [95% cluster-bootstrap CI over seeds x "
        "streams; none with one cluster].\n",
    ]
    for label, specs in views:
        sub = per_query[per_query["scenario"].isin(specs)]
        t = calibration_table(sub)
        if t.empty:
            continue
        wide = _wide(t, "policy", "metric")
        split = add_gap(sub)
        for m in (GAP, *GAP_PARTS):
            if m in wide.columns:
                for p, mark in negative_marks(split, t, m).items():
                    current: Any = wide.at[p, m]
                    wide.at[p, m] = f"{current} {mark}"
        names = {
            BOUND: "clairvoyant at footprint",
            GAP: "gap",
            **GAP_PARTS,
            **LOSS_LABELS,
            "stale": "stale",
        }
        wide = wide[[c for c in names if c in wide.columns]].rename(columns=names)
        lines += [f"### {label}\n", *_md_table(wide, "policy", order), ""]
    loco = per_query[per_query["scenario"].map(family) == "locomo"]
    if not loco.empty:
        lines += [
            "## LoCoMo recall@k by question category and by evidence age\n",
            "Pooled over conversations; mean [95% t interval over conversations, their "
            "seeds averaged as replicates]; n = distinct questions (`memsim.workbench.stats`).\n",
        ]
        cat = loco.assign(category=loco["group"].astype(str).replace("", "(none)"))
        t = pooled_table(cat, ["policy", "category"], ["recall"])
        wide = _wide(t, "policy", "category")
        counts = t.groupby("category")["n"].max()
        wide.columns = [f"{c} (n={int(counts[c])})" for c in wide.columns]
        lines += ["### by category\n", *_md_table(wide, "policy", order), ""]
        labels = age_bin_labels(AGE_BINS)
        aged = loco.assign(
            age=pd.cut(loco["evidence_age"], list(AGE_BINS), right=False, labels=labels)
        )
        t = pooled_table(aged, ["policy", "age"], ["recall"])
        t["age"] = t["age"].astype(str)
        wide = _wide(t, "policy", "age")
        counts = t.groupby("age")["n"].max()
        wide = wide[[a for a in labels if a in wide.columns]]
        wide.columns = [f"{a} (n={int(counts[a])})" for a in wide.columns]
        lines += [
            "### by evidence age (days since the newest evidence)\n",
            *_md_table(wide, "policy", order),
            "",
        ]
    if frontier is not None and not frontier.empty:
        lines += [
            "## References at a budget (the frontier)\n",
            "recall@k (footprint_mean) of each reference run at budget B on a log grid: the "
            "clairvoyant at B keeps the B raw memories needed soonest; recency at B keeps "
            "the B most recently used memories and ranks by cosine alone. Pooled over seeds "
            "(and LoCoMo conversations, weighted by questions). Figure: frontier.png.\n",
        ]
        for label, specs in views:
            f = pooled_frontier(frontier[frontier["scenario"].isin(specs)])
            if f.empty:
                continue
            f = f.assign(
                cell=[
                    f"{r:.3f} ({fp:,.0f})" if np.isfinite(r) else "–"
                    for r, fp in zip(f.recall, f.footprint_mean)
                ]
            )
            wide = f.pivot(index="budget", columns="reference", values="cell")
            wide.index = [f"{int(b):,}" for b in wide.index]
            lines += [f"### {label}\n", *_md_table(wide, "budget B", list(wide.index)), ""]
    lines += superiority_markdown(per_query)
    return "\n".join(lines)


def superiority_markdown(per_query: pd.DataFrame, metric: str = "recall") -> list[str]:
    """One superiority matrix per scenario family (scripted worked examples left out)."""
    lines: list[str] = []
    fam = per_query["scenario"].map(family)
    for name in dict.fromkeys(fam):
        if name == "scripted":
            continue
        sub = per_query[fam == name]
        sup = superiority(sub, metric)
        if sup.empty:
            continue
        n = int(sup["n"].max())
        order = ordered_policies(sub["policy"].unique())
        cell = [
            "–" if not np.isfinite(s) else f"{s:.2f}{'*' if sig else ''}"
            for s, sig in zip(sup["share"], sup["significant"])
        ]
        wide = sup.assign(cell=cell).pivot(index="row", columns="column", values="cell")
        wide = wide.reindex(index=order, columns=order)
        if not lines:
            lines.append("## Superiority\n")
        identical = dict(zip(sup["row"], sup["identical_to"]))
        identical = {v: p for v, p in identical.items() if p}
        members = len(set(sup["row"]) - set(identical))
        pairs = members * (members - 1) // 2
        floor = min(1.0, pairs * 2.0 ** (1 - n)) if n else 1.0
        scen = sub["scenario"].unique()
        lines += [
            f"### {name} ({metric}@k; {n} clusters = {_unit(name, scen)})\n",
            f"Cell: share of clusters where the row policy's mean {metric} is strictly "
            f"better than the column's; * = two-sided exact Wilcoxon signed-rank p < {ALPHA} "
            f"on the paired cluster means after Holm correction over all {pairs} pairs.\n",
            *_md_table(wide.fillna("·"), "row beats column", order),
            "",
        ]
        if identical:
            same = ", ".join(f"{v} = {p}" for v, p in identical.items())
            lines.append(
                f"Identical on every query, so one policy here (left out of the {pairs} "
                f"pairs, each row and column its parent's): {same}.\n"
            )
        sig = sup[sup["significant"] & (sup["share"] > 0.5)]
        if sig.empty:
            lines.append(f"No difference is significant (with {n} clusters).\n")
        if floor >= ALPHA:
            lines.append(
                f"With {n} clusters the smallest attainable p (one side winning every "
                f"cluster) is 2/2^{n} = {2.0 ** (1 - n):.2g}, {floor:.2g} after Holm over "
                f"{pairs} pairs: no difference can be significant here; more "
                + (
                    "seeds"
                    if cluster_unit(scen) == "seed x stream"
                    else "streams (seeds add no unit to a stream that ignores them)"
                )
                + " would be needed.\n"
            )
    return lines


def _unit(fam: str, scenarios: Iterable[str]) -> str:
    """What one cluster of a family is, in words."""
    noun = {"synthetic": "profile", "locomo": "conversation"}.get(fam, "scenario")
    kind = cluster_unit(scenarios)
    if kind == "stream":
        return f"{noun} (its seeds pooled: the stream is the same under every seed)"
    return f"seed x {noun}" if kind == "seed x stream" else f"seed x {noun} or {noun}"
