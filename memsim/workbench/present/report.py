"""Comparison tables on disk: summary.csv (tidy), summary.md (readable), per_query.parquet."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine.metric_registry import metric_names
from memsim.engine.registry import specs

from ..runs.protocols import DEFAULT, PROTOCOL, protocol
from ..runs.results import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_parquet,
    code_fingerprint,
    git_commit,
    package_versions,
)
from .calibration import calibration_markdown
from .tables import markdown_table

# metrics shown in the readable table, in this order (the index audit's where some run
# searched through a candidate index)
SHOWN = metric_names("shown")


def _fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def markdown(summary: pd.DataFrame) -> str:
    """One table per scenario: policies x metrics, 'mean [95% CI]'. A dagger marks a seed
    policy that does not beat both baselines on that metric."""
    lines: list[str] = []
    for scenario, g in summary.groupby("scenario", sort=False):
        metrics = [m for m in SHOWN if m in set(g["metric"])]
        arrows = {
            m: ("↑" if g[g.metric == m]["better"].iloc[0] == "higher" else "↓") for m in metrics
        }
        lines.append(f"### {scenario}\n")
        table: list[list[str]] = []
        for policy, gp in g.groupby("policy", sort=False):
            cells = []
            for m in metrics:
                rows = gp[gp.metric == m]
                if rows.empty:
                    cells.append("–")
                    continue
                r = rows.iloc[0]
                cell = _fmt(r["mean"])
                if np.isfinite(r["ci_low"]) and r["ci_low"] != r["ci_high"]:
                    cell += f" [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
                if r.get("beats_baselines") is False:
                    cell += " †"
                if m == "gap" and np.isfinite(r["mean"]) and r["mean"] < 0:
                    cell += " ‡"
                cells.append(cell)
            table.append([str(policy), *cells])
        lines += markdown_table(["policy", *(f"{m} {arrows[m]}" for m in metrics)], table)
        lines.append("")
        lines.append(sample_sentence(g))
        if "gap" in set(g["metric"]):
            lines.append(
                "bound = recall@k of the clairvoyant at this policy's own footprint over time "
                "(best raw-memory retention); gap = bound - recall; ‡ = exceeds the bound "
                "(its memories cover several episodes: consolidation)."
            )
        lines.append("")
    return "\n".join(lines)


def protocols_markdown(summary: pd.DataFrame) -> str:
    """``markdown`` of each protocol's rows under a heading naming the protocol and what it
    chooses (a table without a protocol column is one protocol's)."""
    if PROTOCOL not in summary:
        return markdown(summary)
    parts = []
    for name, g in summary.groupby(PROTOCOL, sort=False):
        parts.append(f"## Protocol `{name}`\n\n{protocol(str(name)).description}.\n")
        parts.append(markdown(g.drop(columns=PROTOCOL)))
    return "\n".join(parts)


def sample_sentence(g: pd.DataFrame) -> str:
    """The footer of one scenario's table, read off its summary rows: n (distinct questions,
    ``stats.sample_size``), the clusters the intervals use and what one is, the runs."""
    q = g[g.unit == "queries"]
    nr = g[g.unit == "runs"]["n"]
    n = int(q["n"].max()) if len(q) else 0
    same = "same questions for every policy" if q["n"].nunique() <= 1 else "counts differ!"
    runs = int(nr.max()) if len(nr) else 0
    return (
        f"n = {n} distinct questions per policy ({same}); {_clusters_phrase(q)}; "
        f"{runs} run(s) per policy. Mean [95% t interval over the clusters]; † = does not "
        f"beat {_baselines_phrase()}."
    )


def _clusters_phrase(q: pd.DataFrame) -> str:
    """How many independent units the intervals of this table use, and what one is."""
    if "clusters" not in q or not len(q):
        return "no interval"
    k = int(q["clusters"].max())
    unit = str(q["cluster_unit"].iloc[0]) if "cluster_unit" in q else ""
    if unit == "query":
        return (
            f"clusters = {k} questions (the stream is the same under every seed: a question "
            "counts once, its seeds averaged)"
        )
    if unit == "query, one run":
        return f"clusters = {k} questions of one run (one seed: they share it, so optimistic)"
    return f"clusters = {k} seeds (independent streams)"


def write_comparison(
    out_dir: str | Path,
    summary: pd.DataFrame,
    per_query: pd.DataFrame,
    *,
    definition: dict[str, Any],
    frontier: pd.DataFrame | None = None,
) -> Path:
    """summary.csv, summary.md (with the calibration sections when the per-query table
    carries the bound), per_query.parquet, frontier.csv (when given), manifest.json."""
    out = Path(out_dir)
    atomic_write_bytes(
        out / "summary.csv", summary.to_csv(index=False, float_format="%.6g").encode()
    )
    text = "# Comparison\n\n" + protocols_markdown(summary)
    if "bound" in per_query.columns:
        default = per_query
        if PROTOCOL in per_query:
            default = per_query[per_query[PROTOCOL] == DEFAULT].drop(columns=PROTOCOL)
        if len(default):
            text += "\n" + calibration_markdown(default, frontier)
    atomic_write_bytes(out / "summary.md", text.encode())
    if frontier is not None:
        atomic_write_bytes(
            out / "frontier.csv", frontier.to_csv(index=False, float_format="%.6g").encode()
        )
    elif (out / "frontier.csv").exists():  # an earlier run's frontier would be stale here
        (out / "frontier.csv").unlink()
    atomic_write_parquet(out / "per_query.parquet", per_query)
    atomic_write_json(
        out / "manifest.json",
        {
            "definition": definition,
            "packages": package_versions(),
            "git_commit": git_commit(),
            # what results/ long studies are checked against (memsim.workbench.studies.provenance)
            "code_fingerprint": code_fingerprint(),
        },
    )
    return out


def console_table(
    summary: pd.DataFrame,
    metrics: Sequence[str] = metric_names("console"),
) -> str:
    """A compact fixed-width table for the terminal: scenario x policy rows (and their
    protocol, when the table has more than one), chosen metrics, and the index audit's
    columns where some run has them."""
    audit = metric_names("index_audit")
    metrics = [*metrics, *(m for m in audit if (summary["metric"] == m).any())]
    keys = ["scenario", "policy"]
    if PROTOCOL in summary and summary[PROTOCOL].nunique() > 1:
        keys.insert(0, PROTOCOL)
    rows = []
    for names, g in summary.groupby(keys, sort=False):
        row = dict(zip(keys, names))
        for m in metrics:
            r = g[g.metric == m]
            row[m] = _fmt(float(r["mean"].iloc[0])) if len(r) else "–"
        n = g[g.unit == "queries"]["n"]
        row["queries"] = int(n.max()) if len(n) else 0
        rows.append(row)
    return pd.DataFrame(rows).to_string(index=False)


def _baselines_phrase() -> str:
    """``both baselines (keep-all, recency)``, read off the registry's baseline specs."""
    ids = [s.id for s in specs() if s.baseline]
    quantity = "both" if len(ids) == 2 else "every"
    return f"{quantity} baseline{'s' if len(ids) != 1 else ''} ({', '.join(ids)})"
