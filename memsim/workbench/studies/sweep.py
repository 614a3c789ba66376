"""Parameter sweeps, one-at-a-time sensitivity and variance-based (Sobol) indices.

A sweep crosses, per policy, a set of parameter points with scenarios and seeds. Points come
from a grid, random samples or a Latin hypercube (``scipy.stats.qmc``) over ``Params`` fields
within their declared ranges (``memsim.engine.params.param(lo=, hi=)``). Every point is an
ordinary run definition (:class:`~memsim.workbench.runs.results.RunDef` with parameter
overrides), so a sweep resumes from the definition-derived run paths exactly as ``compare``
does, and gives the same bytes serially, with processes or on Dask.

    memsim.sweep(memsim.SweepSpec("pai", {"prune_threshold": (0.01, 0.2)}, method="lhs", n=20),
                 ["synthetic:churn"], seeds=[0, 1])

The result is one tidy table: one row per run and metric (policy, scenario, seed, point, the
swept parameters, metric, value, error). A run that fails is recorded with its error and the
others go on.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from memsim.engine import limits
from memsim.engine.errors import MemsimError, ParamError
from memsim.engine.metric_registry import metric_names
from memsim.engine.registry import spec

from ..runs.execution import (
    as_overrides,
    build_llm,
    execute,
    index_of,
    progress_bar,
    resolve_policy,
)
from ..runs.executors import map_in_order
from ..runs.results import RunDef, RunResult, atomic_write_parquet, is_complete, load, save

METHODS = ("grid", "random", "lhs")
# run-level summary of the per-query metrics that a sweep reports for every run
QUERY_MEANS = metric_names("sweep", level="query")
RUN_METRICS = metric_names("sweep", level="run")


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """Which points of one policy's parameter space to run.

    ``fields`` maps a Params field to a ``(lo, hi)`` range (sampled; ``None`` takes the
    declared range) or to an explicit list of values (used as given by every method).
    ``n`` is the number of points per field for ``grid`` and the number of samples for
    ``random`` and ``lhs``; ``seed`` makes the samples reproducible."""

    policy: str
    fields: Mapping[str, Any]
    method: str = "grid"
    n: int = 5
    seed: int = 0
    # drop points the Params reject as a combination (e.g. a grey zone that ends above the
    # reinforce threshold) instead of failing: each field alone is within its declared range
    drop_invalid: bool = False

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ParamError(
                f"sweep {self.policy}: method {limits.shown(self.method)} is not one of {METHODS}"
            )
        limits.check_number(
            self.n, f"sweep {self.policy}: n", 1, limits.MAX_SWEEP_POINTS, integer=True
        )
        limits.check_number(
            self.seed, f"sweep {self.policy}: seed", 0, limits.MAX_SEED, integer=True
        )
        if not self.fields:
            raise ParamError(f"sweep {self.policy}: empty grid (no fields to sweep)")


def declared_ranges(policy: str) -> dict[str, tuple[float, float, type]]:
    """(lo, hi, type) of every numeric Params field of ``policy`` with a finite declared range."""
    cls = spec(policy).load().Params
    out: dict[str, tuple[float, float, type]] = {}
    for f in dataclasses.fields(cls):
        lo, hi = f.metadata.get("lo"), f.metadata.get("hi")
        default = f.default
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            continue
        if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
            continue
        out[f.name] = (float(lo), float(hi), type(default))
    return out


STUDIES = ("sensitivity", "sobol", "tune")


def study_fields(policy: str, study: str) -> list[str] | None:
    """The fields ``policy`` declares for a long study (``sensitivity``, ``sobol`` or ``tune``:
    the ``study_fields`` of its class, the ones that act under its documented rules); None
    when it declares none (the study then moves every declared-range field)."""
    if study not in STUDIES:
        raise ParamError(f"study {limits.shown(study)} is not one of {STUDIES}")
    declared = getattr(spec(policy).load(), "study_fields", None) or {}
    names = declared.get(study)
    return list(names) if names else None


def study_trials(policy: str) -> int | None:
    """The tuning trials ``policy`` declares (``study_trials`` of its class), None if none."""
    trials = getattr(spec(policy).load(), "study_trials", None)
    return int(trials) if trials else None


def sensitivity_ranges(policy: str) -> dict[str, tuple[float, float, type]]:
    """The range each numeric field is moved over in a sensitivity analysis: its declared
    range when finite; otherwise half to twice its documented default, clipped to whichever
    bound it declares (a rate like Cosmo's base_rate 0.02 has a floor but no ceiling). Fields
    whose default is 0 and have no finite range are left out (no scale to move them by)."""
    declared = declared_ranges(policy)
    out: dict[str, tuple[float, float, type]] = {}
    for f in dataclasses.fields(spec(policy).load().Params):
        if f.name in declared:
            out[f.name] = declared[f.name]
            continue
        d = f.default
        if isinstance(d, bool) or not isinstance(d, (int, float)) or d == 0:
            continue
        lo, hi = sorted((d / 2, d * 2))
        if f.metadata.get("lo") is not None:
            lo = max(lo, float(f.metadata["lo"]))
        if f.metadata.get("hi") is not None:
            hi = min(hi, float(f.metadata["hi"]))
        if isinstance(d, int):
            lo, hi = math.ceil(lo), math.floor(hi)
        if lo < hi:
            out[f.name] = (float(lo), float(hi), type(d))
    return out


def _axes(s: SweepSpec) -> tuple[list[str], dict[str, list[Any]], dict[str, tuple[float, float]]]:
    """Split the fields into explicit value lists and sampled ranges, checked against the
    policy's Params (unknown field, range outside the declared one)."""
    cls = spec(s.policy).load().Params
    known = {f.name: f for f in dataclasses.fields(cls)}
    declared = declared_ranges(s.policy)
    lists: dict[str, list[Any]] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for name, how in s.fields.items():
        if name not in known:
            raise ParamError(
                f"sweep {s.policy}: {cls.__qualname__} has no parameter {name!r}; "
                f"known: {', '.join(sorted(known))}"
            )
        if isinstance(how, (list, tuple)) and not (
            len(how) == 2 and isinstance(how, tuple) and all(_is_num(v) for v in how)
        ):
            if not how:
                raise ParamError(f"sweep {s.policy}: {name}: empty list of values")
            lists[name] = list(how)
            continue
        if name not in declared:
            raise ParamError(
                f"sweep {s.policy}: {name} has no finite declared range; give a list of values"
            )
        lo, hi, _ = declared[name]
        if how is not None:
            a, b = (float(v) for v in how)
            if not (lo <= a <= b <= hi):
                raise ParamError(
                    f"sweep {s.policy}: {name} range {list(how)} is outside its declared "
                    f"range [{lo}, {hi}]"
                )
            lo, hi = a, b
        ranges[name] = (lo, hi)
    names = list(s.fields)
    return names, lists, ranges


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def points(s: SweepSpec) -> list[dict[str, Any]]:
    """The parameter points of one sweep spec, in a fixed order, each validated by the
    policy's Params (so an impossible combination fails here, naming field and value)."""
    names, lists, ranges = _axes(s)
    types = {k: t for k, (_, _, t) in declared_ranges(s.policy).items()}
    sampled = [n for n in names if n in ranges]
    columns: dict[str, list[Any]] = {}
    if s.method == "grid":
        axes = [lists[n] if n in lists else list(np.linspace(*ranges[n], num=s.n)) for n in names]
        size = math.prod(len(a) for a in axes)  # counted before the product is built
        limits.at_most(f"sweep {s.policy}: grid", "points", size, limits.MAX_SWEEP_POINTS)
        combos = list(itertools.product(*axes))
        rows = [dict(zip(names, c)) for c in combos]
    else:
        if sampled:
            d = len(sampled)
            if s.method == "lhs":
                from scipy.stats import qmc

                unit = qmc.LatinHypercube(d=d, rng=np.random.default_rng(s.seed)).random(s.n)
            else:
                unit = np.random.default_rng(s.seed).random((s.n, d))
            for j, n in enumerate(sampled):
                lo, hi = ranges[n]
                columns[n] = list(lo + unit[:, j] * (hi - lo))
        rng = np.random.default_rng([s.seed, 1])
        for n in names:
            if n in lists:
                columns[n] = [lists[n][i] for i in rng.integers(0, len(lists[n]), size=s.n)]
        rows = [{n: columns[n][i] for n in names} for i in range(s.n)]
    cls = spec(s.policy).load().Params
    out = []
    for row in rows:
        typed = {
            k: (int(round(float(v))) if types.get(k) is int else float(v)) if k in ranges else v
            for k, v in row.items()
        }
        try:
            cls().replace(**typed)  # validate (range, choices) before anything runs
        except ParamError:
            if s.drop_invalid:
                continue
            raise
        out.append(typed)
    return out


def definitions(
    specs: Sequence[SweepSpec],
    scenarios: Sequence[str],
    seeds: Sequence[int],
    llm: Mapping[str, Any] | None = None,
    index: Mapping[str, Any] | None = None,
) -> list[tuple[int, RunDef]]:
    """(point index, run definition) for every point x scenario x seed, in a fixed order.
    ``index``: candidate index settings for every run (:func:`api.index_of`)."""
    if not scenarios:
        raise ParamError("sweep: no scenarios")
    if not seeds:
        raise ParamError("sweep: no seeds")
    out: list[tuple[int, RunDef]] = []
    for s in specs:
        pts = points(s)
        runs = len(out) + len(pts) * len(scenarios) * len(seeds)
        limits.at_most("sweep", "runs", runs, limits.MAX_STUDY_RUNS)
        full = resolve_policy(s.policy)
        settings = index_of(full, index)
        for i, p in enumerate(pts):
            for scenario in scenarios:
                for seed in seeds:
                    d = RunDef(
                        full, scenario, int(seed), as_overrides(p), as_overrides(llm), settings
                    )
                    out.append((i, d))
    return out


def _run_one(d: RunDef, root: str | None, resume: bool) -> dict[str, Any]:
    """A run's metrics, or its error; never raises for a failing run."""
    try:
        if root is not None and resume and is_complete(root, d):
            r = load(root, d)
        else:
            r = execute(d)
            if root is not None:
                save(root, r)
    except Exception as e:  # recorded, and the sweep goes on
        return {"error": f"{type(e).__name__}: {e}"}
    return {"error": "", **run_metrics(r)}


def run_metrics(r: RunResult) -> dict[str, float]:
    """A run's summary metrics: the mean of each per-query metric, and the run-level ones."""
    out: dict[str, float] = {}
    for m in QUERY_MEANS:
        if m in r.queries:
            v = r.queries[m].to_numpy(dtype=np.float64)
            out[m] = float(np.nanmean(v)) if np.isfinite(v).any() else math.nan
    for m in RUN_METRICS:
        if m in r.summary:
            out[m] = float(r.summary[m])
    return out


def sweep(
    specs: Sequence[SweepSpec] | SweepSpec,
    scenarios: Sequence[str],
    seeds: Sequence[int] = (0,),
    *,
    llm: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    out: str | Path | None = None,
    jobs: int = 1,
    executor: cf.Executor | None = None,
    resume: bool = True,
    progress: bool | str = False,
    index: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run every point of every spec on every scenario and seed; the tidy table (one row per
    run and metric). With ``out``, the table is also written there as ``sweep.parquet`` and
    ``sweep.csv``. Rows come in definition order whatever the executor. ``index``: candidate
    index settings for every run (:func:`definitions`)."""
    if isinstance(specs, SweepSpec):
        specs = [specs]
    defs = definitions(specs, scenarios, seeds, llm, index)
    results = _execute([d for _, d in defs], root, jobs, executor, resume, progress)
    table = tidy(defs, results)
    if out is not None:
        o = Path(out)
        atomic_write_parquet(o / "sweep.parquet", table)
        (o / "sweep.csv").write_text(table.to_csv(index=False, float_format="%.10g"))
    return table


def _execute(
    defs: Sequence[RunDef],
    root: str | Path | None,
    jobs: int,
    executor: cf.Executor | None,
    resume: bool,
    progress: bool | str,
) -> list[dict[str, Any]]:
    """Every run's metrics (or its error), in definition order, on the chosen executor;
    cached under ``root`` at the definition-derived paths (resumed when ``resume``)."""
    root_s = None if root is None else str(root)
    return map_in_order(
        _run_one,
        [(d, root_s, resume) for d in defs],
        jobs=jobs,
        executor=executor,
        bar=progress_bar(len(defs), progress),
    )


def tidy(defs: Sequence[tuple[int, RunDef]], results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for (point, d), r in zip(defs, results):
        base = {
            "policy": d.policy,
            "scenario": d.scenario,
            "seed": d.seed,
            "point": point,
            "params": ",".join(f"{k}={v:.6g}" if _is_num(v) else f"{k}={v}" for k, v in d.params),
        }
        metrics = [m for m in (*QUERY_MEANS, *RUN_METRICS) if m in r] or ["-"]
        for m in metrics:
            rows.append({**base, "metric": m, "value": r.get(m, math.nan), "error": r["error"]})
    return pd.DataFrame(rows)


def wide(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run with a column per metric and per swept parameter."""
    ok = table[table["error"] == ""]
    w = ok.pivot_table(
        index=["policy", "scenario", "seed", "point", "params"], columns="metric", values="value"
    ).reset_index()
    for i, row in w.iterrows():
        for item in str(row["params"]).split(","):
            k, _, v = item.partition("=")
            if k:
                w.loc[i, k] = float(v) if is_number_text(v) else v
    return w


def is_number_text(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------- sweep files


class SweepFile(NamedTuple):
    """What a sweep file asks for (:func:`load_sweep_file`)."""

    specs: list[SweepSpec]
    scenarios: list[str]
    seeds: list[int]
    llm: dict[str, Any]  # mock LLM overrides of every run, as ``compare --llm`` takes them


def load_sweep_file(path: str | Path) -> SweepFile:
    """Read a sweep file (YAML, read strictly: no anchors or aliases, no duplicate keys,
    within memsim.engine.limits):

        scenarios: [synthetic:churn]
        seeds: [0, 1]
        llm: {faults.embed_fail: 0.2}    # optional: mock LLM overrides, as compare --llm
        policies:
          pai:
            method: lhs          # grid | random | lhs
            n: 20
            seed: 0
            fields:
              prune_threshold: [0.01, 0.2]     # a range (two numbers): sampled
              reflect_every: {values: [7, 14]} # explicit values

    Errors name the file, the field and the value."""
    where = str(Path(path))
    data = limits.read_yaml(limits.read_text(path, "sweep file"), where)
    if not isinstance(data, dict):
        raise ParamError(f"{where}: (top level): must be a mapping, got {type(data).__name__}")
    unknown = set(data) - {"scenarios", "seeds", "policies", "llm"}
    if unknown:
        raise ParamError(f"{where}: unknown key {limits.shown(sorted(map(str, unknown))[0])}")
    scenarios = data.get("scenarios")
    if (
        not isinstance(scenarios, list)
        or not scenarios
        or not all(isinstance(s, str) for s in scenarios)
    ):
        raise ParamError(
            f"{where}: scenarios: must be a non-empty list of specs, got {limits.shown(scenarios)}"
        )
    seeds = limits.check_seeds(data.get("seeds", [0]), f"{where}: seeds")
    llm = _llm_of_file(data.get("llm", {}), f"{where}: llm")
    pols = data.get("policies")
    if not isinstance(pols, dict) or not pols:
        raise ParamError(
            f"{where}: policies: must be a non-empty mapping, got {limits.shown(pols)}"
        )
    specs = []
    for name, body in pols.items():
        at = f"{where}: policies.{name}"
        if not isinstance(body, dict):
            raise ParamError(f"{at}: must be a mapping, got {limits.shown(body)}")
        extra = set(body) - {"method", "n", "seed", "fields"}
        if extra:
            raise ParamError(f"{at}: unknown key {limits.shown(sorted(map(str, extra))[0])}")
        fields = body.get("fields")
        if not isinstance(fields, dict) or not fields:
            raise ParamError(f"{at}.fields: empty grid (give at least one field)")
        parsed: dict[str, Any] = {}
        for f, how in fields.items():
            if isinstance(how, dict) and set(how) == {"values"} and isinstance(how["values"], list):
                for i, v in enumerate(how["values"]):
                    if _is_num(v):
                        limits.check_number(v, f"{at}.fields.{f}.values[{i}]")
                parsed[f] = list(how["values"])
            elif how is None:
                parsed[f] = None
            elif isinstance(how, list) and len(how) == 2 and all(_is_num(v) for v in how):
                lo, hi = (limits.check_number(v, f"{at}.fields.{f}") for v in how)
                parsed[f] = (float(lo), float(hi))
            else:
                raise ParamError(
                    f"{at}.fields.{f}: expected [lo, hi], {{values: [...]}} or null, "
                    f"got {limits.shown(how)}"
                )
        try:
            specs.append(
                SweepSpec(
                    str(name),
                    parsed,
                    method=body.get("method", "grid"),
                    n=body.get("n", 5),
                    seed=body.get("seed", 0),
                )
            )
            points(specs[-1])
        except MemsimError as e:
            raise ParamError(f"{where}: {e}") from None
    return SweepFile(specs, scenarios, seeds, llm)


def _llm_of_file(raw: Any, where: str) -> dict[str, Any]:
    """A sweep file's ``llm:`` mapping (``faults.embed_fail: 0.2``, ``modes.NAME: value``,
    ``text_embedder: NAME``), checked as every run would build its mock LLM."""
    if not isinstance(raw, dict):
        raise ParamError(f"{where}: must be a mapping of override: value, got {limits.shown(raw)}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise ParamError(f"{where}: a key must be a string, got {limits.shown(key)}")
        if _is_num(value):
            value = limits.check_number(value, f"{where}.{key}")
        out[key] = value
    try:
        build_llm(0, {}, out)
    except (MemsimError, TypeError) as e:  # TypeError: a mode of the wrong type
        raise ParamError(f"{where}: {limits.clip(str(e))}") from None
    return out


# ---------------------------------------------------------------------------- sensitivity


def one_at_a_time(
    policy: str,
    scenario: str,
    seeds: Sequence[int] = (0,),
    *,
    fields: Sequence[str] | None = None,
    n: int = 5,
    **run: Any,
) -> pd.DataFrame:
    """One-at-a-time curves: each field (default: every declared-range field) moved over ``n``
    points of its range (:func:`sensitivity_ranges`: a field named in ``fields`` without a
    finite declared range moves from half to twice its default) while the others keep their
    defaults. The wide table (one row per run) with a ``field`` column naming the field moved."""
    ranges = sensitivity_ranges(policy)
    declared = declared_ranges(policy)
    names = list(fields) if fields is not None else list(declared)
    for f in names:
        if f not in ranges:
            raise ParamError(f"sensitivity {policy}: {f!r} is not a numeric field it can move")
    frames = []
    for f in names:
        how: Any = None  # the declared range
        if f not in declared and f in ranges:
            lo, hi, kind = ranges[f]
            grid = np.linspace(lo, hi, num=n)
            how = sorted({int(round(v)) for v in grid}) if kind is int else [float(v) for v in grid]
        s = SweepSpec(policy, {f: how}, method="grid", n=n, drop_invalid=True)
        t = sweep(s, [scenario], seeds, **run)
        w = wide(t)
        if f not in w:  # every run of this field failed: say why, not a KeyError
            errors = t.loc[t["error"] != "", "error"]
            raise MemsimError(
                f"sensitivity {policy}.{f}: every run failed"
                + (f" ({errors.iloc[0]})" if len(errors) else "")
            )
        w.insert(0, "field", f)
        w["value_of_field"] = w[f]
        frames.append(w.drop(columns=[f]))
    return pd.concat(frames, ignore_index=True)


def sobol_sample(dists: Sequence[Any], n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The Saltelli design of ``scipy.stats.sobol_indices``: A and B (each ``(d, n)``, from one
    scrambled Sobol' sequence of 2d columns) and the AB pages (``(d, d, n)``: page i is A with
    row i taken from B). The same numbers scipy draws for ``rng=np.random.default_rng(seed)``."""
    from scipy.stats import qmc

    d = len(dists)
    a_b = qmc.Sobol(d=2 * d, rng=np.random.default_rng(seed), bits=64).random(n).T
    a_b = a_b.reshape(2, d, -1)
    for j, dist in enumerate(dists):
        a_b[:, j] = dist.ppf(a_b[:, j])
    a, b = a_b
    ab = np.tile(a, (d, 1, 1))
    i = np.arange(d)
    ab[i, i] = b[i]
    return a_b, ab


def sobol_estimates(
    f_a: np.ndarray, f_b: np.ndarray, f_ab: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """First and total order indices of one output (``f_a``, ``f_b``: ``(n,)``; ``f_ab``:
    ``(d, n)``): scipy's ``saltelli_2010`` after its centring on the mean of A and B (Saltelli
    et al. 2010, table 2 (b) and (f)). A constant output has indices 0, as in scipy; so does
    one that varies only by rounding (an sd under 1e-9 of its mean: a footprint that is a mean
    of identical counts summed in another order), whose indices would share out float noise."""
    mean = np.mean([f_a, f_b])
    fa, fb, fab = f_a - mean, f_b - mean, f_ab - mean
    var = np.var([fa, fb])
    if not var > (1e-9 * max(1.0, abs(mean))) ** 2:
        return np.zeros(len(f_ab)), np.zeros(len(f_ab))
    first = np.mean(fb * (fab - fa), axis=-1) / var
    total = 0.5 * np.mean((fa - fab) ** 2, axis=-1) / var
    return first, total


def sobol_ranges(policy: str, fields: Sequence[str] | None) -> dict[str, tuple[float, float, type]]:
    """The range each field is sampled over: :func:`sensitivity_ranges` (the declared range,
    else half to twice the documented default); by default every declared-range field."""
    cls = spec(policy).load().Params
    known = {f.name for f in dataclasses.fields(cls)}
    ranges = sensitivity_ranges(policy)
    names = list(fields) if fields is not None else list(declared_ranges(policy))
    if not names:
        raise ParamError(f"sobol {policy}: no fields to sample")
    if len(set(names)) != len(names):
        raise ParamError(f"sobol {policy}: a field is named twice in {names}")
    for f in names:
        if f not in known:
            raise ParamError(
                f"sobol {policy}: {cls.__qualname__} has no parameter {f!r}; "
                f"known: {', '.join(sorted(known))}"
            )
        if f not in ranges:
            raise ParamError(f"sobol {policy}: {f!r} is not a numeric field it can move")
    return {f: ranges[f] for f in names}


def sobol_plan(
    policy: str,
    metrics: Sequence[str],
    fields: Sequence[str] | None,
    n: int,
    seeds: Sequence[int],
) -> dict[str, tuple[float, float, type]]:
    """What :func:`sobol` would sample, checked before anything runs: the metrics are known,
    ``n`` is a power of 2 within the limits, the fields can move (their ranges)."""
    known_metrics = (*QUERY_MEANS, *RUN_METRICS)
    for m in metrics:
        if m not in known_metrics:
            raise ParamError(
                f"sobol {policy}: unknown metric {m!r}; known: {', '.join(known_metrics)}"
            )
    if not metrics:
        raise ParamError(f"sobol {policy}: no metrics")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2 or n & (n - 1):
        raise ParamError(f"sobol {policy}: n must be a power of 2 (>= 2), got {limits.shown(n)}")
    limits.at_most(f"sobol {policy}", "base samples", n, limits.MAX_SOBOL)
    if not seeds:
        raise ParamError(f"sobol {policy}: no seeds")
    ranges = sobol_ranges(policy, fields)
    runs = n * (len(ranges) + 2) * len(seeds)
    limits.at_most(f"sobol {policy}", "runs", runs, limits.MAX_STUDY_RUNS)
    return ranges


def sobol(
    policy: str,
    scenario: str,
    seeds: Sequence[int] = (0,),
    *,
    metrics: Sequence[str] | str = metric_names("sobol"),
    fields: Sequence[str] | None = None,
    n: int = 64,
    seed: int = 0,
    bootstrap: int = 999,
    llm: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    jobs: int = 1,
    executor: cf.Executor | None = None,
    resume: bool = True,
    progress: bool | str = False,
    index: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """First and total order Sobol' indices of every metric in ``metrics`` with respect to
    ``fields`` (default: every declared-range field), from one set of n x (d + 2) parameter
    points (the Saltelli design of ``scipy.stats.sobol_indices``, ``n`` a power of 2, sample
    seed ``seed``), each run on ``scenario`` at every seed of ``seeds`` (the metric of a point
    is its mean over them). Fields are sampled uniformly over :func:`sobol_ranges` (a field
    without a finite declared range: half to twice its default; an int field is rounded).

    The runs go through the sweep's executor (``jobs``, ``executor``; cached under ``root`` at
    their definition-derived paths, so an interrupted analysis resumes, and serial, processes
    and Dask give the same bytes).

    Base samples that cannot be scored are dropped, per metric, before estimation: a point
    whose combination the Params refuse (not run), a failed run, a NaN metric; dropping base
    sample j drops its A, B and AB rows together, so the estimator stays paired (the indices
    are then those of the valid part of the box). ``used`` says how many of the n base samples
    each index rests on. Intervals: percentile bootstrap over the used base samples
    (``bootstrap`` resamples, seeded by ``seed``; 0 for none).

    The tidy table: one row per metric and field (policy, scenario, metric, field, lo, hi,
    first_order, first_low, first_high, total_order, total_low, total_high, n, used, and the
    metric's mean and standard deviation over the used A and B points: the variance the
    indices divide)."""
    from scipy.stats import uniform

    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    ranges = sobol_plan(policy, metrics, fields, n, seeds)
    names = list(ranges)
    d = len(names)
    dists = [uniform(loc=lo, scale=hi - lo) for lo, hi, _ in ranges.values()]
    a_b, ab = sobol_sample(dists, n, seed)
    # every point: A's n columns, B's n, then each AB page's n
    x = np.concatenate([a_b[0], a_b[1], *ab], axis=1).T  # (n (d + 2), d)
    cls = spec(policy).load().Params
    full = resolve_policy(policy)
    settings = index_of(full, index)  # (candidate index settings, as a sweep's)
    values: list[dict[str, Any]] = []
    valid: list[bool] = []
    for row in x:
        v = {f: int(round(t)) if ranges[f][2] is int else float(t) for f, t in zip(names, row)}
        try:
            cls().replace(**v)
            valid.append(True)
        except ParamError:  # a combination the Params refuse: not run, dropped below
            valid.append(False)
        values.append(v)
    defs = [
        RunDef(full, scenario, int(s), as_overrides(v), as_overrides(llm), settings)
        for v, ok in zip(values, valid)
        if ok
        for s in seeds
    ]
    results = iter(_execute(defs, root, jobs, executor, resume, progress))
    y = np.full((len(metrics), len(values)), math.nan)
    for k, ok in enumerate(valid):
        if not ok:
            continue
        per_seed = [next(results) for _ in seeds]
        for i, m in enumerate(metrics):
            got = [r.get(m, math.nan) if r["error"] == "" else math.nan for r in per_seed]
            y[i, k] = float(np.mean(got))
    rows = []
    for i, m in enumerate(metrics):
        f_a, f_b, f_ab = y[i, :n], y[i, n : 2 * n], y[i, 2 * n :].reshape(d, n)
        keep = np.isfinite(f_a) & np.isfinite(f_b) & np.isfinite(f_ab).all(axis=0)
        used = int(keep.sum())
        first = total = np.full(d, math.nan)
        lo_hi = np.full((4, d), math.nan)
        spread = (math.nan, math.nan)
        if used >= 2:
            f_a, f_b, f_ab = f_a[keep], f_b[keep], f_ab[:, keep]
            spread = (float(np.mean([f_a, f_b])), float(np.std([f_a, f_b])))
            first, total = sobol_estimates(f_a, f_b, f_ab)
            if bootstrap > 0:
                rng = np.random.default_rng([seed, i])
                draws = np.empty((bootstrap, 2, d))
                for b in range(bootstrap):
                    idx = rng.integers(0, used, size=used)
                    draws[b] = sobol_estimates(f_a[idx], f_b[idx], f_ab[:, idx])
                q = np.quantile(draws, [0.025, 0.975], axis=0)  # (2, 2, d)
                lo_hi = np.array([q[0, 0], q[1, 0], q[0, 1], q[1, 1]])
        for j, f in enumerate(names):
            rows.append(
                {
                    "policy": policy,
                    "scenario": scenario,
                    "metric": m,
                    "field": f,
                    "lo": ranges[f][0],
                    "hi": ranges[f][1],
                    "first_order": float(first[j]),
                    "first_low": float(lo_hi[0, j]),
                    "first_high": float(lo_hi[1, j]),
                    "total_order": float(total[j]),
                    "total_low": float(lo_hi[2, j]),
                    "total_high": float(lo_hi[3, j]),
                    "n": n,
                    "used": used,
                    "mean": spread[0],
                    "sd": spread[1],
                }
            )
    return pd.DataFrame(rows)
