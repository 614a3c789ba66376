"""Tuning a policy's thresholds with Optuna, and sensitivity reports.

``tune`` searches a policy's declared parameter ranges for one objective (TPE) or several
(NSGA-II, giving a Pareto front): recall up, stale down, footprint down. Trials run on the
training seeds; the documented and the tuned parameters are then compared on held-out seeds,
so nothing is overfitted. The study lives in a SQLite database under the output folder:
a killed tuning resumes where it stopped, and several workers can share one study.

``sensitivity_report`` turns one-at-a-time sweeps into a ranking of which parameters move
each metric (the spread of the metric over the parameter's declared range) and a tornado
figure per policy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from memsim.engine.errors import ParamError
from memsim.engine.metric_registry import metric_direction, metric_names

from .report import markdown_table
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


def _suggest(trial: Any, ranges: Mapping[str, tuple[float, float, type]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (lo, hi, kind) in ranges.items():
        if kind is int:
            out[name] = trial.suggest_int(name, int(math.ceil(lo)), int(math.floor(hi)))
        else:
            out[name] = trial.suggest_float(name, lo, hi)
    return out


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
) -> TuneResult:
    """Tune ``fields`` (default: every declared-range field) of ``policy``; see the module.
    ``index``: candidate index settings for every run (the study's name carries them)."""
    import warnings

    with warnings.catch_warnings():
        # optuna imports tqdm.auto, which warns in a notebook without ipywidgets; memsim
        # never asks optuna for a progress bar
        warnings.filterwarnings("ignore", message="IProgress not found")
        import optuna

    for o in objectives:
        if o not in DIRECTIONS:
            raise ParamError(f"tune: unknown objective {o!r}; known: {', '.join(DIRECTIONS)}")
    if set(train_seeds) & set(test_seeds):
        raise ParamError("tune: training and held-out seeds must differ")
    if trials < 1:
        raise ParamError(f"tune: trials must be >= 1, got {trials}")
    from .api import index_of

    settings = index_of(policy, index)  # (refused before anything is written)
    # a field named without a finite declared range is searched from half to twice its default
    all_ranges = sensitivity_ranges(policy) if fields else declared_ranges(policy)
    names = list(fields) if fields else list(all_ranges)
    for n in names:
        if n not in all_ranges:
            raise ParamError(f"tune {policy}: {n!r} is not a numeric field it can search")
    ranges = {n: all_ranges[n] for n in names}
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
    if settings:  # (a study without them keeps the name it always had)
        name += ":index=" + ",".join(f"{k}={v}" for k, v in settings)
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        load_if_exists=True,
        directions=directions,
        sampler=sampler,
    )

    from memsim.engine.registry import spec

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
        study.optimize(objective, n_trials=trials - done)
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
        policy, tuple(objectives), documented, tuned, pareto, held, len(study.trials), storage
    )


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
    (:func:`~memsim.workbench.api.matched_clairvoyant`) minus the run's recall."""
    from memsim.engine.registry import spec

    from .api import _overrides, bootstrap_ci, matched_clairvoyant, resolve_policy, run_grid
    from .results import RunDef

    has_reference = True
    try:
        spec("clairvoyant")
    except Exception:  # a registry without the reference: no gap to report
        has_reference = False
    full = resolve_policy(policy)
    rows = []
    for label, values in (("documented", documented), ("tuned", tuned)):
        defs = [
            RunDef(full, sc, int(seed), _overrides(values), (), index)
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


def tuning_markdown(results: Sequence[TuneResult]) -> str:
    lines = [
        "# Documented versus tuned parameters",
        "",
        "Generated by `memsim tune` (Optuna: TPE for one objective, NSGA-II for several; the "
        "documented parameters are trial 0). Trials run on the training seeds; the tuned point "
        "is the Pareto trial best on the first objective among those no worse than the "
        "documented parameters on the others. The table compares documented and tuned "
        "parameters on held-out seeds (means over runs, 95% bootstrap intervals over runs); "
        "clairvoyant_gap is the recall of the clairvoyant reference at the run's own footprint "
        "over time minus the run's recall (negative: the policy beats retention of raw "
        "memories at that footprint).",
        "",
    ]
    for r in results:
        lines += [
            f"## {r.policy} (objectives: {', '.join(r.objectives)}; {r.trials} trials)",
            "",
            "| parameter | documented | tuned |",
            "|---|---|---|",
        ]
        lines += [f"| {k} | {r.documented[k]:.4g} | {r.tuned[k]:.4g} |" for k in r.tuned]
        lines += ["", "| metric | documented | tuned |", "|---|---|---|"]
        h = r.held_out.set_index(["metric", "parameters"])
        for m in dict.fromkeys(r.held_out["metric"]):
            cells = []
            for label in ("documented", "tuned"):
                row = h.loc[(m, label)]
                cells.append(f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
            lines.append(f"| {m} | {cells[0]} | {cells[1]} |")
        lines += ["", f"Pareto front on the training seeds: {len(r.pareto)} trial(s).", ""]
        if len(r.pareto):
            cols = [*r.tuned, *r.objectives]
            lines += markdown_table(
                cols,
                ([f"{float(row[c]):.4g}" for c in cols] for _, row in r.pareto.head(10).iterrows()),
            )
            lines.append("")
    return "\n".join(lines) + "\n"


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
                }
            )
    return pd.DataFrame(rows).sort_values(
        ["scenario", "metric", "spread"], ascending=[True, True, False]
    )


