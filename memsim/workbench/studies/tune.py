"""Tuning a policy's thresholds with Optuna, and sensitivity reports.

``tune`` searches a policy's declared parameter ranges for one objective (TPE) or several
(NSGA-II, giving a Pareto front): recall up, stale down, footprint down. Trials run on the
training seeds; the documented and the tuned parameters are then compared on held-out seeds,
so nothing is overfitted. The study lives in a SQLite database under the output folder:
a killed tuning resumes where it stopped, and several workers can share one study.

``spreads`` turns one-at-a-time sweeps into a ranking of which parameters move each metric
(the spread of the metric over the parameter's declared range); their markdown and tornado
figures are in present/tune.py.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from memsim.engine.errors import ParamError
from memsim.engine.metric_registry import metric_direction, metric_names
from memsim.engine.registry import spec

from ..runs.execution import (
    as_overrides,
    index_of,
    matched_clairvoyant,
    progress_bar,
    resolve_policy,
    run_grid,
)
from ..runs.results import RunDef, code_fingerprint
from ..stats import bootstrap_ci
from .sweep import SweepSpec, declared_ranges, run_metrics, sensitivity_ranges, sweep, wide

DIRECTIONS: dict[str, Literal["minimize", "maximize"]] = {
    m: "maximize" if metric_direction(m) == "higher" else "minimize"
    for m in metric_names("objective")
}


@dataclass
class TuneResult:
    policy: str
    objectives: tuple[str, ...]
    documented: dict[str, Any]
    tuned: dict[str, Any]
    pareto: pd.DataFrame  # one row per Pareto-optimal trial: params and train metrics
    held_out: pd.DataFrame  # documented vs tuned on the held-out seeds, with intervals
    trials: int
    storage: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # each searched field's (lo, hi, type), and every trial of the study (trials_table)
    ranges: dict[str, tuple[float, float, type]] = field(default_factory=dict)
    history: pd.DataFrame = field(default_factory=pd.DataFrame)


def _suggest(trial: Any, ranges: Mapping[str, tuple[float, float, type]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (lo, hi, kind) in ranges.items():
        if kind is int:
            out[name] = trial.suggest_int(name, int(math.ceil(lo)), int(math.floor(hi)))
        else:
            out[name] = trial.suggest_float(name, lo, hi)
    return out


def tune_plan(
    policy: str,
    objectives: Sequence[str],
    fields: Sequence[str] | None,
    trials: int,
    train_seeds: Sequence[int],
    test_seeds: Sequence[int],
    index: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """What :func:`tune` would search, checked before anything runs or is written: the
    index settings and each field's range (``memsim tune`` checks every policy first)."""
    if not objectives:
        raise ParamError(f"tune: no objective given; known: {', '.join(DIRECTIONS)}")
    for o in objectives:
        if o not in DIRECTIONS:
            raise ParamError(f"tune: unknown objective {o!r}; known: {', '.join(DIRECTIONS)}")
    if set(train_seeds) & set(test_seeds):
        raise ParamError("tune: training and held-out seeds must differ")
    if trials < 1:
        raise ParamError(f"tune: trials must be >= 1, got {trials}")
    settings = index_of(policy, index)  # (refused before anything is written)
    # a field named without a finite declared range is searched from half to twice its default
    all_ranges = sensitivity_ranges(policy) if fields else declared_ranges(policy)
    names = list(fields) if fields else list(all_ranges)
    for n in names:
        if n not in all_ranges:
            raise ParamError(f"tune {policy}: {n!r} is not a numeric field it can search")
    if not names:
        raise ParamError(
            f"tune {policy}: it has no numeric field with a finite declared range to tune "
            f"(memsim params {policy}); name fields with --fields"
        )
    ranges = {n: all_ranges[n] for n in names}
    return settings, ranges


