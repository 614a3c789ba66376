"""Target 6: the ``steady`` synthetic year (100,000 episodes, 10,000 queries over 365 days)
through each seed policy via memsim.runner.run: wall time and the share spent in ingest,
recall and maintenance (Trace.timings).

Each policy first runs a tenth of the year under cProfile (the profile goes in the record);
from its time the largest size expected to finish in BUDGET seconds is chosen (time taken
as growing with the square of the size: stores grow and every query scans them), and that
size runs in a subprocess stopped at 1.5 x BUDGET (halving the size on a timeout). The
record's ratio is the share of the full year that ran: 1.0 means the full year fit.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from benchmarks.conftest import assert_target_in_full_mode, record_target
from benchmarks.workloads import REPO, SMOKE, size

SEEDS = ["pai", "izzie", "kernle", "engram", "cosmo"]
FULL_EPISODES, FULL_QUERIES = 100_000, 10_000
PROBE = size(10, 200)          # the probe runs 1/PROBE of the year
BUDGET = size(120.0, 30.0)     # seconds a run may take
PROFILE_LINES = 25


def simrun(policy: str, episodes: int, queries: int, timeout: float, profile: int = 0) -> dict | None:
    cmd = [sys.executable, "-m", "benchmarks.simrun", policy, str(episodes), str(queries)]
    if profile:
        cmd += ["--profile", str(profile)]
    try:
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("policy_id", SEEDS)
def test_target6_steady_year(benchmark, policy_id):
    from memsim import registry
    try:
        registry.spec(policy_id).load()
    except Exception as exc:  # a policy still being written by its author
        pytest.skip(f"{policy_id} not available: {exc}")
    probe_eps, probe_qs = FULL_EPISODES // PROBE, FULL_QUERIES // PROBE
    probe = simrun(policy_id, probe_eps, probe_qs, timeout=4 * BUDGET, profile=PROFILE_LINES)
    assert probe is not None, f"{policy_id}: even 1/{PROBE} of the year took over {4 * BUDGET:.0f} s"
    scale = 1.0 if SMOKE else min(float(PROBE), max(1.0, math.sqrt(BUDGET / max(probe["run_seconds"], 1e-3))))
    result = None
    while result is None and scale >= 1.0:
        eps = int(round(probe_eps * scale))
        result = simrun(policy_id, eps, int(round(probe_qs * scale)), timeout=1.5 * BUDGET)
        scale = scale / 2 if result is None else scale
    if result is None:
        result = {k: v for k, v in probe.items() if k != "profile"}
    tm = result["timings"]
    total = max(tm.get("total", 0.0), 1e-12)
    shares = {k: tm.get(k, 0.0) / total for k in ("ingest", "recall", "maintain", "actions")}
    record_target(benchmark, target=f"6 steady year {policy_id} (share of the year run in ~{BUDGET:.0f} s)",
                  ratio=result["episodes"] / FULL_EPISODES, limit=1.0, better="higher",
                  n=result["episodes"], what=f"runner.run on {result['spec']}",
                  run_seconds=result["run_seconds"], shares=shares, timings=tm,
                  store_rows=result["store_rows"], probe_seconds=probe["run_seconds"],
                  profile=probe.get("profile", ""))
    benchmark.group = "simulation"
    # the run happened in a subprocess; an empty timed call puts this record in the JSON
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert_target_in_full_mode(benchmark)
