"""``memsim check``: judge a scripted scenario's expect: block (exit 1 when one fails)."""

from __future__ import annotations

import argparse

from memsim.engine.errors import ParamError

from ..runs.execution import as_overrides, list_policies, resolve_policy, run_grid
from ..runs.executors import worker_count
from ..runs.results import RunDef
from .args import add_progress, add_seed, llm_overrides, policy_list
from .run import print_verdicts


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("scenario", help="scripted/NAME or a YAML path")
    s.add_argument("--policies", default="all", help="comma list of policy ids (default: all)")
    add_seed(s)
    s.add_argument(
        "--llm",
        action="append",
        metavar="KEY=VALUE",
        help="mock LLM override, or openai:BASE_URL,model=NAME / replay:PATH (docs/real-models.md)",
    )
    s.add_argument("--jobs", type=worker_count, default=1, help="parallel processes")
    add_progress(s)


def run(args: argparse.Namespace) -> int:
    """Run policies on one scenario and judge its ``expect:`` block: exit 1 when one fails."""
    policies = list(list_policies()["id"]) if args.policies == "all" else policy_list(args.policies)
    llm = as_overrides(llm_overrides(args.llm))
    defs = [RunDef(resolve_policy(p), args.scenario, args.seed, (), llm) for p in policies]
    results = run_grid(defs, jobs=args.jobs, progress="always" if args.progress else not args.quiet)
    judged = [r for r in results if r.expectations]
    if not judged:
        raise ParamError(
            f"{args.scenario}: states no expectation for {', '.join(policies)} (an expect: "
            "block; see docs/scenarios.md)"
        )
    failed = 0
    for r in judged:
        title = f"{r.summary['policy']} on {args.scenario} (seed {args.seed})"
        failed += print_verdicts(r.expectations, title)
    total = sum(len(r.expectations) for r in judged)
    skipped = [str(r.summary["policy"]) for r in results if not r.expectations]
    print(
        f"\n{total - failed} of {total} expectations hold for {len(judged)} "
        f"polic{'y' if len(judged) == 1 else 'ies'}"
        + (f" (none stated for {', '.join(skipped)})" if skipped else "")
    )
    return 1 if failed else 0
