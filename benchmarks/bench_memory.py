"""Peak resident memory of a MemoryStore of 1,000,000 memories of 384 dimensions is
at most 1.3x the raw embedding bytes (n * dim * 4).

Measured in subprocesses (benchmarks.memchild): ru_maxrss of RUSAGE_CHILDREN of a child that
builds the store (reserve(n), rows added in chunks), minus the same for a child that does
the imports and generates one chunk without a store. Each measurement runs in its own
intermediate process so RUSAGE_CHILDREN sees only that child.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.conftest import assert_target_in_full_mode, record_target
from benchmarks.workloads import DIM, REPO, size, size_id

N = size(1_000_000, 5_000)
CHUNK = 8192


def peak(mode: str, n: int) -> int:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "memchild",
            "measure",
            mode,
            str(n),
            str(DIM),
            str(CHUNK),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n", [N], ids=size_id)
def test_store_peak_memory(benchmark, n):
    base = peak("baseline", n)
    full = peak("store", n)
    raw = n * DIM * 4
    record_target(
        benchmark,
        target="peak memory (store / raw embeddings)",
        ratio=(full - base) / raw,
        limit=1.3,
        better="lower",
        n=n,
        what=f"(peak RSS store child - baseline child) / (n*{DIM}*4)",
        peak_bytes=full,
        baseline_bytes=base,
        raw_bytes=raw,
        chunk=CHUNK,
    )
    benchmark.group = "memory"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert_target_in_full_mode(benchmark)
