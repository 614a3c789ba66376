"""Each model against its variant (``memsim drift``: memsim/workbench/cli/drift.py).

Every registered policy whose spec names another in ``variant_of`` is paired with it (no id
is written here: the registry says which policy is a variant of which). ``--kind code``
pairs each seed system's documented policy (its spec names a seed document) with its code
variant and writes results/drift.md; ``--kind reference`` pairs each reference model (no
seed document, not a baseline) with its second variant and writes results/references.md,
which also lists every reference model beside the baselines; ``--kind all`` writes both
from one run. Both policies of a pair run on the same streams and seeds; per paired query
(same scenario, seed and query id) the difference variant - base gives a mean with a 95% t
interval over the independent units of the stream (``stats.interval_units``: its seeds when
the stream depends on the seed, else its questions, their replicate seeds averaged first) and
the exact Wilcoxon signed-rank test of the paired unit means (``stats.signed_rank_p``;
"identical" when every difference is 0); n and clusters are ``stats.sample_size``'s, the
counts summary.md prints. Run-level metrics (mean footprint, noise kept) are paired per
(scenario, seed) run, the seeds of a stream that ignores them averaged into one replicate.
Each report's header holds the command that regenerates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine.metric_registry import METRICS as REGISTRY
from memsim.engine.metric_registry import metric_names
from memsim.engine.registry import PolicySpec, specs

from ..stats import cluster_t_ci, interval_units, sample_size, seeded_stream, signed_rank_p
from .provenance import provenance_line


def _drift_metrics(level: str) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (n, REGISTRY[n].label or n, REGISTRY[n].better) for n in metric_names("drift", level)
    )


# (per-query column, label, better)
METRICS = _drift_metrics("query")
# (run-level column of a run's summary, label, better): paired per (scenario, seed)
RUN_METRICS = _drift_metrics("run")
ALPHA = 0.05
KINDS = ("code", "reference", "all")
DEFAULT_OUT = {"code": "results/drift.md", "reference": "results/references.md"}


def is_reference(spec: PolicySpec) -> bool:
    """A published reference model: no seed document, not a baseline, not clairvoyant."""
    return not (spec.seed_document or spec.baseline or spec.clairvoyant)


def variant_pairs(kind: str = "code") -> list[tuple[PolicySpec, PolicySpec]]:
    """(base spec, variant spec) for every registered variant, by base id. ``kind`` "code":
    seed systems against their code variants; "reference": reference models against their
    second variants; "all": both."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: one of {', '.join(KINDS)}")
    by_id = {s.id: s for s in specs()}
    pairs = [(by_id[s.variant_of], s) for s in specs() if s.variant_of in by_id]
    if kind == "code":
        pairs = [p for p in pairs if p[0].seed_document]
    elif kind == "reference":
        pairs = [p for p in pairs if is_reference(p[0])]
    return sorted(pairs, key=lambda p: (p[0].id, p[1].id))


def reference_ids() -> list[str]:
    """Every reference model (variants included) and the baselines, by id."""
    return sorted(s.id for s in specs() if is_reference(s) or s.baseline)


def scenario_label(spec: Any) -> str:
    """A short name for a scenario spec: a LoCoMo file path becomes its file stem."""
    kind, _, rest = spec.partition(":")
    if kind == "locomo":
        path, _, opts = rest.partition(",")
        return f"locomo:{Path(path).stem}" + (f",{opts}" if opts else "")
    return str(spec)


def wilcoxon_p(diff: np.ndarray, units: np.ndarray | None = None) -> float:
    """Two-sided exact Wilcoxon signed-rank p of paired differences, taken over the means of
    ``units`` (each row its own unit when None); NaN when every difference is 0."""
    d = np.asarray(diff, dtype=np.float64)
    u = np.arange(len(d)) if units is None else np.asarray(units)
    ok = np.isfinite(d)
    d, u = d[ok], u[ok]
    if not len(d) or not np.any(d != 0):
        return float("nan")
    _, inverse = np.unique(u, return_inverse=True)
    means = np.bincount(inverse, weights=d) / np.bincount(inverse)
    return signed_rank_p(means)


