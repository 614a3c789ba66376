"""Documented model versus its code variant (``memsim drift``, or the module run with -m).

Every registered policy whose spec names another in ``variant_of`` is paired with it (no id
is written here: the registry says which policy is a variant of which). Both run on the same
streams and seeds; per paired query (same scenario, seed and query id) the difference
variant - documented gives a mean with a 95% bootstrap interval and a Wilcoxon signed-rank
test (scipy.stats.wilcoxon; "identical" when every difference is 0). Writes a markdown report
(results/drift.md by default) whose header holds the command that regenerates it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memsim.engine.registry import PolicySpec, specs

if TYPE_CHECKING:
    import pandas as pd

# (per-query column, label, better)
METRICS = (
    ("recall", "recall@10", "higher"),
    ("stale", "stale@10", "lower"),
    ("footprint", "footprint", "lower"),
)
ALPHA = 0.05


def variant_pairs() -> list[tuple[PolicySpec, PolicySpec]]:
    """(documented spec, variant spec) for every registered variant, by documented id."""
    by_id = {s.id: s for s in specs()}
    pairs = [(by_id[s.variant_of], s) for s in specs() if s.variant_of in by_id]
    return sorted(pairs, key=lambda p: (p[0].id, p[1].id))


def scenario_label(spec: Any) -> str:
    """A short name for a scenario spec: a LoCoMo file path becomes its file stem."""
    kind, _, rest = spec.partition(":")
    if kind == "locomo":
        path, _, opts = rest.partition(",")
        return f"locomo:{Path(path).stem}" + (f",{opts}" if opts else "")
    return str(spec)


def wilcoxon_p(diff: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p of paired differences; NaN when all are 0."""
    from scipy import stats

    d = diff[np.isfinite(diff)]
    if not len(d) or not np.any(d != 0):
        return float("nan")
    return float(stats.wilcoxon(d).pvalue)


def paired_rows(per_query: pd.DataFrame, base: str, variant: str) -> pd.DataFrame:
    """One row per (scenario, metric): both means with intervals, the paired difference
    variant - base with its interval, the Wilcoxon p and the number of paired queries."""
    import pandas as pd

    from .api import bootstrap_ci

    rows = []
    key = ["scenario", "seed", "query_id"]
    for scenario, g in per_query.groupby("scenario", sort=False):
        a = g[g["policy"] == base].set_index(key)
        b = g[g["policy"] == variant].set_index(key)
        both = a.index.intersection(b.index)
        for col, label, better in METRICS:
            x = a.loc[both, col].to_numpy(dtype=np.float64)
            y = b.loc[both, col].to_numpy(dtype=np.float64)
            ok = np.isfinite(x) & np.isfinite(y)
            x, y = x[ok], y[ok]
            d = y - x
            rows.append(
                {
                    "scenario": scenario,
                    "metric": label,
                    "better": better,
                    "base": float(x.mean()) if len(x) else np.nan,
                    "base_ci": bootstrap_ci(x),
                    "variant": float(y.mean()) if len(y) else np.nan,
                    "variant_ci": bootstrap_ci(y),
                    "diff": float(d.mean()) if len(d) else np.nan,
                    "diff_ci": bootstrap_ci(d),
                    "p": wilcoxon_p(d),
                    "n": int(len(d)),
                }
            )
    return pd.DataFrame(rows)


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


def summary_sentence(base: PolicySpec, variant: PolicySpec, table: pd.DataFrame) -> str:
    """What the variant changes (its spec's description) and, per metric, on how many streams
    the paired difference is significant, with the range of those differences."""
    what = variant.description or variant.id
    streams = table["scenario"].nunique()
    parts = []
    for _, label, _ in METRICS:
        rows = table[(table["metric"] == label) & (table["p"] < ALPHA)]  # NaN p: identical
        if len(rows):
            digits = 1 if label == "footprint" else 3
            lo, hi = float(rows["diff"].min()), float(rows["diff"].max())
            span = f"{lo:+.{digits}f}" if lo == hi else f"{lo:+.{digits}f} to {hi:+.{digits}f}"
            parts.append(f"{label} {span} on {len(rows)} of {streams} streams")
    if not np.isfinite(table["p"]).any():
        effect = "every paired query gives identical numbers on every stream"
    elif not parts:
        effect = f"no paired difference is significant at p < {ALPHA} on any stream"
    else:
        effect = f"significant (p < {ALPHA}): " + "; ".join(parts)
    return f"**{base.id} -> {variant.id}.** {what}. Effect: {effect}."