def tornado_axes(ax: Any, spread: pd.DataFrame, metric: str = "recall") -> None:
    """Draw a tornado on ``ax``: per field, the metric at the low and high end of its range
    (bars around their midpoint), widest spread on top."""
    s = spread[spread["metric"] == metric].sort_values("spread")
    y = np.arange(len(s))
    mid = (s["at_low"] + s["at_high"]) / 2
    ax.barh(y, s["at_low"] - mid, left=mid, color="#4c72b0", label="field at low end")
    ax.barh(y, s["at_high"] - mid, left=mid, color="#dd8452", label="field at high end")
    ax.set_yticks(y, list(s["field"]))
    ax.set_xlabel(metric)
    ax.legend(loc="lower right", fontsize=8)


def tornado(spread: pd.DataFrame, path: str | Path, title: str, metric: str = "recall") -> None:
    """The tornado figure of one policy and scenario, written to ``path``."""
    from matplotlib.figure import Figure

    n = int((spread["metric"] == metric).sum())
    fig = Figure(figsize=(7, 0.3 * n + 1.5))
    ax = fig.subplots()
    tornado_axes(ax, spread, metric)
    ax.set_title(title)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})


def sensitivity_markdown(spread: pd.DataFrame, policy: str, threshold: float = 0.01) -> str:
    lines = [f"## {policy}", ""]
    for (scenario, metric), g in spread.groupby(["scenario", "metric"], sort=False):
        matter = g[g["spread"] > threshold * max(1.0, abs(g["at_low"]).max())]
        quiet = g[~g.index.isin(matter.index)]
        top = ", ".join(f"{r.field} ({r.spread:.3g})" for r in matter.head(5).itertuples())
        lines.append(
            f"- {scenario}, {metric}: matter: {top or 'none'}; "
            f"{len(quiet)} of {len(g)} fields move it by at most {threshold:.0%}."
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- command line


def run_tune_command(args: Any) -> int:
    from .api import index_of
    from .cli import _csv, _seeds, index_settings, split_specs
    from .executors import dask_executor

    out = Path(args.out)
    index = index_settings(args.index)
    for policy in _csv(args.policies):  # (refused before any study starts)
        index_of(policy, index)
    results = []
    with dask_executor(args.dask) as executor:
        for policy in _csv(args.policies):
            results.append(
                tune(
                    policy,
                    split_specs(args.scenarios),
                    objectives=_csv(args.objectives),
                    fields=_csv(args.fields) if args.fields else None,
                    trials=args.trials,
                    train_seeds=_seeds(args.train_seeds),
                    test_seeds=_seeds(args.test_seeds),
                    out=out / policy,
                    jobs=args.jobs,
                    executor=executor,
                    index=index,
                )
            )
    text = tuning_markdown(results)
    (out / "tuning.md").write_text(text)
    print(text)
    return 0


def run_sensitivity_command(args: Any) -> int:
    from .api import index_of
    from .cli import _csv, _seeds, index_settings, split_specs
    from .executors import dask_executor
    from .sweep import one_at_a_time

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ParamError(f"--out {str(out)!r} is a file, not a folder")
    if args.sobol is not None:
        if args.n is not None:
            raise ParamError(
                f"--n {args.n} sets the one-at-a-time curves' points per field; with --sobol "
                "the sample size is --sobol's N"
            )
        return run_sobol_command(args)
    for name, value in (("--metrics", args.metrics), ("--sample-seed", args.sample_seed)):
        if value is not None:
            raise ParamError(f"{name} {value} applies to --sobol only, which is not given")
    n = 5 if args.n is None else args.n
    index = index_settings(args.index)
    for policy in _csv(args.policies):  # (refused before anything runs)
        index_of(policy, index)
    out.mkdir(parents=True, exist_ok=True)
    text = [
        "# Sensitivity of each policy to its thresholds",
        "",
        f"Generated by `memsim sensitivity` ({n} points over each field's declared range, "
        "the others at their documented defaults; seeds "
        f"{args.seeds}). Spread = max - min of the metric over the field's points.",
        "",
    ]
    with dask_executor(args.dask) as executor:
        for policy in _csv(args.policies):
            frames = [
                one_at_a_time(
                    policy,
                    scenario,
                    _seeds(args.seeds),
                    fields=_csv(args.fields) if args.fields else None,
                    n=n,
                    root=out / "cache",
                    jobs=args.jobs,
                    executor=executor,
                    progress="always" if args.progress else not args.quiet,
                    index=index,
                )
                for scenario in split_specs(args.scenarios)
            ]
            oat = pd.concat(frames, ignore_index=True)
            sp = spreads(oat)
            oat.to_csv(out / f"{policy}_oat.csv", index=False, float_format="%.10g")
            sp.to_csv(out / f"{policy}_spread.csv", index=False, float_format="%.10g")
            for scenario, g in sp.groupby("scenario", sort=False):
                name = str(scenario).replace(":", "-").replace(",", "_").replace("=", "")
                tornado(g, out / f"tornado_{policy}_{name}.png", f"{policy} on {scenario}")
            text.append(sensitivity_markdown(sp, policy))
    (out / "sensitivity.md").write_text("\n".join(text))
    print("\n".join(text))
    return 0


def profile_slug(scenario: str) -> str:
    """The file-name part of a scenario spec: its profile (``synthetic:churn,episodes=400`` ->
    ``churn``; ``scripted/contradiction`` -> ``scripted-contradiction``)."""
    head = scenario.split(",", 1)[0]
    name = head.split(":", 1)[1] if head.startswith("synthetic:") else head
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name)


