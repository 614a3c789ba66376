"""The ``memsim`` command line: list, run, compare, curve, claims.

A user mistake (unknown id, malformed file, impossible parameter) prints one line,
``memsim: error: ...``, and exits with status 2. Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import operator
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memsim.engine.errors import MemsimError, ParamError

from .executors import worker_count

DEFAULT_CACHE = "results"  # compare keeps per-run results in DEFAULT_CACHE/runs (gitignored)
PROGRESS_HELP = "progress bar on stderr even when it is not a terminal (default: only on one)"
DASK_HELP = "run on Dask: local:N starts a local cluster of N workers, an address joins one"
FIELDS_HELP = (
    "comma list (default: every declared-range field; a field without a finite declared "
    "range moves from half to twice its default)"
)


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def split_specs(texts: Sequence[str] | str | None) -> list[str]:
    """Scenario specs from comma lists, keeping each spec's own ``,key=value`` options:
    ``"synthetic:steady,episodes=200,scripted/x"`` -> ``["synthetic:steady,episodes=200",
    "scripted/x"]``. A token with ``=`` that starts no spec of its own belongs to the one
    before it."""
    if texts is None:
        return []
    out: list[str] = []
    for text in [texts] if isinstance(texts, str) else texts:
        for tok in (t.strip() for t in text.split(",")):
            if not tok:
                continue
            starts_spec = tok.startswith(("scripted/", "synthetic:", "locomo:")) or "=" not in tok
            if out and not starts_spec:
                out[-1] += "," + tok
            else:
                out.append(tok)
    return out


def _seeds(text: str) -> list[int]:
    try:
        if ":" in text:
            lo, hi = text.split(":", 1)
            seeds = list(range(int(lo), int(hi)))
        else:
            seeds = [int(t) for t in _csv(text)]
    except ValueError:
        raise ParamError(f"--seeds: cannot read {text!r} (use 0,1,2 or 0:5)") from None
    if not seeds:
        raise ParamError(f"--seeds: {text!r} names no seed (use 0,1,2 or START:STOP, STOP > START)")
    return seeds


def _out_dir(out: str | None, flag: str = "--out") -> None:
    """An output folder must not be an existing file."""
    if out and Path(out).exists() and not Path(out).is_dir():
        raise ParamError(f"{flag}: {out!r} is a file, not a folder")


def _pairs(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ParamError(f"{flag}: expected KEY=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def _llm_overrides(items: Sequence[str] | None) -> dict:
    """--llm KEY=VALUE: numbers for bands.* / faults.*, typed modes.*, a name for
    text_embedder."""
    out: dict = {}
    for k, v in _pairs(items, "--llm").items():
        if k == "text_embedder":
            out[k] = v
            continue
        if k.startswith("modes."):
            out[k] = _mode_value(k, v)
            continue
        try:
            out[k] = float(v)
        except ValueError:
            raise ParamError(f"--llm {k}: cannot read {v!r} as a number") from None
    return out


def _mode_value(key: str, text: str) -> Any:
    """--llm modes.NAME=VALUE read as the type of Modes.NAME (unknown NAME: one-line error)."""
    import dataclasses

    from memsim.engine.llm import Modes
    from memsim.engine.params import coerce

    defaults = {f.name: f.default for f in dataclasses.fields(Modes)}
    name = key.partition(".")[2]
    if name not in defaults:
        raise ParamError(f"--llm {key}={text}: unknown mode; known: {', '.join(defaults)}")
    return coerce(f"--llm {key}", defaults[name], text)


def _typed_params(policy: str, raw: dict[str, str]) -> dict:
    """Convert KEY=VALUE strings to the types of the policy's Params fields."""
    if not raw:
        return {}
    from memsim.engine.registry import spec

    typed = spec(policy).load().Params.from_strings(raw)
    return {k: getattr(typed, k) for k in raw}


