"""Calibrated comparisons (issue 13): the clairvoyant bound at each run's own footprint, the
frontier of references at a budget, cluster-bootstrap intervals and the superiority test.

- ``with_bound(result)``: adds the per-query column ``bound``, the recall@k of the clairvoyant
  reference run at this run's retrievable footprint over time (matched mode). Its recall
  bounds what *retention of raw episode memories* could reach at that footprint; a policy
  whose memories cover several episodes each (consolidation) can exceed it (negative gap).
- ``frontier_defs`` / ``frontier_table``: every reference that declares ``at_budget`` (a
  Params override, beside ``budget=B``) run on a log grid of budgets B.
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

No policy id is written here: references are found by their spec (``clairvoyant``) or by
the ``at_budget`` attribute of their class.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine.errors import MemsimError

from .report import markdown_table
from .results import RunDef, RunResult

BOUND = "bound"  # per-query recall@k of the clairvoyant at the run's footprint
GAP = "gap"  # bound - recall, per query
LOSS = ("recall", "ranked_out", "forgotten", "never_kept")  # four shares summing to 1
BASE = 4  # frontier budgets: powers of BASE (a log grid)
ALPHA = 0.05  # significance level of the superiority test (after Holm)


# ---------------------------------------------------------------- the matched bound


def clairvoyant_id() -> str | None:
    """The id of the registered clairvoyant reference (its spec says ``clairvoyant``)."""
    from memsim.engine.registry import specs

    refs = [s.id for s in specs(references=True) if s.clairvoyant]
    return refs[0] if refs else None


def needs_bound(d: RunDef) -> bool:
    from memsim.engine.registry import spec

    return clairvoyant_id() is not None and not spec(d.policy).clairvoyant


def with_bound(result: RunResult) -> RunResult:
    """``result`` with its queries gaining ``bound`` (NaN for a clairvoyant run itself)."""
    if BOUND in result.queries.columns:
        return result
    q = result.queries.copy()
    ref = clairvoyant_id()
    if ref is None or q.empty or not needs_bound(result.definition):
        q[BOUND] = np.nan
    else:
        from .api import matched_clairvoyant

        c = matched_clairvoyant(result, ref).queries
        if list(c["query_id"]) != list(q["query_id"]):
            raise MemsimError(
                f"matched clairvoyant of {result.definition.policy} on "
                f"{result.definition.scenario}: queries differ from the policy's run"
            )
        q[BOUND] = c["recall"].to_numpy(dtype=np.float64)
    return dataclasses.replace(result, queries=q)


# ---------------------------------------------------------------- the frontier


def at_budget_references() -> list[tuple[str, dict[str, Any]]]:
    """(policy id, Params overrides) of every registered policy whose class declares
    ``at_budget``: run with ``budget=B`` and those overrides it is a frontier reference."""
    from memsim.engine.registry import specs

    out = []
    for s in specs(references=True):
        extra = s.load().at_budget
        if extra is not None:
            out.append((s.id, dict(extra)))
    return out


def budget_grid(n_episodes: int, base: int = BASE) -> list[int]:
    """Powers of ``base`` from ``base`` up to the first one holding every episode."""
    out, b = [], base
    while True:
        out.append(b)
        if b >= n_episodes:
            return out
        b *= base


def frontier_scenarios(scenarios: Sequence[str]) -> list[str]:
    """The streams a frontier is drawn for: all but the scripted worked examples."""
    return [s for s in scenarios if not str(s).startswith("scripted/")]


def frontier_defs(
    scenarios: Sequence[str],
    seeds: Sequence[int],
    llm: tuple[tuple[str, Any], ...] = (),
    base: int = BASE,
) -> list[RunDef]:
    """The reference runs of the frontier: every ``at_budget`` reference at every budget of
    the grid, for every (non-scripted) scenario and seed, in a fixed order."""
    from memsim.engine.events import Episode, Query

    from .api import _load_stream, resolve_policy

    refs = at_budget_references()
    defs = []
    for sc in frontier_scenarios(scenarios):
        for seed in seeds:
            stream = _load_stream(sc, int(seed))
            if not any(isinstance(e, Query) for e in stream.events):
                continue  # nothing to recall: no frontier (the clairvoyant would refuse it)
            n = sum(1 for e in stream.events if isinstance(e, Episode))
            for b in budget_grid(n, base):
                for pid, extra in refs:
                    params = tuple(sorted({**extra, "budget": b}.items()))
                    defs.append(RunDef(resolve_policy(pid), sc, int(seed), params, llm))
    return defs


def frontier_table(results: Sequence[RunResult]) -> pd.DataFrame:
    """One row per reference run: scenario, seed, reference, budget, recall (mean over the
    queries with a relevant unit), queries, footprint_mean."""
    rows = []
    for r in results:
        d = r.definition
        rec = r.queries["recall"].to_numpy(dtype=np.float64)
        ok = np.isfinite(rec)
        rows.append(
            {
                "scenario": d.scenario,
                "seed": d.seed,
                "reference": str(r.summary.get("policy", d.policy)),
                "budget": int(dict(d.params)["budget"]),
                "recall": float(rec[ok].mean()) if ok.any() else np.nan,
                "recall_sum": float(rec[ok].sum()),
                "queries": int(ok.sum()),
                "footprint_mean": float(r.summary.get("footprint_mean", np.nan)),
            }
        )
    cols = ["scenario", "seed", "reference", "budget", "recall", "recall_sum", "queries"]
    return pd.DataFrame(rows, columns=[*cols, "footprint_mean"])


def frontier(
    scenarios: Sequence[str],
    seeds: Sequence[int] = (0,),
    *,
    llm: tuple[tuple[str, Any], ...] = (),
    root: str | None = None,
    jobs: int = 1,
    executor: Any = None,
    resume: bool = True,
    progress: bool | str = False,
) -> pd.DataFrame:
    """Run the frontier's references (cached under ``root`` like any run) and tabulate."""
    from .api import run_grid

    defs = frontier_defs(scenarios, seeds, llm)
    if not defs:
        return frontier_table([])
    return frontier_table(
        run_grid(defs, root=root, jobs=jobs, executor=executor, resume=resume, progress=progress)
    )