def sobol_table(t: pd.DataFrame) -> str:
    """A markdown table of one policy and scenario: field x metric, first / total order."""
    metrics = list(dict.fromkeys(t["metric"]))
    rows = []
    for f, g in t.groupby("field", sort=False):
        by = g.set_index("metric")
        cells = [
            f"{by.loc[m, 'first_order']:.2f} / {by.loc[m, 'total_order']:.2f}" for m in metrics
        ]
        rows.append([f"`{f}`", *cells])
    lines = markdown_table(["field", *(f"{m} first / total" for m in metrics)], rows)
    first = t.groupby("metric", sort=False).first()
    lines.append("")
    lines.append(
        f"n = {int(t['n'].iloc[0])}; base samples used, mean and sd of the metric: "
        + ", ".join(
            f"{m} {int(r['used'])}, {r['mean']:.3g}, {r['sd']:.3g}" for m, r in first.iterrows()
        )
    )
    return "\n".join(lines)


def run_sobol_command(args: Any) -> int:
    """``memsim sensitivity --sobol N``: one CSV of indices per policy and scenario."""
    from .api import index_of
    from .cli import _csv, _seeds, index_settings, split_specs
    from .executors import dask_executor
    from .sweep import sobol, sobol_ranges

    out = Path(args.out)
    scenarios = split_specs(args.scenarios)
    slugs = [profile_slug(s) for s in scenarios]
    if len(set(slugs)) != len(slugs):  # two sizes of one profile: the whole spec names it
        slugs = [s.replace(":", "-").replace(",", "_").replace("=", "") for s in scenarios]
    policies = _csv(args.policies)
    fields = _csv(args.fields) if args.fields else None
    metrics = _csv(args.metrics) if args.metrics else list(metric_names("sobol"))
    index = index_settings(args.index)
    for policy in policies:  # bad input fails before anything runs
        sobol_ranges(policy, fields)
        index_of(policy, index)
    out.mkdir(parents=True, exist_ok=True)
    with dask_executor(args.dask) as executor:
        for policy in policies:
            for scenario, slug in zip(scenarios, slugs):
                t = sobol(
                    policy,
                    scenario,
                    _seeds(args.seeds),
                    metrics=metrics,
                    fields=fields,
                    n=args.sobol,
                    seed=args.sample_seed or 0,
                    root=out / "cache",
                    jobs=args.jobs,
                    executor=executor,
                    progress="always" if args.progress else not args.quiet,
                    index=index,
                )
                path = out / f"sobol_{policy}_{slug}.csv"
                t.to_csv(path, index=False, float_format="%.6g")
                print(f"## {policy} on {scenario}\n\n{sobol_table(t)}\n\nwrote {path}\n")
    return 0