def _policy_params(policies: Sequence[str], items: Sequence[str] | None) -> dict[str, Any]:
    """--param POLICY.FIELD=VALUE (repeatable) -> {"POLICY.FIELD": typed value}."""
    out: dict[str, Any] = {}
    by_policy: dict[str, dict[str, str]] = {}
    for key, value in _pairs(items, "--param").items():
        policy, dot, field = key.partition(".")
        if not dot or not field:
            raise ParamError(f"--param {key}={value}: expected POLICY.FIELD=VALUE")
        if policy not in policies:
            raise ParamError(f"--param {key}: policy {policy!r} is not among --policies")
        by_policy.setdefault(policy, {})[field] = value
    for policy, raw in by_policy.items():
        for field, v in _typed_params(policy, raw).items():
            out[f"{policy}.{field}"] = v
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from .api import list_policies, list_scenarios

    pol = list_policies()
    print("Policies:")
    for _, r in pol.iterrows():
        caps = f" [{r.capabilities}]" if r.capabilities else ""
        print(f"  {r.full_id:<14} {r.description}{caps}")
    print("\nScenarios:")
    for _, r in list_scenarios().iterrows():
        print(f"  {r.spec:<38} {r.description}")
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    """Every Params field of one policy: default, legal range, the seed section it cites."""
    import dataclasses

    from memsim.engine.params import describe_range
    from memsim.engine.registry import spec

    s = spec(args.policy)
    fields = dataclasses.fields(s.load().Params)
    rows = [
        (f.name, repr(f.default), describe_range(f), str(f.metadata.get("doc", ""))) for f in fields
    ]
    if args.csv:
        import csv

        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["field", "default", "range", "section"])
        w.writerows(rows)
        return 0
    doc = f" (seed document: {s.seed_document})" if s.seed_document else ""
    print(f"{s.full_id}{doc}: {len(rows)} parameters; set one with --param FIELD=VALUE")
    if not rows:
        return 0
    head = ("field", "default", "range", "seed section")
    rows = [(r[0], _short(r[1]), *r[2:]) for r in rows]  # full values: --csv
    width = [min(max(len(r[i]) for r in [head, *rows]), 28) for i in range(3)]
    for r in [head, *rows]:
        cells = [r[i].ljust(width[i]) for i in range(3)]
        print("  " + "  ".join(cells) + "  " + r[3])
    return 0


