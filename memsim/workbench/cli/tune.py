"""``memsim tune``: Optuna tuning of each policy, documented vs tuned on held-out seeds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memsim.engine import limits

from ..present.tune import tuning_markdown
from ..runs.executors import dask_executor
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
from .outputs import writable_folder


def add_arguments(s: argparse.ArgumentParser) -> None:
    add_study(
        s,
        policies="comma list of policies to tune",
        out="results/tuning",
        out_help="folder of the study and tuning.md",
        seeds=False,
    )
    s.add_argument("--objectives", default="recall", help=f"comma list of {', '.join(DIRECTIONS)}")
    s.add_argument("--fields", help=FIELDS_HELP)
    s.add_argument(
        "--trials",
        type=int_arg("--trials", 1, limits.MAX_TRIALS),
        default=20,
        help="Optuna trials per policy, the documented parameters first (default 20; a "
        "resumed study runs only the missing ones)",
    )
    s.add_argument("--train-seeds", default="0:5", help="seeds tuned on (default 0:5)")
    s.add_argument("--test-seeds", default="5:10", help="held-out seeds reported on (default 5:10)")
    add_progress(s)


def run(args: Any) -> int:
    out = Path(args.out)
    writable_folder(args.out)
    index = index_settings(args.index)
    objectives = csv_list(args.objectives)
    fields = csv_list(args.fields) if args.fields else None
    train = parse_seeds(args.train_seeds, "--train-seeds")
    test = parse_seeds(args.test_seeds, "--test-seeds")
    policies = policy_list(args.policies)
    for policy in policies:  # (refused before any study starts)
        tune_plan(policy, objectives, fields, args.trials, train, test, index)
    results = []
    with dask_executor(args.dask) as executor:
        for policy in policies:
            results.append(
                tune(
                    policy,
                    split_specs(args.scenarios),
                    objectives=objectives,
                    fields=fields,
                    trials=args.trials,
                    train_seeds=train,
                    test_seeds=test,
                    out=out / policy,
                    jobs=args.jobs,
                    executor=executor,
                    index=index,
                    progress="always" if args.progress else not args.quiet,
                )
            )
    text = tuning_markdown(results)
    (out / "tuning.md").write_text(text)
    print(text)
    return 0
