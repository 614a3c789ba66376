"""Which conclusions survive changes to the stand-ins: ``memsim robustness``.

The standard synthetic comparison is rerun under a grid of mock-LLM modes and generator
knobs (docs/mock-llm.md): one factor at a time around the defaults, plus a small
full-factorial core. Every pairwise conclusion ("A has higher recall@10 than B on churn",
"A keeps less noise than B on noisy") gets one effect per mode, and a verdict:

* **robust**: significant with the same sign in every mode;
* **fragile**: significant in some mode, but not significant or of the other sign in
  others (the modes that flip it are listed);
* **never significant**: significant in no mode.

Significance: for a query metric, the 95% paired bootstrap CI of the per-query difference
(same query, same stream) excludes 0; for a run metric (noise retention, one number per
run) the difference is at least :data:`RUN_MARGIN` (a stated margin, not a test).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine.errors import ParamError

ROBUST, FRAGILE, NEVER = "robust", "fragile", "never significant"
RUN_MARGIN = 0.05  # noise retention: a difference of 5 points counts as a real difference
DEFAULT_SCENARIOS = ("synthetic:churn", "synthetic:noisy")
# (metric, scenario prefix) the conclusions are drawn on; None: every scenario
DEFAULT_CONCLUSIONS = (("recall", None), ("noise_retention", "synthetic:noisy"))


def default_grid() -> list[tuple[str, dict[str, Any]]]:
    """(label, --llm overrides): defaults, one factor at a time, and a 2x2 core
    (synthesis x chatter confidence) whose corners are not already in the list."""
    ofat: list[tuple[str, dict[str, Any]]] = [
        ("default", {}),
        ("synthesis=latest", {"modes.synthesis": "latest"}),
        ("synthesis=first", {"modes.synthesis": "first"}),
        ("summary=first", {"modes.summary": "first"}),
        ("entity_forms=2", {"modes.entity_forms": 2}),
        ("chatter_confidence=0.9", {"modes.chatter_confidence": 0.9}),
        ("wrong_class=0.1", {"faults.wrong_class": 0.1}),
    ]
    seen = {tuple(sorted(o.items())) for _, o in ofat}
    core = []
    for syn, chat in itertools.product(("majority", "first"), (-1.0, 0.9)):
        o: dict[str, Any] = {}
        if syn != "majority":
            o["modes.synthesis"] = syn
        if chat != -1.0:
            o["modes.chatter_confidence"] = chat
        if tuple(sorted(o.items())) not in seen:
            core.append((f"synthesis={syn}+chatter_confidence={chat:g}", o))
    return ofat + core


@dataclass(frozen=True)
class Effect:
    """One conclusion in one mode: ``diff`` = A - B oriented so > 0 means A is better."""

    diff: float
    significant: bool


def verdict(effects: Mapping[str, Effect]) -> tuple[str, int, list[str]]:
    """(verdict, sign, modes that break it). ``sign`` is the direction the conclusion holds
    in most significant modes (+1: A better); the breaking modes are those where it is not
    significant or has the other sign."""
    sig = {m: e for m, e in effects.items() if e.significant and np.isfinite(e.diff)}
    if not sig:
        return NEVER, 0, []
    pos = sum(1 for e in sig.values() if e.diff > 0)
    sign = 1 if pos * 2 >= len(sig) else -1
    broken = [
        m
        for m, e in effects.items()
        if not (e.significant and np.isfinite(e.diff) and np.sign(e.diff) == sign)
    ]
    return (ROBUST if not broken else FRAGILE), sign, broken


def _paired_effect(per_query: pd.DataFrame, a: str, b: str, metric: str, better: str) -> Effect:
    from .api import bootstrap_ci

    wide = per_query.pivot_table(index="query_id", columns="policy", values=metric, aggfunc="first")
    if a not in wide or b not in wide:
        return Effect(float("nan"), False)
    both = wide[[a, b]].dropna()
    if not len(both):
        return Effect(float("nan"), False)
    d = (both[a] - both[b]).to_numpy() * (1.0 if better == "higher" else -1.0)
    lo, hi = bootstrap_ci(d, n_resamples=1000)
    sig = bool(np.isfinite(lo) and (lo > 0 or hi < 0))
    return Effect(float(d.mean()), sig)


def conclusions_table(
    frames: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
    conclusions: Sequence[tuple[str, str | None]] = DEFAULT_CONCLUSIONS,
) -> pd.DataFrame:
    """One row per (metric, scenario, A, B) with A before B in policy order: the verdict,
    the default-mode effect and the modes breaking it. ``frames``: mode label -> (per-query
    table, per-run table) of that mode's comparison."""
    from memsim.engine.metrics import METRICS

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
                        r = runs[runs["scenario"] == scen].set_index("policy")[metric]
                        d = float(r.get(a, np.nan) - r.get(b, np.nan))
                        d *= 1.0 if better == "higher" else -1.0
                        effects[mode] = Effect(d, bool(np.isfinite(d) and abs(d) >= RUN_MARGIN))
                v, sign, broken = verdict(effects)
                win, lose = (a, b) if sign >= 0 else (b, a)
                default = effects.get("default", next(iter(effects.values())))
                rows.append(
                    {
                        "metric": metric,
                        "scenario": scen,
                        "conclusion": _sentence(win, lose, metric, scen),
                        "verdict": v,
                        "default_effect": default.diff * (sign if sign else 1),
                        "broken_by": ", ".join(broken),
                        **{f"mode:{m}": e.diff * (sign if sign else 1) for m, e in effects.items()},
                        **{f"sig:{m}": e.significant for m, e in effects.items()},
                    }
                )
    return pd.DataFrame(rows)


