"""Sweep executors: a 200-run sweep of one policy on ``synthetic:churn`` at a tenth
of a year, timed serially, with two local processes and on a two-worker Dask LocalCluster.

Target: Dask's wall time at most 1.15x the process pool's, measured in the same run (the
cluster's start-up is included: a user pays it), best of ``ROUNDS`` rounds in which the two
alternate (one round gave 1.06-1.26x on a quiet machine). Every table must be byte-identical.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path

from benchmarks.conftest import assert_target_in_full_mode, interleaved, record_target
from benchmarks.workloads import size

RUNS = size(200, 4)
ROUNDS = size(3, 1)
# a tenth of a year at churn's own rate (2000 episodes and 200 queries over 180 days): ~0.6 s
# a pai run on an idle core, so 200 runs fit a shared machine (10,000 episodes cost ~40 s each)
EPISODES = size(400, 200)
SCENARIO = f"synthetic:churn,episodes={EPISODES},queries={size(40, 20)},horizon=36.5"


def _timed(extra: list[str]) -> tuple[float, str]:
    from memsim.workbench.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        args = [
            "sweep",
            "--policy",
            "pai",
            "--field",
            "prune_threshold=0.01:0.5",
            "--method",
            "lhs",
            "--n",
            str(RUNS),
            "--scenarios",
            SCENARIO,
            "--seeds",
            "0",
            "--quiet",
            "--no-resume",
            "--out",
            str(out),
            *extra,
        ]
        t0 = time.perf_counter()
        assert main(args) == 0
        wall = time.perf_counter() - t0
        return wall, hashlib.sha256((out / "sweep.parquet").read_bytes()).hexdigest()


def test_sweep_executors(benchmark):
    hashes: set[str] = set()

    def sweep(extra: list[str]) -> float:
        wall, digest = _timed(extra)
        hashes.add(digest)
        return wall

    def body() -> dict[str, float]:
        serial = sweep([])
        pool, dask = ["--jobs", "2"], ["--dask", "local:2"]
        best = interleaved({"jobs2": lambda: sweep(pool), "dask2": lambda: sweep(dask)}, ROUNDS)
        return {"serial": serial, **best}

    res = benchmark.pedantic(body, rounds=1, iterations=1)
    assert len(hashes) == 1, "executors gave different bytes"
    ratio = res["dask2"] / res["jobs2"]
    record_target(
        benchmark,
        target="sweep_dask_overhead",
        ratio=ratio,
        limit=1.15,
        better="lower",
        n=RUNS,
        what=f"{RUNS}-run sweep of pai on {SCENARIO}: Dask local:2 / --jobs 2 wall time",
        rounds=ROUNDS,
        serial_s=res["serial"],
        jobs2_s=res["jobs2"],
        dask2_s=res["dask2"],
    )
    assert_target_in_full_mode(benchmark)
