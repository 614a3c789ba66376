"""The calibration figures: where recall is lost (stacked bars per stream, one bar
per policy) and the frontier (references at a budget against each policy's point). Built by
``memsim figures`` from a comparison folder (per_query.parquet, summary.csv, frontier.csv)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from memsim.engine.errors import MemsimError

from ..studies.calibrate import LOSS, calibration_table, pooled_frontier
from .calibration import LOSS_LABELS, panels
from .style import is_baseline, new_figure, ordered_policies, policy_color

LOSS_COLOURS = {
    "recall": "#2ca02c",
    "ranked_out": "#ffbf00",
    "forgotten": "#d62728",
    "never_kept": "#7f7f7f",
}
REFERENCE_STYLE = ({"color": "black", "linestyle": "-"}, {"color": "0.45", "linestyle": "--"})


def _grid(n: int, width: float, height: float):
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig = new_figure(width * ncols, height * nrows + 0.8)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def loss_figure(per_query: pd.DataFrame):
    """Stacked bars per stream (LoCoMo pooled): of the asked units, covered in the top k,
    ranked out, forgotten, never kept (summing to 1); a black diamond marks stale@k."""
    missing = [c for c in LOSS if c not in per_query]
    if missing:
        raise MemsimError(f"per-query table: no {missing[0]!r} column (rerun memsim compare)")
    views = panels(per_query["scenario"].unique())
    if not views:
        raise MemsimError("per-query table: no synthetic or LoCoMo stream")
    fig, axes = _grid(len(views), 4.6, 3.4)
    for ax, (label, specs) in zip(axes, views):
        t = calibration_table(per_query[per_query["scenario"].isin(specs)])
        wide = t.pivot(index="policy", columns="metric", values="mean")
        order = ordered_policies(wide.index)
        wide = wide.reindex(order)
        x = np.arange(len(order))
        bottom = np.zeros(len(order))
        for m in LOSS:
            h = np.nan_to_num(wide[m].to_numpy(np.float64))
            ax.bar(x, h, 0.75, bottom=bottom, color=LOSS_COLOURS[m], label=LOSS_LABELS[m])
            bottom += h
        if "stale" in wide:
            ax.plot(x, wide["stale"], "D", color="black", markersize=4, label="stale@k")
        ax.set_xticks(x, order, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.02)
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("share of asked units", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    fig.suptitle("Where recall is lost (shares of the asked units; they sum to 1)", fontsize=10)
    return fig


def frontier_figure(per_query: pd.DataFrame, summary: pd.DataFrame, frontier: pd.DataFrame):
    """Recall@k against mean footprint per stream (LoCoMo pooled): each reference at budget
    B on a log grid is a curve (at the footprint it used), each policy a point with its
    cluster-bootstrap CI."""
    if frontier is None or frontier.empty:
        raise MemsimError("no frontier.csv (rerun memsim compare without --no-calibration)")
    views = [v for v in panels(per_query["scenario"].unique()) if v[1]]
    views = [v for v in views if frontier["scenario"].isin(v[1]).any()]
    if not views:
        raise MemsimError("frontier.csv: no stream shared with the per-query table")
    fp = summary[summary["metric"] == "footprint_mean"]
    fig, axes = _grid(len(views), 4.4, 3.4)
    for ax, (label, specs) in zip(axes, views):
        f = pooled_frontier(frontier[frontier["scenario"].isin(specs)])
        for style, (ref, g) in zip(REFERENCE_STYLE * 4, f.groupby("reference", sort=True)):
            g = g.sort_values("budget")
            ax.plot(
                g["footprint_mean"].clip(lower=0.5),
                g["recall"],
                marker=".",
                label=f"{ref} at budget B",
                linewidth=1.6,
                **style,
            )
        t = calibration_table(per_query[per_query["scenario"].isin(specs)])
        rec = t[t["metric"] == "recall"].set_index("policy")
        foot = fp[fp["scenario"].isin(specs)].groupby("policy")["mean"].mean()
        for p in ordered_policies(rec.index):
            if p not in foot.index or not np.isfinite(foot[p]):
                continue
            r = rec.loc[p]
            lo = r["mean"] - r["ci_low"] if np.isfinite(r["ci_low"]) else 0.0
            hi = r["ci_high"] - r["mean"] if np.isfinite(r["ci_high"]) else 0.0
            ax.errorbar(
                [max(float(foot[p]), 0.5)],
                [r["mean"]],
                yerr=[[max(lo, 0.0)], [max(hi, 0.0)]],
                fmt="o",
                markersize=6,
                color=policy_color(p),
                mfc="white" if is_baseline(p) else policy_color(p),
                capsize=3,
                label=p,
            )
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("mean footprint (retrievable memories, log scale)", fontsize=8)
        ax.set_ylabel("recall@k", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, which="both")
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 7), fontsize=8)
    fig.suptitle(
        "The frontier: references at budget B (log grid) and each policy\n"
        "(whiskers: 95% cluster-bootstrap CI; hollow = baseline)",
        fontsize=10,
    )
    return fig