def _sentence(a: str, b: str, metric: str, scenario: str) -> str:
    name = scenario.split(":", 1)[-1]
    if metric == "noise_retention":
        return f"{a} keeps less noise than {b} on {name}"
    return f"{a} has higher {metric}@10 than {b} on {name}"


def robustness(
    policies: Sequence[str] | None = None,
    scenarios: Sequence[str] = DEFAULT_SCENARIOS,
    grid: Sequence[tuple[str, Mapping[str, Any]]] | None = None,
    *,
    seed: int = 0,
    jobs: int = 1,
    root: str | Path | None = None,
    progress: bool | str = False,
) -> pd.DataFrame:
    """Run the comparison under every mode of ``grid`` (default :func:`default_grid`) and
    classify every pairwise conclusion; see the module docstring."""
    from memsim.engine import registry

    from .api import grid as run_defs
    from .api import run_grid

    pols = list(policies) if policies else [s.id for s in registry.specs()]
    modes = list(grid) if grid is not None else default_grid()
    if not modes:
        raise ParamError("robustness: the grid of modes is empty")
    defs: list[Any] = []
    spans: list[tuple[str, int, int]] = []
    for label, overrides in modes:
        d = run_defs(pols, scenarios, [seed], None, dict(overrides))
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
    table = conclusions_table(frames)
    table.attrs["modes"] = modes
    return table


def write_report(table: pd.DataFrame, path: str | Path, figure: str | Path | None = None) -> None:
    """results/robustness.md: the grid, the verdict counts, every conclusion."""
    modes = table.attrs.get("modes", [])
    lines = [
        "# Robustness of the standard comparison to the mock LLM and generator",
        "",
        "Generated by `memsim robustness` (memsim/workbench/robustness.py). Each mode reruns "
        "every policy on the scenarios below; a conclusion is *robust* when it is significant "
        "with the same sign in every mode, *fragile* when some mode makes it insignificant or "
        "flips it (listed), *never significant* otherwise. Query metrics: 95% paired "
        f"bootstrap CI; noise retention: a difference of at least {RUN_MARGIN:g}.",
        "",
        "Modes: " + "; ".join(f"`{label}`" for label, _ in modes),
        "",
        "| verdict | conclusions |",
        "| --- | --- |",
    ]
    for v in (ROBUST, FRAGILE, NEVER):
        lines.append(f"| {v} | {int((table['verdict'] == v).sum())} |")
    lines += [
        "",
        "| conclusion | verdict | effect (default) | broken by |",
        "| --- | --- | --- | --- |",
    ]
    order = {ROBUST: 0, FRAGILE: 1, NEVER: 2}
    t = table.assign(_o=table["verdict"].map(order)).sort_values(["_o", "metric", "scenario"])
    for _, r in t.iterrows():
        if r["verdict"] == NEVER:
            continue
        lines.append(
            f"| {r['conclusion']} | {r['verdict']} | {r['default_effect']:+.3f} | "
            f"{r['broken_by'] or '-'} |"
        )
    if figure is not None:
        lines += ["", f"![robustness]({Path(figure).name})"]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def plot(table: pd.DataFrame, path: str | Path) -> None:
    """Heatmap: conclusions (robust and fragile) x modes, colour = signed effect, hatched
    where not significant."""
    import matplotlib.pyplot as plt

    t = table[table["verdict"] != NEVER]
    mode_cols = [c for c in t.columns if c.startswith("mode:")]
    if t.empty or not mode_cols:
        return
    vals = t[mode_cols].to_numpy(dtype=float)
    sig = t[[c.replace("mode:", "sig:", 1) for c in mode_cols]].to_numpy(dtype=bool)
    lim = float(np.nanmax(np.abs(vals))) or 1.0
    fig, ax = plt.subplots(figsize=(2 + 0.6 * len(mode_cols), 1 + 0.22 * len(t)))
    ax.imshow(np.where(sig, vals, 0.0), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    for i, j in zip(*np.nonzero(~sig)):
        ax.text(j, i, "·", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(mode_cols)), [c[5:] for c in mode_cols], rotation=60, ha="right")
    ax.set_yticks(range(len(t)), [f"{c} [{v}]" for c, v in zip(t["conclusion"], t["verdict"])])
    ax.tick_params(labelsize=6)
    ax.set_title("effect of each conclusion per mode (blue: holds; dot: not significant)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
