"""Which conclusions survive changes to the stand-ins: ``memsim robustness``.

The standard synthetic comparison is rerun under a grid of mock-LLM modes and generator
knobs (docs/mock-llm.md): one factor at a time around the defaults, plus a small
full-factorial core. Every pairwise conclusion ("A has higher recall@10 than B on churn",
"A keeps less noise than B on noisy") gets one effect per mode, and a verdict:

* **robust**: significant with the same sign in every mode;
* **fragile**: significant in some mode, but not significant or of the other sign in
  others (the modes that flip it are listed);
* **never significant**: significant in no mode.

A conclusion is oriented the way the default mode has it (:func:`verdict`), so no row
states a direction the default numbers contradict.

Significance: for a query metric, the 95% t interval of the per-query difference (same
query, same stream and seed) over the stream's independent units (``stats.interval_units``:
its seeds when there are two or more; one seed's questions otherwise, which share the run, so
that interval is optimistic) excludes 0; n and clusters are ``stats.sample_size``'s, the
counts summary.md prints; for a run metric (one
number per run, averaged over seeds) the difference is at least its stated margin
(:data:`RUN_MARGINS`: a margin, not a test).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine import registry
from memsim.engine.candidate_index import AUDIT_BOUND
from memsim.engine.errors import ParamError
from memsim.engine.metric_registry import METRICS, metric_names

from ..runs.execution import grid as run_defs
from ..runs.execution import run_grid
from ..stats import cluster_t_ci, interval_units, sample_size

ROBUST, FRAGILE, NEVER = "robust", "fragile", "never significant"
RUN_MARGIN = 0.05  # noise retention: a difference of 5 points counts as a real difference
# run metrics: (kind, margin); "abs": |A - B| >= margin, "rel": |A - B| >= margin x max(A, B)
RUN_MARGINS: dict[str, tuple[str, float]] = {
    "noise_retention": ("abs", RUN_MARGIN),
    "footprint_mean": ("rel", 0.05),
    "footprint_final": ("rel", 0.05),
}
# the four synthetic profiles of the standard suite
DEFAULT_SCENARIOS = ("synthetic:steady", "synthetic:churn", "synthetic:noisy", "synthetic:longgap")
# (metric, scenario prefix) the conclusions are drawn on; None: every scenario
DEFAULT_CONCLUSIONS = (
    ("recall", None),
    ("stale", None),
    ("needed_forgotten", None),
    ("noise_retention", "synthetic:noisy"),
    ("footprint_mean", None),
)


def default_grid() -> list[tuple[str, dict[str, Any]]]:
    """(label, --llm overrides): defaults, one factor at a time (every mode of
    docs/mock-llm.md and the embedder's paraphrase spread), and a 2x2x2 core (synthesis x
    chatter confidence x query value) whose corners are not already in the list."""
    ofat: list[tuple[str, dict[str, Any]]] = [
        ("default", {}),
        ("synthesis=latest", {"modes.synthesis": "latest"}),
        ("synthesis=first", {"modes.synthesis": "first"}),
        ("synthesis=all", {"modes.synthesis": "all"}),
        ("summary=first", {"modes.summary": "first"}),
        ("summary=latest", {"modes.summary": "latest"}),
        ("entity_forms=2", {"modes.entity_forms": 2}),
        ("resolution_error=0.1", {"modes.resolution_error": 0.1}),
        ("chatter_confidence=0.9", {"modes.chatter_confidence": 0.9}),
        ("fact_confidence_spread=0.2", {"modes.fact_confidence_spread": 0.2}),
        ("query_value=0.3", {"modes.query_value": 0.3}),
        ("wrong_class=0.1", {"faults.wrong_class": 0.1}),
        ("spread=2", {"bands.spread": 2.0}),
    ]
    seen = {tuple(sorted(o.items())) for _, o in ofat}
    core = []
    for syn, chat, qv in itertools.product(("majority", "first"), (-1.0, 0.9), (0.0, 0.3)):
        o: dict[str, Any] = {}
        if syn != "majority":
            o["modes.synthesis"] = syn
        if chat != -1.0:
            o["modes.chatter_confidence"] = chat
        if qv != 0.0:
            o["modes.query_value"] = qv
        if tuple(sorted(o.items())) not in seen:
            label = f"synthesis={syn}+chatter_confidence={chat:g}+query_value={qv:g}"
            core.append((label, o))
    return ofat + core


def small_grid() -> list[tuple[str, dict[str, Any]]]:
    """The default mode and one factor at a time without the core (a quick look)."""
    return [(label, o) for label, o in default_grid() if "+" not in label]


@dataclass(frozen=True)
class Effect:
    """One conclusion in one mode: ``diff`` = A - B oriented so > 0 means A is better; ``n``
    distinct paired questions and ``clusters`` the units of its interval (query metrics;
    0 for run metrics)."""

    diff: float
    significant: bool
    n: int = 0
    clusters: int = 0


def verdict(
    effects: Mapping[str, Effect], reference: str = "default"
) -> tuple[str, int, list[str]]:
    """(verdict, sign, modes that break it). ``sign`` (+1: A better) is the direction of
    the conclusion the standard comparison draws: the sign of the ``reference`` mode's
    effect (the defaults), whether or not it is significant there, so a conclusion is
    never stated against the default numbers; without a reference mode, or where its
    effect is 0, the direction most significant modes agree on. The breaking modes are
    those where it is not significant or has the other sign."""
    sig = {m: e for m, e in effects.items() if e.significant and np.isfinite(e.diff)}
    if not sig:
        return NEVER, 0, []
    ref = effects.get(reference)
    if ref is not None and np.isfinite(ref.diff) and ref.diff != 0:
        sign = 1 if ref.diff > 0 else -1
    else:
        pos = sum(1 for e in sig.values() if e.diff > 0)
        sign = 1 if pos * 2 >= len(sig) else -1
    broken = [
        m
        for m, e in effects.items()
        if not (e.significant and np.isfinite(e.diff) and np.sign(e.diff) == sign)
    ]
    return (ROBUST if not broken else FRAGILE), sign, broken


def _paired_effect(per_query: pd.DataFrame, a: str, b: str, metric: str, better: str) -> Effect:
    index = [c for c in ("scenario", "seed", "query_id") if c in per_query]
    wide = per_query.pivot_table(index=index, columns="policy", values=metric, aggfunc="first")
    if a not in wide or b not in wide:
        return Effect(float("nan"), False)
    both = wide[[a, b]].dropna()
    if not len(both):
        return Effect(float("nan"), False)
    d = (both[a] - both[b]).to_numpy() * (1.0 if better == "higher" else -1.0)
    pairs = both.index.to_frame(index=False)
    units, _ = interval_units(pairs)
    n, clusters = sample_size(pairs)
    lo, hi, _ = cluster_t_ci(d, units)
    sig = bool(np.isfinite(lo) and (lo > 0 or hi < 0))
    return Effect(float(d.mean()), sig, n, clusters)


def conclusions_table(
    frames: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
    conclusions: Sequence[tuple[str, str | None]] = DEFAULT_CONCLUSIONS,
) -> pd.DataFrame:
    """One row per (metric, scenario, A, B) with A before B in policy order: the verdict,
    the default-mode effect and the modes breaking it. ``frames``: mode label -> (per-query
    table, per-run table) of that mode's comparison."""
    rows = []
    first = next(iter(frames.values()))
    policies = list(dict.fromkeys(first[1]["policy"]))
    scenarios = list(dict.fromkeys(first[1]["scenario"]))
    for metric, only in conclusions:
        better = METRICS[metric].better
        level = METRICS[metric].level
        for scen in [s for s in scenarios if only is None or s.startswith(only)]:
            for a, b in itertools.combinations(policies, 2):
                effects: dict[str, Effect] = {}
                for mode, (pq, runs) in frames.items():
                    if level == "query":
                        effects[mode] = _paired_effect(
                            pq[pq["scenario"] == scen], a, b, metric, better
                        )
                    else:
                        effects[mode] = _run_effect(runs[runs["scenario"] == scen], a, b, metric)
                v, sign, broken = verdict(effects)
                win, lose = (a, b) if sign >= 0 else (b, a)
                default = effects.get("default", next(iter(effects.values())))
                flipped = [
                    m
                    for m in broken
                    if effects[m].significant and np.sign(effects[m].diff) == -sign
                ]
                rows.append(
                    {
                        "metric": metric,
                        "scenario": scen,
                        "conclusion": _sentence(win, lose, metric, scen),
                        "verdict": v,
                        "default_effect": default.diff * (sign if sign else 1),
                        "broken_by": ", ".join(broken),
                        "flipped_by": ", ".join(flipped),
                        "weak_in": ", ".join(m for m in broken if m not in flipped),
                        "n": default.n,
                        "clusters": default.clusters,
                        **{f"mode:{m}": e.diff * (sign if sign else 1) for m, e in effects.items()},
                        **{f"sig:{m}": e.significant for m, e in effects.items()},
                    }
                )
    return pd.DataFrame(rows)


