"""A policy's steady year through the candidate index
(memsim.engine.candidate_index.CandidateIndex, ``Policy.use_index("ivf")``) against its exact run
and keep-all's, all in the same pytest session.

For each policy that searches through the index (INDEXED): the tenth of the year and the
full year through the index (growth exponent of run time, target <= 1.15), the full year
exact (the speedup), keep-all's full year (ratio, target <= 3), and the exactness audit of
the year run (share of audited queries whose top-k differs from the exact scan, target
<= 0.01). Runs are subprocesses of benchmarks.simrun, one at a time.

Full mode is long on a shared 2-core machine (several minutes per run); run it alone:
``nice -n 10 python -m pytest benchmarks/bench_index.py``.
"""

from __future__ import annotations

import math

import pytest

from benchmarks.bench_sim import simrun
from benchmarks.conftest import assert_target_in_full_mode, record_target
from benchmarks.workloads import SMOKE, size
from memsim.engine.candidate_index import AUDIT_BOUND

INDEXED = ["izzie"]
YEAR_EPISODES, YEAR_QUERIES = size(100_000, 2_000), size(10_000, 200)
MIN_ROWS = size(20_000, 300)  # the index's default threshold; small in smoke mode
TIMEOUT = size(3600.0, 300.0)


def _run(policy: str, scale: float, index: bool) -> dict:
    got = simrun(
        policy,
        int(round(YEAR_EPISODES * scale)),
        int(round(YEAR_QUERIES * scale)),
        timeout=TIMEOUT,
        index=f"mode=ivf,min_rows={MIN_ROWS}" if index else "",
    )
    assert got is not None, f"{policy} ({scale:g} year, index={index}) took over {TIMEOUT:.0f} s"
    return got


@pytest.fixture(scope="module")
def keep_all_year() -> dict:
    return _run("keep-all", 1.0, index=False)


@pytest.mark.parametrize("policy_id", INDEXED)
def test_year_through_the_index(benchmark, keep_all_year, policy_id):
    tenth = _run(policy_id, 0.1, index=True)
    year = _run(policy_id, 1.0, index=True)
    exact = _run(policy_id, 1.0, index=False)
    growth = math.log(max(year["run_seconds"], 1e-3) / max(tenth["run_seconds"], 1e-3)) / (
        math.log(10.0)
    )
    audit = year["index_audit"]
    ratio = year["run_seconds"] / max(keep_all_year["run_seconds"], 1e-3)
    record_target(
        benchmark,
        target=f"steady year {policy_id} through the index (/ keep-all's year)",
        ratio=ratio,
        limit=3.0,
        better="lower",
        n=year["episodes"],
        what=f"runner.run on {year['spec']}, index mode=ivf min_rows={MIN_ROWS}",
        growth_exponent=growth,
        seconds={
            "index_tenth": tenth["run_seconds"],
            "index_year": year["run_seconds"],
            "exact_year": exact["run_seconds"],
            "keep_all_year": keep_all_year["run_seconds"],
        },
        speedup_over_exact=exact["run_seconds"] / max(year["run_seconds"], 1e-3),
        audit=audit,
        query_differ_share=audit["query_differ_share"],
    )
    benchmark.group = "index"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert audit["checked"] > 0 or SMOKE, "the audit checked no query"
    if not SMOKE:
        assert audit["query_differ_share"] <= AUDIT_BOUND, f"audit: {audit}"
        assert growth <= 1.15, f"growth exponent {growth:.2f} > 1.15"
    assert_target_in_full_mode(benchmark)