def rerun_with_provenance(d: RunDef) -> tuple[pd.DataFrame, np.ndarray]:
    """The run of ``d`` repeated in this process: its per-query metrics and how many
    episodes each memory of its final store covers (its provenance), more than one for a
    memory that consolidates, which the raw-memory bound does not cover."""
    from memsim.engine import metrics, runner

    from .api import prepare

    stream, _, gt, policy = prepare(d)
    queries = metrics.evaluate(runner.run(policy, stream), gt)
    store = policy.store
    return queries, np.array([len(p) for p in store.provenance[: store.n]], dtype=np.int64)


# ---------------------------------------------------------------- statistics


def family(scenario: str) -> str:
    """The family of a scenario spec: ``synthetic``, ``locomo``, ``scripted``, ..."""
    s = str(scenario)
    return s.split(":", 1)[0] if ":" in s.split("/", 1)[0] else s.split("/", 1)[0]


def seeded_stream(scenario: str) -> bool:
    """Whether the stream of ``scenario`` depends on the seed (its source says so); a spec
    that no source reads counts as seeded (each run its own unit)."""
    from memsim.engine.sources import seeded

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
    from memsim.engine.metric_registry import metric_direction

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


# ---------------------------------------------------------------- pooled tables


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
    """``gap`` = bound - recall per query (when the table carries the bound)."""
    if BOUND not in per_query or GAP in per_query:
        return per_query
    return per_query.assign(**{GAP: per_query[BOUND] - per_query["recall"]})


# ---------------------------------------------------------------- panels and markdown

