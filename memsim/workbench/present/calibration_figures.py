"""The calibration figures: where recall is lost (stacked bars per stream, one bar
per policy) and the frontier (references at a budget against each policy's point). Built by
``memsim figures`` from a comparison folder (per_query.parquet, summary.csv, frontier.csv)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from memsim.engine.errors import MemsimError
from memsim.engine.registry import spec

from ..studies.calibrate import LOSS, calibration_table, pooled_frontier
from .calibration import LOSS_LABELS, panels
from .small_multiples import scatter_grid
from .style import family_groups, new_figure, one_protocol, ordered_policies

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
    ranked out, forgotten, never kept (summing to 1); families side by side. stale@k, a
    share of the returned memories (another unit), is drawn beside recall in stale.png."""
    per_query = one_protocol(per_query)
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
        # families side by side, a gap between them, so a row of twenty bars reads in groups
        groups = family_groups(wide.index)
        order = [p for _, members in groups for p in members]
        wide = wide.reindex(order)
        x = np.concatenate(
            [
                np.arange(len(m)) + sum(len(g) + 0.8 for _, g in groups[:i])
                for i, (_, m) in enumerate(groups)
            ]
        )
        bottom = np.zeros(len(order))
        for m in LOSS:
            h = np.nan_to_num(wide[m].to_numpy(np.float64))
            ax.bar(x, h, 0.75, bottom=bottom, color=LOSS_COLOURS[m], label=LOSS_LABELS[m])
            bottom += h
        ax.set_xticks(x, order, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.02)
        ax.set_title(label, fontsize=9)
        ax.set_ylabel("share of asked units", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    fig.suptitle(
        "Where is recall lost: ranked out, forgotten or never kept? (shares of the asked units, "
        "summing to 1; families left to right: "
        + ", ".join(f for f, _ in family_groups(per_query["policy"].astype(str).unique()))
        + ")",
        fontsize=10,
    )
    return fig


def reference_label(ref: str) -> str:
    """What a budget reference is, said where it is drawn: the clairvoyant keeps what the
    future questions need; any other reference runs with its ``at_budget`` overrides (the
    recency reference with decay rate 0, so it ranks by cosine alone), unlike the policy's
    own point, which runs with its documented parameters."""
    s = spec(ref)
    if s.clairvoyant:
        return f"{ref} at budget B (keeps what future questions need)"
    overrides = ", ".join(f"{k}={v}" for k, v in (s.load().at_budget or {}).items())
    how = f"run with {overrides}" if overrides else "its documented parameters"
    return f"{ref} at budget B ({how}; the {ref} point runs with its documented parameters)"


def frontier_figure(per_query: pd.DataFrame, summary: pd.DataFrame, frontier: pd.DataFrame):
    """How close does each policy come to the best recall at its footprint? Per stream
    (LoCoMo pooled) a row of small multiples, one panel per family: each reference at budget
    B on a log grid is a curve (at the footprint it used), each policy a point with its
    cluster-bootstrap interval, directly labelled; other families' policies in grey."""
    if frontier is None or frontier.empty:
        raise MemsimError("no frontier.csv (rerun memsim compare without --no-calibration)")
    per_query = one_protocol(per_query)
    summary = one_protocol(summary)
    frontier = one_protocol(frontier)
    views = [v for v in panels(per_query["scenario"].unique()) if v[1]]
    views = [v for v in views if frontier["scenario"].isin(v[1]).any()]
    if not views:
        raise MemsimError("frontier.csv: no stream shared with the per-query table")
    fp = summary[summary["metric"] == "footprint_mean"]
    streams = []
    curves: dict[str, pd.DataFrame] = {}
    for label, specs in views:
        curves[label] = pooled_frontier(frontier[frontier["scenario"].isin(specs)])
        t = calibration_table(per_query[per_query["scenario"].isin(specs)])
        rec = t[t["metric"] == "recall"].set_index("policy")
        foot = fp[fp["scenario"].isin(specs)].groupby("policy")["mean"].mean()
        pts = [
            {
                "policy": p,
                "x": max(float(foot[p]), 0.5),
                "y": rec.loc[p, "mean"],
                "y_lo": rec.loc[p, "ci_low"],
                "y_hi": rec.loc[p, "ci_high"],
            }
            for p in ordered_policies(rec.index)
            if p in foot.index and np.isfinite(foot[p])
        ]
        streams.append((label, pd.DataFrame(pts)))

    def references(ax, label: str) -> None:
        f = curves[label]
        for style, (ref, g) in zip(REFERENCE_STYLE * 4, f.groupby("reference", sort=True)):
            g = g.sort_values("budget")
            ax.plot(
                g["footprint_mean"].clip(lower=0.5),
                g["recall"],
                marker=".",
                markersize=4,
                linewidth=1.2,
                zorder=3,
                label=reference_label(str(ref)),
                **style,
            )

    fig = scatter_grid(
        streams,
        title="How close does each policy come to the best recall at its footprint? "
        "(curves: references at budget B, log grid)",
        xlabel="mean footprint (retrievable memories, log scale)",
        ylabel="recall@k",
        logx=lambda d: True,
        extra=references,
        note="\n".join(
            f"{name} line: {reference_label(str(ref))}"
            for name, ref in zip(
                ("black", "grey dashed"), sorted(set(frontier["reference"].astype(str)))
            )
        )
        + "\nwhiskers: 95% cluster-bootstrap intervals; hollow: baseline, or a variant equal "
        "to its parent",
    )
    return fig
