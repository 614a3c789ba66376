"""Profile every registered policy (keep-all, the reference, first) through a tenth of the
``steady`` synthetic year and write the summary into results/benchmarks.md (one profile per
policy: where a policy's time goes before anyone makes it faster).

    python -m benchmarks profiles [--lines 15] [--baseline DIR] [POLICY ...]

Each run is ``python -m benchmarks simrun POLICY 10000 1000 --profile N`` in a subprocess
(run it under ``nice -n 10`` on a shared machine). The block goes between the markers
PROFILES_BEGIN / PROFILES_END of results/benchmarks.md, which benchmarks.report keeps when it
rewrites the file. ``--baseline DIR`` adds a before column from earlier runs' JSON files
``DIR/<policy>.json`` (simrun output); ``--baseline-code DIR`` runs each policy on an older
checkout right before the current code (the fairer comparison on a shared machine; a policy
the older code does not have gets no before column). Times are of one run each: read the
shares and the profile, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks import blocks
from benchmarks.workloads import REPO, registered

OUT_MD = REPO / "results" / "benchmarks.md"
BEGIN, END = "<!-- PROFILES_BEGIN -->", "<!-- PROFILES_END -->"
REFERENCE = "keep-all"
EPISODES, QUERIES = 10_000, 1_000


def policy_ids() -> list[str]:
    """Every registered policy (the bound excluded, as in bench_scaling), keep-all first."""
    from benchmarks.bench_scaling import policy_ids as registered

    return [REFERENCE] + [p for p in registered() if p != REFERENCE]


def profile(policy: str, lines: int, code: Path | None = None) -> dict:
    """One profiled run; ``code``: a checkout of older code to run instead (PYTHONPATH)."""
    # a checkout older than the ``python -m benchmarks`` entry point runs simrun as a module
    older = code is not None and not (code / "benchmarks" / "__main__.py").exists()
    simrun = ["benchmarks.simrun"] if older else ["benchmarks", "simrun"]
    cmd = [sys.executable, "-m", *simrun, policy, str(EPISODES), str(QUERIES)]
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    done = subprocess.run(
        [*cmd, "--profile", str(lines)],
        cwd=code or REPO,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    out: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _shares(d: dict) -> str:
    tm = d["timings"]
    total = max(tm.get("total", 0.0), 1e-12)
    return ", ".join(
        f"{k} {tm.get(k, 0.0) / total:.0%}" for k in ("ingest", "recall", "maintain", "actions")
    )


def _trim(profile: str) -> str:
    """The profile table without absolute paths."""
    text = profile.replace(str(REPO) + "/", "")
    return "\n".join(
        line.replace(".venv/lib/python3.11/site-packages/", "")
        for line in text.strip().splitlines()
        if line.strip()
    )


def block(runs: dict[str, dict], baseline: dict[str, dict], measured: str = "") -> str:
    """The markdown block; ``measured``: when, on what code and under what machine load."""
    rows = [
        "| policy | run s | before s | ingest / recall / maintain / actions | store rows |",
        "| --- | --- | --- | --- | --- |",
    ]
    for pid, d in runs.items():
        before = baseline.get(pid)
        was = f"{before['run_seconds']:.2f}" if before else "-"
        rows.append(
            f"| {pid} | {d['run_seconds']:.2f} | {was} | {_shares(d)} | {d['store_rows']:,} |"
        )
    parts = [
        BEGIN,
        "## Profiles at a tenth of the steady year",
        "",
        f"`python -m benchmarks profiles` ({EPISODES:,} episodes, {QUERIES:,} queries over 365 "
        "days; one cProfile run per policy, top entries by cumulative time; `before` is the "
        "same run on the older code given with --baseline or --baseline-code, if any)." + measured,
        "",
        *rows,
        "",
    ]
    for pid, d in runs.items():
        parts += [f"### {pid}", "", "```", _trim(d.get("profile", "")), "```", ""]
    parts.append(END)
    return "\n".join(parts) + "\n"


def kept_block(md: str) -> str:
    """The profile block of ``md`` ('' when none), for benchmarks.report to keep."""
    return blocks.kept(md, BEGIN, END)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks profiles")
    ap.add_argument("policies", nargs="*", help="default: every registered policy")
    ap.add_argument("--lines", type=int, default=15)
    ap.add_argument("--baseline", type=Path, default=None)
    ap.add_argument(
        "--baseline-code",
        type=Path,
        default=None,
        help="a checkout of the code before (e.g. git archive of a commit): each policy runs "
        "there right before it runs here, so both see the same machine load",
    )
    ap.add_argument("--code", default="", help="the commit measured (default: git)")
    a = ap.parse_args(argv)
    runs: dict[str, dict] = {}
    baseline: dict[str, dict] = {}
    load = os.getloadavg()[0]
    for pid in registered(a.policies) or policy_ids():
        if a.baseline_code is not None:
            try:
                baseline[pid] = profile(pid, a.lines, a.baseline_code)
            except subprocess.CalledProcessError as e:  # not registered in the older code
                last = (e.stderr or "").strip().splitlines()[-1:] or ["no output"]
                print(f"{pid}: no before column ({last[0][:200]})", file=sys.stderr)
        runs[pid] = profile(pid, a.lines)
    if a.baseline is not None:
        for pid in runs:
            f = a.baseline / f"{pid}.json"
            if f.exists():
                baseline[pid] = json.loads(f.read_text())
    when = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    measured = (
        f" Measured {when}, code at {a.code or blocks.commit() or 'unknown'}, on {os.cpu_count()} "
        f"cores with a load average of {load:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end."
    )
    blocks.write(OUT_MD, block(runs, baseline, measured), BEGIN, END)
    print(f"wrote the profiles of {', '.join(runs)} into {OUT_MD}")
