"""Statistics of finished runs: summary tables with bootstrap intervals (over queries, or over
independent clusters of queries), metric directions, paired comparisons, the exact Wilcoxon
signed-rank test with Holm's correction, and pooled tables.

- ``cluster_ids``: the independent unit of each per-query row: seed x stream for a stream
  that depends on the seed (synthetic profiles), the stream alone for one that does not
  (LoCoMo conversations, scripted scenarios: their runs under several seeds share one stream,
  so counting each seed as a unit would replicate the same conversation).
- ``cluster_bootstrap_ci``: the interval of a pooled mean resampling those units instead of
  queries, which share a run.
- ``superiority(per_query)``: per pair of policies, the share of clusters where the row beats
  the column, and the exact Wilcoxon signed-rank p of the paired cluster means (the
  permutation distribution given the ranks, so ties and zeros are exact too),
  Holm-corrected.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from memsim.engine.errors import MemsimError
from memsim.engine.metric_registry import metric_direction, metric_names
from memsim.engine.registry import baseline_ids
from memsim.engine.sources import seeded

from .runs.execution import BOUND
from .runs.results import RunResult


def tables(results: Sequence[RunResult]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary table, per-query table) of finished runs, in their order."""
    per_query = pd.concat([r.queries for r in results], ignore_index=True)
    # a cached summary comes back with sorted keys: sort fresh ones too (same bytes either way)
    runs = pd.DataFrame([dict(sorted(r.summary.items())) for r in results])
    return summarize(per_query, runs), per_query


def expectation_table(results: Sequence[RunResult]) -> pd.DataFrame:
    """Every stated expectation judged on every run that states some: one row each (scenario,
    policy, seed, where, expected, ok, detail, note), in run order."""
    rows = [
        {
            "scenario": r.definition.scenario,
            "policy": r.summary.get("policy", r.definition.policy),
            "seed": r.definition.seed,
            **{k: v.get(k, "") for k in ("where", "expected", "ok", "detail", "note")},
        }
        for r in results
        for v in r.expectations
    ]
    cols = ["scenario", "policy", "seed", "where", "expected", "ok", "detail", "note"]
    return pd.DataFrame(rows, columns=cols)


QUERY_METRICS = metric_names("query")
# workbench-level query metrics (runs.execution.with_bound): not computed by the engine's evaluate
CALIBRATION_METRICS = metric_names("calibration")


