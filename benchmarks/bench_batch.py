"""Batched recall: a batch of 256 queries over 200k memories costs at most 1/8 per query of a single
query (both exact: 000 §2 score, floor, top 10, top-k included in the timing).

A single query is a matrix-vector product (bandwidth-bound); the batch is matrix-matrix
products over row chunks (compute-bound BLAS) followed by the floor/bound prefilter and a
vectorized top-k merge (policies.pai_fastscore.pai_topk_batch), so no (256, 200k) score matrix is
ever built or partitioned. The straightforward batch (full cosine matrix, full scores,
ranking.batch_topk) is timed alongside for reference.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.conftest import assert_target_in_full_mode, interleaved, record_target
from benchmarks.workloads import NOW, embeddings, pai_columns, pai_workload, queries, size
from memsim.engine.ranking import batch_topk
from policies import pai_fastscore as fs
from policies.pai import PaiParams

P = PaiParams()
K = 10
N = size(200_000, 3_000)
B = size(256, 16)


@pytest.fixture(scope="module")
def case():
    X = embeddings(N)
    cols = pai_columns(pai_workload(N))
    Q = queries(N, B)
    codes = [[b % 50] for b in range(B)]
    return X, cols, Q, codes


def straightforward_batch(X, Q, cols, codes):
    C = Q @ X.T
    S = np.stack([fs.pai_scores(C[b], cols, NOW, codes[b], P) for b in range(len(Q))])
    ids = batch_topk(S, K)
    return [(i[i >= 0], S[b, i[i >= 0]]) for b, i in enumerate(ids)]


def test_batch_equals_straightforward(case):
    X, cols, Q, codes = case
    got = fs.pai_topk_batch(X, Q, cols, NOW, codes, P, K)
    C = fs.batch_cosines(X, Q)
    for b in range(0, B, max(1, B // 8)):
        want = fs.pai_topk_from_cos(C[b], cols, NOW, codes[b], P, K)
        ref_scores = fs.pai_scores(C[b], cols, NOW, codes[b], P)
        np.testing.assert_array_equal(got[b][0], want[0])
        np.testing.assert_array_equal(got[b][1], ref_scores[want[0]])


def test_batch_per_query_vs_single(benchmark, case):
    X, cols, Q, codes = case
    fns = {
        "single": lambda: fs.pai_topk(X, Q[0], cols, NOW, codes[0], P, K),
        "batch": lambda: fs.pai_topk_batch(X, Q, cols, NOW, codes, P, K),
    }
    t = interleaved(fns, rounds=size(5, 1))
    QT = np.ascontiguousarray(Q).T
    plain = interleaved(
        {
            "straightforward_batch": lambda: straightforward_batch(X, Q, cols, codes),
            "gemm_only": lambda: [X[lo : lo + 16384] @ QT for lo in range(0, N, 16384)],
            "single_again": fns["single"],
        },
        rounds=size(2, 1),
    )
    per_query = t["batch"] / B
    record_target(
        benchmark,
        target="batch of 256 (per query / single)",
        ratio=per_query / t["single"],
        limit=1 / 8,
        better="lower",
        n=N,
        what=f"pai_topk_batch({B} queries)/{B} / pai_topk(1 query)",
        queries=B,
        seconds={**t, **plain},
        straightforward_ratio=plain["straightforward_batch"]
        / B
        / min(t["single"], plain["single_again"]),
        gemm_only_ratio=plain["gemm_only"] / B / min(t["single"], plain["single_again"]),
    )
    benchmark.group = "targets"
    benchmark.pedantic(fns["batch"], rounds=size(3, 1), iterations=1)
    assert_target_in_full_mode(benchmark)
