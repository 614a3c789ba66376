"""Child process of the memory benchmark (bench_memory.py).

    python -m benchmarks memchild store N DIM CHUNK          build a MemoryStore of N rows
    python -m benchmarks memchild baseline N DIM CHUNK       same imports and one chunk, no store
    python -m benchmarks memchild measure MODE N DIM CHUNK   print one child's peak bytes

``store``: MemoryStore(dim).reserve(N), then rows added CHUNK at a time, each chunk of
seeded unit vectors generated on the fly (the full matrix never exists outside the store).
``baseline`` does everything but the store, so the difference of the two peaks is what the
store holds. Run through :func:`measure`, which reads ru_maxrss of RUSAGE_CHILDREN.
"""

from __future__ import annotations

import resource
import subprocess
import sys


def measure(mode: str, n: int, dim: int, chunk: int) -> int:
    """Peak resident bytes of one child run (Linux ru_maxrss is in KiB)."""
    subprocess.run(
        [sys.executable, "-m", "benchmarks", "memchild", mode, str(n), str(dim), str(chunk)],
        check=True,
    )
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def main(argv: list[str]) -> None:
    if argv[0] == "measure":
        print(measure(argv[1], int(argv[2]), int(argv[3]), int(argv[4])))
        return
    mode, n, dim, chunk = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    import numpy as np

    from memsim.engine.store import MemoryStore, Statuses

    rng = np.random.default_rng(0)

    def rows(m: int) -> np.ndarray:
        x = rng.standard_normal((m, dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x

    if mode == "baseline":
        x = rows(min(n, chunk))
        MemoryStore(dim, Statuses(("active",))).add(
            0.0, x[:1], texts=[""], claims=[None], provenance=[()]
        )
        return
    store = MemoryStore(dim, Statuses(("active",)))
    store.reserve(n)
    for lo in range(0, n, chunk):
        m = min(chunk, n - lo)
        store.add(0.0, rows(m), texts=[""] * m, claims=[None] * m, provenance=[()] * m)
    assert store.n == n
