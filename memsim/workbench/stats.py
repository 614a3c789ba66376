"""Statistics of finished runs: summary tables with intervals over independent clusters,
metric directions, paired comparisons, the exact Wilcoxon signed-rank test with Holm's
correction, pooled tables, and the variants identical to their parent.

How intervals are made, what a cluster is and what n is (one definition, used by every table
that prints them: summary.md and summary.csv, pooled tables, drift, robustness):

- ``cluster_ids``: the independent unit of each per-query row when streams are pooled:
  seed x stream for a stream that depends on the seed (synthetic profiles), the stream alone
  for one that does not (LoCoMo conversations, scripted scenarios: their runs under several
  seeds share one stream, so each seed is a replicate of the same conversation, not a unit).
- ``interval_units``: the units of one table cell: ``cluster_ids`` when they number two or
  more; within one stream that ignores the seed, the question (its replicate seeds averaged
  first); within one seeded stream run under one seed, the question too, flagged
  ``query, one run`` (its questions share a run: optimistic).
- ``cluster_t_ci``: the 95% interval of the pooled mean, a Student t interval over the
  cluster means (``scipy.stats.t``, clusters - 1 degrees of freedom; clusters of unequal size
  enter by the ratio estimator's cluster-robust standard error, which is the plain t
  interval over cluster means when sizes are equal). The percentile bootstrap
  (``cluster_bootstrap_ci``) under-covers at 5-20 clusters and is kept only for callers that
  resample many clusters.
- ``question_ids`` / ``sample_size``: n = distinct questions (a question of a stream that
  ignores the seed counts once, whatever the number of seeds; a question of a seeded stream
  once per seed, since each seed asks it of another stream); clusters = the independent units
  the interval and the tests use.
- ``superiority(per_query)``: per pair of policies, the share of clusters where the row beats
  the column, and the exact Wilcoxon signed-rank p of the paired cluster means (the
  permutation distribution given the ranks, so ties and zeros are exact too),
  Holm-corrected over the pairs of distinct policies: a variant identical to its parent on
  every query (``identical_variants``) takes its parent's verdict and stays out of the family.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from memsim.engine.errors import MemsimError
from memsim.engine.metric_registry import metric_direction, metric_names
from memsim.engine.registry import baseline_ids
from memsim.engine.registry import spec as registry_spec
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
    """Tidy summary: one row per (protocol when the tables carry one, scenario, policy, metric)
    with the mean, its 95% interval (``cluster_t_ci`` over ``interval_units``), ``n`` (query
    metrics: distinct questions, ``sample_size``; run metrics: runs), ``clusters`` (the
    independent units the interval uses) and ``cluster_unit`` (what one is: ``seed`` for a
    stream that depends on the seed, ``query`` for a stream that is the same under every seed
    (LoCoMo, scripted: a question asked in every seed's run is one unit, its replicates
    averaged), ``query, one run`` for a seeded stream run under one seed (questions share
    that run: optimistic); for run metrics ``seed``, or ``replicate`` when the seeds do not
    change the stream (no interval then)), and whether it beats every baseline."""
    per_query = add_gap(per_query)
    rows = []
    by = [c for c in ("protocol", "scenario", "policy") if c in per_query]
    for names, g in per_query.groupby(by, sort=False):
        key = dict(zip(by, names))
        units, unit = interval_units(g)
        questions = pd.factorize(question_ids(g))[0]  # (sample_size's n, counted once a group)
        for m in QUERY_METRICS:
            if m not in g:
                continue
            v = g[m].to_numpy(dtype=np.float64)
            n = len(np.unique(questions[np.isfinite(v)]))
            lo, hi, n_c = cluster_t_ci(v, units)
            rows.append(
                {
                    **key,
                    "metric": m,
                    "mean": float(np.nanmean(v)) if n else np.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": n,
                    "unit": "queries",
                    "better": metric_direction(m),
                    "clusters": n_c,
                    "cluster_unit": unit,
                }
            )
    run_metrics = [
        c
        for c in runs.columns
        if c not in ("protocol", "policy", "scenario", "seed")
        and pd.api.types.is_numeric_dtype(runs[c])
    ]
    by = [c for c in ("protocol", "scenario", "policy") if c in runs]
    for names, g in runs.groupby(by, sort=False):
        key = dict(zip(by, names))
        independent = seeded_stream(str(key["scenario"]))
        seeds = g["seed"].astype(str).to_numpy() if "seed" in g else np.arange(len(g))
        units = seeds if independent else np.zeros(len(g))
        for m in run_metrics:
            v = g[m].to_numpy(dtype=np.float64)
            lo, hi, n_c = cluster_t_ci(v, units)
            rows.append(
                {
                    **key,
                    "metric": m,
                    "mean": float(np.nanmean(v)) if np.isfinite(v).any() else np.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": int(np.isfinite(v).sum()),
                    "unit": "runs",
                    "better": metric_direction(m),
                    "clusters": n_c,
                    "cluster_unit": "seed" if independent else "replicate",
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
    by = [c for c in ("protocol", "scenario", "metric") if c in table]
    for _, g in table.groupby(by, sort=False):
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
    idx = [i for _, g in table.groupby(by, sort=False) for i in g.index]
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


def question_ids(per_query: pd.DataFrame) -> np.ndarray:
    """One id per distinct question: ``cluster_ids`` + query id, so the replicate seeds of a
    stream that ignores the seed share an id and each seed of a seeded stream has its own."""
    clusters = cluster_ids(per_query)
    if "query_id" not in per_query:
        return np.char.add(np.char.add(clusters, "|#"), np.arange(len(per_query)).astype(str))
    queries = per_query["query_id"].astype(str).to_numpy(dtype=str)
    return np.char.add(np.char.add(clusters, "|"), queries)


def interval_units(per_query: pd.DataFrame) -> tuple[np.ndarray, str]:
    """(unit of each row, what a unit is) for an interval or a paired test over these rows:
    the ``cluster_ids`` when there are two or more (``seed`` within one seeded stream,
    ``seed x stream`` / ``stream`` / ``mixed`` across streams); else the question
    (``question_ids``): ``query`` within one stream that ignores the seed (its replicates are
    averaged by sharing the id), ``query, one run`` within one run of a seeded stream (its
    questions share that run, so an interval over them is optimistic)."""
    clusters = cluster_ids(per_query)
    scenarios = per_query["scenario"].astype(str).unique()
    if len(np.unique(clusters)) >= 2:
        unit = "seed" if len(scenarios) == 1 else cluster_unit(scenarios)
        return clusters, unit
    if len(scenarios) == 1 and not seeded_stream(scenarios[0]):
        return question_ids(per_query), "query"
    return question_ids(per_query), "query, one run"


def sample_size(per_query: pd.DataFrame, metric: str | None = None) -> tuple[int, int]:
    """(n, clusters) of these rows, where ``metric`` is finite when given: n = distinct
    questions (``question_ids``), clusters = distinct ``interval_units``. The one count every
    table prints."""
    if metric is not None and metric in per_query:
        per_query = per_query[np.isfinite(per_query[metric].to_numpy(dtype=np.float64))]
    if per_query.empty:
        return 0, 0
    units, _ = interval_units(per_query)
    return len(np.unique(question_ids(per_query))), len(np.unique(units))


def cluster_totals(values: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sum, count) of the finite ``values`` of each cluster, clusters in sorted order;
    empty arrays when no value is finite."""
    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(clusters)
    ok = np.isfinite(v)
    if not ok.any():
        return np.zeros(0), np.zeros(0)
    _, inverse = np.unique(c[ok], return_inverse=True)
    sums = np.bincount(inverse, weights=v[ok]).astype(np.float64)
    return sums, np.bincount(inverse).astype(np.float64)