LOSS_LABELS = {
    "recall": "covered in top k",
    "ranked_out": "ranked out",
    "forgotten": "forgotten",
    "never_kept": "never kept",
}


def panels(scenarios: Iterable[Any]) -> list[tuple[str, list[str]]]:
    """(label, scenario specs) of the calibration views: every non-scripted stream alone,
    except LoCoMo's conversations, pooled into one (clusters: seed x conversation)."""
    from .figures import short_scenario

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


def calibration_table(per_query: pd.DataFrame) -> pd.DataFrame:
    """Per policy (pooled over the given rows): recall, bound, gap, the loss shares and
    stale, each with a cluster-bootstrap interval (clusters: scenario x seed)."""
    metrics = ["recall", BOUND, GAP, "ranked_out", "forgotten", "never_kept", "stale"]
    return pooled_table(add_gap(per_query), ["policy"], metrics)


def calibration_markdown(per_query: pd.DataFrame, frontier: pd.DataFrame | None = None) -> str:
    """The calibration sections of summary.md: the bound and where recall is lost per
    stream (LoCoMo pooled), LoCoMo by category and evidence age, the frontier's references,
    and the superiority matrices."""
    from .figures import AGE_BINS, age_bin_labels, ordered_policies

    lines: list[str] = []
    views = panels(per_query["scenario"].unique())
    if not views:
        return ""
    order = ordered_policies(per_query["policy"].unique())
    lines += [
        "## The clairvoyant bound and where recall is lost\n",
        "bound = recall@k of the clairvoyant reference run at this policy's own retrievable "
        "footprint over time (matched mode): the best any retention of raw episode memories "
        "could reach at that footprint; gap = bound - recall. ‡ = the policy exceeds the "
        "bound: its memories cover several episodes each (consolidation, dedup that adds "
        "provenance), which raw-memory retention cannot. Of the asked units: covered in the "
        "top k (= recall), ranked out (a retrievable memory covered it, ranked below k), "
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
        gaps = t[t.metric == GAP].set_index("policy")["mean"]
        for p, g in zip(gaps.index.astype(str), gaps.to_numpy(np.float64)):
            if np.isfinite(g) and g < 0 and GAP in wide.columns:
                current: Any = wide.at[p, GAP]
                wide.at[p, GAP] = f"{current} ‡"
        names = {BOUND: "clairvoyant at footprint", GAP: "gap", **LOSS_LABELS, "stale": "stale"}
        wide = wide[[c for c in names if c in wide.columns]].rename(columns=names)
        lines += [f"### {label}\n", *_md_table(wide, "policy", order), ""]
    loco = per_query[per_query["scenario"].map(family) == "locomo"]
    if not loco.empty:
        lines += [
            "## LoCoMo recall@k by question category and by evidence age\n",
            "Pooled over conversations; mean [95% cluster-bootstrap CI over seed x "
            "conversation]; n = questions.\n",
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


def pooled_frontier(frontier: pd.DataFrame) -> pd.DataFrame:
    """Frontier rows pooled over seeds and scenarios per (reference, budget): recall
    weighted by queries, footprint_mean averaged over runs."""
    if frontier.empty:
        return frontier
    g = frontier.groupby(["reference", "budget"], sort=True)
    out = g.agg(
        recall_sum=("recall_sum", "sum"),
        queries=("queries", "sum"),
        footprint_mean=("footprint_mean", "mean"),
    ).reset_index()
    out["recall"] = np.where(out.queries > 0, out.recall_sum / out.queries.clip(lower=1), np.nan)
    return out


def superiority_markdown(per_query: pd.DataFrame, metric: str = "recall") -> list[str]:
    """One superiority matrix per scenario family (scripted worked examples left out)."""
    lines: list[str] = []
    fam = per_query["scenario"].map(family)
    from .figures import ordered_policies

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
        pairs = len(sup) // 2
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
