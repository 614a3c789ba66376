"""The calibration study: the frontier of references at a budget (every reference that
declares ``at_budget``, a Params override beside ``budget=B``, run on a log grid of budgets
B), the calibration table of a comparison (recall, the clairvoyant bound at each run's own
footprint, the gap and where recall is lost, pooled with cluster-bootstrap intervals), and a
run repeated with its provenance.

The bound itself is added to each run by ``runs.execution.with_bound``; the intervals and the
superiority test are in ``stats``. No policy id is written here: references are found by their
spec (``clairvoyant``) or by the ``at_budget`` attribute of their class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine import metrics, registry, runner
from memsim.engine.events import Episode, Query

from ..runs.execution import load_stream, prepare, resolve_policy, run_grid
from ..runs.results import RunDef, RunResult
from ..stats import CALIBRATION_METRICS, add_gap, pooled_table

LOSS = ("recall", "ranked_out", "forgotten", "never_kept")  # four shares summing to 1
BASE = 4  # frontier budgets: powers of BASE (a log grid)


# ---------------------------------------------------------------- the frontier


def at_budget_references() -> list[tuple[str, dict[str, Any]]]:
    """(policy id, Params overrides) of every registered policy whose class declares
    ``at_budget``: run with ``budget=B`` and those overrides it is a frontier reference."""
    out = []
    for s in registry.specs(references=True):
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
    refs = at_budget_references()
    defs = []
    for sc in frontier_scenarios(scenarios):
        for seed in seeds:
            stream = load_stream(sc, int(seed))
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
    defs = frontier_defs(scenarios, seeds, llm)
    if not defs:
        return frontier_table([])
    return frontier_table(
        run_grid(
            defs,
            root=root,
            jobs=jobs,
            executor=executor,
            resume=resume,
            progress=progress,
            what="frontier runs",
        )
    )


def rerun_with_provenance(d: RunDef) -> tuple[pd.DataFrame, np.ndarray]:
    """The run of ``d`` repeated in this process: its per-query metrics and how many
    episodes each memory of its final store covers (its provenance), more than one for a
    memory that consolidates, which the raw-memory bound does not cover."""
    stream, _, gt, policy = prepare(d)
    queries = metrics.evaluate(runner.run(policy, stream), gt)
    store = policy.store
    return queries, np.array([len(p) for p in store.provenance[: store.n]], dtype=np.int64)


# ---------------------------------------------------------------- tables


def calibration_table(per_query: pd.DataFrame) -> pd.DataFrame:
    """Per policy (pooled over the given rows): recall, bound, gap and its retention and
    ranking parts, the loss shares and stale, each with a cluster-bootstrap interval
    (clusters: scenario x seed)."""
    metrics = ["recall", *CALIBRATION_METRICS, "ranked_out", "forgotten", "never_kept", "stale"]
    return pooled_table(add_gap(per_query), ["policy"], metrics)


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
