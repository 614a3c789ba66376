"""How policies plug in memsim.fastscore, shown on subclasses (policies/ belong to their
authors): the benchmarks time these next to the originals and tests prove them equal.

``WiredPersonalAI`` is ``policies.pai.PersonalAI`` with ``_semantic_search`` scoring
floor-clearing candidates only (memsim.fastscore.pai_topk_from_cos) instead of every row,
and ``recall`` keeping the batch's cosines float32 (the float64 cast happens on candidates,
giving the very same values).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from memsim.events import Query
from memsim.fastscore import PaiColumns, pai_topk_from_cos
from memsim.policy import Ranking
from policies.pai import TYPE_CODE, PersonalAI, _tokens


class WiredPersonalAI(PersonalAI):
    def _subject_codes(self, query: Query) -> list[int]:
        """The codes PersonalAI._subject_match marks (same rule, without the n-long array)."""
        if query.subject:
            name = query.subject.lower()
            return [self._subject_code[name]] if name in self._subject_code else []
        words = _tokens(query.text)
        return [c for name, c in self._subject_code.items()
                if name != self.params.fallback_subject and _tokens(name) and _tokens(name) <= words]

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        vecs = [self.llm.embed_query(q) for q in queries]
        ok = [i for i, v in enumerate(vecs) if v is not None]
        cos_all = None
        if ok and self.store.n:
            V = np.stack([np.asarray(vecs[i], dtype=np.float32) for i in ok], axis=1)
            cos_all = self.store.embedding @ V                       # float32, (n, queries)
        col = {i: j for j, i in enumerate(ok)}
        out = []
        for i, q in enumerate(queries):
            if vecs[i] is None:
                out.append(self._text_search(q))
            elif cos_all is None:
                out.append(Ranking.empty())
            else:
                out.append(self._semantic_search(q, vecs[i], now, cos_all[:, col[i]]))
        return out

    def _semantic_search(self, query: Query, vec: np.ndarray, now: float, cos: np.ndarray) -> Ranking:
        p = self.params
        s = self.store
        cols = PaiColumns.of_store(s, TYPE_CODE["insight"], self._searchable())
        top, top_scores = pai_topk_from_cos(cos, cols, now, self._subject_codes(query), p, query.k)
        best: dict[int, float] = dict(zip(top.tolist(), top_scores.tolist()))
        retrievable = s.statuses.codes(s.statuses.retrievable)
        status = s["status"]
        for parent, score in list(zip(top.tolist(), top_scores.tolist()))[: p.graph_parents]:
            ns = score * p.neighbour_factor
            for nb in sorted(self.links.get(parent, ())):
                if status[nb] in retrievable and ns > best.get(nb, -np.inf):
                    best[nb] = ns
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[: query.k]
        ids = np.array([r for r, _ in ranked], dtype=np.int64)
        scores = np.array([v for _, v in ranked], dtype=np.float64)
        self._record_access(ids, now)
        return Ranking(ids, scores)


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


def bulk_fill(policy: PersonalAI, X: np.ndarray, w: Any, subjects: int = 50,
              chunk: int = 65536) -> None:
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
        s.add(0.0, X[lo:hi], texts=[""] * m, claims=[None] * m, provenance=[()] * m,
              importance=w.importance[lo:hi], stability=w.stability[lo:hi],
              subject=w.subject[lo:hi],
              type=np.where(w.type_insight[lo:hi], TYPE_CODE["insight"], TYPE_CODE["factual"]))
        policy._tokens.extend([frozenset()] * m)
    s["created"][:] = w.created
    s["updated"][:] = w.created
    s["last_access"][:] = w.last_access
    s.set_status(np.flatnonzero(~w.allowed), "pruned", 0.0)
