"""``memsim robustness``: which pairwise conclusions survive other mock-LLM modes."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..present.robustness import index_sentence, plot, write_report
from ..runs.executors import worker_count
from ..studies.robustness import (
    DEFAULT_SCENARIOS,
    FRAGILE,
    ROBUST,
    default_grid,
    robustness,
    small_grid,
)
from .args import add_index, add_progress, index_settings, parse_seeds, policy_list, split_specs
from .outputs import writable_file, writable_folder


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--policies", default="all", help="comma list or 'all'")
    s.add_argument("--scenarios", help="scenario specs (default the four synthetic profiles)")
    s.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    s.add_argument(
        "--grid",
        choices=("default", "small"),
        default="default",
        help="default: one factor at a time plus a 2x2x2 core; small: one factor at a time",
    )
    s.add_argument("--jobs", type=worker_count, default=1, help="parallel processes")
    add_index(s, " (to each policy some search of which goes through that mode)")
    s.add_argument("--out", default="results/robustness.md", help="report (also .csv, .png)")
    s.add_argument("--cache", help="results root for per-run files (resumable)")
    add_progress(s)


def run(args: argparse.Namespace) -> int:
    writable_file(args.out)
    out = Path(args.out)
    for sibling in (out.with_suffix(".csv"), out.with_suffix(".png")):  # written beside it
        writable_file(sibling)
    writable_folder(args.cache, "--cache")
    policies = None if args.policies == "all" else policy_list(args.policies)
    scenarios = split_specs(args.scenarios) if args.scenarios else list(DEFAULT_SCENARIOS)
    table = robustness(
        policies,
        scenarios,
        default_grid() if args.grid == "default" else small_grid(),
        seeds=parse_seeds(args.seeds),
        jobs=args.jobs,
        root=args.cache,
        progress="always" if args.progress else not args.quiet,
        index=index_settings(args.index),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    fig = out.with_suffix(".png")
    plot(table, fig)
    command = f"memsim robustness --policies {args.policies} --seeds {args.seeds}"
    command += f" --grid {args.grid}" + (f" --scenarios {args.scenarios}" if args.scenarios else "")
    command += "".join(f" --index {item}" for item in args.index or [])
    write_report(table, out, fig if fig.exists() else None, command=command)
    table.to_csv(out.with_suffix(".csv"), index=False)
    for v in (ROBUST, FRAGILE):
        print(f"{v}: {int((table['verdict'] == v).sum())}")
    if args.index:
        print(index_sentence(table))
    print(f"wrote {out}")
    return 0
