"""``memsim sensitivity``: one-at-a-time curves and tornado figures, with ``--sobol`` also
Sobol' indices, and the report of both (results/sensitivity.md beside the output folder)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from memsim.engine import limits
from memsim.engine.errors import ParamError
from memsim.engine.metric_registry import metric_names

from ..present.sensitivity import (
    PolicySensitivity,
    SensitivityDesign,
    scenario_slugs,
    write_sensitivity_report,
)
from ..present.tune import default_metric, sobol_table, tornado
from ..runs.execution import index_of
from ..runs.executors import dask_executor
from ..studies.sweep import (
    one_at_a_time,
    sobol,
    sobol_plan,
    sobol_ranges,
    study_fields,
)
from ..studies.tune import spreads
from .args import (
    FIELDS_HELP,
    add_progress,
    add_study,
    csv_list,
    index_settings,
    int_arg,
    parse_seeds,
    policy_list,
    seed_arg,
    split_specs,
)
from .outputs import writable_file, writable_folder

OUT = "results/sensitivity"


def add_arguments(s: argparse.ArgumentParser) -> None:
    add_study(
        s,
        policies="comma list of policies (each moves the fields its class declares for the "
        "study, else every declared-range field; --fields overrides)",
        out=OUT,
        out_help="folder of tables and figures (default results/sensitivity)",
    )
    s.add_argument("--fields", help=FIELDS_HELP)
    s.add_argument(
        "--n",
        type=int_arg("--n", 1, limits.MAX_SWEEP_POINTS),
        help="points per field of the one-at-a-time curves (default 5)",
    )
    s.add_argument(
        "--sobol",
        type=int_arg("--sobol", 1, limits.MAX_SOBOL),
        metavar="N",
        help="also variance-based (Sobol') indices, from N base samples (a power of 2; "
        "N x (fields + 2) points, each run at every seed): OUT/sobol_<policy>_<scenario>.csv",
    )
    s.add_argument(
        "--sobol-scenarios",
        help="with --sobol: the scenarios of the indices (default --scenarios)",
    )
    s.add_argument(
        "--metrics",
        help="with --sobol: comma list of metrics, all from the same runs "
        f"(default {','.join(metric_names('sobol'))})",
    )
    s.add_argument(
        "--sample-seed",
        type=seed_arg("--sample-seed"),
        help="with --sobol: seed of the samples (default 0)",
    )
    s.add_argument(
        "--report",
        help="the report to write (default OUT.md beside the folder: results/sensitivity.md)",
    )
    add_progress(s)


def report_path(out: str, report: str | None) -> Path:
    """The report: ``--report``, else OUT.md beside the output folder."""
    if report:
        return Path(report)
    folder = Path(out).resolve() if Path(out).name in ("", ".", "..") else Path(out)
    return folder.with_name(folder.name + ".md")


def command_of(args: Any) -> str:
    """The command line that regenerates the report (run-time options such as --jobs, --dask
    and --progress left out: they do not change the numbers)."""
    parts = ["memsim sensitivity", f"--policies {args.policies}", f"--scenarios {args.scenarios}"]
    if args.seeds != "0":
        parts.append(f"--seeds {args.seeds}")
    parts.append(f"--n {args.n if args.n is not None else 5}")
    if args.fields:
        parts.append(f"--fields {args.fields}")
    if args.sobol is not None:
        parts.append(f"--sobol {args.sobol}")
        if args.sobol_scenarios:
            parts.append(f"--sobol-scenarios {args.sobol_scenarios}")
        if args.metrics:
            parts.append(f"--metrics {args.metrics}")
        if args.sample_seed:
            parts.append(f"--sample-seed {args.sample_seed}")
    parts += [f"--index {item}" for item in args.index or []]
    if args.out != OUT:
        parts.append(f"--out {args.out}")
    if args.report:
        parts.append(f"--report {args.report}")
    return " ".join(parts)


def run(args: Any) -> int:
    out = Path(args.out)
    writable_folder(args.out)
    report = report_path(args.out, args.report)
    writable_file(report, "--report")
    if args.sobol is None:
        for name, value in (
            ("--metrics", args.metrics),
            ("--sample-seed", args.sample_seed),
            ("--sobol-scenarios", args.sobol_scenarios),
        ):
            if value is not None:
                raise ParamError(f"{name} {value} applies to --sobol only, which is not given")
    n = 5 if args.n is None else args.n
    index = index_settings(args.index)
    seeds = parse_seeds(args.seeds)
    scenarios = split_specs(args.scenarios)
    sobol_scenarios = split_specs(args.sobol_scenarios) if args.sobol_scenarios else scenarios
    metrics = csv_list(args.metrics) if args.metrics else list(metric_names("sobol"))
    given = csv_list(args.fields) if args.fields else None
    policies = policy_list(args.policies)
    plan: dict[str, tuple[dict[str, tuple[float, float, type]], list[str] | None]] = {}
    for policy in policies:  # bad input fails before anything runs
        index_of(policy, index)
        # (the fields' ranges: declared, else half to twice the default; unknown names fail)
        ranges = sobol_ranges(policy, given or study_fields(policy, "sensitivity"))
        sobol_fields = given or study_fields(policy, "sobol")
        if args.sobol is not None:
            sobol_plan(policy, metrics, sobol_fields, args.sobol, seeds)
        plan[policy] = (ranges, sobol_fields)
    out.mkdir(parents=True, exist_ok=True)
    progress = "always" if args.progress else not args.quiet
    measured = []
    with dask_executor(args.dask) as executor:
        for policy in policies:
            ranges, sobol_fields = plan[policy]
            oat = pd.concat(
                [
                    one_at_a_time(
                        policy,
                        scenario,
                        seeds,
                        fields=list(ranges),
                        n=n,
                        root=out / "cache",
                        jobs=args.jobs,
                        executor=executor,
                        progress=progress,
                        index=index,
                    )
                    for scenario in scenarios
                ],
                ignore_index=True,
            )
            sp = spreads(oat)
            oat.to_csv(out / f"{policy}_oat.csv", index=False, float_format="%.10g")
            sp.to_csv(out / f"{policy}_spread.csv", index=False, float_format="%.10g")
            for scenario, slug in zip(scenarios, scenario_slugs(scenarios)):
                png = f"tornado_{policy}_{slug}.png"
                at = default_metric(oat[oat["scenario"] == scenario], policy)
                g = sp[sp["scenario"] == scenario]
                skipped = tornado(g, out / png, policy, scenario, at_default=at)
                if skipped:
                    print(f"skipped {png}: {skipped}", file=sys.stderr)
            tables = []
            if args.sobol is not None:
                for scenario, slug in zip(sobol_scenarios, scenario_slugs(sobol_scenarios)):
                    t = sobol(
                        policy,
                        scenario,
                        seeds,
                        metrics=metrics,
                        fields=sobol_fields,
                        n=args.sobol,
                        seed=args.sample_seed or 0,
                        root=out / "cache",
                        jobs=args.jobs,
                        executor=executor,
                        progress=progress,
                        index=index,
                    )
                    path = out / f"sobol_{policy}_{slug}.csv"
                    t.to_csv(path, index=False, float_format="%.6g")
                    print(f"## {policy} on {scenario}\n\n{sobol_table(t)}\n\nwrote {path}\n")
                    tables.append(t)
            measured.append(PolicySensitivity(policy, oat, sp, ranges, tables))
    design = SensitivityDesign(
        command=command_of(args),
        scenarios=scenarios,
        seeds=seeds,
        n=n,
        folder=args.out.rstrip("/"),
        sobol_scenarios=sobol_scenarios if args.sobol is not None else (),
        sobol_n=args.sobol or 0,
        sample_seed=args.sample_seed or 0,
    )
    write_sensitivity_report(report, design, measured)
    print(f"wrote {report}")
    return 0
