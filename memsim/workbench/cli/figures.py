"""``memsim figures``: regenerate the PNG figures under results/figures/."""

from __future__ import annotations

import argparse
from pathlib import Path

from memsim.engine.errors import MemsimError, ParamError, UnknownIdError

from ..present.figures import FIGURES, write_figures
from .outputs import writable_folder


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out", default="results/figures", help="folder for the PNGs (default results/figures)"
    )
    p.add_argument(
        "--results",
        default="results/standard",
        help="comparison folder with summary.csv and per_query.parquet (default results/standard)",
    )
    p.add_argument(
        "--benchmarks",
        default="results/benchmarks.json",
        help="latency benchmark JSON (default results/benchmarks.json)",
    )
    p.add_argument(
        "--claims", default="results/claims.csv", help="claims table CSV (worked examples)"
    )
    p.add_argument("--only", help=f"comma list of figures to make: {', '.join(FIGURES)}")
    p.add_argument(
        "--no-curves", action="store_true", help="skip the decay curves (they run the policies)"
    )


def run(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    writable_folder(args.out)
    only = [t.strip() for t in args.only.split(",") if t.strip()] if args.only else None
    unknown = [o for o in only or () if o not in FIGURES]
    if unknown:
        raise UnknownIdError(f"unknown figure {unknown[0]!r}; known: {', '.join(FIGURES)}")
    # A folder that is not there is a typo, not "nothing to draw": say so rather than skip
    # every figure that reads it and exit 0 on the decay curves alone.
    from_results = [f for f in (only or FIGURES) if f not in ("decay_curves", "latency")]
    if from_results and args.results and not Path(args.results).is_dir():
        raise ParamError(
            f"--results {args.results!r}: no such folder (figures {', '.join(from_results)} "
            "read its summary.csv and per_query.parquet; write it with `memsim compare --out`)"
        )
    written = write_figures(
        args.out,
        results=args.results,
        benchmarks=args.benchmarks,
        claims=args.claims,
        curves=not args.no_curves,
        only=only,
    )
    for path in written:
        print(f"wrote {path}")
    if not written:
        raise MemsimError("figures: no figure written (inputs missing; see notices above)")
    return 0
