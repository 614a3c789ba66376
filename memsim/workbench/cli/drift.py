"""``memsim drift``: each documented policy against its code variant (markdown)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ..runs.execution import grid, run_grid
from ..runs.executors import worker_count
from ..studies.drift import DEFAULT_OUT, KINDS, reference_ids, render, run_table, variant_pairs
from .args import add_progress, parse_seeds
from .outputs import writable_file, writable_folder


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kind",
        choices=KINDS,
        default="code",
        help="code: seed systems vs code variants (results/drift.md); reference: reference "
        "models vs their second variants (results/references.md); all: both",
    )
    p.add_argument(
        "--scenarios",
        default="synthetic:steady,synthetic:churn,synthetic:noisy,synthetic:longgap",
        help="comma list of scenario specs",
    )
    p.add_argument("--locomo", default=None, help="also run LoCoMo from this JSON file")
    p.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    p.add_argument("--jobs", type=worker_count, default=1, help="parallel processes")
    p.add_argument("--cache", default=None, help="per-run results root (resumable)")
    p.add_argument(
        "--out",
        default=None,
        help="markdown report to write (default results/drift.md for --kind code, "
        "results/references.md for --kind reference; --kind all writes both defaults)",
    )
    add_progress(p)


def command_of(args: argparse.Namespace, kind: str | None = None) -> str:
    """The command line that regenerates the report (run-time options such as --jobs and
    --cache left out: they do not change the numbers)."""
    kind = kind or args.kind
    parts = ["python -m memsim drift"]
    if kind != "code":
        parts.append(f"--kind {kind}")
    parts.append(f"--scenarios {args.scenarios}")
    if args.locomo:
        parts.append(f"--locomo {args.locomo}")
    parts.append(f"--seeds {args.seeds}")
    if args.out and args.out != DEFAULT_OUT.get(kind):
        parts.append(f"--out {args.out}")
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    kinds = ["code", "reference"] if args.kind == "all" else [args.kind]
    if args.kind == "all" and args.out:
        print("drift: --out: --kind all writes both default reports, got --out", file=sys.stderr)
        return 2
    for k in kinds:
        writable_file(args.out if args.out is not None else DEFAULT_OUT[k])
    writable_folder(args.cache, "--cache")
    plan = {k: variant_pairs(k) for k in kinds}
    if not any(plan.values()):
        print(f"drift: no registered {args.kind} policy declares variant_of", file=sys.stderr)
        return 2
    scenarios = [s for s in args.scenarios.split(",") if s.strip()]
    if args.locomo:
        scenarios.append(f"locomo:{args.locomo}")
    seeds = parse_seeds(args.seeds)
    ids = [p.id for k in kinds for pair in plan[k] for p in pair]
    if "reference" in kinds:
        ids += reference_ids()
    ids = list(dict.fromkeys(ids))
    results = run_grid(
        grid(ids, scenarios, seeds),
        root=args.cache,
        jobs=args.jobs,
        progress="always" if args.progress else not args.quiet,
    )
    per_query = pd.concat([r.queries for r in results], ignore_index=True)
    runs = run_table(results)
    for k in kinds:
        keep = [p.id for pair in plan[k] for p in pair]
        if k == "reference":
            keep += reference_ids()
        text = render(
            per_query[per_query["policy"].isin(keep)],
            plan[k],
            command_of(args, k),
            seeds,
            runs[runs["policy"].isin(keep)],
            kind=k,
        )
        out = Path(args.out or DEFAULT_OUT[k])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
        print(f"wrote {out}", file=sys.stderr)
    return 0