def tune(
    policy: str,
    scenarios: Sequence[str],
    *,
    objectives: Sequence[str] = ("recall",),
    fields: Sequence[str] | None = None,
    trials: int = 20,
    train_seeds: Sequence[int] = (0, 1, 2, 3, 4),
    test_seeds: Sequence[int] = (5, 6, 7, 8, 9),
    out: str | Path = "results/tuning",
    seed: int = 0,
    jobs: int = 1,
    executor: Any = None,
    index: Mapping[str, Any] | None = None,
    progress: bool | str = False,
) -> TuneResult:
    """Tune ``fields`` (default: every declared-range field) of ``policy``; see the module.
    ``index``: candidate index settings for every run (the study's name carries them)."""
    with warnings.catch_warnings():
        # optuna imports tqdm.auto, which warns in a notebook without ipywidgets; memsim
        # never asks optuna for a progress bar
        warnings.filterwarnings("ignore", message="IProgress not found")
        import optuna

    settings, ranges = tune_plan(policy, objectives, fields, trials, train_seeds, test_seeds, index)
    names = list(ranges)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{(out / 'optuna.db').resolve()}"
    cache = out / "cache"
    directions: list[Literal["minimize", "maximize"]] = [DIRECTIONS[o] for o in objectives]
    sampler = (
        optuna.samplers.TPESampler(seed=seed)
        if len(objectives) == 1
        # a generation small enough that a short study still evolves (default 50)
        else optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, min(50, trials // 4)))
    )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    name = f"{policy}:{','.join(scenarios)}:{','.join(objectives)}:{','.join(names)}"
    # trials scored by other code are not resumed: a report names one code (studies.provenance)
    name += f":code={code_fingerprint()}"
    if settings:  # (a study without them keeps the name it always had)
        name += ":index=" + ",".join(f"{k}={v}" for k, v in settings)
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        load_if_exists=True,
        directions=directions,
        sampler=sampler,
    )

    params_cls = spec(policy).load().Params

    def objective(trial: Any) -> float | tuple[float, ...]:
        values = _suggest(trial, ranges)
        try:
            params_cls().replace(**values)
        except ParamError as e:  # a combination the Params reject
            raise optuna.TrialPruned(str(e)) from None
        t = sweep(
            SweepSpec(policy, {k: [v] for k, v in values.items()}, "grid", 1),
            scenarios,
            train_seeds,
            root=cache,
            jobs=jobs,
            executor=executor,
            index=index,
        )
        w = wide(t)
        if len(w) < len(scenarios) * len(train_seeds):
            raise optuna.TrialPruned("a run failed")
        means = tuple(float(w[o].mean()) for o in objectives)
        return means[0] if len(means) == 1 else means

    defaults = params_cls()
    documented = {k: getattr(defaults, k) for k in names}
    if not study.trials:  # the documented point is trial 0: the front can only improve on it
        study.enqueue_trial(documented, skip_if_exists=True)
    done = len([t for t in study.trials if t.state.is_finished()])
    if trials > done:
        bar = progress_bar(trials, progress, initial=done, what=f"{policy} trials")
        try:
            study.optimize(
                objective, n_trials=trials - done, callbacks=[lambda _s, _t: bar.update(1)]
            )
        finally:
            bar.close()
    best = study.best_trials
    pareto = pd.DataFrame(
        [{**t.params, **dict(zip(objectives, t.values))} for t in best]
    ).sort_values(list(objectives), ascending=[d == "minimize" for d in directions])
    row = _pick(pareto, study, documented, objectives, directions)
    tuned = {k: int(row[k]) if ranges[k][2] is int else float(row[k]) for k in names}
    held = _held_out(
        policy, scenarios, test_seeds, documented, tuned, cache, jobs, executor, settings
    )
    return TuneResult(
        policy,
        tuple(objectives),
        documented,
        tuned,
        pareto,
        held,
        len(study.trials),
        storage,
        ranges=ranges,
        history=trials_table(policy, study, documented, objectives),
    )


def trials_table(
    policy: str, study: Any, documented: Mapping[str, Any], objectives: Sequence[str]
) -> pd.DataFrame:
    """Every trial of a study: number, state (complete, pruned: a combination the Params
    refuse or a failed run), whether it is the documented point and on the Pareto front,
    its training objectives and its parameters (``name=value;...``)."""
    front = {t.number for t in study.best_trials}
    rows = []
    for t in study.trials:
        values = list(t.values) if t.values is not None else [math.nan] * len(objectives)
        rows.append(
            {
                "policy": policy,
                "trial": t.number,
                "state": t.state.name.lower(),
                "documented": all(t.params.get(k) == v for k, v in documented.items()),
                "pareto": t.number in front,
                **dict(zip(objectives, values)),
                "params": ";".join(f"{k}={v:.6g}" for k, v in t.params.items()),
            }
        )
    return pd.DataFrame(rows)


