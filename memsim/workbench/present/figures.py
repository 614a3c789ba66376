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
from memsim.engine.metric_registry import metric_direction
from memsim.engine.registry import spec

from ..runs.execution import list_policies
from ..runs.results import read_json
from ..stats import cluster_t_ci
from .calibration import panels
from .calibration_figures import frontier_figure, loss_figure
from .scorecard import scorecard_frame
from .small_multiples import CONTEXT_GREY, dot_matrix, label_of, same_as_parent, scatter_grid
from .style import (
    AGE_BINS,
    COLOURS,
    DEFAULT_PROTOCOL,
    DPI,
    MARKERS,
    age_bin_labels,
    direct_labels,
    family_groups,
    new_figure,
    one_protocol,
    ordered_policies,
    palette,
    policy_color,
    policy_id,
    policy_style,
    registered_policies,
    short_scenario,
    variant_parent,
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


def strength_rows(curves: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """(row title, policies) of the decay figure, one unit per row: the policies whose strength
    stays in [0, 1] under every pattern (a confidence, retrievability or retention, drawn on
    one [0, 1] axis) one row per family; a policy whose strength leaves [0, 1] (a salience on
    its own scale) in a row of its own, shared with its variants."""
    unit: dict[str, bool] = {}
    for p, g in curves.groupby("policy", sort=False):
        s = g["strength"].to_numpy(np.float64)
        s = s[np.isfinite(s)]
        unit[str(p)] = bool(len(s) == 0 or (s.min() >= -1e-9 and s.max() <= 1 + 1e-9))
    rows: list[tuple[str, list[str]]] = []
    for fam, members in family_groups(unit):
        bounded = [p for p in members if unit[p]]
        if bounded:
            rows.append((f"{fam}: strength in [0, 1]", bounded))
    own: dict[str, list[str]] = {}
    for p in ordered_policies(unit):
        if not unit[p]:
            own.setdefault(variant_parent(p) or p, []).append(p)
    for parent, members in own.items():
        rows.append((f"{parent}: strength on its own scale (leaves [0, 1])", members))
    return rows


def decay_curves_figure(
    curves: pd.DataFrame,
    examples: pd.DataFrame | None = None,
    *,
    patterns: Mapping[str, str] | None = None,
):
    """Figure 1: how fast does each policy forget one memory, and what does access do? Strength
    against days, one column per access pattern, one row per kind of strength (one unit per
    axis, see ``strength_rows``), each policy's line named at its end.

    ``curves``: columns policy, pattern, day, strength. ``examples`` (see
    ``worked_examples``) are drawn as hollow points on the never-accessed panels. With a
    ``retrievable`` column, a cross marks the day a memory stops being retrievable (pruned,
    forgotten, archived)."""
    _require(curves, ("policy", "pattern", "day", "strength"), "decay curves")
    pats = list(patterns or dict.fromkeys(curves["pattern"]))
    titles = dict(CURVE_PATTERNS, **(patterns or {}))
    rows = strength_rows(curves)
    fig = new_figure(4.6 * len(pats) + 1.2, 2.4 * len(rows) + 1.2)
    axes = np.atleast_2d(fig.subplots(len(rows), len(pats), squeeze=False, sharex=True))
    any_gone = False
    for r, (row_title, members) in enumerate(rows):
        bounded = row_title.endswith("[0, 1]")
        for c, pat in enumerate(pats):
            ax = axes[r, c]
            sub = curves[(curves["pattern"] == pat) & curves["policy"].isin(members)]
            ends = []
            for p in members:
                g = sub[sub["policy"] == p].sort_values("day")
                if g.empty:
                    continue
                mem = str(g["memory"].iloc[0]) if "memory" in g and g["memory"].iloc[0] else ""
                ax.plot(g["day"], g["strength"], linewidth=1.5, **policy_style(p))
                ends.append(
                    (
                        float(g["day"].iloc[-1]),
                        float(g["strength"].iloc[-1]),
                        f"{p} ({mem})" if mem and c == len(pats) - 1 else p,
                        policy_color(p),
                    )
                )
                if "retrievable" in g:
                    gone = g[~g["retrievable"].astype(bool)]
                    if len(gone):
                        any_gone = True
                        first = gone.iloc[0]
                        ax.plot(
                            [first["day"]],
                            [first["strength"]],
                            marker="X",
                            markersize=8,
                            color=policy_color(p),
                            linestyle="none",
                            zorder=6,
                        )
            if pat == "never" and examples is not None and len(examples):
                for _, e in examples[examples["policy"].isin(members)].iterrows():
                    # the document's ratio (value / start) on the curve's own start
                    own = sub[sub["policy"] == e["policy"]].sort_values("day")["strength"]
                    start = float(own.iloc[0]) if len(own) and own.iloc[0] > 0 else e["start"]
                    ax.plot(
                        [e["day"]],
                        [e["ratio"] * start],
                        marker="o",
                        markersize=7,
                        linestyle="none",
                        markerfacecolor="white",
                        markeredgewidth=2,
                        markeredgecolor=policy_color(e["policy"]),
                        zorder=5,
                    )
            if bounded:
                ax.set_ylim(-0.03, 1.05)
            else:
                ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
            ax.set_xlim(left=0)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
            direct_labels(ax, ends, outside=True, fontsize=7)
            if r == 0:
                ax.set_title(f"{titles.get(pat, pat)}  ({pat})", fontsize=9.5)
            if c == 0:
                ax.set_ylabel("\n".join(textwrap.wrap(row_title, 32)), fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("days since the memory was created", fontsize=8)
    marks = []
    if examples is not None and len(examples):
        marks.append("hollow circle: the seed document's worked example")
    if any_gone:
        marks.append("cross: no longer retrievable (pruned / forgotten / archived)")
    fig.suptitle(
        "How fast does each policy forget one memory, and what does access do? "
        "(strength in each row's unit)",
        fontsize=10.5,
    )
    if marks:
        fig.supxlabel("; ".join(marks), fontsize=8, color="0.25")
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
    """Figure 2: does recall hold as a stream goes on, and how much does each policy keep?
    Per synthetic stream two rows of small multiples, one panel per family: recall@k over
    simulated time (a trailing ``window``-day rolling mean over queries and seeds) and the
    footprint (retrievable memories at each query, averaged over seeds). A family's
    policies are in colour with their names at the line ends; the other policies are grey."""
    _require(
        per_query, ("policy", "scenario", "seed", "time", "recall", "footprint"), "per-query table"
    )
    per_query = one_protocol(per_query)
    scen = list(scenarios) if scenarios is not None else synthetic_scenarios(per_query)
    if not scen:
        raise MemsimError("per-query table: no synthetic scenario to plot over time")
    fams = family_groups(per_query["policy"].astype(str).unique())
    fig = new_figure(4.2 * len(fams) + 0.6, 2.0 * 2 * len(scen) + 1.0)
    axes = np.atleast_2d(fig.subplots(2 * len(scen), len(fams), squeeze=False, sharex=True))
    ks = sorted(int(k) for k in per_query["k"].dropna().unique()) if "k" in per_query else []
    klabel = f"recall@{ks[0]}" if len(ks) == 1 else "recall@k"
    for i, s in enumerate(scen):
        sub = per_query[per_query["scenario"] == s]
        rec: dict[str, pd.DataFrame] = {}
        foot: dict[str, pd.Series] = {}
        for p in ordered_policies(sub["policy"]):
            g = sub[sub["policy"] == p]
            rec[p] = rolling_by_time(g, "recall", window)
            foot[p] = g.groupby(np.floor(g["time"]).astype(np.int64))["footprint"].mean()
        same = same_as_parent(
            {p: np.concatenate([rec[p]["recall"].to_numpy(), foot[p].to_numpy()]) for p in rec}
        )
        nseeds = sub["seed"].nunique()
        for j, (fam, members) in enumerate(fams):
            top, bottom = axes[2 * i, j], axes[2 * i + 1, j]
            for p in rec:
                if p in members:
                    continue
                top.plot(rec[p]["day"], rec[p]["recall"], color=CONTEXT_GREY, linewidth=0.8)
                bottom.plot(foot[p].index, foot[p].to_numpy(), color=CONTEXT_GREY, linewidth=0.8)
            ends_r, ends_f = [], []
            for p in members:
                if p not in rec:
                    continue
                style = policy_style(p)
                top.plot(rec[p]["day"], rec[p]["recall"], linewidth=1.5, **style)
                bottom.plot(foot[p].index, foot[p].to_numpy(), linewidth=1.5, **style)
                label = label_of(p, same)
                if len(rec[p]):
                    ends_r.append((rec[p]["day"].iloc[-1], rec[p]["recall"].iloc[-1], label))
                if len(foot[p]):
                    ends_f.append((foot[p].index[-1], foot[p].iloc[-1], label))
            top.set_ylim(-0.02, 1.02)
            bottom.set_ylim(bottom=0)
            bottom.set_yscale("symlog", linthresh=10)
            bottom.yaxis.set_major_formatter(_plain_numbers())
            for ax, ends in ((top, ends_r), (bottom, ends_f)):
                ax.grid(alpha=0.3)
                ax.tick_params(labelsize=7)
                direct_labels(
                    ax,
                    [(x, y, t, policy_color(t.split(" = ")[0])) for x, y, t in ends],
                    outside=True,
                    fontsize=7,
                )
            if i == 0:
                top.set_title(fam, fontsize=9.5, fontweight="bold")
            if j == 0:
                top.set_ylabel(f"{short_scenario(s)}\n{klabel}", fontsize=8)
                bottom.set_ylabel(f"{short_scenario(s)}\nretrievable memories", fontsize=8)
        axes[2 * i, 0].annotate(
            f"{nseeds} seed{'s' if nseeds != 1 else ''}",
            (0.02, 0.04),
            xycoords="axes fraction",
            fontsize=7,
            color="0.4",
        )
    for ax in axes[-1]:
        ax.set_xlabel("simulated time (days)", fontsize=8)
    fig.suptitle(
        "Does recall hold as the stream goes on, and at what footprint? "
        f"({klabel}: {window:g}-day rolling mean; footprint: memories at each query)",
        fontsize=10.5,
    )
    return fig


def _plain_numbers():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:,.0f}")


# ------------------------------------------------------------------ summary helpers


def metric_table(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows of the tidy summary for one metric (default protocol): scenario, policy, mean,
    ci_low, ci_high, n."""
    _require(
        summary, ("scenario", "policy", "metric", "mean", "ci_low", "ci_high"), "summary table"
    )
    t = one_protocol(summary)
    t = t[t["metric"] == metric]
    cols = [c for c in ("scenario", "policy", "mean", "ci_low", "ci_high", "n") if c in t.columns]
    return t[cols].reset_index(drop=True)


def _err(t: pd.DataFrame) -> np.ndarray:
    """Asymmetric error bars from CI columns (0 where the CI is missing)."""
    lo = (t["mean"] - t["ci_low"]).to_numpy(np.float64)
    hi = (t["ci_high"] - t["mean"]).to_numpy(np.float64)
    return np.vstack([np.nan_to_num(np.clip(lo, 0, None)), np.nan_to_num(np.clip(hi, 0, None))])


def stream_views(scenarios: Iterable[Any]) -> list[tuple[str, list[str]]]:
    """(label, specs) per stream a figure shows: each synthetic stream alone, LoCoMo's
    conversations pooled; scripted worked examples are left out (they are conformance
    scripts, reported in summary.md)."""
    return [(label, specs) for label, specs in panels(scenarios) if specs]


def _pooled(t: pd.DataFrame, specs: Sequence[str]) -> pd.DataFrame:
    """One row per policy over ``specs``: the scenario's own interval when there is one
    scenario, else the mean over scenarios without an interval (pooled intervals need the
    per-query table)."""
    g = t[t["scenario"].isin(specs)]
    if len(specs) == 1:
        return g.drop(columns="scenario").reset_index(drop=True)
    return (
        g.groupby("policy", sort=False)["mean"]
        .mean()
        .reset_index()
        .assign(ci_low=np.nan, ci_high=np.nan)
    )


# ------------------------------------------------------------------ 3. recall vs footprint


def recall_vs_footprint_figure(summary: pd.DataFrame, *, footprint_metric: str = "footprint_mean"):
    """Figure 3: which policies keep recall high at a small footprint? One row of panels per
    stream (LoCoMo's conversations pooled, scripted streams left out), one column per family:
    mean recall@k against mean footprint with 95% interval whiskers on both axes."""
    rec = metric_table(summary, "recall")
    fp = metric_table(summary, footprint_metric)
    if rec.empty or fp.empty:
        raise MemsimError(f"summary table: no scenario has both recall and {footprint_metric}")
    streams = []
    for label, specs in stream_views(rec["scenario"].unique()):
        both = _pooled(rec, specs).merge(_pooled(fp, specs), on="policy", suffixes=("_r", "_f"))
        both = both[np.isfinite(both["mean_r"]) & np.isfinite(both["mean_f"])]
        streams.append(
            (
                label,
                pd.DataFrame(
                    {
                        "policy": both["policy"],
                        "x": both["mean_f"],
                        "x_lo": both["ci_low_f"],
                        "x_hi": both["ci_high_f"],
                        "y": both["mean_r"],
                        "y_lo": both["ci_low_r"],
                        "y_hi": both["ci_high_r"],
                    }
                ),
            )
        )
    if not any(len(d) for _, d in streams):
        raise MemsimError(f"summary table: no stream has both recall and {footprint_metric}")
    scripted = sorted({s for s in rec["scenario"] if str(s).startswith("scripted/")})
    note = (
        "whiskers: 95% intervals of the summary; hollow: baseline, or a variant equal to its parent"
    )
    if any(label.startswith("LoCoMo") for label, _ in streams):
        note += "; LoCoMo: mean over its conversations (no interval)"
    if scripted:
        note += (
            f"; {len(scripted)} scripted streams not shown (conformance scripts, see summary.md)"
        )
    return scatter_grid(
        streams,
        title="Which policies keep recall high at a small footprint? (up and left is better)",
        xlabel="mean footprint (retrievable memories, log scale)",
        ylabel="recall@k",
        logx=lambda d: bool((d["x"] > 0).all() and d["x"].max() / max(d["x"].min(), 1e-9) > 20),
        note=note,
    )


# ------------------------------------------------------------------ 4. stale@k beside recall

STALE_PANELS = (
    ("recall", "recall@k", "share of asked units, ↑"),
    ("stale", "stale@k", "share of returned, ↓"),
    ("rank_inversion", "rank inversion", "share of queries, ↓"),
)


def stale_figure(summary: pd.DataFrame):
    """Figure 4: does a policy avoid stale memories only by returning little? Per stream
    (scripted streams left out, LoCoMo pooled), recall@k beside stale@k (and the rank
    inversion, the share of queries whose current value is retrievable and a stale version
    ranks above it, when the summary has it): one row per policy, grouped by family."""
    _require(
        summary, ("scenario", "policy", "metric", "mean", "ci_low", "ci_high"), "summary table"
    )
    t = metric_table(summary, "stale")
    if t.empty or not np.isfinite(t["mean"]).any():
        raise MemsimError("summary table: no stale@k rows")
    metrics = [m for m, _, _ in STALE_PANELS if len(metric_table(summary, m))]
    tables = {m: metric_table(summary, m) for m in metrics}
    rows, panels_ = [], []
    clean = []
    for label, specs in stream_views(t["scenario"].unique()):
        stale = _pooled(tables["stale"], specs)
        if not (stale["mean"].fillna(0).max() > 0 or stale["ci_high"].fillna(0).max() > 0):
            clean.append(label)  # no policy returned a stale memory: a panel of zeros
            continue
        for m, name, unit in STALE_PANELS:
            if m not in tables:
                continue
            part = _pooled(tables[m], specs)
            rows.append(part.assign(panel=f"{label}|{m}"))
            panels_.append((f"{label}|{m}", f"{label}\n{name}", unit))
    if not rows:
        raise MemsimError("summary table: no stream where a policy returned a stale memory")
    frame = pd.concat(rows, ignore_index=True)
    frame = frame[frame["policy"].isin(ordered_policies(frame["policy"]))]
    limits = {k: (-0.03, 1.03) for k, _, _ in panels_}
    note = "whiskers: 95% intervals; hollow: baseline or variant"
    if clean:
        note += "; no policy returned a stale memory on: " + ", ".join(clean)
    return dot_matrix(
        frame.assign(policy=frame["policy"].astype(str)),
        panels_,
        title="Does a policy avoid stale memories only by returning little? "
        "(stale@k read beside recall@k)",
        note=note,
        limits=limits,
        panel_width=1.45,
    )


# ------------------------------------------------------------------ scorecard


def scorecard_figure(scorecard: pd.DataFrame):
    """The scorecard read at a glance: one row per policy grouped by family, one column of
    panels per (protocol, metric), a dot with its interval whiskers. ``scorecard``: columns
    policy, family, protocol, metric, mean, ci_low, ci_high (family one of ``FAMILIES``, the
    registry's when omitted for a policy). Panels of one metric share their x range."""
    _require(
        scorecard,
        ("policy", "protocol", "metric", "mean", "ci_low", "ci_high"),
        "scorecard",
    )
    if scorecard.empty:
        raise MemsimError("scorecard: no rows")
    t = scorecard.assign(
        policy=scorecard["policy"].astype(str),
        protocol=scorecard["protocol"].astype(str),
        metric=scorecard["metric"].astype(str),
    )
    t = t.assign(panel=pd.Series(list(zip(t["protocol"], t["metric"])), index=t.index))
    metrics = list(dict.fromkeys(t["metric"]))
    protocols = list(dict.fromkeys(t["protocol"]))
    if DEFAULT_PROTOCOL in protocols:
        protocols.remove(DEFAULT_PROTOCOL)
        protocols.insert(0, DEFAULT_PROTOCOL)
    keys = [
        (pr, m)
        for m in metrics
        for pr in protocols
        if ((t["protocol"] == pr) & (t["metric"] == m)).any()
    ]
    limits = {}
    for m in metrics:
        v = t.loc[t["metric"] == m, ["mean", "ci_low", "ci_high"]].to_numpy(np.float64)
        v = v[np.isfinite(v)]
        if len(v):
            lo, hi = float(v.min()), float(v.max())
            if 0.0 <= lo and hi <= 1.0:
                lo, hi = 0.0, 1.0
            pad = 0.04 * (hi - lo or 1.0)
            for pr in protocols:
                limits[(pr, m)] = (lo - pad, hi + pad)

    def label(key: tuple[str, str]) -> str:  # the scorecard's column title, when it has one
        try:
            arrow = " ↑" if metric_direction(key[1]) == "higher" else " ↓"
        except KeyError:  # a metric the registry does not know: no direction to show
            arrow = ""
        if "column" in t:
            return f"{t.loc[t['panel'] == key, 'column'].iloc[0]}{arrow}"
        return f"{key[1]}{arrow}\n{key[0]}"

    return dot_matrix(
        t,
        [(k, label(k), k[1]) for k in keys],
        title="Scorecard: how does each policy score, protocol by protocol? "
        "(dots: means; whiskers: intervals)",
        limits=limits,
        panel_width=1.6,
    )


# ------------------------------------------------------------------ 5. LoCoMo


def _mean_ci(values: np.ndarray, units: np.ndarray) -> tuple[float, float, float, int]:
    """Mean, 95% t interval over ``units`` (``stats.cluster_t_ci``: a question asked under
    several seeds of a stream that ignores the seed is one unit), and the number of units."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    if not ok.any():
        return (np.nan, np.nan, np.nan, 0)
    lo, hi, n = cluster_t_ci(v, np.asarray(units))
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


def locomo_question_time_table(per_query: pd.DataFrame) -> pd.DataFrame:
    """LoCoMo recall@k per policy and question-time protocol (``default``: one minute after
    the conversation's end; ``evidence-Nd``: N days after the evidence): columns policy,
    protocol, mean, ci_low, ci_high, n (a question counted once whatever the seeds). Empty
    when the table has no ``evidence-Nd`` protocol."""
    if "protocol" not in per_query.columns:
        return pd.DataFrame(columns=["policy", "protocol", "mean", "ci_low", "ci_high", "n"])
    lq = per_query[per_query["scenario"].astype(str).str.startswith("locomo")]
    protos = [
        p for p in dict.fromkeys(lq["protocol"].astype(str)) if re.fullmatch(r"evidence-\d+d", p)
    ]
    if not protos:
        return pd.DataFrame(columns=["policy", "protocol", "mean", "ci_low", "ci_high", "n"])
    protos.sort(key=lambda p: int(p[len("evidence-") : -1]))
    rows = []
    for proto in [DEFAULT_PROTOCOL, *protos]:
        g0 = lq[lq["protocol"].astype(str) == proto]
        units = g0["scenario"].astype(str) + "|" + g0["query_id"].astype(str)
        for p, g in g0.groupby("policy", sort=True):
            m, lo, hi, n = _mean_ci(g["recall"].to_numpy(), units[g.index].to_numpy())
            rows.append(
                {"policy": p, "protocol": proto, "mean": m, "ci_low": lo, "ci_high": hi, "n": n}
            )
    return pd.DataFrame(rows)


def locomo_figure(per_query: pd.DataFrame):
    """Figure 5: how does recall on real conversations depend on the question? LoCoMo
    recall@k (default protocol) by question category and by evidence age, one row per policy
    grouped by family; with ``evidence-Nd`` protocols in the table, recall@k when each
    question is asked N days after its evidence, beside the end-of-conversation default (a
    forgetting curve on real conversations, read left to right)."""
    by_cat, by_age = locomo_tables(one_protocol(per_query))
    rows, panels_ = [], []
    for c in sorted(by_cat["category"].unique()):
        g = by_cat[by_cat["category"] == c]
        rows.append(g.assign(panel=f"cat|{c}"))
        panels_.append((f"cat|{c}", f"category:\n{c} (n={int(g['n'].max())})", "recall@k"))
    for a in [a for a in age_bin_labels() if a in set(by_age["age"])]:
        g = by_age[by_age["age"] == a]
        rows.append(g.assign(panel=f"age|{a}"))
        panels_.append((f"age|{a}", f"evidence age:\n{a} (n={int(g['n'].max())})", "recall@k"))
    times = locomo_question_time_table(per_query)
    for proto in dict.fromkeys(times["protocol"]):
        g = times[times["protocol"] == proto]
        when = (
            "end of conversation"
            if proto == DEFAULT_PROTOCOL
            else f"{proto[len('evidence-') : -1]} d after evidence"
        )
        rows.append(g.assign(panel=f"time|{proto}"))
        panels_.append((f"time|{proto}", f"asked at:\n{when}", "recall@k"))
    frame = pd.concat(rows, ignore_index=True).assign(policy=lambda d: d["policy"].astype(str))
    return dot_matrix(
        frame,
        panels_,
        title="How does recall on real conversations (LoCoMo) depend on the question: "
        "its category, the age of its evidence"
        + (", the time it is asked?" if len(times) else "?"),
        note="whiskers: 95% t intervals over questions (a question counts once whatever the "
        "seeds); n = questions per panel; hollow: baseline or variant",
        limits={k: (-0.03, 1.03) for k, _, _ in panels_},
        panel_width=1.25,
    )


# ------------------------------------------------------------------ 6. latency

_N_KEYS = ("n_memories", "memories", "n", "size", "rows", "n_rows", "store_size")
# Readable names of the variants benchmarks/ times (bench_recall.py); others keep their own.
SERIES_LABELS = {
    "bare_matvec": "bare X @ q",
    "numpy": "numpy: full scores + top-k",
    "fused": "fused kernel (policies.pai_fastscore)",
    "policy": "pai recall, as written",
    "wired": "pai recall, fastscore wired",
    # the same query vector asked again: the store keeps its products, no scan
    "policy_repeated": "pai recall, same query again (products kept, no scan)",
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
    fig = new_figure(max(7.5, 5.2 * len(ops)), 5.6)
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
    handles, labels = [], []
    for ax in axes:  # one legend below the panels, never over the measurements
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=1, fontsize=8, frameon=False)
    fig.suptitle(
        "How does recall latency grow with the store, against the bandwidth floor?\n"
        "(log-log; median over runs of the same size)",
        fontsize=10.5,
    )
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
    "scorecard",
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
        "scorecard": (
            "per_query.parquet",
            per_query,
            lambda pq: scorecard_figure(scorecard_frame(pq)),
        ),
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