def _run_effect(runs: pd.DataFrame, a: str, b: str, metric: str) -> Effect:
    """A run metric: the seed mean of A minus B (oriented), significant when it clears the
    metric's margin (:data:`RUN_MARGINS`)."""
    r = runs.groupby("policy")[metric].mean()
    va, vb = float(r.get(a, np.nan)), float(r.get(b, np.nan))
    d = (va - vb) * (1.0 if METRICS[metric].better == "higher" else -1.0)
    kind, margin = RUN_MARGINS.get(metric, ("abs", RUN_MARGIN))
    need = margin * max(abs(va), abs(vb)) if kind == "rel" else margin
    return Effect(d, bool(np.isfinite(d) and abs(d) >= need and abs(d) > 0))


def _sentence(a: str, b: str, metric: str, scenario: str) -> str:
    name = scenario.split(":", 1)[-1]
    if metric == "noise_retention":
        return f"{a} keeps less noise than {b} on {name}"
    if metric == "stale":
        return f"{a} returns fewer stale memories (stale@10) than {b} on {name}"
    if metric == "needed_forgotten":
        return f"{a} forgets less of what is needed than {b} on {name}"
    if metric.startswith("footprint"):
        return f"{a} keeps a smaller footprint than {b} on {name}"
    return f"{a} has higher {metric}@10 than {b} on {name}"


