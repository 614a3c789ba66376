"""Generative Agents' memory-stream retrieval (Park et al., UIST 2023) as a policy.

Sources:
- paper, §4.1 Memory and Retrieval: ``score = a_rec * recency + a_imp * importance +
  a_rel * relevance``, each component min-max normalized to [0, 1] over the candidate
  memories, all weights 1; recency an exponential decay ``0.995 ^ hours`` since the memory
  was last retrieved; importance rated by the language model (here the LLM's claim
  importance); relevance the cosine of the query and memory embeddings. Nothing is ever
  forgotten: the memory stream only grows.
- released code (``variant="code"``, github.com/joonspk-research/generative_agents,
  reverie/backend_server/persona/cognitive_modules/retrieve.py): recency ``0.99 ^ rank``
  with memories ranked by last access as ``new_retrieve`` does it (sorted ascending, so rank
  1 = the least recently accessed: the code inverts the paper's recency), weights recency 0.5,
  relevance 3, importance 2 (``gw = [0.5, 3, 2]``); normalization gives 0.5 to every
  candidate when a component is constant (``normalize_dict_floats``).

memsim choices (docs/policies/generative-agents.md): every observation is a new node
(``reinforce_cosine`` above 1 never merges), a retrieval refreshes last access; strength is
the paper's recency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from memsim.engine import kernels
from memsim.engine.events import Claim
from memsim.engine.params import Params, param
from memsim.engine.policy import Job

from .reference import ReferencePolicy

_PAPER = "Park et al. 2023 §4.1"
_CODE = "generative_agents retrieve.py (released code)"


@dataclass(frozen=True)
class GenerativeAgentsParams(Params):
    variant: str = param("paper", choices=("paper", "code"), doc=f"{_PAPER} / {_CODE}")
    recency_decay: float = param(
        0.995, lo=0.0, hi=1.0, lo_open=True, doc=f"{_PAPER}: 0.995 ^ hours since last access"
    )
    code_recency_decay: float = param(
        0.99, lo=0.0, hi=1.0, lo_open=True, doc=f"{_CODE}: recency_decay 0.99 ^ rank"
    )
    w_recency: float = param(1.0, lo=0.0, doc=f"{_PAPER}: alpha_recency = 1")
    w_importance: float = param(1.0, lo=0.0, doc=f"{_PAPER}: alpha_importance = 1")
    w_relevance: float = param(1.0, lo=0.0, doc=f"{_PAPER}: alpha_relevance = 1")
    code_rank_order: str = param(
        "oldest_first",
        choices=("oldest_first", "newest_first"),
        doc=f"{_CODE}: new_retrieve sorts by last_accessed ascending and extract_recency gives "
        "0.99^1 to the first node (oldest_first); newest_first is the paper's direction",
    )
    code_w_recency: float = param(0.5, lo=0.0, doc=f"{_CODE}: gw[0] = 0.5")
    code_w_relevance: float = param(3.0, lo=0.0, doc=f"{_CODE}: gw[1] = 3")
    code_w_importance: float = param(2.0, lo=0.0, doc=f"{_CODE}: gw[2] = 2")
    forget_below: float = param(0.0, lo=0.0, hi=0.0, doc=f"{_PAPER}: nothing is forgotten")
    reinforce_cosine: float = param(
        2.0, lo=-1.0, doc=f"{_PAPER}: every observation is a new node (> 1: never merge)"
    )
    retrieval_is_review: bool = param(True, doc=f"{_PAPER}: retrieval refreshes last access")


class GenerativeAgents(ReferencePolicy):
    """Park et al.'s retrieval score over a never-forgetting memory stream."""

    Params: ClassVar[type[Params]] = GenerativeAgentsParams
    params: GenerativeAgentsParams
    schedule: tuple[Job, ...] = ()

    def setup(self) -> None:
        self.store.add_column("importance", np.float64, 0.0)
        # the code variant's recency order of every row (see _recency_order) and the
        # last use and creation time of each row when it was computed
        self._order = np.zeros(0, dtype=np.int64)
        self._order_last = np.zeros(0)
        self._order_created = np.zeros(0)
        self._order_newest_first = False
        self._rank_powers = (0.0, np.zeros(0))  # (base, base ** [1, 2, ...]), grown by doubling

    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        # no importance from the LLM: the middle of the scale (min-max normalizes anyway)
        imp = claim.importance
        return {"importance": 0.5 if imp is None else float(imp)}

    def _review(self, rows: np.ndarray, now: float) -> None:
        self.store["last_access"][rows] = now

    def _last_use(self, rows: np.ndarray | None = None) -> np.ndarray:
        la = self.store.at("last_access", rows)
        return np.where(np.isnan(la), self.store.at("created", rows), la)

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        hours = np.maximum(now - self._last_use(rows), 0.0) * 24.0
        return np.power(self.params.recency_decay, hours)

    def _scores(self, sims: np.ndarray, live: np.ndarray, now: float, k: int) -> np.ndarray:
        p = self.params
        idx = np.flatnonzero(live)
        if p.variant == "code":
            # retrieve.py: a stable sort of the stream (kept newest node first) by last
            # access, ascending, then 0.99^1 to the first: rank 1 = the least recently
            # accessed (oldest_first, as released) or the most (newest_first, the paper's
            # direction); equal last access keeps the newer memory first, memories created
            # at the same time in the seeded tie order (memory identity, never storage
            # order: Policy.rank's rule). The order is kept between queries (_recency_order)
            order = self._recency_order(p.code_rank_order == "newest_first")
            order = order[live[order]]
            by_row = np.empty(len(live))
            by_row[order] = self._powers_of_rank(p.code_recency_decay, len(order))
            recency = by_row[idx]
            w = (p.code_w_recency, p.code_w_importance, p.code_w_relevance)
        else:
            recency = self.retention(now, idx)
            w = (p.w_recency, p.w_importance, p.w_relevance)
        out = np.full(len(sims), -np.inf)
        out[idx] = kernels.generative_agents_score(
            recency, self.store["importance"][idx], sims[idx], w
        )
        return out

    def _powers_of_rank(self, base: float, n: int) -> np.ndarray:
        """``np.power(base, [1.0, ..., n])``, the same numbers, from a table kept between
        queries: a pow per live row per query was most of the code variant's scoring."""
        kept_base, powers = self._rank_powers
        if kept_base != base or len(powers) < n:
            cap = max(n, 2 * len(powers))
            powers = np.power(base, np.arange(1, cap + 1, dtype=np.float64))
            self._rank_powers = (base, powers)
        return powers[:n]

    def _recency_order(self, newest_first: bool) -> np.ndarray:
        """Every row by last use (the oldest first, or the newest first with
        ``newest_first``), then creation (newest first), then the seeded tie key of memory
        identity, then row: the stable ``np.lexsort`` of those keys, whose restriction to the
        live rows is their order by the same keys. Kept between queries: the rows whose last
        use or creation changed since (the retrieved ones) and the new rows are sorted among
        themselves and put at the recent end when all of them were used later than every
        other row (what a retrieval or a creation at ``now`` does); any other change
        re-sorts every row."""
        s = self.store
        n, m = s.n, len(self._order_last)
        last, created = self._last_use(), s["created"]
        access = -last if newest_first else last
        changed = np.flatnonzero(
            (last[:m] != self._order_last) | (created[:m] != self._order_created)
        )
        changed = np.concatenate([changed, np.arange(m, n)])
        salt = f"{self.seed}:recency-rank"
        if newest_first != self._order_newest_first:
            changed = np.arange(n)  # another direction: every row anew
        if len(changed):
            moved = np.zeros(n, dtype=bool)
            moved[changed] = True
            stay = self._order[~moved[self._order]]
            if len(stay) and not last[changed].min() > last[stay].max():
                rows = np.arange(n)
                self._order = rows[np.lexsort((s.tie_keys(salt, rows), -created, access))]
            else:
                ties = s.tie_keys(salt, changed)
                recent = changed[np.lexsort((ties, -created[changed], access[changed]))]
                parts = [recent, stay] if newest_first else [stay, recent]
                self._order = np.concatenate(parts)
            self._order_last, self._order_created = last.copy(), created.copy()
            self._order_newest_first = newest_first
        return self._order


@dataclass(frozen=True)
class GenerativeAgentsCodeParams(GenerativeAgentsParams):
    """generative-agents-code: the retrieval score of the released code; every other
    constant is the paper's."""

    variant: str = param(
        "code",
        choices=("paper", "code"),
        doc=f"generative-agents-code: {_CODE} (0.99 ^ rank recency, weights 0.5 / 3 / 2)",
    )


class GenerativeAgentsCode(GenerativeAgents):
    """Generative Agents as built (docs/policies/generative-agents.md §The code variant)."""

    Params: ClassVar[type[Params]] = GenerativeAgentsCodeParams