def cluster_t_ci(
    values: np.ndarray, clusters: np.ndarray, *, confidence: float = 0.95
) -> tuple[float, float, int]:
    """Student t interval of the pooled mean over independent clusters: (low, high, number of
    clusters); NaN bounds with fewer than two. The pooled mean sum/count is a ratio; its
    standard error is the cluster-robust one, sqrt(k/(k-1) * sum_i (s_i - mean c_i)^2) / sum c
    (s_i, c_i: sum and count of cluster i, k clusters), with k - 1 degrees of freedom. With
    equal cluster sizes this is exactly the t interval over the cluster means, which covers
    at 5-20 clusters where a percentile bootstrap does not (it ignores the t quantile and
    the n - 1 divisor: at 5 clusters it covers about 0.85 of the time)."""
    from scipy import stats

    sums, counts = cluster_totals(values, clusters)
    if not len(sums):
        return (np.nan, np.nan, 0)
    k = len(sums)
    if k < 2:
        return (np.nan, np.nan, k)
    mean = sums.sum() / counts.sum()
    resid = sums - mean * counts
    se = float(np.sqrt(k / (k - 1) * np.sum(resid**2)) / counts.sum())
    if not se > 0:  # every cluster mean equal: nothing varies between units
        return (float(mean), float(mean), k)
    half = float(stats.t.ppf(0.5 + confidence / 2, k - 1)) * se
    return (float(mean - half), float(mean + half), k)


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

    sums, counts = cluster_totals(values, clusters)
    if not len(sums):
        return (np.nan, np.nan, 0)
    n = len(sums)
    if n < 2:
        return (np.nan, np.nan, n)
    means = sums / counts
    if np.all(means == means[0]):  # every resample gives this mean
        return (float(means[0]), float(means[0]), n)

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


