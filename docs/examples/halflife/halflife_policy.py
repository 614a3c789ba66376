"""A plug-in memory policy for memsim: cosine x 0.5 ** (days since last use / half-life)."""

from dataclasses import dataclass

import numpy as np

from memsim.engine.events import Claim
from memsim.engine.params import Params, param
from memsim.engine.policy import Outcome, Policy, Ranking
from memsim.engine.registry import PolicySpec


@dataclass(frozen=True)
class HalfLifeParams(Params):
    half_life: float = param(30.0, lo=0.0, lo_open=True, doc="my paper §2: half-life in days")


class HalfLife(Policy[HalfLifeParams]):
    Params = HalfLifeParams

    def ingest(self, episodes, now):
        out = []
        for ep in episodes:  # one memory per claim the LLM extracts (the text if none)
            claims = self.llm.extract(ep) or (Claim("", ep.text),)
            emb = self.llm.embed(list(claims), [f"{ep.id}#{i}" for i in range(len(claims))])
            ok = np.flatnonzero(emb.ok).tolist()
            if ok:
                rows = self.store.add(
                    now,
                    np.asarray(emb.vectors)[ok],
                    texts=[claims[i].value for i in ok],
                    claims=[claims[i] for i in ok],
                    provenance=[(ep.id,)] * len(ok),
                )
                out += [Outcome(ep.id, "create", int(r)) for r in rows]
        return out

    def strength(self, now):
        return 0.5 ** (self.store.days_since_access(now) / self.params.half_life)

    def recall(self, queries, now):
        rankings = [Ranking.empty()] * len(queries)
        for j, q in enumerate(queries):
            v = self.llm.embed_query(q)
            if v is not None and self.store.n:
                scores = (self.store.embedding @ v).astype(np.float64) * self.strength(now)
                rankings[j] = self.ranking(scores, q.k, q.id)
        for r in rankings:  # access is recorded after the whole batch is ranked
            self.store["last_access"][r.ids] = now
        return rankings


HALFLIFE = PolicySpec(
    "halflife", 1, "halflife_policy:HalfLife", description="cosine x half-life decay"
)
