"""``memsim tune``: Optuna tuning of each policy, documented vs tuned on held-out seeds, and
the report (results/tuning.md beside the output folder) with every scored trial (OUT/trials.csv)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from memsim.engine import limits

from ..present.tune import TuningDesign, tuning_markdown
from ..runs.executors import dask_executor
from ..studies.sweep import study_fields, study_trials
from ..studies.tune import DIRECTIONS, tune, tune_plan
from .args import (
    FIELDS_HELP,
    add_progress,
    add_study,
    csv_list,
    index_settings,
    int_arg,
    parse_seeds,
    policy_list,
    split_specs,
)
from .outputs import writable_file, writable_folder
from .sensitivity import report_path

OUT = "results/tuning"
DEFAULT_TRIALS = 20


def add_arguments(s: argparse.ArgumentParser) -> None:
    add_study(
        s,
        policies="comma list of policies to tune",
        out=OUT,
        out_help="folder of the studies (POLICY/optuna.db) and trials.csv (default results/tuning)",
        seeds=False,
    )
    s.add_argument("--objectives", default="recall", help=f"comma list of {', '.join(DIRECTIONS)}")
    s.add_argument(
        "--fields",
        help=FIELDS_HELP + " (default: the fields each policy's class declares for tuning, "
        "else its declared-range fields)",
    )
    s.add_argument(
        "--trials",
        type=int_arg("--trials", 1, limits.MAX_TRIALS),
        help="Optuna trials per policy, the documented parameters first (default: the "
        f"trials each policy's class declares, else {DEFAULT_TRIALS}; a resumed study runs "
        "only the missing ones)",
    )
    s.add_argument("--train-seeds", default="0:5", help="seeds tuned on (default 0:5)")
    s.add_argument("--test-seeds", default="5:10", help="held-out seeds reported on (default 5:10)")
    s.add_argument(
        "--report",
        help="the report to write (default OUT.md beside the folder: results/tuning.md)",
    )
    add_progress(s)


def command_of(args: Any) -> str:
    """The command line that regenerates the report (run-time options left out)."""
    parts = ["memsim tune", f"--policies {args.policies}", f"--scenarios {args.scenarios}"]
    parts.append(f"--objectives {args.objectives}")
    if args.fields:
        parts.append(f"--fields {args.fields}")
    if args.trials is not None:
        parts.append(f"--trials {args.trials}")
    parts += [f"--train-seeds {args.train_seeds}", f"--test-seeds {args.test_seeds}"]
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
    index = index_settings(args.index)
    objectives = csv_list(args.objectives)
    given = csv_list(args.fields) if args.fields else None
    train = parse_seeds(args.train_seeds, "--train-seeds")
    test = parse_seeds(args.test_seeds, "--test-seeds")
    policies = policy_list(args.policies)
    plan = {}
    for policy in policies:  # (refused before any study starts)
        fields = given or study_fields(policy, "tune")
        trials = args.trials or study_trials(policy) or DEFAULT_TRIALS
        tune_plan(policy, objectives, fields, trials, train, test, index)
        plan[policy] = (fields, trials)
    results = []
    with dask_executor(args.dask) as executor:
        for policy in policies:
            fields, trials = plan[policy]
            results.append(
                tune(
                    policy,
                    split_specs(args.scenarios),
                    objectives=objectives,
                    fields=fields,
                    trials=trials,
                    train_seeds=train,
                    test_seeds=test,
                    out=out / policy,
                    jobs=args.jobs,
                    executor=executor,
                    index=index,
                    progress="always" if args.progress else not args.quiet,
                )
            )
    # every scored trial (the pruned ones are counted in the report)
    history = pd.concat([r.history for r in results], ignore_index=True)
    scored = history[history["state"] == "complete"].drop(columns="state")
    scored.to_csv(out / "trials.csv", index=False, float_format="%.6g")
    design = TuningDesign(
        command=command_of(args),
        scenarios=split_specs(args.scenarios),
        train_seeds=train,
        test_seeds=test,
        folder=args.out.rstrip("/"),
    )
    text = tuning_markdown(results, design)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {report}")
    return 0