def identical_variants(per_query: pd.DataFrame) -> dict[str, str]:
    """variant -> parent for every policy of the table whose spec names a parent
    (``registry.spec(p).variant_of``) also in the table and whose per-query results equal the
    parent's on every query of it: the same rows (protocol, scenario, seed, query) and the same
    value of every query metric present (NaN equal to NaN). Such a variant is one policy as far
    as this comparison can tell; it takes its parent's verdict, reported as identical. A chain
    (a variant of an identical variant) maps to the first non-identical ancestor."""
    if per_query.empty or "policy" not in per_query:
        return {}
    policies = list(dict.fromkeys(per_query["policy"].astype(str)))
    key = [c for c in ("protocol", "scenario", "seed", "query_id") if c in per_query]
    metrics = [m for m in (*QUERY_METRICS, *CALIBRATION_METRICS, GAP) if m in per_query]
    by_policy = {
        p: g.set_index(key)[metrics].sort_index()
        for p, g in per_query.groupby(per_query["policy"].astype(str), sort=False)
    }
    parent_of: dict[str, str] = {}
    for p in policies:
        try:
            parent = registry_spec(p).variant_of
        except MemsimError:
            continue
        if parent and parent in by_policy and parent != p:
            a, b = by_policy[p], by_policy[parent]
            if a.index.equals(b.index) and a.equals(b):
                parent_of[p] = parent
    out = {}
    for p, parent in parent_of.items():
        seen = {p}
        while parent in parent_of and parent not in seen:
            seen.add(parent)
            parent = parent_of[parent]
        out[p] = parent
    return out


