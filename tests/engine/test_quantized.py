"""memsim.engine.quantized: the int8 screen's edges bound the full scan's float32 products of
every row they claim to (duplicates, replaced rows, vectors of any length), so a top-k read
from the rows it finds is the full scan's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.engine.quantized import QuantizedScreen


def unit_rows(rng: np.random.Generator, n: int, dim: int, clusters: int) -> np.ndarray:
    if clusters:
        centres = rng.standard_normal((clusters, dim))
        X = centres[rng.integers(0, clusters, n)] + 0.3 * rng.standard_normal((n, dim))
    else:
        X = rng.standard_normal((n, dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X.astype(np.float32)


def assert_edges_hold(screen, E, v, m):
    rows, edges, stale = screen.ranked(E, v, m)
    full = E @ v
    assert len(edges) == len(rows) + 1
    head = edges[: len(rows)]
    assert np.all(head[:-1] >= head[1:])  # best first
    known = np.zeros(len(E), bool)
    known[stale] = True
    for i in range(len(rows) + 1):
        others = ~known
        if others.any():
            assert full[others].max() <= edges[i], (i, full[others].max(), edges[i])
        if i < len(rows):
            known[rows[i]] = True
    return rows, edges, stale


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 300),
    dim=st.sampled_from([3, 16, 64]),
    clusters=st.sampled_from([0, 1, 4]),
    duplicates=st.booleans(),
    length=st.sampled_from([1.0, 0.3, 7.0]),
    m=st.integers(1, 320),
)
def test_edges_bound_every_row_not_read(seed, n, dim, clusters, duplicates, length, m):
    rng = np.random.default_rng(seed)
    E = unit_rows(rng, n, dim, clusters)
    if duplicates:
        E[rng.integers(0, n, n // 2)] = E[0]
    screen = QuantizedScreen(dim)
    v = (unit_rows(rng, 1, dim, 0)[0] * np.float32(length)).astype(np.float32)
    assert_edges_hold(screen, E, v, m)
    # rows replaced after the copy was built: returned as stale, never bounded wrongly
    changed = rng.integers(0, n, 3)
    E[changed] = unit_rows(rng, 3, dim, clusters)
    screen.changed(changed)
    rows, _, stale = assert_edges_hold(screen, E, v, m)
    rebuilt = 16 * len(set(changed.tolist())) > n
    every_row = len(rows) == n  # (m reaches the store: nothing left to bound)
    assert set(changed.tolist()) <= set(stale.tolist()) or rebuilt or every_row


def test_rows_added_later_are_encoded_and_a_rebuild_forgets_stale_rows():
    rng = np.random.default_rng(3)
    E = unit_rows(rng, 400, 32, 3)
    screen = QuantizedScreen(32)
    v = E[7]
    assert_edges_hold(screen, E[:150], v, 20)
    assert_edges_hold(screen, E[:290], v, 20)  # (under double: appended, same scale)
    assert screen.nbytes() == 290 * 32
    screen.changed(np.arange(0, 40))  # more than a sixteenth: the next read rebuilds
    _, _, stale = assert_edges_hold(screen, E[:290], v, 20)
    assert len(stale) == 0
    assert_edges_hold(screen, E, v, 20)  # the store doubled: rebuilt at its size


def test_everything_when_asked_for_every_row():
    rng = np.random.default_rng(5)
    E = unit_rows(rng, 50, 8, 0)
    rows, edges, stale = QuantizedScreen(8).ranked(E, E[0], 50)
    assert rows.tolist() == list(range(50)) and len(stale) == 0
    assert np.isinf(edges[:50]).all() and edges[:50].min() > 0 and edges[50] == -np.inf
    rows, edges, _ = QuantizedScreen(8).ranked(E, np.zeros(8, np.float32), 5)
    assert len(rows) == 50  # no scale for a zero vector: every row
