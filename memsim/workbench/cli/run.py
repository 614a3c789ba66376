"""``memsim run``: one policy on one scenario, its metrics in words."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any

from memsim.engine.candidate_index import AUDIT_BOUND
from memsim.engine.metric_registry import METRICS, metric_names
from memsim.engine.sources import Verdict

from ..runs.execution import as_overrides, execute, resolve_policy
from ..runs.results import RunDef, save
from .args import (
    add_index,
    add_progress,
    add_seed,
    index_settings,
    key_values,
    llm_overrides,
    one_policy,
    typed_params,
)
from .outputs import writable_folder


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--policies",
        "--policy",
        dest="policy",
        required=True,
        help="one policy id, e.g. pai or pai-code (memsim list; compare runs several)",
    )
    s.add_argument(
        "--scenario",
        required=True,
        help="scripted/NAME, a YAML path, synthetic:PROFILE[,k=v], locomo:PATH",
    )
    add_seed(s)
    s.add_argument("--param", action="append", metavar="KEY=VALUE", help="override a Params field")
    s.add_argument(
        "--llm",
        action="append",
        metavar="KEY=VALUE",
        help="mock LLM override, e.g. faults.embed_fail=0.1; or a real model: "
        "openai:BASE_URL,model=NAME or replay:PATH (docs/real-models.md)",
    )
    add_index(s)
    s.add_argument("--out", help="write the run's files under this results root")
    add_progress(s)


def run(args: argparse.Namespace) -> int:
    args.policy = one_policy(args.policy, "run")
    params = typed_params(args.policy, key_values(args.param, "--param"))
    llm = llm_overrides(args.llm)
    writable_folder(args.out)
    d = RunDef(
        resolve_policy(args.policy),
        args.scenario,
        args.seed,
        as_overrides(params),
        as_overrides(llm),
        as_overrides(index_settings(args.index)),
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
    if "llm_usage" in r.manifest:
        print()
        print(usage_lines(r.manifest["llm_usage"]))
    if r.expectations:
        print()
        print_verdicts(r.expectations, f"expectations stated for {r.summary['policy']}")
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


def usage_lines(usage: dict[str, Any]) -> str:
    """An LLM's calls and tokens per protocol method: a real model's with their latency and
    its faults (the invalid or failed replies, each counted as the mock's fault of that
    kind); the metered mock's with the texts its embedding calls embedded and the tokenizer
    that counted (memsim.engine.metering)."""
    if "faults" not in usage:  # the metered mock
        head = f"  {'LLM calls':<18} {'calls':>7} {'tokens in':>10} {'tokens out':>10}"
        lines = [head + f" {'texts':>6}"]
        rows = [*usage["methods"].items(), ("total", usage["total"])]
        for name, m in rows:
            texts = f" {m['items']:>5,}" if "items" in m else ""
            lines.append(
                f"  {name:<18} {m['calls']:>7,} {m['tokens_in']:>10,} {m['tokens_out']:>10,}"
                + texts
            )
        lines.append(
            f"  (what a real model would be sent for the mock's calls; tokens: "
            f"{usage['tokenizer']})"
        )
        return "\n".join(lines)
    lines = [f"  {'model calls':<18} {'calls':>7} {'tokens in':>10} {'tokens out':>10} {'ms':>9}"]
    rows = [*usage["methods"].items(), ("total", usage["total"])]
    for name, m in rows:
        lines.append(
            f"  {name:<18} {m['calls']:>7,} {m['tokens_in']:>10,} {m['tokens_out']:>10,} "
            f"{m['latency_ms']:>9,}"
        )
    faults = {k: n for k, n in usage["faults"].items() if n}
    if not faults:
        lines.append("  faults: none (every reply valid)")
        return "\n".join(lines)
    counted = ", ".join(f"{k} {n}" for k, n in faults.items())
    lines.append(f"  faults: {counted} (invalid or failed replies; the first ones:)")
    lines += [f"    {m}" for m in usage["fault_messages"][:5]]
    return "\n".join(lines)


def index_lines(audit: dict[str, Any]) -> str:
    """The candidate index a run searched through and its exactness audit, in words: how
    many searches it answered, and how many of the audited queries' top-k and ingest
    decisions differ from the exact scan's (flagged over ``candidate_index.AUDIT_BOUND``)."""
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


def print_verdicts(
    verdicts: Sequence[dict[str, Any]], title: str, only_failed: bool = False
) -> int:
    """Print a header with the count that hold, then one line per verdict (or per failure);
    returns the number that failed."""
    failed = sum(not v["ok"] for v in verdicts)
    print(f"{title}: {len(verdicts) - failed} of {len(verdicts)} hold")
    for v in verdicts:
        if not (only_failed and v["ok"]):
            print("  " + Verdict(**v).line())
    return failed
