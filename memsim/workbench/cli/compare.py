"""``memsim compare``: policies x scenarios x seeds -> summary tables and calibration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memsim.engine.errors import ParamError
from memsim.engine.sources import suite

from ..present.report import console_table, write_comparison
from ..present.scorecard import scorecard_console, scorecard_frame, scorecard_markdown
from ..runs.execution import as_overrides, list_policies, resolve_policy, run_grid
from ..runs.executors import dask_executor, worker_count
from ..runs.protocols import DEFAULT
from ..runs.results import atomic_write_bytes
from ..stats import expectation_table
from ..studies.calibrate import frontier as run_frontier
from ..studies.compare import protocol_runs, protocol_tables, protocol_timings
from .args import (
    DASK_HELP,
    add_index,
    add_progress,
    index_settings,
    llm_overrides,
    parse_seeds,
    policy_list,
    policy_params,
    split_specs,
)
from .outputs import writable_folder

DEFAULT_CACHE = "results"  # compare keeps per-run results in DEFAULT_CACHE/runs (gitignored)


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--policies", default="all", help="comma list of policy ids (default: all)")
    s.add_argument(
        "--scenarios",
        "--scenario",
        action="append",
        metavar="SPEC[,SPEC...]",
        help="scenario specs (comma list; repeatable); a spec keeps its own ,key=value options",
    )
    s.add_argument("--suite", help="a named suite of scenarios, e.g. standard")
    s.add_argument(
        "--locomo",
        metavar="PATH",
        help="add LoCoMo from this JSON file, to --scenarios or to any suite (the standard "
        "suite runs one stream per sample)",
    )
    s.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    s.add_argument(
        "--protocols",
        metavar="NAME[,NAME...]",
        help="protocols to run under (docs/results.md#protocols; `memsim list` names them): "
        "names, A+B to compose two, standard (the default and each axis's other choices "
        "alone) or cross (every composition); default: standard with --suite standard, "
        "else default",
    )
    s.add_argument(
        "--jobs", type=worker_count, default=1, help="parallel processes (results are identical)"
    )
    s.add_argument(
        "--llm",
        action="append",
        metavar="KEY=VALUE",
        help="mock LLM override for every run: bands.X, faults.X, modes.X (docs/mock-llm.md), "
        "text_embedder=wordllama|hashed|minilm; or a real model: openai:BASE_URL,model=NAME "
        "or replay:PATH (docs/real-models.md)",
    )
    s.add_argument("--dask", metavar="local:N|tcp://HOST:PORT", help=DASK_HELP)
    s.add_argument(
        "--param",
        action="append",
        metavar="POLICY.FIELD=VALUE",
        help="a parameter of one policy (repeatable), e.g. pai.prune_threshold=0.1",
    )
    add_index(s, " (to each policy some search of which goes through that mode)")
    s.add_argument("--out", help="output folder (default results/<suite>)")
    s.add_argument(
        "--cache",
        help=f"folder of per-run results, reused when a run's definition, code and input "
        f"files are unchanged, whatever --out is (default {DEFAULT_CACHE})",
    )
    s.add_argument("--no-resume", action="store_true", help="rerun even if a run's results exist")
    s.add_argument(
        "--brief",
        action="store_true",
        help="print one line per policy (means over scenarios), not every scenario's table",
    )
    add_progress(s)
    s.add_argument(
        "--no-calibration",
        action="store_true",
        help="skip the clairvoyant bound at each footprint and the frontier's reference runs",
    )


def run(args: argparse.Namespace) -> int:
    policies = list(list_policies()["id"]) if args.policies == "all" else policy_list(args.policies)
    specs: list[str] = []
    if args.suite:
        specs += suite(args.suite, locomo_path=args.locomo)
    specs += split_specs(args.scenarios)
    if args.locomo and not any(s.startswith("locomo:") for s in specs):
        specs.append(f"locomo:{args.locomo}")  # a suite without LoCoMo streams gains the file
    if not specs:
        raise ParamError("compare: give --suite NAME and/or --scenarios SPEC[,SPEC...]")
    seeds = parse_seeds(args.seeds)
    out = Path(args.out) if args.out else Path("results") / (args.suite or "compare")
    writable_folder(args.out if args.out is not None else out)
    writable_folder(args.cache if args.cache is not None else DEFAULT_CACHE, "--cache")
    cache = Path(args.cache or DEFAULT_CACHE)
    params = policy_params(policies, args.param)
    index = index_settings(args.index)
    user_llm = llm_overrides(args.llm)
    chosen = args.protocols or ("standard" if args.suite == "standard" else DEFAULT)
    runs, skipped = protocol_runs(
        policies, specs, seeds, chosen, params=params, llm=user_llm, index=index
    )
    for line in skipped:
        print(line, file=sys.stderr)
    defs = [d for r in runs for d in r.defs]
    print(
        f"runs cached under {cache}/runs (--cache DIR elsewhere, --no-resume to recompute)",
        file=sys.stderr,
    )
    if index:
        indexed = {d.policy for d in defs if d.index}
        left = [p for p in policies if resolve_policy(p) not in indexed]
        if left and index["mode"] == "exact":
            print(f"--index mode=exact: the default of {', '.join(left)}", file=sys.stderr)
        elif left:
            print(
                f"--index mode={index['mode']}: no search of {', '.join(left)} goes through "
                f"it; {'they run with their' if len(left) > 1 else 'it runs with its'} own "
                "default",
                file=sys.stderr,
            )
    with dask_executor(args.dask) as executor:
        results = run_grid(
            defs,
            root=cache,
            jobs=args.jobs,
            executor=executor,
            resume=not args.no_resume,
            progress="always" if args.progress else not args.quiet,
            calibrate=not args.no_calibration,
        )
        frontier = None
        if not args.no_calibration and runs[0].protocol.name == DEFAULT:
            frontier = run_frontier(  # the frontier figure is drawn for the default protocol
                list(runs[0].specs),
                seeds,
                llm=as_overrides(runs[0].llm),
                root=str(cache),
                jobs=args.jobs,
                executor=executor,
                resume=not args.no_resume,
                progress="always" if args.progress else not args.quiet,
            )
    summary, per_query = protocol_tables(runs, results)
    write_comparison(
        out,
        summary,
        per_query,
        definition={
            "policies": policies,
            "scenarios": specs,
            "seeds": seeds,
            "suite": args.suite,
            "protocols": {
                r.protocol.name: {"description": r.protocol.description, "specs": list(r.specs)}
                for r in runs
            },
            **({"index": index} if index else {}),
        },
        frontier=frontier,
    )
    # time measured in the runs: not byte-identical, so apart from the results proper
    timings = protocol_timings(runs, results)
    atomic_write_bytes(
        out / "timings.csv", timings.to_csv(index=False, float_format="%.6g").encode()
    )
    frame = scorecard_frame(per_query)  # (the markdown and the console share it)
    card = scorecard_markdown(summary, per_query, timings, frame=frame)
    atomic_write_bytes(out / "scorecard.md", f"# Scorecard\n\n{card}".encode())
    if args.brief:
        print(
            f"{len(policies)} policies x {len(specs)} scenarios x {len(seeds)} seed(s) x "
            f"{len(runs)} protocol(s); the scorecard (means; intervals in scorecard.md):"
        )
        print(scorecard_console(summary, per_query, timings, frame=frame))
    else:
        print(console_table(summary))
    if (
        "group" in per_query
        and not args.brief
        and per_query["group"].astype(str).str.len().gt(0).any()
    ):
        by = per_query[per_query["group"].astype(str) != ""].groupby(
            ["scenario", "policy", "group"]
        )["recall"]
        print("\nrecall@k by group:")
        print(by.agg(["mean", "count"]).round(3).to_string())
    verdicts = expectation_table(results)
    wrote = "scorecard.md, summary.md, summary.csv, per_query.parquet, timings.csv"
    if len(verdicts):
        atomic_write_bytes(out / "expectations.csv", verdicts.to_csv(index=False).encode())
        wrote += ", expectations.csv"
        failed = verdicts[~verdicts["ok"].astype(bool)]
        print(
            f"\nexpectations stated by the scenarios: {len(verdicts) - len(failed)} of "
            f"{len(verdicts)} hold" + (", these fail:" if len(failed) else "")
        )
        for _, v in failed.iterrows():  # a failure is always worth a line
            where = v["where"]  # not v.where: that is DataFrame.where
            print(
                f"  {v.policy} on {v.scenario} (seed {v.seed}): {where}: {v.expected}; {v.detail}"
            )
    print(f"\nwrote {out}/{wrote}")
    if args.brief:
        print(
            f"full tables: {out}/scorecard.md (with 95% intervals), {out}/summary.md (per "
            f"protocol and scenario), {out}/summary.csv"
        )
    return 0
