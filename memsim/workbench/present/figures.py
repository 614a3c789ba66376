"""Figures of a comparison, the decay curves and the latency benchmarks (PNG, matplotlib Agg).

Every figure is a function that takes DataFrames and returns a ``matplotlib.figure.Figure``
(testable without files); ``write_figures`` / ``memsim figures`` build them all from the files
under results/ and write ``results/figures/*.png``. A figure whose input is missing is
skipped with a one-line notice, not an error.

A policy has the same colour in every figure (``palette()``, from the registry); baselines are
drawn dashed. Figures use ``Figure`` objects directly (no pyplot state), so they are safe in
tests, notebooks and worker processes.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine.errors import MemsimError
from memsim.engine.registry import spec

from ..runs.execution import list_policies
from ..runs.results import read_json
from ..stats import cluster_bootstrap_ci
from .calibration_figures import frontier_figure, loss_figure
from .style import (
    AGE_BINS,
    COLOURS,
    DPI,
    MARKERS,
    age_bin_labels,
    is_baseline,
    new_figure,
    ordered_policies,
    palette,
    policy_color,
    policy_id,
    policy_style,
    registered_policies,
    short_scenario,
)

# Access patterns of figure 1: no access, a steady rhythm, and three bursts a month apart.
CURVE_PATTERNS: dict[str, str] = {
    "never": "never accessed",
    "every:3": "accessed every 3 days",
    "at:1,2,3,30,31,32,60,61,62": "bursts at days 1-3, 30-32, 60-62",
}
CURVE_DAYS = "0:120:1"

# The planted memory of each policy's curve is declared beside the policy: the module its
# spec names in ``claims`` may set ``CURVE_MEMORY`` (a dict of memory attributes, e.g. the
# memory of the document's own worked example, so the example points sit on the lines).
# Policies that declare none plant their default memory.


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if frame is None or not isinstance(frame, pd.DataFrame):
        raise MemsimError(f"{what}: expected a DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise MemsimError(
            f"{what}: missing column(s) {', '.join(missing)} "
            f"(has {', '.join(map(str, frame.columns))})"
        )


# ------------------------------------------------------------------ 1. decay curves


@dataclass(frozen=True)
class WorkedExample:
    """A seed document's worked example: a memory of ``policy`` that starts at ``start``
    is at ``value`` after ``day`` days without access."""

    policy: str
    day: float
    start: float
    value: float
    source: str
    label: str
    claim: str = ""  # the id of the same example in the claims table (studies/claims.py), if any


def _declared(attr: str) -> dict[str, Any]:
    """Policy id -> ``attr`` of the module its spec names in ``claims``, where it is set."""
    out: dict[str, Any] = {}
    for spec_ in registered_policies():
        if spec_.claims:
            value = getattr(importlib.import_module(spec_.claims), attr, None)
            if value is not None:
                out[spec_.id] = value
    return out


def declared_worked_examples() -> tuple[WorkedExample, ...]:
    """The documents' decay examples that map to (policy, day, value), for when the claims
    table carries no day column: each policy's claims module may set ``DECAY_EXAMPLES``, a
    tuple of dicts with day, start, value, source, label and claim (values as the documents
    print them)."""
    return tuple(
        WorkedExample(pid, **e)
        for pid, examples in _declared("DECAY_EXAMPLES").items()
        for e in examples
    )


def curve_memories() -> dict[str, dict[str, Any]]:
    """Policy id -> the memory its decay curve plants (``CURVE_MEMORY`` beside the policy)."""
    return {pid: dict(m) for pid, m in _declared("CURVE_MEMORY").items()}


def worked_examples(claims: pd.DataFrame | None = None) -> pd.DataFrame:
    """The worked examples to mark on the decay curves: rows of the claims table that name a
    (policy, day, value) when it has such columns, else ``declared_worked_examples()``.
    Columns: policy, day, start, value, ratio (value / start), source, label, claim
    (claims-table id or "")."""
    rows: list[dict[str, Any]] = []
    if claims is not None and {"policy", "day", "documented"} <= set(claims.columns):
        start_col = next((c for c in ("start", "initial", "day0") if c in claims.columns), None)
        for _, r in claims.iterrows():
            day, value = (
                pd.to_numeric(r["day"], errors="coerce"),
                pd.to_numeric(r["documented"], errors="coerce"),
            )
            start = pd.to_numeric(r[start_col], errors="coerce") if start_col else np.nan
            if not (np.isfinite(day) and np.isfinite(value) and np.isfinite(start) and start > 0):
                continue
            src = " ".join(str(r[c]) for c in ("document", "section") if c in claims.columns)
            rows.append(
                {
                    "policy": policy_id(r["policy"]),
                    "day": float(day),
                    "start": float(start),
                    "value": float(value),
                    "source": src.strip(),
                    "label": str(r.get("statement", r.get("id", ""))),
                    "claim": str(r.get("id", "")),
                }
            )
    if not rows:
        rows = [
            {
                "policy": e.policy,
                "day": float(e.day),
                "start": e.start,
                "value": e.value,
                "source": e.source,
                "label": e.label,
                "claim": e.claim,
            }
            for e in declared_worked_examples()
        ]
    out = pd.DataFrame(rows)
    out["ratio"] = out["value"] / out["start"]
    return out


def normalise_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """Add ``relative``: each (policy, pattern) curve divided by its day-0 strength (by its
    maximum when day 0 is 0, e.g. Kernle's salience of a never-accessed memory)."""
    _require(curves, ("policy", "pattern", "day", "strength"), "decay curves")
    out = curves.copy()
    rel = np.full(len(out), np.nan)
    for _, g in out.groupby(["policy", "pattern"], sort=False):
        g = g.sort_values("day")
        s = g["strength"].to_numpy(dtype=np.float64)
        ref = (
            s[0]
            if len(s) and np.isfinite(s[0]) and s[0] > 0
            else np.nanmax(np.where(np.isfinite(s), s, np.nan), initial=0.0)
        )
        rel[out.index.get_indexer(g.index)] = s / ref if ref and ref > 0 else np.nan
    out["relative"] = rel
    return out


def decay_curves_figure(
    curves: pd.DataFrame,
    examples: pd.DataFrame | None = None,
    *,
    patterns: Mapping[str, str] | None = None,
    normalise: bool = True,
    y_max: float | None = 2.2,
):
    """Figure 1: strength vs days, one panel per access pattern, one line per policy.

    ``curves``: columns policy, pattern, day, strength. Each policy's strength is in its own
    units (pai/izzie/engram in [0, 1], Cosmo salience, Kernle's unbounded salience), so by
    default each curve is divided by its day-0 value. ``examples`` (see ``worked_examples``)
    are drawn as points on the never-accessed panel (ratio value / start when normalised).
    With a ``retrievable`` column, a cross marks the day a memory stops being retrievable
    (pruned, forgotten, archived). Curves above ``y_max`` are clipped and their peak noted."""
    _require(curves, ("policy", "pattern", "day", "strength"), "decay curves")
    data = normalise_curves(curves) if normalise else curves.assign(relative=curves["strength"])
    pats = list(patterns or dict.fromkeys(data["pattern"]))
    titles = dict(CURVE_PATTERNS, **(patterns or {}))
    fig = new_figure(5.0 * len(pats), 4.6)
    axes = np.atleast_1d(fig.subplots(1, len(pats), sharey=True))
    axes[0].set_ylim(bottom=-0.03)
    policies = ordered_policies(data["policy"])
    for ax, pat in zip(axes, pats):
        sub = data[data["pattern"] == pat]
        off_scale: list[str] = []
        for p in policies:
            g = sub[sub["policy"] == p].sort_values("day")
            if g.empty:
                continue
            mem = str(g["memory"].iloc[0]) if "memory" in g and g["memory"].iloc[0] else ""
            ax.plot(
                g["day"],
                g["relative"],
                label=f"{p} ({mem})" if mem else p,
                linewidth=1.8,
                **policy_style(p),
            )
            if "retrievable" in g:
                gone = g[~g["retrievable"].astype(bool)]
                if len(gone):
                    first = gone.iloc[0]
                    ax.plot(
                        [first["day"]],
                        [min(first["relative"], y_max or np.inf)],
                        marker="X",
                        markersize=9,
                        color=policy_color(p),
                        linestyle="none",
                        zorder=6,
                    )
            peak = float(np.nanmax(g["relative"])) if g["relative"].notna().any() else np.nan
            if y_max is not None and peak > y_max:
                off_scale.append(f"{p} peaks at {peak:.1f}×")
        if off_scale:
            ax.set_ylim(top=y_max)
            ax.text(
                0.98,
                0.97,
                "off scale: " + "; ".join(off_scale),
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize=8,
                color="0.2",
                bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.9},
            )
        if pat == "never" and examples is not None and len(examples):
            for _, e in examples.iterrows():
                y = e["ratio"] if normalise else e["value"]
                ax.plot(
                    [e["day"]],
                    [y],
                    marker="o",
                    markersize=8,
                    linestyle="none",
                    markerfacecolor="white",
                    markeredgewidth=2,
                    markeredgecolor=policy_color(e["policy"]),
                    zorder=5,
                )
            ax.plot(
                [],
                [],
                marker="o",
                linestyle="none",
                markerfacecolor="white",
                markeredgecolor="0.2",
                markeredgewidth=2,
                label="document's worked example",
            )
        if "retrievable" in sub and (~sub["retrievable"].astype(bool)).any():
            ax.plot(
                [],
                [],
                marker="X",
                linestyle="none",
                color="0.2",
                markersize=8,
                label="no longer retrievable (pruned / forgotten / archived)",
            )
        ax.set_title(f"{titles.get(pat, pat)}  ({pat})", fontsize=10)
        ax.set_xlabel("days since the memory was created")
        ax.grid(alpha=0.3)
        ax.set_xlim(left=0)
    axes[0].set_ylabel(
        "strength ÷ day-0 strength" if normalise else "strength (each policy's own units)"
    )
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5), fontsize=8)
    note = (
        " Each policy's documented strength divided by its value at day 0 (units differ: "
        "confidence, salience, retrieval strength)."
        if normalise
        else ""
    )
    fig.suptitle("Decay curves of one memory under three access patterns." + note, fontsize=10)
    return fig


