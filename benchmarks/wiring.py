"""Helpers to benchmark a real policy at scale: fill a pai store in bulk, and make every
query embed to a workload vector (PersonalAI.recall uses policies.pai_fastscore.pai_topk_from_cos
since commit 24e989d)."""

from __future__ import annotations

from typing import Any

import numpy as np

from memsim.engine.events import Query
from policies.pai import TYPE_CODE, PersonalAI


class FixedQueryLLM:
    """Delegates to an LLM but embeds every query as ``vector`` (so a benchmark's query
    hits its workload's topics)."""

    def __init__(self, llm: Any, vector: np.ndarray) -> None:
        self._llm = llm
        self.vector = np.asarray(vector, dtype=np.float32)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def embed_query(self, query: Query) -> np.ndarray:
        return self.vector


def bulk_fill(
    policy: PersonalAI, X: np.ndarray, w: Any, subjects: int = 50, chunk: int = 65536
) -> None:
    """Load a pai store in bulk: reserve(n), then add rows chunk by chunk with their columns
    (created/last_access set from the workload, non-allowed rows pruned)."""
    s = policy.store
    n = len(X)
    for i in range(1, subjects):
        policy._code_subject(f"person{i}")
    s.reserve(n)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        m = hi - lo
        s.add(
            0.0,
            X[lo:hi],
            texts=[""] * m,
            claims=[None] * m,
            provenance=[()] * m,
            importance=w.importance[lo:hi],
            stability=w.stability[lo:hi],
            subject=w.subject[lo:hi],
            type=np.where(w.type_insight[lo:hi], TYPE_CODE["insight"], TYPE_CODE["factual"]),
        )
        policy._tokens.extend([frozenset()] * m)
    s["created"][:] = w.created
    s["updated"][:] = w.created
    s["last_access"][:] = w.last_access
    s.set_status(np.flatnonzero(~w.allowed), "pruned", 0.0)