def robustness(
    policies: Sequence[str] | None = None,
    scenarios: Sequence[str] = DEFAULT_SCENARIOS,
    grid: Sequence[tuple[str, Mapping[str, Any]]] | None = None,
    *,
    seeds: Sequence[int] = (0,),
    jobs: int = 1,
    root: str | Path | None = None,
    progress: bool | str = False,
    conclusions: Sequence[tuple[str, str | None]] = DEFAULT_CONCLUSIONS,
    index: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run the comparison under every mode of ``grid`` (default :func:`default_grid`) and
    classify every pairwise conclusion; see the module docstring. ``index``: candidate
    index settings for every run of the policies they change (``api.grid``); the table's
    ``attrs["index_audit"]`` then holds the runs' exactness audit (:func:`index_audit`)."""
    pols = list(policies) if policies else [s.id for s in registry.specs()]
    if len({registry.spec(p).full_id for p in pols}) < 2:
        raise ParamError(
            f"robustness: its conclusions compare pairs of policies; {', '.join(pols)} "
            "names one (give two or more)"
        )
    modes = list(grid) if grid is not None else default_grid()
    if not modes:
        raise ParamError("robustness: the grid of modes is empty")
    defs: list[Any] = []
    spans: list[tuple[str, int, int]] = []
    for label, overrides in modes:
        d = run_defs(pols, scenarios, list(seeds), None, dict(overrides), index)
        spans.append((label, len(defs), len(defs) + len(d)))
        defs.extend(d)
    results = run_grid(defs, root=root, jobs=jobs, progress=progress)
    frames = {}
    for label, lo, hi in spans:
        rs = results[lo:hi]
        frames[label] = (
            pd.concat([r.queries for r in rs], ignore_index=True),
            pd.DataFrame([r.summary for r in rs]),
        )
    table = conclusions_table(frames, conclusions)
    table.attrs["modes"] = modes
    table.attrs["seeds"] = list(seeds)
    table.attrs["scenarios"] = list(scenarios)
    table.attrs["index"] = dict(index or {})
    table.attrs["index_audit"] = index_audit([r for r in results if r.definition.index])
    return table


def index_audit(results: Sequence[Any]) -> dict[str, Any]:
    """The exactness audit of the runs made through a candidate index: which policies, how
    many runs, and per audit share (the registry's ``index_audit`` group) its largest value over
    the runs and how many runs exceed ``candidate_index.AUDIT_BOUND`` (NaN shares, where nothing was
    audited, are left out; a share no run audited is NaN)."""
    out: dict[str, Any] = {
        "policies": sorted({r.definition.policy for r in results}),
        "runs": len(results),
        "bound": AUDIT_BOUND,
    }
    for metric in metric_names("index_audit"):
        shares = np.array([r.summary.get(metric, np.nan) for r in results], dtype=float)
        shares = shares[np.isfinite(shares)]
        out[metric] = {
            "max": float(shares.max()) if len(shares) else float("nan"),
            "over_bound": int((shares > AUDIT_BOUND).sum()),
            "audited_runs": len(shares),
        }
    return out