def bootstrap_ci(
    values: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (scipy.stats.bootstrap), seeded for reproducibility."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (np.nan, np.nan)
    if len(v) == 1 or np.all(v == v[0]):
        return (float(v[0]), float(v[0])) if len(v) > 1 else (np.nan, np.nan)
    res = stats.bootstrap(
        (v,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def summarize(per_query: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Tidy summary: one row per (scenario, policy, metric) with mean, 95% bootstrap CI,
    the number of evaluated queries (or runs), the independent units the CI resamples
    (``cluster_unit``, ``clusters``): ``seed`` for a stream that depends on the seed (1 = one
    seed, the CI then resamples queries, which share a run), ``query`` for a stream that is
    the same under every seed (LoCoMo, scripted: a question asked in every seed's run is one
    unit, never one per seed), and whether it beats both baselines."""
    per_query = add_gap(per_query)
    rows = []
    for (scenario, policy), g in per_query.groupby(["scenario", "policy"], sort=False):
        seeded = seeded_stream(str(scenario))
        if seeded:
            units = g["seed"].to_numpy() if "seed" in g else np.zeros(len(g))
        else:
            units = g["query_id"].astype(str).to_numpy() if "query_id" in g else np.arange(len(g))
        for m in QUERY_METRICS:
            if m not in g:
                continue
            v = g[m].to_numpy(dtype=np.float64)
            n = int(np.isfinite(v).sum())
            lo, hi, n_c = cluster_bootstrap_ci(v, units)
            if n_c < 2:
                lo, hi = bootstrap_ci(v)
            rows.append(
                {
                    "scenario": scenario,
                    "policy": policy,
                    "metric": m,
                    "mean": float(np.nanmean(v)) if n else np.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": n,
                    "unit": "queries",
                    "better": metric_direction(m),
                    "clusters": max(n_c, 1) if n else 0,
                    "cluster_unit": "seed" if seeded else "query",
                }
            )
    run_metrics = [
        c
        for c in runs.columns
        if c not in ("policy", "scenario", "seed") and pd.api.types.is_numeric_dtype(runs[c])
    ]
    for (scenario, policy), g in runs.groupby(["scenario", "policy"], sort=False):
        for m in run_metrics:
            v = g[m].to_numpy(dtype=np.float64)
            lo, hi = bootstrap_ci(v)
            rows.append(
                {
                    "scenario": scenario,
                    "policy": policy,
                    "metric": m,
                    "mean": float(np.nanmean(v)) if np.isfinite(v).any() else np.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": int(np.isfinite(v).sum()),
                    "unit": "runs",
                    "better": metric_direction(m),
                    "clusters": int(np.isfinite(v).sum()),
                    "cluster_unit": "seed",
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return _mark_baselines(table)


def _mark_baselines(table: pd.DataFrame) -> pd.DataFrame:
    """beats_baselines: True when the mean is strictly better than every baseline present
    (direction-aware); None for the baselines themselves or when none is present."""
    baselines = [
        p for p in table["policy"].unique() if re.sub(r"-v\d+$", "", str(p)) in baseline_ids()
    ]
    out = []
    for _, g in table.groupby(["scenario", "metric"], sort=False):
        base = g[g["policy"].isin(baselines)]
        sign = 1.0 if g["better"].iloc[0] == "higher" else -1.0
        for _, row in g.iterrows():
            if (
                row["policy"] in baselines
                or base.empty
                or not np.isfinite(row["mean"])
                or row["metric"] in CALIBRATION_METRICS  # a reference, not a result
            ):
                beats = None
            else:
                beats = bool(
                    all(sign * (row["mean"] - b) > 0 for b in base["mean"] if np.isfinite(b))
                )
            out.append(beats)
    table = table.copy()
    # groupby preserves row order within groups; realign by index
    idx = [i for _, g in table.groupby(["scenario", "metric"], sort=False) for i in g.index]
    table.loc[idx, "beats_baselines"] = pd.Series(out, index=idx, dtype=object)
    return table


def paired(per_query: pd.DataFrame, metric: str, scenario: str | None = None) -> pd.DataFrame:
    """Superiority matrix: cell (A, B) = share of paired queries (same scenario, seed and
    query id) where A is strictly better than B on ``metric``."""
    df = per_query if scenario is None else per_query[per_query["scenario"] == scenario]
    wide = df.pivot_table(
        index=["scenario", "seed", "query_id"], columns="policy", values=metric, aggfunc="first"
    )
    sign = 1.0 if metric_direction(metric) == "higher" else -1.0
    pols = list(wide.columns)
    mat = pd.DataFrame(np.nan, index=pols, columns=pols)
    for a in pols:
        for b in pols:
            if a == b:
                continue
            both = wide[[a, b]].dropna()
            if len(both):
                mat.loc[a, b] = float((sign * (both[a] - both[b]) > 0).mean())
    mat.index.name = f"{metric}: A beats B"
    return mat


GAP = "gap"  # bound - recall, per query


ALPHA = 0.05  # significance level of the superiority test (after Holm)


def family(scenario: str) -> str:
    """The family of a scenario spec: ``synthetic``, ``locomo``, ``scripted``, ..."""
    s = str(scenario)
    return s.split(":", 1)[0] if ":" in s.split("/", 1)[0] else s.split("/", 1)[0]


def seeded_stream(scenario: str) -> bool:
    """Whether the stream of ``scenario`` depends on the seed (its source says so); a spec
    that no source reads counts as seeded (each run its own unit)."""
    try:
        return seeded(str(scenario))
    except MemsimError:
        return True


def cluster_ids(per_query: pd.DataFrame) -> np.ndarray:
    """The independent unit of each row: ``scenario|seed`` for a seeded stream, ``scenario``
    for a stream that is the same under every seed (its seeds are pooled into one unit)."""
    scen = per_query["scenario"].astype(str)
    seeded = scen.map({s: seeded_stream(s) for s in scen.unique()}).to_numpy(dtype=bool)
    seed = per_query["seed"].astype(str) if "seed" in per_query else pd.Series("0", scen.index)
    return np.where(seeded, (scen + "|" + seed).to_numpy(), scen.to_numpy()).astype(str)


def cluster_unit(scenarios: Iterable[str]) -> str:
    """What one cluster of these streams is: ``seed x stream`` or ``stream`` (or mixed)."""
    kinds = {seeded_stream(s) for s in scenarios}
    return "seed x stream" if kinds == {True} else "stream" if kinds == {False} else "mixed"


EXACT_MAX = 400  # nonzero pairs up to which the signed-rank test is exact (else normal approx)


def signed_rank_p(d: np.ndarray) -> float:
    """Two-sided p of the Wilcoxon signed-rank test of ``d`` (paired differences) against a
    symmetric null around 0, exact given the ranks: Pratt's ranks of ``|d|`` (zeros ranked,
    then left out; ties get mid-ranks), and the distribution of the positive rank sum over
    all 2^n sign flips of the nonzero differences, counted by dynamic programming. Unlike
    scipy's default, which turns to a normal approximation as soon as two differences tie
    (e.g. 15 of 15 clusters in favour, p 6e-4 instead of 6e-5), this stays exact. p is
    P(|T - E T| >= |t - E T|); 1.0 when every difference is 0; NaN when there is none."""
    from scipy import stats

    v = np.asarray(d, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return np.nan
    ranks = stats.rankdata(np.abs(v))  # mid-ranks: multiples of 0.5
    nz = v != 0
    if not nz.any():
        return 1.0
    if nz.sum() > EXACT_MAX:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(stats.wilcoxon(v, zero_method="pratt", method="approx").pvalue)
    r2 = np.rint(2 * ranks[nz]).astype(np.int64)  # doubled ranks: integers
    total = int(r2.sum())
    counts = np.zeros(total + 1, dtype=np.float64)  # sign patterns by doubled positive sum
    counts[0] = 1.0
    for r in r2:
        counts[r:] = counts[r:] + counts[: total + 1 - r].copy()
    t = int(r2[v[nz] > 0].sum())
    sums = np.arange(total + 1)
    extreme = np.abs(2 * sums - total) >= abs(2 * t - total)
    return float(min(1.0, counts[extreme].sum() / counts.sum()))


def cluster_bootstrap_ci(
    values: np.ndarray,
    clusters: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, int]:
    """Percentile-bootstrap CI of the pooled mean, resampling whole clusters (independent
    units) with scipy.stats.bootstrap: (low, high, number of clusters). NaN bounds with
    fewer than two clusters."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(clusters)
    ok = np.isfinite(v)
    v, c = v[ok], c[ok]
    if not len(v):
        return (np.nan, np.nan, 0)
    codes, inverse = np.unique(c, return_inverse=True)
    sums = np.bincount(inverse, weights=v).astype(np.float64)
    counts = np.bincount(inverse).astype(np.float64)
    n = len(codes)
    if n < 2:
        return (np.nan, np.nan, n)
    if np.all(v == v[0]):
        return (float(v[0]), float(v[0]), n)

    def pooled(s: np.ndarray, k: np.ndarray, axis: int = -1) -> np.ndarray:
        return s.sum(axis=axis) / k.sum(axis=axis)

    res = stats.bootstrap(
        (sums, counts),
        pooled,
        paired=True,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high), n


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaN stays."""
    arr = np.asarray(p, dtype=np.float64)
    out = np.full(len(arr), np.nan)
    ok = np.flatnonzero(np.isfinite(arr))
    m = len(ok)
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(arr[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * arr[i]))
        out[i] = running
    return out


def superiority(
    per_query: pd.DataFrame,
    metric: str = "recall",
    clusters: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Paired superiority over independent clusters (default: ``cluster_ids``, i.e. seed x
    profile for synthetic streams and one unit per conversation or scripted scenario, whose
    stream is the same under every seed; or the given columns). Each cluster's mean per
    policy; for every ordered pair (row, column): ``share`` of the clusters both were run on
    where row is strictly better (direction-aware), ``n`` clusters, the two-sided exact
    Wilcoxon signed-rank ``p`` of the paired cluster means (``signed_rank_p``) and ``p_holm``
    (Holm over all unordered pairs). Long format; pivot with
    ``.pivot(index="row", columns="column", values="share")``."""
    cols = ["scenario", "seed"] if clusters is None else list(clusters)
    missing = [c for c in (*cols, "policy", metric) if c not in per_query.columns]
    if missing:
        raise MemsimError(f"superiority: per-query table has no column {missing[0]!r}")
    if clusters is None:
        key = cluster_ids(per_query)
    else:
        key = per_query[cols].astype(str).agg("|".join, axis=1).to_numpy()
    frame = pd.DataFrame(
        {"_cluster": key, "policy": per_query["policy"].to_numpy(), metric: per_query[metric]}
    )
    means = frame.groupby(["_cluster", "policy"], sort=False)[metric].mean()
    wide = means.unstack("policy")
    policies = [p for p in dict.fromkeys(per_query["policy"]) if p in wide.columns]
    sign = 1.0 if metric_direction(metric) == "higher" else -1.0
    pairs: dict[tuple[str, str], tuple[float, int, float]] = {}
    for i, a in enumerate(policies):
        for b in policies[i + 1 :]:
            both = wide[[a, b]].dropna()
            d = sign * (both[a].to_numpy() - both[b].to_numpy())
            p = signed_rank_p(d)
            pairs[(a, b)] = (float((d > 0).mean()) if len(d) else np.nan, len(d), p)
            pairs[(b, a)] = (float((d < 0).mean()) if len(d) else np.nan, len(d), p)
    keys = [(a, b) for i, a in enumerate(policies) for b in policies[i + 1 :]]
    adjusted = dict(zip(keys, holm([pairs[k][2] for k in keys])))
    rows = []
    for a in policies:
        for b in policies:
            if a == b:
                continue
            share, n, p = pairs[(a, b)]
            ph = adjusted[(a, b) if (a, b) in adjusted else (b, a)]
            rows.append(
                {
                    "row": a,
                    "column": b,
                    "metric": metric,
                    "share": share,
                    "n": n,
                    "p": p,
                    "p_holm": ph,
                    "significant": bool(np.isfinite(ph) and ph < ALPHA),
                }
            )
    return pd.DataFrame(
        rows, columns=["row", "column", "metric", "share", "n", "p", "p_holm", "significant"]
    )


def pooled_table(
    per_query: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    clusters: Sequence[str] | None = None,
    n_resamples: int = 1000,
) -> pd.DataFrame:
    """Mean of each metric per ``by`` group, pooled over queries, with a cluster-bootstrap
    interval (clusters: ``cluster_ids``, or the given columns): columns *by, metric, mean,
    ci_low, ci_high, n (queries; a question of a stream that ignores the seed counts once,
    whatever the number of seeds), clusters."""
    rows = []
    if clusters is None:
        key = cluster_ids(per_query)
    else:
        key = per_query[list(clusters)].astype(str).agg("|".join, axis=1).to_numpy()
    frame = per_query.assign(_cluster=key)
    if "query_id" in frame:
        frame["_query"] = frame["_cluster"] + "|" + frame["query_id"].astype(str)
    else:
        frame["_query"] = np.arange(len(frame)).astype(str)
    for names, g in frame.groupby(list(by), sort=False, observed=True):
        names = names if isinstance(names, tuple) else (names,)
        for m in metrics:
            if m not in g:
                continue
            v = g[m].to_numpy(dtype=np.float64)
            ok = np.isfinite(v)
            lo, hi, n_c = cluster_bootstrap_ci(v, g["_cluster"].to_numpy(), n_resamples=n_resamples)
            rows.append(
                {
                    **dict(zip(by, names)),
                    "metric": m,
                    "mean": float(v[ok].mean()) if ok.any() else np.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": int(g["_query"][ok].nunique()),
                    "clusters": n_c,
                }
            )
    return pd.DataFrame(rows)


def add_gap(per_query: pd.DataFrame) -> pd.DataFrame:
    """``gap`` = bound - recall per query (when the table carries the bound), split into
    ``gap_retention`` = bound - (recall + ranked_out), what the policy no longer kept, and
    ``gap_ranking`` = ranked_out, kept but ranked below k; the two sum to ``gap``."""
    if BOUND not in per_query or GAP in per_query:
        return per_query
    bound, recall = per_query[BOUND], per_query["recall"]
    split = {}
    if "ranked_out" in per_query:
        ranked_out = per_query["ranked_out"]
        split = {"gap_retention": bound - (recall + ranked_out), "gap_ranking": ranked_out}
    return per_query.assign(**{GAP: bound - recall}, **split)


def stratified_interval(
    rows: pd.DataFrame, metric: str, confidence: float = 0.95
) -> tuple[float, float, float, int]:
    """(mean, low, high, clusters) of ``metric`` over one policy's rows, with a t-interval
    over independent clusters.

    Streams that depend on the seed (synthetic profiles) are fixed strata whose seeds are
    the clusters: the mean is the unweighted mean of the streams' means, its variance
    sum_h s_h^2 / (n_h H^2) with sum_h (n_h - 1) degrees of freedom. Streams that ignore the
    seed (LoCoMo conversations) are the clusters themselves, their seeds replicates averaged
    per question first: the mean pools every question, its variance is the cluster-robust
    one, C / (C - 1) sum_c (s_c - m k_c)^2 / K^2, with C - 1 degrees of freedom. NaN bounds
    with fewer than two clusters per stratum (or two streams), or a mix of both kinds."""
    from scipy import stats

    v = rows[[c for c in ("scenario", "seed", "query_id") if c in rows] + [metric]].copy()
    v = v[np.isfinite(v[metric].to_numpy(dtype=np.float64))]
    if v.empty:
        return (np.nan, np.nan, np.nan, 0)
    kinds = {seeded_stream(str(s)) for s in v["scenario"].unique()}
    if kinds == {True}:
        cluster_means = v.groupby(["scenario", "seed"], sort=False)[metric].mean()
        by = cluster_means.groupby(level=0, sort=False)
        means, n, var = by.mean(), by.size(), by.var(ddof=1)
        h = len(means)
        mean = float(means.mean())
        clusters = int(n.sum())
        if (n < 2).any():
            return (mean, np.nan, np.nan, clusters)
        se = math.sqrt(float((var / n).sum())) / h
        df = int((n - 1).sum())
    elif kinds == {False}:
        per_q = v.groupby(["scenario", "query_id"], sort=False)[metric].mean()
        by = per_q.groupby(level=0, sort=False)
        s, k = by.sum().to_numpy(), by.size().to_numpy(dtype=np.float64)
        clusters = len(s)
        mean = float(s.sum() / k.sum())
        if clusters < 2:
            return (mean, np.nan, np.nan, clusters)
        resid = s - mean * k
        se = math.sqrt(clusters / (clusters - 1) * float((resid**2).sum())) / float(k.sum())
        df = clusters - 1
    else:
        return (float(v[metric].mean()), np.nan, np.nan, 0)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    lo, hi = mean - half, mean + half
    values = v[metric].to_numpy(dtype=np.float64)
    if values.min() >= 0.0 and values.max() <= 1.0:  # a share: no bound beyond what it can be
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return (mean, lo, hi, clusters)


def identical_variants(per_query: pd.DataFrame) -> dict[str, str]:
    """variant -> parent for every variant whose per-query metrics equal its parent's on
    every query of the table (they are one policy as far as these results go)."""
    from memsim.engine.registry import spec

    keys = [c for c in (PROTOCOL_KEYS) if c in per_query]
    metrics = [m for m in QUERY_METRICS if m in per_query]
    policies = list(dict.fromkeys(per_query["policy"].astype(str)))
    by = {
        p: g.sort_values(keys)[metrics].reset_index(drop=True)
        for p, g in per_query.groupby("policy", sort=False)
    }
    out = {}
    for p in policies:
        parent = spec(p).variant_of
        if parent and parent in by and by[p].shape == by[parent].shape:
            if by[p].equals(by[parent]):
                out[p] = parent
    return out


PROTOCOL_KEYS = ("protocol", "scenario", "seed", "query_id")