def curve_function() -> Callable[..., pd.DataFrame]:
    """``memsim.curve`` the function (unwrapped if a module of the same name, as the tool's
    module once was, has shadowed it on the package)."""
    import memsim

    fn = memsim.curve
    return fn if callable(fn) else fn.curve


def memory_label(memory: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (memory or {}).items())


def compute_curves(
    policies: Sequence[str],
    patterns: Iterable[str] = tuple(CURVE_PATTERNS),
    days: str | Sequence[float] = CURVE_DAYS,
    *,
    memories: Mapping[str, Mapping[str, Any]] | None = None,
    notice: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Decay curves of ``policies`` (seed 0) under ``patterns`` via ``memsim.curve``, each
    planting ``memories[policy]`` (default ``curve_memories()``; policies not named get the
    policy's default memory); a policy the curve tool rejects is left out with a notice.
    Columns: policy, pattern, day, strength, status, memory (the planted attributes),
    retrievable (the status is one the policy can still recall)."""
    curve = curve_function()
    memories = curve_memories() if memories is None else memories
    frames = []
    for p in policies:
        memory = {k: str(v) for k, v in (memories.get(policy_id(p)) or {}).items()}
        try:
            retrievable = frozenset(spec(p).load().statuses.retrievable)
        except (MemsimError, ImportError, AttributeError):
            retrievable = None
        for pat in patterns:
            try:
                c = curve(p, pat, days, memory=memory or None)
            except (MemsimError, NotImplementedError, ValueError) as e:
                if notice:
                    notice(f"decay curve of {p} under {pat} skipped: {e}")
                break
            frames.append(
                pd.DataFrame(
                    {
                        "policy": policy_id(p),
                        "pattern": pat,
                        "day": c["day"].to_numpy(np.float64),
                        "strength": c["strength"].to_numpy(np.float64),
                        "status": c["status"].astype(str).to_numpy() if "status" in c else "",
                        "memory": memory_label(memory),
                    }
                )
            )
            frames[-1]["retrievable"] = (
                frames[-1]["status"].isin(retrievable) if retrievable is not None else True
            )
    if not frames:
        return pd.DataFrame(
            columns=["policy", "pattern", "day", "strength", "status", "memory", "retrievable"]
        )
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------- 2. recall and footprint over time


def rolling_by_time(frame: pd.DataFrame, value: str, window: float) -> pd.DataFrame:
    """Time-based rolling mean of ``value`` over every row (all seeds and queries) in a
    trailing window of ``window`` days, evaluated at each distinct day (floor of time)."""
    v = frame[["time", value]].dropna()
    if v.empty:
        return pd.DataFrame(columns=["day", value])
    day = np.floor(v["time"].to_numpy(np.float64)).astype(np.int64)
    sums = pd.Series(v[value].to_numpy(np.float64)).groupby(day).sum()
    counts = pd.Series(np.ones(len(v))).groupby(day).sum()
    full = np.arange(day.min(), day.max() + 1)
    w = max(int(round(window)), 1)
    s = sums.reindex(full, fill_value=0.0).rolling(w, min_periods=1).sum()
    n = counts.reindex(full, fill_value=0.0).rolling(w, min_periods=1).sum()
    present = np.isin(full, sums.index)
    return pd.DataFrame({"day": full[present], value: (s / n).to_numpy()[present]})


def overlapping_series(series: Mapping[str, pd.Series], tol: float = 0.02) -> list[list[str]]:
    """Groups of policies whose series coincide within ``tol`` of the larger value at every
    shared day, so a figure can say which lines hide which."""
    groups: list[list[str]] = []
    for name, s in series.items():
        for g in groups:
            ref = series[g[0]]
            a, b = s.align(ref, join="inner")
            if len(a) and np.all(
                np.abs(a - b) <= tol * np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)
            ):
                g.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]


def synthetic_scenarios(per_query: pd.DataFrame) -> list[str]:
    return [
        s for s in dict.fromkeys(per_query["scenario"].astype(str)) if s.startswith("synthetic:")
    ]


def recall_footprint_over_time_figure(
    per_query: pd.DataFrame, scenarios: Sequence[str] | None = None, *, window: float = 14.0
):
    """Figure 2: per scenario (rows), recall@k over simulated time as a trailing ``window``-day
    rolling mean over queries and seeds (left) beside the footprint, the number of
    retrievable memories at each query, averaged over seeds (right)."""
    _require(
        per_query, ("policy", "scenario", "seed", "time", "recall", "footprint"), "per-query table"
    )
    scen = list(scenarios) if scenarios is not None else synthetic_scenarios(per_query)
    if not scen:
        raise MemsimError("per-query table: no synthetic scenario to plot over time")
    fig = new_figure(11.0, 2.9 * len(scen) + 0.6)
    axes = np.atleast_2d(fig.subplots(len(scen), 2, squeeze=False))
    policies = ordered_policies(per_query["policy"])
    ks = sorted(int(k) for k in per_query["k"].dropna().unique()) if "k" in per_query else []
    klabel = f"recall@{ks[0]}" if len(ks) == 1 else "recall@k"
    for row, s in enumerate(scen):
        sub = per_query[per_query["scenario"] == s]
        left, right = axes[row]
        series: dict[str, pd.Series] = {}
        for p in policies:
            g = sub[sub["policy"] == p]
            if g.empty:
                continue
            r = rolling_by_time(g, "recall", window)
            left.plot(r["day"], r["recall"], label=p, linewidth=1.6, **policy_style(p))
            f = g.groupby(np.floor(g["time"]).astype(np.int64))["footprint"].mean()
            right.plot(f.index, f.to_numpy(), label=p, linewidth=1.6, **policy_style(p))
            series[p] = f
        same = overlapping_series(series)
        left.set_ylim(-0.02, 1.02)
        left.set_ylabel(f"{klabel} ({window:g}-day rolling mean)")
        right.set_ylabel("retrievable memories")
        nseeds = sub["seed"].nunique()
        left.set_title(
            f"{s}: recall over time ({nseeds} seed{'s' if nseeds != 1 else ''})", fontsize=10
        )
        right.set_title(f"{s}: footprint at query times", fontsize=10)
        for ax in (left, right):
            ax.grid(alpha=0.3)
            ax.set_xlabel("simulated time (days)")
        if same:  # say which footprint lines hide which (within 2%)
            right.set_xlabel(
                "simulated time (days)\nsame line: " + "; ".join(" = ".join(g) for g in same),
                fontsize=9,
            )
    axes[0, 1].legend(loc="upper left", fontsize=8, framealpha=0.9)
    fig.suptitle("Recall and memory footprint over simulated time", fontsize=11)
    return fig


# ------------------------------------------------------------------ summary helpers


def metric_table(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows of the tidy summary for one metric: scenario, policy, mean, ci_low, ci_high, n."""
    _require(
        summary, ("scenario", "policy", "metric", "mean", "ci_low", "ci_high"), "summary table"
    )
    t = summary[summary["metric"] == metric]
    cols = [c for c in ("scenario", "policy", "mean", "ci_low", "ci_high", "n") if c in t.columns]
    return t[cols].reset_index(drop=True)


def _err(t: pd.DataFrame) -> np.ndarray:
    """Asymmetric error bars from CI columns (0 where the CI is missing)."""
    lo = (t["mean"] - t["ci_low"]).to_numpy(np.float64)
    hi = (t["ci_high"] - t["mean"]).to_numpy(np.float64)
    return np.vstack([np.nan_to_num(np.clip(lo, 0, None)), np.nan_to_num(np.clip(hi, 0, None))])


# ------------------------------------------------------------------ 3. recall vs footprint


def recall_vs_footprint_figure(summary: pd.DataFrame, *, footprint_metric: str = "footprint_mean"):
    """Figure 3: one point per (policy, scenario): mean recall@k against mean footprint, with
    95% CI whiskers on both axes; one panel per scenario (footprints differ by scenario)."""
    rec = metric_table(summary, "recall")
    fp = metric_table(summary, footprint_metric)
    both = rec.merge(fp, on=["scenario", "policy"], suffixes=("_r", "_f"))
    both = both[np.isfinite(both["mean_r"]) & np.isfinite(both["mean_f"])]
    if both.empty:
        raise MemsimError(f"summary table: no scenario has both recall and {footprint_metric}")
    scen = list(dict.fromkeys(both["scenario"]))
    ncols = min(4, len(scen))
    nrows = math.ceil(len(scen) / ncols)
    fig = new_figure(3.7 * ncols, 3.0 * nrows + 0.6)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for i, (ax, s) in enumerate(zip(axes, scen)):
        g = both[both["scenario"] == s]
        same = _same_points(g)
        for p in ordered_policies(g["policy"]):
            r = g[g["policy"] == p]
            xerr = _err(
                r.rename(columns={"mean_f": "mean", "ci_low_f": "ci_low", "ci_high_f": "ci_high"})
            )
            yerr = _err(
                r.rename(columns={"mean_r": "mean", "ci_low_r": "ci_low", "ci_high_r": "ci_high"})
            )
            ax.errorbar(
                r["mean_f"],
                r["mean_r"],
                xerr=xerr,
                yerr=yerr,
                fmt="o",
                markersize=7,
                color=policy_color(p),
                ecolor=policy_color(p),
                elinewidth=1.2,
                capsize=3,
                label=p,
                mfc="white" if is_baseline(p) else policy_color(p),
            )
        lo_f, hi_f = g["mean_f"].min(), g["mean_f"].max()
        if lo_f > 0 and hi_f / lo_f > 20:  # keep-all can hold 100x what a pruning policy keeps
            ax.set_xscale("log")
        ax.set_title(short_scenario(s), fontsize=9)
        note = ("\nsame point: " + "; ".join(" = ".join(x) for x in same)) if same else ""
        ax.set_xlabel(
            "mean footprint (memories"
            + (", log scale)" if ax.get_xscale() == "log" else ")")
            + note,
            fontsize=8,
        )
        if i % ncols == 0:
            ax.set_ylabel("recall@k (mean over queries)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    for ax in axes[len(scen) :]:
        ax.set_visible(False)
    handles, labels = [], []
    for ax in axes[: len(scen)]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 7), fontsize=8)
    fig.suptitle(
        "Recall vs footprint: up and to the left is better (whiskers: 95% bootstrap CI; "
        "hollow = baseline)",
        fontsize=10,
    )
    return fig


def _same_points(g: pd.DataFrame) -> list[list[str]]:
    """Policies drawn at the same (footprint, recall) point, which hide one another."""
    key = g.assign(kx=g["mean_f"].round(6), ky=g["mean_r"].round(6))
    groups = []
    for _, grp in key.groupby(["kx", "ky"], sort=False):
        if len(grp) > 1:
            groups.append(ordered_policies(grp["policy"]))
    return groups


# ------------------------------------------------------------------ 4. stale@k


def grouped_bars(
    ax,
    table: pd.DataFrame,
    groups: Sequence[str],
    policies: Sequence[str],
    group_col: str = "scenario",
) -> None:
    """Bars of ``mean`` with CI whiskers: one group per value of ``group_col``, one bar per
    policy."""
    width = 0.8 / max(len(policies), 1)
    x = np.arange(len(groups))
    for i, p in enumerate(policies):
        t = table[table["policy"] == p].set_index(group_col).reindex(list(groups))
        means = t["mean"].to_numpy(np.float64)
        err = _err(t.reset_index()) if {"ci_low", "ci_high"} <= set(t.columns) else None
        ax.bar(
            x - 0.4 + width * (i + 0.5),
            np.nan_to_num(means),
            width,
            yerr=err,
            capsize=2,
            color=policy_color(p),
            label=p,
            edgecolor="white",
            linewidth=0.5,
            hatch="//" if is_baseline(p) else None,
            error_kw={"elinewidth": 0.9, "ecolor": "0.35"},
        )
    ax.set_xticks(x, [short_scenario(g) for g in groups], rotation=25, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def stale_figure(summary: pd.DataFrame):
    """Figure 4: stale@k per scenario, grouped bars per policy with 95% bootstrap CIs."""
    t = metric_table(summary, "stale")
    t = t[np.isfinite(t["mean"])]
    if t.empty:
        raise MemsimError("summary table: no stale@k rows")
    all_scen = list(dict.fromkeys(t["scenario"]))
    # a scenario where no policy ever returns a stale memory is a row of empty bars: name it instead
    clean = [
        sc
        for sc in all_scen
        if not (
            t.loc[t["scenario"] == sc, "ci_high"].fillna(0).max() > 0
            or t.loc[t["scenario"] == sc, "mean"].max() > 0
        )
    ]
    scen = [sc for sc in all_scen if sc not in clean] or all_scen
    t = t[t["scenario"].isin(scen)]
    fig = new_figure(min(16.0, max(7.0, 1.3 * len(scen) + 3)), 5.2 if clean else 4.8)
    ax = fig.subplots()
    grouped_bars(ax, t, scen, ordered_policies(t["policy"]))
    ax.set_ylabel("stale@k: share of returned memories\nasserting only superseded values")
    ax.set_xlabel("scenario")
    ax.set_ylim(bottom=0)
    fig.legend(
        *ax.get_legend_handles_labels(), loc="outside right upper", fontsize=8, title="policy"
    )
    ax.set_title(
        "Stale memories in the top k (lower is better; whiskers: 95% bootstrap CI)", fontsize=10
    )
    if clean and scen is not all_scen:
        loco = [sc for sc in clean if str(sc).startswith("locomo")]
        names = [short_scenario(sc) for sc in clean if sc not in loco]
        if loco:
            names.append(f"LoCoMo ({len(loco)} sample{'s' if len(loco) > 1 else ''})")
        note = f"not shown, no policy returned a stale memory: {', '.join(names)}"
        ax.set_xlabel("scenario\n" + "\n".join(textwrap.wrap(note, 150)), fontsize=9)
    return fig


# ------------------------------------------------------------------ 5. LoCoMo


def _mean_ci(values: np.ndarray, units: np.ndarray) -> tuple[float, float, float, int]:
    """Mean, 95% bootstrap CI resampling ``units`` (a question asked under several seeds of
    a stream that ignores the seed is one unit), and the number of units."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    if not ok.any():
        return (np.nan, np.nan, np.nan, 0)
    lo, hi, n = cluster_bootstrap_ci(v, np.asarray(units), n_resamples=500)
    return (float(v[ok].mean()), lo, hi, n)


def locomo_tables(
    per_query: pd.DataFrame, bins: Sequence[float] = AGE_BINS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LoCoMo recall@k by question category (``group``) and by evidence-age bin: columns
    policy, category|age, mean, ci_low, ci_high, n."""
    _require(
        per_query, ("policy", "scenario", "recall", "group", "evidence_age"), "per-query table"
    )
    lq = per_query[per_query["scenario"].astype(str).str.startswith("locomo")]
    if lq.empty:
        raise MemsimError("per-query table: no LoCoMo scenario")
    labels = age_bin_labels(bins)
    lq = lq.assign(
        age=pd.cut(lq["evidence_age"], list(bins), right=False, labels=labels),
        category=lq["group"].astype(str).replace("", "(none)"),
    )
    if "query_id" in lq:  # a question, whatever the seeds: LoCoMo ignores the seed
        lq = lq.assign(_unit=lq["scenario"].astype(str) + "|" + lq["query_id"].astype(str))
    else:
        lq = lq.assign(_unit=np.arange(len(lq)))
    by_cat, by_age = [], []
    for (p, c), g in lq.groupby(["policy", "category"], sort=True):
        m, lo, hi, n = _mean_ci(g["recall"].to_numpy(), g["_unit"].to_numpy())
        by_cat.append({"policy": p, "category": c, "mean": m, "ci_low": lo, "ci_high": hi, "n": n})
    for (p, a), g in lq.groupby(["policy", "age"], sort=True, observed=True):
        m, lo, hi, n = _mean_ci(g["recall"].to_numpy(), g["_unit"].to_numpy())
        by_age.append({"policy": p, "age": str(a), "mean": m, "ci_low": lo, "ci_high": hi, "n": n})
    return pd.DataFrame(by_cat), pd.DataFrame(by_age)


def locomo_figure(per_query: pd.DataFrame):
    """Figure 5: LoCoMo recall@k by question category (left) and by evidence age (right)."""
    by_cat, by_age = locomo_tables(per_query)
    fig = new_figure(12.0, 4.8)
    left, right = fig.subplots(1, 2)
    policies = ordered_policies(by_cat["policy"])
    cats = sorted(by_cat["category"].unique())
    n_cat = by_cat.groupby("category")["n"].max().reindex(cats)
    grouped_bars(left, by_cat, cats, policies, group_col="category")
    left.set_xticks(
        np.arange(len(cats)),
        [f"{c}\n(n={int(n)})" for c, n in n_cat.items()],
        rotation=0,
        ha="center",
        fontsize=8,
    )
    left.set_xlabel("question category")
    left.set_title("LoCoMo recall@k by question category", fontsize=10)
    ages = [a for a in age_bin_labels() if a in set(by_age["age"])]
    n_age = by_age.groupby("age")["n"].max().reindex(ages)
    grouped_bars(right, by_age, ages, policies, group_col="age")
    right.set_xticks(
        np.arange(len(ages)),
        [f"{a}\n(n={int(n)})" for a, n in n_age.items()],
        rotation=0,
        ha="center",
        fontsize=8,
    )
    right.set_xlabel("evidence age at question time (days since the newest evidence)")
    right.set_title("LoCoMo recall@k by evidence age", fontsize=10)
    for ax in (left, right):
        ax.set_ylabel("recall@k (mean over questions)")
        ax.set_ylim(0, 1.05)
    fig.legend(
        *right.get_legend_handles_labels(), loc="outside right upper", fontsize=8, title="policy"
    )
    fig.suptitle(
        "LoCoMo (whiskers: 95% bootstrap CI; n = questions per bar, largest over policies)",
        fontsize=10,
    )
    return fig


# ------------------------------------------------------------------ 6. latency

_N_KEYS = ("n_memories", "memories", "n", "size", "rows", "n_rows", "store_size")
# Readable names of the variants benchmarks/ times (bench_recall.py); others keep their own.
SERIES_LABELS = {
    "bare_matvec": "bare X @ q",
    "numpy": "numpy: full scores + top-k",
    "fused": "fused kernel (policies.pai_fastscore)",
    "policy": "pai recall, as written",
    "wired": "pai recall, fastscore wired",
}
_TIME_KEYS = ("median", "mean", "seconds", "time", "time_s", "min")
_FLOOR_WORDS = ("bare", "floor", "x@q", "matvec", "bandwidth")


def _find_n(d: Mapping[str, Any]) -> float | None:
    for k in _N_KEYS:
        if k in d:
            try:
                return float(d[k])
            except (TypeError, ValueError):
                pass
    return None


def _n_from_text(text: str) -> float | None:
    m = re.search(r"(?:n|n_memories|memories|size|rows)[=_\-]?(\d+)", text)
    return float(m.group(1)) if m else None


def _operation(text: str) -> str:
    """A benchmark group without its size tokens: ``recall 1 query n=100k`` ->
    ``recall 1 query``."""
    return re.sub(r"\s*\b(?:n|size|memories)\s*=\s*\S+", "", str(text)).strip(" ,;-")


def _is_floor(*texts: Any) -> bool:
    text = " ".join(str(t) for t in texts).lower()
    return any(w in text for w in _FLOOR_WORDS)


def benchmark_frame(data: Any) -> pd.DataFrame:
    """Latency records from a benchmarks JSON of any of the shapes seen: pytest-benchmark's
    ``{"benchmarks": [{name, group, params, stats: {median, ...}, extra_info}]}``, or a list
    (or ``{"results"|"records"|"rows": [...]}``) of flat records with a policy / variant /
    name, a memory count and a time. A record whose ``extra_info.seconds`` maps variant names
    to times (the interleaved target runs) gives one row per variant; the record itself, a
    ratio against a reference, is not a latency. Columns: series, operation, n, seconds,
    floor (True for the bare ``X @ q`` reference). Records without a memory count or a time
    are dropped."""
    if isinstance(data, Mapping):
        records = []
        for key in ("benchmarks", "results", "records", "rows", "latency", "targets"):
            if isinstance(data.get(key), list):
                records += data[key]
    elif isinstance(data, list):
        records = data
    else:
        records = []
    rows = []
    for r in records:
        if not isinstance(r, Mapping):
            continue
        params = r["params"] if isinstance(r.get("params"), Mapping) else {}
        extra = r["extra_info"] if isinstance(r.get("extra_info"), Mapping) else {}
        flat = {**r, **params, **extra}
        name = str(r.get("name", "") or "")
        n = _find_n(flat)
        if n is None:
            n = _n_from_text(name)
        group = str(r.get("group") or "")
        operation = _operation(flat.get("operation") or flat.get("op") or group)
        per_variant = flat.get("seconds")
        if isinstance(per_variant, Mapping):  # interleaved timings of several variants at n
            # only timings measured beside the floor are latencies at n memories (an ingest
            # target's n counts episodes, a batch target's times cover many queries)
            if n and any(_is_floor(v) for v in per_variant):
                for variant, secs in per_variant.items():
                    if isinstance(secs, (int, float)) and secs > 0:
                        rows.append(
                            {
                                "series": SERIES_LABELS.get(str(variant), str(variant)),
                                "operation": "" if operation in ("targets", "") else operation,
                                "n": n,
                                "seconds": float(secs),
                                "floor": _is_floor(variant),
                            }
                        )
            continue
        if "target" in extra or group == "targets":  # a ratio record, or a time not at n
            continue
        stats = r["stats"] if isinstance(r.get("stats"), Mapping) else flat
        seconds = None
        for k in _TIME_KEYS:
            if k in stats and isinstance(stats[k], (int, float)) and not isinstance(stats[k], bool):
                seconds = float(stats[k])
                break
        if seconds is None:
            for k in ("ms", "median_ms", "mean_ms"):
                if isinstance(flat.get(k), (int, float)):
                    seconds = float(flat[k]) / 1e3
                    break
        if n is None or seconds is None or not (n > 0 and seconds > 0):
            continue
        series = str(
            flat.get("policy")
            or flat.get("series")
            or flat.get("variant")
            or flat.get("impl")
            or re.sub(r"\[.*\]$", "", name).removeprefix("test_")
            or "?"
        )
        series = SERIES_LABELS.get(series, series)
        floor = bool(flat.get("floor")) or _is_floor(series, name, flat.get("kind", ""))
        rows.append(
            {"series": series, "operation": operation, "n": n, "seconds": seconds, "floor": floor}
        )
    out = pd.DataFrame(rows, columns=["series", "operation", "n", "seconds", "floor"])
    named = [o for o in dict.fromkeys(out["operation"]) if o]
    if len(named) == 1:  # operation-less rows belong to the only operation there is
        out.loc[out["operation"] == "", "operation"] = named[0]
    elif not named:  # the floor is a one-query scan: these are one-query recall latencies
        out["operation"] = "recall of one query"
    return out


def latency_figure(bench: pd.DataFrame):
    """Figure 6: latency vs number of memories on log-log axes, one line per series (policy or
    kernel) per operation panel, with the bandwidth floor (the bare ``X @ q`` product) in black:
    measured points, and a dotted line through them in proportion to n (the product reads
    every row once), so a single measured size still shows where the floor runs."""
    _require(bench, ("series", "operation", "n", "seconds", "floor"), "benchmarks")
    if bench.empty:
        raise MemsimError("benchmarks: no record with a memory count and a time")
    ops = list(dict.fromkeys(bench.loc[~bench["floor"], "operation"])) or [""]
    fig = new_figure(5.2 * len(ops), 4.6)
    axes = np.atleast_1d(fig.subplots(1, len(ops), squeeze=False)).ravel()
    floors = bench[bench["floor"]]
    for ax, op in zip(axes, ops):
        sub = bench[(~bench["floor"]) & (bench["operation"] == op)]
        # the floor of this operation, or an operation-less floor (it bounds every scan)
        mine = floors[floors["operation"] == op]
        floor = (
            (mine if len(mine) else floors[floors["operation"] == ""])
            .groupby("n")["seconds"]
            .median()
        )
        for i, s in enumerate(ordered_policies(sub["series"])):
            g = sub[sub["series"] == s].groupby("n")["seconds"].median().sort_index()
            first = s.split()[0] if s.split() else s
            # a series named after a policy ("pai recall, ...") wears the policy's colour
            known = palette()
            color = known[first] if first in known else COLOURS[i % len(COLOURS)]
            ax.plot(
                g.index,
                g.to_numpy() * 1e3,
                marker=MARKERS[i % len(MARKERS)],
                markersize=7,
                label=s,
                color=color,
                linestyle="-" if len(g) > 1 else "none",
            )
        if len(floor):
            ax.plot(
                floor.index,
                floor.to_numpy() * 1e3,
                color="black",
                linestyle="none",
                marker="x",
                markersize=9,
                markeredgewidth=2,
                label="bandwidth floor: bare X @ q (measured)",
            )
            lo = min(sub["n"].min() if len(sub) else floor.index.min(), floor.index.min())
            hi = max(sub["n"].max() if len(sub) else floor.index.max(), floor.index.max())
            xs = np.geomspace(max(lo / 3, 1.0), hi * 3, 50)
            # X @ q reads every byte of X once: its time grows in proportion to n
            per_row = float(np.median(floor.to_numpy() / floor.index.to_numpy(dtype=np.float64)))
            ax.plot(
                xs,
                per_row * xs * 1e3,
                color="black",
                linewidth=1.2,
                linestyle=":",
                label="floor extended in proportion to n",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        from matplotlib.ticker import FuncFormatter

        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(
            FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else "")
        )
        sizes = sorted(set(bench.loc[bench["operation"].isin([op, ""]), "n"]))
        ax.set_xlabel(
            "memories in the store"
            + (f" (one size measured: {sizes[0]:,.0f})" if len(sizes) == 1 else "")
        )
        ax.set_ylabel("latency per call (ms, median)")
        ax.set_title(op or "latency", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, framealpha=0.9)
    fig.suptitle("Latency vs store size (log-log; median over runs of the same size)", fontsize=11)
    return fig


# ------------------------------------------------------------------ every figure

FIGURES = (
    "decay_curves",
    "recall_footprint_over_time",
    "recall_vs_footprint",
    "stale",
    "locomo",
    "latency",
    "loss",
    "frontier",
)


def _read_table(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def build_figures(
    *,
    results: str | Path | None = "results/standard",
    benchmarks: str | Path | None = "results/benchmarks.json",
    claims: str | Path | None = "results/claims.csv",
    curves: bool = True,
    only: Sequence[str] | None = None,
    notice: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
) -> dict[str, Any]:
    """Every figure whose inputs exist, by name; a missing input gives one notice line."""
    wanted = [f for f in FIGURES if not only or f in only]
    figs: dict[str, Any] = {}
    summary = per_query = None
    if results is not None:
        root = Path(results)
        summary = _read_table(root / "summary.csv")
        per_query = _read_table(root / "per_query.parquet")
    builders: dict[str, Callable[[], Any]] = {}
    if "decay_curves" in wanted:

        def _curves():
            claims_df = _read_table(Path(claims)) if claims else None
            data = compute_curves(list(list_policies()["id"]), notice=notice)
            if data.empty:
                raise MemsimError("no policy produced a decay curve")
            return decay_curves_figure(data, worked_examples(claims_df))

        if curves:
            builders["decay_curves"] = _curves
        else:
            notice("skipped decay_curves: disabled (--no-curves)")
    needs: dict[str, tuple[str, pd.DataFrame | None, Callable[[pd.DataFrame], Any]]] = {
        "recall_footprint_over_time": (
            "per_query.parquet",
            per_query,
            recall_footprint_over_time_figure,
        ),
        "recall_vs_footprint": ("summary.csv", summary, recall_vs_footprint_figure),
        "stale": ("summary.csv", summary, stale_figure),
        "locomo": ("per_query.parquet", per_query, locomo_figure),
    }
    if results is not None:  # the calibration figures: calibration_figures.py
        needs["loss"] = ("per_query.parquet", per_query, loss_figure)
        frontier = _read_table(Path(results) / "frontier.csv")
        if per_query is not None and summary is not None and frontier is not None:
            needs["frontier"] = (
                "frontier.csv",
                per_query,
                functools.partial(frontier_figure, summary=summary, frontier=frontier),
            )
        else:
            needs["frontier"] = ("frontier.csv", None, loss_figure)  # skipped: inputs missing
    for name, (file, frame, make) in needs.items():
        if name not in wanted:
            continue
        if frame is None:
            notice(f"skipped {name}: no {Path(results or '.') / file}")
        else:
            builders[name] = functools.partial(make, frame)
    if "latency" in wanted:
        bpath = Path(benchmarks) if benchmarks else None
        if bpath is None or not bpath.exists():
            notice(f"skipped latency: no {bpath}")
        else:
            data = read_json(bpath)
            builders["latency"] = lambda: latency_figure(benchmark_frame(data))
    for name in wanted:
        if name not in builders:
            continue
        try:
            figs[name] = builders[name]()
        except ImportError as e:
            notice(f"skipped {name}: {e}")
        except MemsimError as e:
            notice(f"skipped {name}: {e}")
    return figs


def write_figures(out: str | Path = "results/figures", **kwargs: Any) -> list[Path]:
    """Build every available figure and write ``<out>/<name>.png``; the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in build_figures(**kwargs).items():
        path = out / f"{name}.png"
        tmp = path.with_name(f".{path.name}.tmp.png")
        fig.savefig(tmp, dpi=DPI)
        tmp.replace(path)
        written.append(path)
    return written
