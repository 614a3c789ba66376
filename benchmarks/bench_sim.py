"""The ``steady`` synthetic year (100,000 episodes, 10,000 queries over 365 days)
through each seed policy via memsim.engine.runner.run: wall time and the share spent in ingest,
recall and maintenance (Trace.timings).

Each policy first runs a tenth of the year (the probe). Sizes then grow towards the full
year in at most two jumps, each sized to take about BUDGET seconds from the growth measured
so far (time assumed to grow with the square of the size until two points give the actual
exponent), the last one always to the full year when it is predicted to fit; a run stopped
at 1.5 x BUDGET keeps the last size that finished. The record's ratio is the share of the
full year that ran within the budget (1.0: the full year fit), with the timing shares of
that run and the cProfile top entries of a profiled probe run.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from benchmarks.conftest import assert_target_in_full_mode, record_target
from benchmarks.workloads import REPO, SMOKE, size

SEEDS = ["pai", "izzie", "kernle", "engram", "cosmo"]
FULL_EPISODES, FULL_QUERIES = 100_000, 10_000
PROBE = size(10, 200)  # the probe runs 1/PROBE of the year
BUDGET = size(120.0, 30.0)  # seconds a run may take
PROFILE_LINES = 25


def simrun(
    policy: str,
    episodes: int,
    queries: int,
    timeout: float,
    profile: int = 0,
    index: str = "",
    extra: list[str] | None = None,
) -> dict | None:
    cmd = [sys.executable, "-m", "benchmarks", "simrun", policy, str(episodes), str(queries)]
    cmd += extra or []
    if profile:
        cmd += ["--profile", str(profile)]
    if index:
        cmd += ["--index", index]
    # one BLAS thread: a simulation makes many small products (one per claim for the
    # policies that scan for a repetition), and a second BLAS thread on a shared 2-core
    # machine makes each of them wait for a descheduled thread (Ebisu's year: 546 s wall,
    # 490 s of it in ingest, against 2.8 s at a tenth, with another job on the other core)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        done = subprocess.run(
            cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=True
        )
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def next_scale(scale: float, seconds: float, exponent: float) -> float | None:
    """The next size (in tenths of the year) after a run of ``scale`` tenths that took
    ``seconds``: the one predicted to take BUDGET if time grows as size ** ``exponent``, at
    most the full year; None when there is none worth running. A step under 1.25x is not
    worth a run unless it is the one to the full year (a probe of 1.2-1.9 s once stopped
    engram and kernle at 85% and 93% of a year that fits in a third of the budget)."""
    if scale >= PROBE:
        return None
    nxt = min(float(PROBE), scale * (BUDGET / max(seconds, 1e-3)) ** (1 / exponent))
    return nxt if nxt >= PROBE or nxt >= 1.25 * scale else None


@pytest.mark.parametrize("policy_id", SEEDS)
def test_steady_year(benchmark, policy_id):
    from memsim.engine import registry

    try:
        registry.spec(policy_id).load()
    except Exception as exc:  # a policy still being written by its author
        pytest.skip(f"{policy_id} not available: {exc}")
    probe_eps, probe_qs = FULL_EPISODES // PROBE, FULL_QUERIES // PROBE
    probe = simrun(policy_id, probe_eps, probe_qs, timeout=4 * BUDGET)
    assert probe is not None, (
        f"{policy_id}: even 1/{PROBE} of the year took over {4 * BUDGET:.0f} s"
    )
    result, scale, exponent = probe, 1.0, 2.0
    for _ in range(0 if SMOKE else 2):
        nxt = next_scale(scale, result["run_seconds"], exponent)
        if nxt is None:
            break
        run = simrun(
            policy_id, int(round(probe_eps * nxt)), int(round(probe_qs * nxt)), timeout=1.5 * BUDGET
        )
        if run is None:
            break
        exponent = max(
            1.0,
            math.log(max(run["run_seconds"], 1e-3) / max(result["run_seconds"], 1e-3))
            / math.log(nxt / scale),
        )
        result, scale = run, nxt
    profiled = (
        simrun(policy_id, probe_eps, probe_qs, timeout=8 * BUDGET, profile=PROFILE_LINES) or {}
    )
    tm = result["timings"]
    total = max(tm.get("total", 0.0), 1e-12)
    shares = {k: tm.get(k, 0.0) / total for k in ("ingest", "recall", "maintain", "actions")}
    record_target(
        benchmark,
        target=f"steady year {policy_id} (share of the year run in ~{BUDGET:.0f} s)",
        ratio=result["episodes"] / FULL_EPISODES,
        limit=1.0,
        better="higher",
        n=result["episodes"],
        what=f"runner.run on {result['spec']}",
        run_seconds=result["run_seconds"],
        shares=shares,
        timings=tm,
        store_rows=result["store_rows"],
        probe_seconds=probe["run_seconds"],
        # from the probe to the last run (the last step alone can be a few percent of the
        # size, too short to measure growth on a shared machine)
        growth_exponent=(
            math.log(max(result["run_seconds"], 1e-3) / max(probe["run_seconds"], 1e-3))
            / math.log(scale)
            if scale > 1.0
            else math.nan
        ),
        profile=profiled.get("profile", ""),
    )
    benchmark.group = "simulation"
    # the run happened in a subprocess; an empty timed call puts this record in the JSON
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert_target_in_full_mode(benchmark)