def render(
    per_query: pd.DataFrame,
    pairs: Sequence[tuple[PolicySpec, PolicySpec]],
    command: str,
    seeds: Sequence[int],
) -> str:
    lines = [
        "# Documented model versus code variant (drift)",
        "",
        "Generated by:",
        "",
        f"    {command}",
        "",
        "Each system's documented policy (the default id) against its code variant "
        "(`variant_of` in the registry), on the same streams, seeds "
        f"{', '.join(str(s) for s in seeds)}. Means over queries with 95% bootstrap "
        "intervals; diff = variant - documented per paired query (same scenario, seed, "
        "query), its 95% bootstrap interval and the two-sided Wilcoxon signed-rank p "
        "(`identical`: every paired difference is 0). footprint = retrievable memories at "
        "query time (lower is leaner). recall@10 higher is better, stale@10 lower. Queries "
        "of one run are not independent (footprint least of all: it is a time series), so "
        "the intervals and p values are optimistic; read them as the size and direction of "
        "each change, and the seeds as the replication.",
        "",
    ]
    for base, variant in pairs:
        sub = per_query[per_query["policy"].isin([base.id, variant.id])]
        table = paired_rows(sub, base.id, variant.id)
        lines += [f"## {base.id} vs {variant.id}", ""]
        lines.append(summary_sentence(base, variant, table))
        lines += [
            "",
            f"| scenario | metric | {base.id} | {variant.id} | diff | Wilcoxon p | n |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in table.itertuples(index=False):
            digits = 1 if r.metric == "footprint" else 3
            lines.append(
                f"| {scenario_label(r.scenario)} | {r.metric} "
                f"| {_num(r.base, digits)}{_ci(r.base_ci, digits)} "
                f"| {_num(r.variant, digits)}{_ci(r.variant_ci, digits)} "
                f"| {_num(r.diff, digits)}{_ci(r.diff_ci, digits)} | {_p(r.p)} | {r.n} |"
            )
        lines.append("")
    return "\n".join(lines)


def add_drift_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scenarios",
        default="synthetic:steady,synthetic:churn,synthetic:noisy,synthetic:longgap",
        help="comma list of scenario specs",
    )
    p.add_argument("--locomo", default=None, help="also run LoCoMo from this JSON file")
    p.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="parallel processes")
    p.add_argument("--cache", default=None, help="per-run results root (resumable)")
    p.add_argument("--out", default="results/drift.md", help="markdown report to write")


def _seeds(text: str) -> list[int]:
    if ":" in text:
        a, b = text.split(":", 1)
        return list(range(int(a), int(b)))
    return [int(s) for s in text.split(",") if s.strip()]


def command_of(args: argparse.Namespace) -> str:
    """The command line that regenerates the report (run-time options such as --jobs and
    --cache left out: they do not change the numbers)."""
    parts = ["python -m memsim drift", f"--scenarios {args.scenarios}"]
    if args.locomo:
        parts.append(f"--locomo {args.locomo}")
    parts.append(f"--seeds {args.seeds}")
    if args.out != "results/drift.md":
        parts.append(f"--out {args.out}")
    return " ".join(parts)


def run_drift(args: argparse.Namespace) -> int:
    pairs = variant_pairs()
    if not pairs:
        print("drift: no registered policy declares variant_of", file=sys.stderr)
        return 2
    scenarios = [s for s in args.scenarios.split(",") if s.strip()]
    if args.locomo:
        scenarios.append(f"locomo:{args.locomo}")
    from .api import compare

    seeds = _seeds(args.seeds)
    ids = [p.id for pair in pairs for p in pair]
    _, per_query = compare(
        ids, scenarios, seeds, root=args.cache, jobs=args.jobs, progress=False, calibrate=False
    )
    text = render(per_query, pairs, command_of(args), seeds)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="memsim drift", description=__doc__)
    add_drift_arguments(p)
    return run_drift(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