def _pick(
    pareto: pd.DataFrame,
    study: Any,
    documented: Mapping[str, Any],
    objectives: Sequence[str],
    directions: Sequence[str],
) -> pd.Series:
    """The tuned point: the Pareto trial best on the first objective among those no worse than
    the documented parameters on every other objective on the training seeds (better recall at
    no more footprint, say); without such a trial (or a documented trial), the best on the
    first objective."""
    doc = [
        t
        for t in study.trials
        if t.values is not None and all(t.params.get(k) == v for k, v in documented.items())
    ]
    ok = pareto
    if doc and len(objectives) > 1:
        keep = np.ones(len(pareto), dtype=bool)
        for o, d, v in zip(objectives[1:], directions[1:], doc[0].values[1:]):
            col = pareto[o].to_numpy(dtype=np.float64)
            keep &= col <= v if d == "minimize" else col >= v
        if keep.any():
            ok = pareto[keep]
    return ok.iloc[0]


def _held_out(
    policy: str,
    scenarios: Sequence[str],
    seeds: Sequence[int],
    documented: Mapping[str, Any],
    tuned: Mapping[str, Any],
    cache: Path,
    jobs: int,
    executor: Any,
    index: tuple[tuple[str, Any], ...] = (),
) -> pd.DataFrame:
    """Documented vs tuned on held-out seeds: per metric the mean over runs and a 95%
    bootstrap interval over the (seed x scenario) runs. ``clairvoyant_gap`` is the recall of
    the clairvoyant reference held at each run's own footprint over time
    (:func:`~memsim.workbench.runs.execution.matched_clairvoyant`) minus the run's recall."""
    has_reference = True
    try:
        spec("clairvoyant")
    except Exception:  # a registry without the reference: no gap to report
        has_reference = False
    full = resolve_policy(policy)
    rows = []
    for label, values in (("documented", documented), ("tuned", tuned)):
        defs = [
            RunDef(full, sc, int(seed), as_overrides(values), (), index)
            for sc in scenarios
            for seed in seeds
        ]
        per_run = []
        for r in run_grid(defs, root=cache, jobs=jobs, executor=executor):
            got = run_metrics(r)
            if has_reference and "recall" in got:
                ref = run_metrics(matched_clairvoyant(r))["recall"]
                got["clairvoyant_gap"] = ref - got["recall"]
            per_run.append(got)
        w = pd.DataFrame(per_run)
        for m in (*DIRECTIONS, "clairvoyant_gap"):
            if m not in w:
                continue
            v = w[m].to_numpy(dtype=np.float64)
            lo, hi = bootstrap_ci(v)
            rows.append(
                {
                    "parameters": label,
                    "metric": m,
                    "mean": float(np.nanmean(v)),
                    "ci_low": lo,
                    "ci_high": hi,
                    "runs": int(np.isfinite(v).sum()),
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- sensitivity


def spreads(
    oat: pd.DataFrame, metrics: Sequence[str] = ("recall", "stale", "footprint_mean")
) -> pd.DataFrame:
    """Per (field, metric): the metric at the field's lowest and highest point, its range over
    the field's points (mean over seeds), ranked by range within each metric."""
    rows = []
    for (f, scenario), g in oat.groupby(["field", "scenario"], sort=False):
        per_point = g.groupby("value_of_field")[[m for m in metrics if m in g]].mean()
        for m in per_point:
            col = per_point[m]
            rows.append(
                {
                    "field": f,
                    "scenario": scenario,
                    "metric": m,
                    "at_low": float(col.iloc[0]),
                    "at_high": float(col.iloc[-1]),
                    "spread": float(col.max() - col.min()),
                    "largest": float(col.abs().max()),
                    "points": len(col),
                }
            )
    return pd.DataFrame(rows).sort_values(
        ["scenario", "metric", "spread"], ascending=[True, True, False]
    )


# a field "matters" for a metric when its spread exceeds this share of the metric's scale
MATTER_SHARE = 0.01


def matters(spread: pd.DataFrame, share: float = MATTER_SHARE) -> pd.Series:
    """Per row of :func:`spreads`: whether the field moves the metric by more than ``share``
    of max(1, the largest value over the field's points): an absolute 0.01 for a rate (recall,
    stale), 1% of the largest value for a count (footprint, in memories)."""
    scale = np.maximum(1.0, spread["largest"].abs().to_numpy(dtype=np.float64))
    # (a spread equal to the threshold but for float rounding does not exceed it)
    above = spread["spread"].to_numpy(dtype=np.float64) > share * scale * (1 + 1e-9)
    return pd.Series(above, spread.index)