def superiority(
    per_query: pd.DataFrame,
    metric: str = "recall",
    clusters: Sequence[str] | None = None,
    *,
    exclude_identical: bool | Mapping[str, str] = True,
) -> pd.DataFrame:
    """Paired superiority over independent clusters (default: ``cluster_ids``, i.e. seed x
    profile for synthetic streams and one unit per conversation or scripted scenario, whose
    stream is the same under every seed; or the given columns). Each cluster's mean per
    policy; for every ordered pair (row, column): ``share`` of the clusters both were run on
    where row is strictly better (direction-aware), ``n`` clusters, the two-sided exact
    Wilcoxon signed-rank ``p`` of the paired cluster means (``signed_rank_p``) and ``p_holm``
    (Holm over all unordered pairs of the family).

    ``exclude_identical`` (default True: ``identical_variants(per_query)``; or a mapping
    variant -> parent; False: none): a variant identical to its parent on every query is left
    out of the family Holm corrects over and takes its parent's verdict against every other
    policy, marked in ``identical_to`` (the parent; "" for the others); against its parent it
    has share 0, p 1 and no Holm p. Long format; pivot with
    ``.pivot(index="row", columns="column", values="share")``."""
    cols = ["scenario", "seed"] if clusters is None else list(clusters)
    missing = [c for c in (*cols, "policy", metric) if c not in per_query.columns]
    if missing:
        raise MemsimError(f"superiority: per-query table has no column {missing[0]!r}")
    if exclude_identical is True:
        identical = identical_variants(per_query)
    elif exclude_identical is False:
        identical = {}
    else:
        identical = dict(exclude_identical)
    if clusters is None:
        key = cluster_ids(per_query)
    else:
        key = per_query[cols].astype(str).agg("|".join, axis=1).to_numpy()
    frame = pd.DataFrame(
        {"_cluster": key, "policy": per_query["policy"].to_numpy(), metric: per_query[metric]}
    )
    means = frame.groupby(["_cluster", "policy"], sort=False)[metric].mean()
    wide = means.unstack("policy")
    everyone = [p for p in dict.fromkeys(per_query["policy"]) if p in wide.columns]
    policies = [p for p in everyone if p not in identical]
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
    adjusted.update({(b, a): v for (a, b), v in adjusted.items()})

    def stand_in(p: str) -> str:
        return identical.get(p, p)

    rows = []
    for a in everyone:
        for b in everyone:
            if a == b:
                continue
            ra, rb = stand_in(a), stand_in(b)
            if ra == rb:  # a variant against the parent it equals
                share, n, p, ph = 0.0, int(wide[[a, b]].dropna().shape[0]), 1.0, np.nan
            else:
                share, n, p = pairs[(ra, rb)]
                ph = adjusted[(ra, rb)]
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
                    "identical_to": identical.get(a, ""),
                }
            )
    columns = ["row", "column", "metric", "share", "n", "p", "p_holm", "significant"]
    return pd.DataFrame(rows, columns=[*columns, "identical_to"])


def pooled_table(
    per_query: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    clusters: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Mean of each metric per ``by`` group, pooled over queries, with a 95% t interval over
    independent units (``cluster_t_ci``; units: ``interval_units`` of the group, or the given
    columns): columns *by, metric, mean, ci_low, ci_high, n (distinct questions,
    ``sample_size``: a question of a stream that ignores the seed counts once, whatever the
    number of seeds), clusters (the units the interval uses)."""
    rows = []
    for names, g in per_query.groupby(list(by), sort=False, observed=True):
        names = names if isinstance(names, tuple) else (names,)
        if clusters is None:
            units, _ = interval_units(g)
        else:
            units = g[list(clusters)].astype(str).agg("|".join, axis=1).to_numpy()
        questions = question_ids(g)
        for m in metrics:
            if m not in g:
                continue
            v = g[m].to_numpy(dtype=np.float64)
            ok = np.isfinite(v)
            lo, hi, n_c = cluster_t_ci(v, units)
            rows.append(
                {
                    **dict(zip(by, names)),
                    "metric": m,
                    "mean": float(v[ok].mean()) if ok.any() else np.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": len(np.unique(questions[ok])),
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
    per question first: the mean pools every question, its interval is ``cluster_t_ci``'s
    (cluster-robust, C - 1 degrees of freedom). A share's interval is cut to [0, 1]. NaN
    bounds with fewer than two clusters per stratum (or two streams), or a mix of both
    kinds."""
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
        per_q = v.groupby(["scenario", "query_id"], sort=False)[metric].mean().reset_index()
        mean = float(per_q[metric].mean())
        lo, hi, clusters = cluster_t_ci(
            per_q[metric].to_numpy(), per_q["scenario"].to_numpy(), confidence=confidence
        )
        return (mean, *_within_share(v[metric], lo, hi), clusters)
    else:
        return (float(v[metric].mean()), np.nan, np.nan, 0)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return (mean, *_within_share(v[metric], mean - half, mean + half), clusters)


def _within_share(values: pd.Series, lo: float, hi: float) -> tuple[float, float]:
    """An interval of a metric whose every value lies in [0, 1] (a share), cut to [0, 1]:
    no bound beyond what the metric can be."""
    if values.min() >= 0.0 and values.max() <= 1.0:
        return max(lo, 0.0), min(hi, 1.0)
    return lo, hi