def _short(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[: width - 5] + " ...)"


def index_settings(items: list[str] | None) -> dict[str, Any]:
    """--index mode=ivf|cones|exact [--index min_rows=N ...]: the candidate index; integers
    for every knob but mode (``items`` the KEY=VALUE strings; also benchmarks.simrun's)."""
    out: dict[str, Any] = {}
    for k, v in _pairs(items, "--index").items():
        if k == "mode":
            out[k] = v
            continue
        if k not in ("min_rows", "nprobe", "audit_every"):
            raise ParamError(
                f"--index {k}: unknown setting; known: mode, min_rows, nprobe, audit_every"
            )
        try:
            out[k] = int(v)
        except ValueError:
            raise ParamError(f"--index {k}: cannot read {v!r} as an integer") from None
    if out and "mode" not in out:
        raise ParamError("--index: give mode=ivf, cones or exact with the other settings")
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from .api import RunDef, _overrides, execute, resolve_policy
    from .results import save

    params = _typed_params(args.policy, _pairs(args.param, "--param"))
    llm = _llm_overrides(args.llm)
    _out_dir(args.out)
    d = RunDef(
        resolve_policy(args.policy),
        args.scenario,
        args.seed,
        _overrides(params),
        _overrides(llm),
        _overrides(index_settings(args.index)),
    )
    r = execute(d, progress="always" if args.progress else not args.quiet)
    if args.out:
        print(f"wrote {save(args.out, r)}", file=sys.stderr)
    q = r.queries
    print(f"{d.policy} on {d.scenario} (seed {d.seed}): {len(q)} queries")
    print(metric_lines(q, r.summary))
    if "index_audit" in r.manifest:
        print()
        print(index_lines(r.manifest["index_audit"]))
    if r.expectations:
        print()
        _print_verdicts(r.expectations, f"expectations stated for {r.summary['policy']}")
    return 0


# why a metric can be undefined, in words (a bare "nan" explains nothing)
_NO_RELEVANT = (
    "no query has a relevant unit (no episode asserts what it asks, or all of it was "
    "forgotten on request)"
)
_UNDEFINED = {"noise_retention": "the stream has no noise episodes"}


def metric_lines(queries: Any, summary: dict[str, Any]) -> str:
    """The metrics of one run, each with its value, better direction and meaning; an
    undefined value says why instead of printing nan."""
    import math

    from memsim.engine.metric_registry import METRICS, metric_names

    lines = [f"  {'metric':<18} {'value':>8}  {'better':<7}meaning"]
    for name in metric_names("scored"):
        m = METRICS[name]
        if m.level == "query":
            if name not in queries:
                continue
            values = queries[name].astype(float)
            n, total = int(values.notna().sum()), len(values)
            value = float(values.mean()) if n else math.nan
            why = "the stream has no queries" if not total else _NO_RELEVANT
            extra = f" (mean over {n} of {total} queries)" if 0 < n < total else ""
        else:
            if not isinstance(summary.get(name), (int, float)):
                continue
            value, why, extra = float(summary[name]), _UNDEFINED.get(name, "undefined"), ""
        shown = f"{value:8.4f}" if math.isfinite(value) else f"{'n/a':>8}"
        meaning = m.description + extra if math.isfinite(value) else f"n/a: {why}"
        lines.append(f"  {name:<18} {shown}  {m.better:<7}{meaning}")
    return "\n".join(lines)


def index_lines(audit: dict[str, Any]) -> str:
    """The candidate index a run searched through and its exactness audit, in words: how
    many searches it answered, and how many of the audited queries' top-k and ingest
    decisions differ from the exact scan's (flagged over ``index.AUDIT_BOUND``)."""
    from memsim.engine.index import AUDIT_BOUND

    mode, rows = audit["mode"], f"{audit['min_rows']:,}"
    if mode == "exact":
        return "candidate index: mode exact (every search the full scan)"
    if mode == "cones":  # exact range searches: neither counted nor audited
        return (
            f"candidate index: mode cones from {rows} stored rows (exact range searches: the "
            "full scan's decisions by construction, nothing to audit)"
        )
    lines = [
        f"candidate index: mode {mode} from {rows} stored rows, nprobe {audit['nprobe']}, "
        f"every {audit['audit_every']}th search audited against the full scan"
    ]
    if not audit["searches"]:
        lines.append(
            f"  it answered no search (the store stayed under {rows} rows, or this reading "
            "of the policy searches no index): the run is the full scan's"
        )
        return "\n".join(lines)
    lines.append(f"  {audit['searches']:,} searches through it, {audit['trainings']} training(s)")
    for what, checked, differ in (
        ("queries whose top-k differs from the full scan's", "checked", "differ"),
        ("ingest decisions that differ", "decisions_checked", "decisions_differ"),
    ):
        n, d = audit[checked], audit[differ]
        if not n:
            lines.append(f"  {what}: none audited")
            continue
        over = (
            f", over {AUDIT_BOUND:.0%}: not the full scan's run; --index mode=exact gives that"
            if d / n > AUDIT_BOUND
            else ""
        )
        lines.append(f"  {what}: {d} of {n} audited ({d / n:.1%}{over})")
    return "\n".join(lines)


def _print_verdicts(
    verdicts: Sequence[dict[str, Any]], title: str, only_failed: bool = False
) -> int:
    """Print a header with the count that hold, then one line per verdict (or per failure);
    returns the number that failed."""
    from memsim.engine.sources import Verdict

    failed = sum(not v["ok"] for v in verdicts)
    print(f"{title}: {len(verdicts) - failed} of {len(verdicts)} hold")
    for v in verdicts:
        if not (only_failed and v["ok"]):
            print("  " + Verdict(**v).line())
    return failed


def cmd_check(args: argparse.Namespace) -> int:
    """Run policies on one scenario and judge its ``expect:`` block: exit 1 when one fails."""
    from .api import RunDef, _overrides, list_policies, resolve_policy, run_grid

    policies = (
        _csv(args.policies)
        if args.policies and args.policies != "all"
        else list(list_policies()["id"])
    )
    llm = _overrides(_llm_overrides(args.llm))
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
        failed += _print_verdicts(r.expectations, title)
    total = sum(len(r.expectations) for r in judged)
    skipped = [str(r.summary["policy"]) for r in results if not r.expectations]
    print(
        f"\n{total - failed} of {total} expectations hold for {len(judged)} "
        f"polic{'y' if len(judged) == 1 else 'ies'}"
        + (f" (none stated for {', '.join(skipped)})" if skipped else "")
    )
    return 1 if failed else 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .api import expectation_table, grid, list_policies, resolve_policy, run_grid, tables
    from .report import console_table, write_comparison

    policies = (
        _csv(args.policies)
        if args.policies and args.policies != "all"
        else list(list_policies()["id"])
    )
    specs: list[str] = []
    if args.suite:
        from memsim.engine.sources import suite

        specs += suite(args.suite, locomo_path=args.locomo)
    specs += split_specs(args.scenarios)
    if args.locomo and not args.suite:
        specs.append(f"locomo:{args.locomo}")
    if not specs:
        raise ParamError("compare: give --suite NAME and/or --scenarios SPEC[,SPEC...]")
    seeds = _seeds(args.seeds)
    out = Path(args.out) if args.out else Path("results") / (args.suite or "compare")
    _out_dir(str(out))
    _out_dir(args.cache, "--cache")
    cache = Path(args.cache or DEFAULT_CACHE)
    params = _policy_params(policies, args.param)
    from .executors import dask_executor

    index = index_settings(args.index)
    defs = grid(policies, specs, seeds, params, _llm_overrides(args.llm), index)
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
        if not args.no_calibration:
            from .api import _overrides
            from .calibrate import frontier as run_frontier

            frontier = run_frontier(
                specs,
                seeds,
                llm=_overrides(_llm_overrides(args.llm)),
                root=str(cache),
                jobs=args.jobs,
                executor=executor,
                resume=not args.no_resume,
                progress="always" if args.progress else not args.quiet,
            )
    summary, per_query = tables(results)
    write_comparison(
        out,
        summary,
        per_query,
        definition={
            "policies": policies,
            "scenarios": specs,
            "seeds": seeds,
            "suite": args.suite,
            **({"index": index} if index else {}),
        },
        frontier=frontier,
    )
    if args.brief:
        from .report import brief_table

        print(f"{len(policies)} policies x {len(specs)} scenarios x {len(seeds)} seed(s)")
        print(brief_table(summary))
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
    wrote = "summary.md, summary.csv, per_query.parquet"
    if len(verdicts):
        from .results import atomic_write_bytes

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
        print(f"full tables: {out}/summary.md (per scenario, with 95% CIs), {out}/summary.csv")
    return 0


def cmd_robustness(args: argparse.Namespace) -> int:
    from .robustness import (
        DEFAULT_SCENARIOS,
        FRAGILE,
        ROBUST,
        default_grid,
        index_sentence,
        plot,
        robustness,
        small_grid,
        write_report,
    )

    policies = _csv(args.policies) if args.policies and args.policies != "all" else None
    scenarios = split_specs(args.scenarios) if args.scenarios else list(DEFAULT_SCENARIOS)
    table = robustness(
        policies,
        scenarios,
        default_grid() if args.grid == "default" else small_grid(),
        seeds=_seeds(args.seeds),
        jobs=args.jobs,
        root=args.cache,
        progress="always" if args.progress else not args.quiet,
        index=index_settings(args.index),
    )
    out = Path(args.out)
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


def _lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of workbench module ``module``, imported when the command runs
    (so ``memsim list`` does not import matplotlib, optuna or dask)."""

    def command(args: argparse.Namespace) -> int:
        from importlib import import_module

        return int(getattr(import_module(f"{__package__}.{module}"), name)(args) or 0)

    return command


def _command(
    sub: Any,
    name: str,
    help: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    func: Callable[[argparse.Namespace], int],
) -> None:
    """One subcommand whose arguments a function adds and whose body runs lazily."""
    s = sub.add_parser(name, help=help)
    add_arguments(s)
    s.set_defaults(func=func)


def _add_progress(s: argparse.ArgumentParser) -> None:
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--progress", action="store_true", help=PROGRESS_HELP)


def _add_index(s: argparse.ArgumentParser, which: str = "") -> None:
    s.add_argument(
        "--index",
        action="append",
        metavar="KEY=VALUE",
        help="candidate index for large stores: mode=ivf|cones|exact, min_rows=N, nprobe=N, "
        f"audit_every=N (docs/performance.md){which}; default: the policy's own",
    )


def _add_study(
    s: argparse.ArgumentParser,
    *,
    out: str,
    out_help: str,
    policies: str | None = None,
    scenarios_required: bool = True,
    seeds: bool = True,
) -> None:
    """What sweep, tune and sensitivity share: the policies (one command's wording), the
    scenarios, the seeds, the executor (--jobs, --dask), the candidate index (--index) and
    the output folder."""
    if policies:
        s.add_argument("--policies", required=True, help=policies)
    s.add_argument(
        "--scenarios",
        required=scenarios_required,
        help="scenario specs (comma list), e.g. synthetic:churn; a spec keeps its own "
        ",key=value options",
    )
    if seeds:
        s.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    s.add_argument(
        "--jobs", type=worker_count, default=1, help="local worker processes (same results)"
    )
    s.add_argument("--dask", metavar="local:N|tcp://HOST:PORT", help=DASK_HELP)
    _add_index(s)
    s.add_argument("--out", default=out, help=out_help)


def _add_sweep_arguments(s: argparse.ArgumentParser) -> None:
    from .sweep import METHODS

    s.add_argument("file", nargs="?", help="a sweep file (YAML); or give --policy and --field")
    s.add_argument("--policy", help="the policy to sweep (with --field)")
    s.add_argument(
        "--field",
        action="append",
        metavar="NAME[=LO:HI|=V1,V2,...]",
        help="a Params field: its declared range, a sub-range LO:HI, or a list of values "
        "(repeatable)",
    )
    s.add_argument("--method", default="grid", choices=METHODS)
    s.add_argument("--n", type=int, default=5, help="points per field (grid) or samples")
    s.add_argument("--sample-seed", type=int, default=0, help="seed of random / lhs samples")
    _add_study(
        s,
        out="results/sweep",
        out_help="folder of sweep.parquet / sweep.csv",
        scenarios_required=False,
    )
    s.add_argument("--cache", help="folder of cached runs (default: OUT/cache)")
    s.add_argument("--no-resume", action="store_true", help="rerun finished runs")
    _add_progress(s)


def _add_tune_arguments(s: argparse.ArgumentParser) -> None:
    from .tune import DIRECTIONS

    _add_study(
        s,
        policies="comma list of policies to tune",
        out="results/tuning",
        out_help="folder of the study and tuning.md",
        seeds=False,
    )
    s.add_argument("--objectives", default="recall", help=f"comma list of {', '.join(DIRECTIONS)}")
    s.add_argument("--fields", help=FIELDS_HELP)
    s.add_argument("--trials", type=int, default=20)
    s.add_argument("--train-seeds", default="0:5", help="seeds tuned on (default 0:5)")
    s.add_argument("--test-seeds", default="5:10", help="held-out seeds reported on (default 5:10)")


def _add_sensitivity_arguments(s: argparse.ArgumentParser) -> None:
    from memsim.engine.metric_registry import metric_names

    _add_study(
        s,
        policies="comma list of policies",
        out="results/sensitivity",
        out_help="folder of tables and figures",
    )
    s.add_argument("--fields", help=FIELDS_HELP)
    s.add_argument("--n", type=int, help="points per field (default 5; not with --sobol)")
    s.add_argument(
        "--sobol",
        type=int,
        metavar="N",
        help="variance-based (Sobol') indices instead of one-at-a-time curves, from N base "
        "samples (a power of 2; N x (fields + 2) points, each run at every seed): "
        "OUT/sobol_<policy>_<profile>.csv",
    )
    s.add_argument(
        "--metrics",
        help="with --sobol: comma list of metrics, all from the same runs "
        f"(default {','.join(metric_names('sobol'))})",
    )
    s.add_argument("--sample-seed", type=int, help="with --sobol: seed of the samples (default 0)")
    _add_progress(s)


def build_parser() -> argparse.ArgumentParser:
    from .claims import add_claims_arguments
    from .curves import add_curve_arguments
    from .drift import add_drift_arguments
    from .figures import add_figures_arguments

    p = argparse.ArgumentParser(
        prog="memsim",
        description="Replay event streams through memory policies of AI assistants and score them.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("list", help="registered policies and scenarios")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("params", help="a policy's parameters: default, range, seed section")
    s.add_argument("policy", help="policy id, e.g. pai (see `memsim list`)")
    s.add_argument("--csv", action="store_true", help="CSV on stdout instead of a table")
    s.set_defaults(func=cmd_params)

    s = sub.add_parser("run", help="run one policy on one scenario and print its metrics")
    s.add_argument("--policy", required=True, help="policy id, e.g. pai or pai-v1")
    s.add_argument(
        "--scenario",
        required=True,
        help="scripted/NAME, a YAML path, synthetic:PROFILE[,k=v], locomo:PATH",
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--param", action="append", metavar="KEY=VALUE", help="override a Params field")
    s.add_argument(
        "--llm",
        action="append",
        metavar="KEY=VALUE",
        help="mock LLM override, e.g. faults.embed_fail=0.1",
    )
    _add_index(s)
    s.add_argument("--out", help="write the run's files under this results root")
    _add_progress(s)
    s.set_defaults(func=cmd_run)

    s = sub.add_parser(
        "check", help="judge a scripted scenario's expect: block (exit 1 when one fails)"
    )
    s.add_argument("scenario", help="scripted/NAME or a YAML path")
    s.add_argument("--policies", default="all", help="comma list of policy ids (default: all)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--llm", action="append", metavar="KEY=VALUE", help="mock LLM override")
    s.add_argument("--jobs", type=worker_count, default=1, help="parallel processes")
    _add_progress(s)
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("compare", help="policies x scenarios x seeds -> a summary table")
    s.add_argument("--policies", default="all", help="comma list of policy ids (default: all)")
    s.add_argument(
        "--scenarios",
        "--scenario",
        action="append",
        metavar="SPEC[,SPEC...]",
        help="scenario specs (comma list; repeatable); a spec keeps its own ,key=value options",
    )
    s.add_argument("--suite", help="a named suite of scenarios, e.g. standard")
    s.add_argument("--locomo", metavar="PATH", help="add LoCoMo from this JSON file")
    s.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    s.add_argument(
        "--jobs", type=worker_count, default=1, help="parallel processes (results are identical)"
    )
    s.add_argument(
        "--llm",
        action="append",
        metavar="KEY=VALUE",
        help="mock LLM override for every run: bands.X, faults.X, modes.X (docs/mock-llm.md), "
        "text_embedder=wordllama|hashed|minilm",
    )
    s.add_argument("--dask", metavar="local:N|tcp://HOST:PORT", help=DASK_HELP)
    s.add_argument(
        "--param",
        action="append",
        metavar="POLICY.FIELD=VALUE",
        help="a parameter of one policy (repeatable), e.g. pai.prune_threshold=0.1",
    )
    _add_index(s, " (to each policy some search of which goes through that mode)")
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
    _add_progress(s)
    s.add_argument(
        "--no-calibration",
        action="store_true",
        help="skip the clairvoyant bound at each footprint and the frontier's reference runs",
    )
    s.set_defaults(func=cmd_compare)

    _command(
        sub,
        "sweep",
        "policy parameters x scenarios x seeds -> a tidy table",
        _add_sweep_arguments,
        _lazy("sweep", "run_sweep_command"),
    )

    _command(
        sub,
        "tune",
        "tune thresholds with Optuna; documented vs tuned, held out",
        _add_tune_arguments,
        _lazy("tune", "run_tune_command"),
    )

    _command(
        sub,
        "sensitivity",
        "one-at-a-time sensitivity and tornado figures, or Sobol' indices (--sobol N)",
        _add_sensitivity_arguments,
        _lazy("tune", "run_sensitivity_command"),
    )

    s = sub.add_parser("robustness", help="which pairwise conclusions survive other mock-LLM modes")
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
    _add_index(s, " (to each policy some search of which goes through that mode)")
    s.add_argument("--out", default="results/robustness.md", help="report (also .csv, .png)")
    s.add_argument("--cache", help="results root for per-run files (resumable)")
    _add_progress(s)
    s.set_defaults(func=cmd_robustness)

    _command(
        sub,
        "curve",
        "decay curve of one memory under an access pattern (CSV)",
        add_curve_arguments,
        _lazy("curves", "run_curve_command"),
    )

    _command(
        sub,
        "claims",
        "regenerate the table of the seed documents' worked examples",
        add_claims_arguments,
        _lazy("claims", "main_claims"),
    )

    _command(
        sub,
        "figures",
        "regenerate the PNG figures under results/figures/",
        add_figures_arguments,
        _lazy("figures", "run_figures_command"),
    )

    _command(
        sub,
        "drift",
        "each documented policy against its code variant (markdown)",
        add_drift_arguments,
        _lazy("drift", "run_drift"),
    )
    return p


def user_command(prog: str, command: Callable[[], object]) -> int:
    """Run a command line's body and return its exit code: a user mistake (a MemsimError, a
    missing file) is one line on stderr and code 2, never a traceback; an interrupt 130; a
    reader that left the pipe 0. A body returning no int (None, a result) exits 0. Shared by
    ``memsim`` and the documented ``python -m benchmarks.*`` commands."""
    try:
        code = command()
        return operator.index(code) if hasattr(code, "__index__") else 0
    except MemsimError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"{prog}: error: no such file: {e.filename}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `memsim list | head`: the reader left; that is not an error
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is no file (redirected in-process)
            pass
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    # Simulations multiply small matrices, where one BLAS thread beats several contending
    # threads by a wide margin; parallelism comes from --jobs. Must precede numpy's import.
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    return user_command("memsim", lambda: args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
