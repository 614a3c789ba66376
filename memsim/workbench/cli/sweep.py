"""``memsim sweep``: a sweep file, or one policy's fields from the command line."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memsim.engine import limits
from memsim.engine.errors import ParamError

from ..runs.executors import dask_executor
from ..studies.sweep import METHODS, SweepSpec, is_number_text, load_sweep_file, sweep, wide
from .args import (
    add_progress,
    add_study,
    index_settings,
    int_arg,
    one_policy,
    parse_seeds,
    seed_arg,
    split_specs,
)
from .outputs import writable_folder


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("file", nargs="?", help="a sweep file (YAML); or give --policy and --field")
    s.add_argument(
        "--policies", "--policy", dest="policy", help="the one policy to sweep (with --field)"
    )
    s.add_argument(
        "--field",
        action="append",
        metavar="NAME[=LO:HI|=V1,V2,...]",
        help="a Params field: its declared range, a sub-range LO:HI, or a list of values "
        "(repeatable)",
    )
    s.add_argument(
        "--method",
        default="grid",
        choices=METHODS,
        help="how points are drawn: grid (--n per field, every combination), random or lhs "
        "(--n samples, Latin hypercube for lhs); default grid",
    )
    s.add_argument(
        "--n",
        type=int_arg("--n", 1, limits.MAX_SWEEP_POINTS),
        default=5,
        help="points per field (grid) or samples",
    )
    s.add_argument(
        "--sample-seed",
        type=seed_arg("--sample-seed"),
        default=0,
        help="seed of random / lhs samples",
    )
    add_study(
        s,
        out="results/sweep",
        out_help="folder of sweep.parquet / sweep.csv",
        scenarios_required=False,
        seeds=False,
    )
    s.add_argument(
        "--seeds",
        help="comma list or START:STOP (default: the sweep file's seeds, else 0); given with "
        "a file, replaces its seeds as --scenarios replaces its scenarios",
    )
    s.add_argument("--cache", help="folder of cached runs (default: OUT/cache)")
    s.add_argument("--no-resume", action="store_true", help="rerun finished runs")
    add_progress(s)


def _field_arg(policy: str, text: str) -> tuple[str, Any]:
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep:
        return name, None
    where = f"--field {name}"
    if ":" in rest:
        lo, hi = rest.split(":", 1)
        return name, (limits.parse_float(lo, where), limits.parse_float(hi, where))
    return name, [
        limits.parse_float(v, where) if is_number_text(v) else v.strip()
        for v in rest.split(",")
        if v
    ]


def run(args: Any) -> int:
    llm: dict[str, Any] = {}
    if args.file:
        specs, scenarios, seeds, llm = load_sweep_file(args.file)
        if args.seeds is not None:  # the command line wins, as with --scenarios
            seeds = parse_seeds(args.seeds)
    else:
        if not args.policy or not args.field:
            raise ParamError("sweep: give a sweep file, or --policy and at least one --field")
        args.policy = one_policy(args.policy, "sweep")
        fields = dict(_field_arg(args.policy, f) for f in args.field)
        specs = [SweepSpec(args.policy, fields, args.method, args.n, args.sample_seed)]
        scenarios = split_specs(args.scenarios)
        seeds = parse_seeds("0" if args.seeds is None else args.seeds)
    if args.scenarios and args.file:
        scenarios = split_specs(args.scenarios)
    out = Path(args.out)
    writable_folder(args.out)
    writable_folder(args.cache, "--cache")
    index = index_settings(args.index)
    with dask_executor(args.dask) as executor:
        table = sweep(
            specs,
            scenarios,
            seeds,
            llm=llm,
            root=args.cache or out / "cache",
            out=out,
            jobs=args.jobs,
            executor=executor,
            resume=not args.no_resume,
            progress="always" if args.progress else not args.quiet,
            index=index,
        )
    failed = table[table["error"] != ""].drop_duplicates(["policy", "scenario", "seed", "point"])
    runs = table.drop_duplicates(["policy", "scenario", "seed", "point"])
    print(f"{len(runs)} runs ({len(failed)} failed); wrote {out}/sweep.parquet, sweep.csv")
    for _, r in failed.head(5).iterrows():
        print(f"  failed: {r.policy} {r.scenario} seed {r.seed} {r.params}: {r.error}")
    ok = wide(table)
    if len(ok):
        cols = [c for c in ("recall", "stale", "footprint_mean") if c in ok]
        print(ok.groupby("params", sort=False)[cols].mean().round(4).to_string())
    if len(runs) and len(failed) == len(runs):  # nothing measured: not a success
        first = failed.iloc[0]
        raise ParamError(
            f"sweep: every one of the {len(runs)} runs failed (the tables record each error); "
            f"first: {limits.clip(str(first.error), 200)}"
        )
    return 0
