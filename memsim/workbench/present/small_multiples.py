"""The two layouts that keep a figure readable at twenty policies: a dot matrix (one row per
policy, grouped by family, one column of panels per measure, dots with interval whiskers,
names on the axis instead of a legend) and a scatter grid of small multiples (one row of
panels per stream, one column per family: the family's policies in colour with direct
labels, every other policy a grey dot for context)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from memsim.engine.errors import MemsimError

from .style import (
    direct_labels,
    family_groups,
    hollow,
    new_figure,
    policy_color,
    variant_parent,
)

CONTEXT_GREY = "#d0d0d0"


def same_as_parent(values: Mapping[str, Any], tol: float = 1e-9) -> dict[str, str]:
    """Variant -> parent for each variant whose values equal its parent's everywhere (both
    drawn, so the variant would hide under its parent): ``values`` maps a policy to the
    values it is drawn at, in one order."""
    out = {}
    for p, v in values.items():
        parent = variant_parent(p)
        if parent is None or parent not in values:
            continue
        a = np.asarray(v, dtype=np.float64)
        b = np.asarray(values[parent], dtype=np.float64)
        if a.shape == b.shape and np.allclose(a, b, atol=tol, rtol=0, equal_nan=True):
            out[p] = parent
    return out


def label_of(policy: str, same: Mapping[str, str]) -> str:
    return f"{policy} = {same[policy]}" if policy in same else policy


def _rows(
    policies: Sequence[str], families: Mapping[str, str] | None = None
) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """(y, policy) of every row and (y, family) of every family heading, top to bottom."""
    rows, heads = [], []
    y = 0.0
    for fam, members in family_groups(policies, families):
        heads.append((y, fam))
        y += 1.0
        for p in members:
            rows.append((y, p))
            y += 1.0
        y += 0.4
    return rows, heads


def dot_matrix(
    frame: pd.DataFrame,
    panels: Sequence[tuple[Any, str, str]],
    *,
    title: str,
    note: str = "",
    limits: Mapping[Any, tuple[float, float]] | None = None,
    panel_width: float = 1.9,
):
    """One row per policy (grouped by family, family names as headings), one panel per entry
    of ``panels`` ((key, panel title, x-axis label)); ``frame`` has columns policy, panel
    (the key), mean, ci_low, ci_high. A dot with interval whiskers per (policy, panel);
    ``limits`` maps a key to its x range (panels of one measure share it). A variant equal
    to its parent in every panel is named "variant = parent"."""
    for c in ("policy", "panel", "mean", "ci_low", "ci_high"):
        if c not in frame.columns:
            raise MemsimError(f"dot matrix: missing column {c!r}")
    keys = [k for k, _, _ in panels if (frame["panel"] == k).any()]
    if not keys:
        raise MemsimError("dot matrix: no panel has a row to draw")
    panels = [p for p in panels if p[0] in keys]
    policies = list(dict.fromkeys(frame["policy"].astype(str)))
    families = None
    if "family" in frame.columns:  # the caller's families (a scorecard's) over the registry's
        families = dict(zip(frame["policy"].astype(str), frame["family"].astype(str)))
    rows, heads = _rows(policies, families)
    wide = frame.pivot_table(index="policy", columns="panel", values="mean", aggfunc="first")
    same = same_as_parent({p: wide.loc[p, keys].to_numpy() for p in policies if p in wide.index})
    height = 0.24 * (len(rows) + len(heads)) + 1.5
    fig = new_figure(2.2 + panel_width * len(panels), height)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, squeeze=False)).ravel()
    ys = {p: y for y, p in rows}
    for ax, (key, ptitle, xlabel) in zip(axes, panels):
        sub = frame[frame["panel"] == key]
        for _, r in sub.iterrows():
            p = str(r["policy"])
            if p not in ys or not np.isfinite(r["mean"]):
                continue
            c = policy_color(p)
            lo = r["mean"] - r["ci_low"] if np.isfinite(r["ci_low"]) else 0.0
            hi = r["ci_high"] - r["mean"] if np.isfinite(r["ci_high"]) else 0.0
            ax.errorbar(
                [r["mean"]],
                [ys[p]],
                xerr=[[max(lo, 0.0)], [max(hi, 0.0)]],
                fmt="o",
                markersize=5,
                color=c,
                mfc="white" if hollow(p) else c,
                elinewidth=1.1,
                capsize=2,
            )
        for y, _ in heads:
            ax.axhline(y + 0.5, color="0.85", linewidth=0.6)
        ax.set_title(ptitle, fontsize=8.5)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
        if limits and key in limits:
            ax.set_xlim(*limits[key])
    ax0 = axes[0]
    ticks = [y for y, _ in rows] + [y for y, _ in heads]
    labels = [label_of(p, same) for _, p in rows] + [f for _, f in heads]
    ax0.set_yticks(ticks, labels)
    for t, _head in zip(ax0.get_yticklabels()[len(rows) :], heads):
        t.set_fontweight("bold")
        t.set_fontsize(8.5)
    for t, (_, p) in zip(ax0.get_yticklabels()[: len(rows)], rows):
        t.set_color(policy_color(p))
        t.set_fontsize(8)
    ax0.set_ylim(max(ticks) + 0.8, -0.8)
    fig.suptitle(title, fontsize=10.5)
    if note:
        fig.supxlabel(note, fontsize=8, color="0.25")
    return fig


def scatter_grid(
    streams: Sequence[tuple[str, pd.DataFrame]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] | None = (-0.03, 1.03),
    logx: Callable[[pd.DataFrame], bool] = lambda d: False,
    extra: Callable[[Any, str], None] | None = None,
    note: str = "",
):
    """Small multiples: one row of panels per stream, one column per family. ``streams`` are
    (label, frame) with columns policy, x, y and optionally x_lo, x_hi, y_lo, y_hi (interval
    ends). Each panel draws its family's policies in colour with whiskers and direct labels,
    and every other policy of the stream as a grey dot, so the family reads against the rest.
    ``extra(ax, stream_label)`` draws what every panel of a row shares (e.g. reference
    curves) under the points."""
    streams = [(s, d) for s, d in streams if len(d)]
    if not streams:
        raise MemsimError("scatter grid: no stream has a point to draw")
    every = list(dict.fromkeys(p for _, d in streams for p in d["policy"].astype(str)))
    fams = family_groups(every)
    fig = new_figure(3.3 * len(fams) + 0.4, 2.75 * len(streams) + 0.9)
    axes = np.atleast_2d(fig.subplots(len(streams), len(fams), squeeze=False, sharey="row"))
    for row, (label, d) in enumerate(streams):
        d = d.assign(policy=d["policy"].astype(str)).drop_duplicates("policy")
        by = d.set_index("policy")
        same = same_as_parent({p: by.loc[p, ["x", "y"]].to_numpy() for p in by.index})
        use_log = logx(d)
        for col, (fam, members) in enumerate(fams):
            ax = axes[row, col]
            if extra is not None:
                extra(ax, label)
            others = d[~d["policy"].isin(members)]
            ax.scatter(others["x"], others["y"], s=14, color=CONTEXT_GREY, zorder=2, linewidths=0)
            mine = [p for p in members if p in by.index]
            for p in mine:
                r: pd.Series = by.loc[p]  # type: ignore[assignment]
                c = policy_color(p)
                xerr = _interval(r, "x")
                yerr = _interval(r, "y")
                ax.errorbar(
                    [r["x"]],
                    [r["y"]],
                    xerr=xerr,
                    yerr=yerr,
                    fmt="o",
                    markersize=6,
                    color=c,
                    mfc="white" if p in same or fam == "baseline" else c,
                    elinewidth=1.0,
                    capsize=2,
                    zorder=4,
                )
            if use_log:
                ax.set_xscale("log")
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
                ax.xaxis.set_minor_formatter(NullFormatter())
            if ylim:
                ax.set_ylim(*ylim)
            ax.grid(alpha=0.3, which="major")
            ax.tick_params(labelsize=7)
            if row == 0:
                ax.set_title(fam, fontsize=9.5, fontweight="bold")
            if col == 0:
                ax.set_ylabel(f"{label}\n{ylabel}", fontsize=8)
            if row == len(streams) - 1:
                ax.set_xlabel(xlabel, fontsize=8)
            if not mine:
                ax.text(
                    0.5,
                    0.5,
                    f"no {fam} policy ran on this stream",
                    transform=ax.transAxes,
                    ha="center",
                    fontsize=8,
                    color="0.4",
                )
        # one x range per row (so a row's panels compare), fixed before the labels are placed
        lo = min(a.get_xlim()[0] for a in axes[row])
        hi = max(a.get_xlim()[1] for a in axes[row])
        for col, (_, members) in enumerate(fams):
            ax = axes[row, col]
            ax.set_xlim(lo, hi)
            direct_labels(
                ax,
                [
                    (
                        float(by.at[p, "x"]),  # type: ignore[arg-type]
                        float(by.at[p, "y"]),  # type: ignore[arg-type]
                        label_of(p, same),
                        policy_color(p),
                    )
                    for p in members
                    if p in by.index
                ],
            )
    fig.suptitle(title, fontsize=10.5)
    if note:
        fig.supxlabel(note, fontsize=8, color="0.25")
    return fig


def _interval(r: pd.Series, axis: str) -> list[list[float]] | None:
    lo_c, hi_c = f"{axis}_lo", f"{axis}_hi"
    if lo_c not in r.index or hi_c not in r.index:
        return None
    lo = r[axis] - r[lo_c] if np.isfinite(r[lo_c]) else 0.0
    hi = r[hi_c] - r[axis] if np.isfinite(r[hi_c]) else 0.0
    return [[max(float(lo), 0.0)], [max(float(hi), 0.0)]]