def paired_rows(
    per_query: pd.DataFrame, base: str, variant: str, runs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per (scenario, metric): both means with intervals, the paired difference
    variant - base with its interval, the Wilcoxon p over independent units, n and clusters
    (per-query METRICS: distinct paired questions and the units of ``stats.interval_units``;
    RUN_METRICS, from ``runs``: one row per run with policy, scenario, seed and the run-level
    columns, n runs and clusters the independent ones)."""

    rows = []
    for scenario, g in per_query.groupby("scenario", sort=False):
        rows += _paired(g, base, variant, scenario, ["scenario", "seed", "query_id"], METRICS)
        if runs is not None and len(runs):
            r = runs[runs["scenario"] == scenario]
            metrics = tuple(m for m in RUN_METRICS if m[0] in r)
            rows += _paired(r, base, variant, scenario, ["scenario", "seed"], metrics)
    return pd.DataFrame(rows)


def _paired(
    g: pd.DataFrame,
    base: str,
    variant: str,
    scenario: Any,
    key: list[str],
    metrics: Sequence[tuple[str, str, str]],
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    a = g[g["policy"] == base].set_index(key)
    b = g[g["policy"] == variant].set_index(key)
    both = a.index.intersection(b.index)
    pairs = both.to_frame(index=False)
    per_query = "query_id" in key
    for col, label, better in metrics:
        x = a.loc[both, col].to_numpy(dtype=np.float64)
        y = b.loc[both, col].to_numpy(dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        rows_ok = pairs[ok]
        d = y - x
        if per_query:
            units, _ = interval_units(rows_ok) if len(rows_ok) else (np.zeros(0), "")
            n, clusters = sample_size(rows_ok)
        else:  # runs: the seeds of a stream that ignores them are one replicate
            independent = seeded_stream(str(scenario))
            seeds = rows_ok["seed"].astype(str).to_numpy()
            units = seeds if independent else np.zeros(len(rows_ok))
            n, clusters = len(d), len(np.unique(units))
        rows.append(
            {
                "scenario": scenario,
                "metric": label,
                "better": better,
                "base": float(x.mean()) if len(x) else np.nan,
                "base_ci": cluster_t_ci(x, units)[:2],
                "variant": float(y.mean()) if len(y) else np.nan,
                "variant_ci": cluster_t_ci(y, units)[:2],
                "diff": float(d.mean()) if len(d) else np.nan,
                "diff_ci": cluster_t_ci(d, units)[:2],
                "p": wilcoxon_p(d, units),
                "n": int(n),
                "clusters": int(clusters),
            }
        )
    return rows


def _num(v: Any, digits: int) -> str:
    return "n/a" if not np.isfinite(v) else f"{v:.{digits}f}"


def _ci(ci: Any, digits: int) -> str:
    lo, hi = ci
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f" [{lo:.{digits}f}, {hi:.{digits}f}]"


def _p(p: Any) -> str:
    if not np.isfinite(p):
        return "identical"
    return "< 1e-300" if p == 0 else f"{p:.2g}"


def _digits(label: str) -> int:
    return 1 if "footprint" in label else 3


def summary_sentence(base: PolicySpec, variant: PolicySpec, table: pd.DataFrame) -> str:
    """What the variant changes (its spec's description) and, per query-level metric, on how
    many streams the paired difference is significant, with the range of those differences;
    then the range of the run-level differences (a few seeds per stream: a paired test of
    so few runs cannot reach p < 0.05, so only their size and direction are given)."""
    what = variant.description or variant.id
    streams = table["scenario"].nunique()
    parts = []
    per_query = table[table["metric"].isin([m[1] for m in METRICS])]
    for _, label, _ in METRICS:
        rows = table[(table["metric"] == label) & (table["p"] < ALPHA)]  # NaN p: identical
        if len(rows):
            digits = _digits(label)
            lo, hi = float(rows["diff"].min()), float(rows["diff"].max())
            span = f"{lo:+.{digits}f}" if lo == hi else f"{lo:+.{digits}f} to {hi:+.{digits}f}"
            parts.append(f"{label} {span} on {len(rows)} of {streams} streams")
    if not np.isfinite(per_query["p"]).any():
        effect = "every paired query gives identical numbers on every stream"
    elif not parts:
        effect = f"no paired difference is significant at p < {ALPHA} on any stream"
    else:
        effect = f"significant (p < {ALPHA}): " + "; ".join(parts)
    run_parts = []
    for _, label, _ in RUN_METRICS:
        d = table.loc[table["metric"] == label, "diff"].to_numpy(dtype=np.float64)
        d = d[np.isfinite(d)]
        if len(d):
            digits = _digits(label)
            lo, hi = float(d.min()), float(d.max())
            span = f"{lo:+.{digits}f}" if lo == hi else f"{lo:+.{digits}f} to {hi:+.{digits}f}"
            run_parts.append(f"{label} {span}")
    runs = f"; per run, across streams: {', '.join(run_parts)}" if run_parts else ""
    return f"**{base.id} -> {variant.id}.** {what}. Effect: {effect}{runs}."


_TEXT = {
    "code": (
        "# Documented model versus code variant (drift)",
        "Each system's documented policy (the default id) against its code variant "
        "(`variant_of` in the registry)",
    ),
    "reference": (
        "# Reference models: each model's two variants",
        "Each reference model (ACT-R, MemoryBank, Generative Agents: the default id) against "
        "its second variant (`variant_of` in the registry: Pavlik & Anderson's spacing decay, "
        "the released code's behaviour)",
    ),
}


def render(
    per_query: pd.DataFrame,
    pairs: Sequence[tuple[PolicySpec, PolicySpec]],
    command: str,
    seeds: Sequence[int],
    runs: pd.DataFrame | None = None,
    kind: str = "code",
) -> str:
    title, who = _TEXT[kind]
    lines = [
        title,
        "",
        "Generated by:",
        "",
        f"    {command}",
        "",
        provenance_line(),
        "",
        f"{who}, on the same streams, seeds "
        f"{', '.join(str(s) for s in seeds)}. Means over queries with 95% t intervals over "
        "the independent units of each stream: its seeds when the stream depends on the "
        "seed (synthetic), else its questions, each question's replicate seeds averaged "
        "first (LoCoMo, scripted: the same conversation under every seed). diff = variant - "
        "base per paired query (same scenario, seed, query), its 95% t interval over the same "
        "units and the two-sided exact Wilcoxon signed-rank p of the paired unit means "
        "(`identical`: every paired difference is 0); with 5 seeds as units no p can fall "
        "under 0.0625. n = distinct paired questions (a question of a stream that ignores "
        "the seed counts once); clusters = the units the interval and the test use, the "
        "counts summary.md prints. footprint = retrievable memories at "
        "query time (lower is leaner). recall@10 higher is better, stale@10 lower. mean "
        "footprint (time-averaged retrievable memories over the run) and noise kept (share "
        "of noise episodes still in a retrievable memory at the end) are one number per run, "
        "paired per seed: n counts runs, clusters the independent ones (the seeds of a "
        "stream that ignores them are one replicate), and with fewer than 6 clusters no "
        "Wilcoxon p can fall under 0.05.",
        "",
    ]
    if kind == "reference" and runs is not None:
        lines += side_by_side(per_query, runs)
    for base, variant in pairs:
        sub = per_query[per_query["policy"].isin([base.id, variant.id])]
        table = paired_rows(sub, base.id, variant.id, runs)
        lines += [f"## {base.id} vs {variant.id}", ""]
        lines.append(summary_sentence(base, variant, table))
        lines += [
            "",
            f"| scenario | metric | {base.id} | {variant.id} | diff | Wilcoxon p | n | clusters |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in table.itertuples(index=False):
            digits = _digits(str(r.metric))
            lines.append(
                f"| {scenario_label(r.scenario)} | {r.metric} "
                f"| {_num(r.base, digits)}{_ci(r.base_ci, digits)} "
                f"| {_num(r.variant, digits)}{_ci(r.variant_ci, digits)} "
                f"| {_num(r.diff, digits)}{_ci(r.diff_ci, digits)} | {_p(r.p)} | {r.n} "
                f"| {r.clusters} |"
            )
        lines.append("")
    return "\n".join(lines)


def side_by_side(per_query: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Every policy of the run (the reference models with their variants, and the
    baselines) per scenario: recall@10 and stale@10 (mean over queries, 95% t interval over
    ``stats.interval_units``), mean footprint and noise kept (mean over runs), n (distinct
    questions) and clusters (``stats.sample_size``)."""
    lines = [
        "## Every reference model beside the baselines",
        "",
        "| scenario | policy | recall@10 | stale@10 | mean footprint | noise kept | n | clusters |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for scenario, g in per_query.groupby("scenario", sort=False):
        r = runs[runs["scenario"] == scenario]
        for policy in sorted(g["policy"].unique()):
            q = g[g["policy"] == policy]
            rr = r[r["policy"] == policy]
            units, _ = interval_units(q)
            cells = []
            for col in ("recall", "stale"):
                v = q[col].to_numpy(dtype=np.float64)
                mean = float(np.nanmean(v)) if np.isfinite(v).any() else np.nan
                cells.append(f"{_num(mean, 3)}{_ci(cluster_t_ci(v, units)[:2], 3)}")
            for col, digits in (("footprint_mean", 1), ("noise_retention", 3)):
                v = rr[col].to_numpy(dtype=np.float64) if col in rr else np.zeros(0)
                v = v[np.isfinite(v)]
                cells.append(_num(v.mean() if len(v) else np.nan, digits))
            n, clusters = sample_size(q, "recall")
            lines.append(
                f"| {scenario_label(scenario)} | {policy} | {' | '.join(cells)} | {n} "
                f"| {clusters} |"
            )
    lines.append("")
    return lines


def run_table(results: Sequence[Any]) -> pd.DataFrame:
    """One row per run: policy, scenario, seed and the run-level metrics."""

    rows = []
    for r in results:
        d = r.definition
        row = {"policy": r.summary.get("policy", d.policy), "scenario": d.scenario}
        row["seed"] = d.seed
        row.update({m: r.summary.get(m, np.nan) for m, _, _ in RUN_METRICS})
        rows.append(row)
    return pd.DataFrame(rows)
