"""Seeded benchmark workloads, cached on disk under results/cache/ (gitignored).

Embeddings are clustered unit vectors, like a memory store's: rows sit around topic centres
(cosine ~0.8 to their centre, ~0.64 to each other), so a query about a topic clears the
0.20 cosine floor for its topic's rows and almost nothing else. Sizes shrink in smoke mode
(``MEMSIM_BENCH_SMOKE=1``): use :func:`size`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

SMOKE = os.environ.get("MEMSIM_BENCH_SMOKE", "") not in ("", "0")
REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "results" / "cache"
# a file a collecting pytest writes its cases' node ids to (benchmarks.report, conftest.py)
CASES_ENV = "MEMSIM_BENCH_CASES"
DIM = 384
ROWS_PER_TOPIC = 1000
NOISE = 0.75  # row = centre + NOISE * gaussian/sqrt(dim): cosine to centre 1/sqrt(1+NOISE^2)
NOW = 365.0  # query time of the recall workloads (days)


Size = TypeVar("Size", int, float)


def size(full: Size, smoke: Size) -> Size:
    """``full`` normally, ``smoke`` under MEMSIM_BENCH_SMOKE=1."""
    return smoke if SMOKE else full


def size_id(n: int) -> str:
    """Readable parametrize id: 1000000 -> 'n=1M', 200000 -> 'n=200k'."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"n={n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"n={n // 1000}k"
    return f"n={n}"


def _cached(name: str, build) -> np.ndarray:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.npy"
    if path.exists():
        return np.load(path)
    arr = build()
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)
    return arr


def centres(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    topics = max(1, n // ROWS_PER_TOPIC)
    rng = np.random.default_rng([seed, 1])
    c = rng.standard_normal((topics, dim))
    return (c / np.linalg.norm(c, axis=1, keepdims=True)).astype(np.float32)


def _around(c: np.ndarray, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    dim = c.shape[1]
    out = c[labels] + rng.standard_normal((len(labels), dim), dtype=np.float32) * np.float32(
        NOISE / np.sqrt(dim)
    )
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def embeddings(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """(n, dim) float32 clustered unit rows, built in chunks (never a float64 copy of all)."""

    def build() -> np.ndarray:
        c = centres(n, dim, seed)
        rng = np.random.default_rng([seed, 2, n])
        X = np.empty((n, dim), dtype=np.float32)
        step = 65536
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            X[lo:hi] = _around(c, rng.integers(0, len(c), hi - lo), rng)
        return X

    return _cached(f"emb-n{n}-d{dim}-s{seed}", build)


def queries(n: int, count: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """(count, dim) float32 unit queries, each about one random topic of the n-row store."""
    c = centres(n, dim, seed)
    rng = np.random.default_rng([seed, 3, n, count])
    return _around(c, rng.integers(0, len(c), count), rng)


@dataclass(frozen=True)
class PaiWorkload:
    """Columns of a pai store at time NOW: importance 1-10, stability 1-5, 60% never
    accessed (NaN), 50 subjects, 5% insight rows, 95% retrievable."""

    importance: np.ndarray
    stability: np.ndarray
    last_access: np.ndarray
    created: np.ndarray
    subject: np.ndarray
    type_insight: np.ndarray
    allowed: np.ndarray


def pai_workload(n: int, seed: int = 0) -> PaiWorkload:
    rng = np.random.default_rng([seed, 4, n])
    created = np.sort(rng.uniform(0.0, NOW, n))
    last = created + rng.uniform(0.0, 1.0, n) * (NOW - created)
    last[rng.random(n) < 0.6] = np.nan
    return PaiWorkload(
        importance=rng.integers(1, 11, n).astype(np.float64),
        stability=np.round(rng.uniform(1.0, 5.0, n), 1),
        last_access=last,
        created=created,
        subject=rng.integers(0, 50, n).astype(np.int32),
        type_insight=rng.random(n) < 0.05,
        allowed=rng.random(n) < 0.95,
    )


def pai_columns(w: PaiWorkload):
    from policies.pai_fastscore import PaiColumns

    return PaiColumns(
        w.importance, w.stability, w.last_access, w.created, w.subject, w.type_insight, w.allowed
    )


def registered(policies: list[str]) -> list[str]:
    """``policies``, each checked to be a registered id (else the registry's one-line error
    naming it and the known ids) before a command spends minutes on the others."""
    from memsim.engine.registry import spec

    for pid in policies:
        spec(pid)
    return policies
