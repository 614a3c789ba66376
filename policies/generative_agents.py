"""Generative Agents' memory-stream retrieval (Park et al., UIST 2023) as a policy.

Sources:
- paper, §4.1 Memory and Retrieval: ``score = a_rec * recency + a_imp * importance +
  a_rel * relevance``, each component min-max normalized to [0, 1] over the candidate
  memories, all weights 1; recency an exponential decay ``0.995 ^ hours`` since the memory
  was last retrieved; importance rated by the language model (here the LLM's claim
  importance); relevance the cosine of the query and memory embeddings. Nothing is ever
  forgotten: the memory stream only grows.
- released code (``variant="code"``, github.com/joonspk-research/generative_agents at commit
  51072d422e28abb7cd3fdf2b92f1d6e90a7cced8, retrieve.py's last change; scratch.py and the
  persona scratch.json files there are as first committed in 6d7d7ad):
  reverie/backend_server/persona/cognitive_modules/retrieve.py: recency
  ``scratch.recency_decay ^ rank``, 0.995 for the released agents (scratch.py line 60 sets
  0.99, but line 161 loads the persona's bootstrap scratch.json whenever it exists and line
  197 takes its ``recency_decay``: 0.995 in every shipped persona, e.g.
  environment/frontend_server/storage/base_the_ville_n25/personas/Isabella Rodriguez/
  bootstrap_memory/scratch.json line 27), with memories ranked by last access as
  ``new_retrieve`` does it (sorted ascending, so rank 1 = the least recently accessed: the
  code inverts the paper's recency), weights recency 0.5,
  relevance 3, importance 2 (``gw = [0.5, 3, 2]``); normalization gives 0.5 to every
  candidate when a component is constant (``normalize_dict_floats``).

memsim choices (docs/policies/generative-agents.md): every observation is a new node
(``reinforce_cosine`` above 1 never merges), a retrieval refreshes last access; strength is
the paper's recency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine import decay, ranking
from memsim.engine.arrays import as_float64
from memsim.engine.events import Claim, Query
from memsim.engine.params import Params, param
from memsim.engine.policy import Job, Ranking

from .reference import ReferencePolicy


def generative_agents_score(
    recency: ArrayLike,
    importance: ArrayLike,
    relevance: ArrayLike,
    w: Sequence[float] = (1.0, 1.0, 1.0),
) -> np.ndarray:
    """Park et al. (2023) retrieval score: ``w0 * norm(recency) + w1 * norm(importance) +
    w2 * norm(relevance)``, each min-max normalized over the candidates."""
    rec, imp, rel = as_float64(recency), as_float64(importance), as_float64(relevance)
    if not len(rec):
        return rec.copy()
    spans = [(c.min(), c.max()) for c in (rec, imp, rel)]
    return generative_agents_score_between(rec, imp, rel, w, spans)


def minmax_normalize_between(x: ArrayLike, lo: float, hi: float) -> np.ndarray:
    """Min-max normalization (``(x - lo) / (hi - lo)``, 0.5 everywhere when ``hi == lo``, as
    the released ``normalize_dict_floats``) of a 1-D ``x`` that is part of candidates whose
    min and max are ``lo`` and ``hi``: the same numbers at those elements (element-wise operations
    only), at the cost of ``x``."""
    v = as_float64(x)
    if hi == lo:
        return np.full(v.shape, 0.5)
    out = v - lo
    out /= hi - lo
    return as_float64(out)


def generative_agents_score_between(
    recency: ArrayLike,
    importance: ArrayLike,
    relevance: ArrayLike,
    w: Sequence[float],
    spans: Sequence[tuple[float, float]],
) -> np.ndarray:
    """:func:`generative_agents_score` of some of the candidates, ``spans`` holding each
    component's (min, max) over all of them: the same numbers at those candidates, bit for
    bit (the same operations in the same order), at the cost of the rows given."""
    (lo_r, hi_r), (lo_i, hi_i), (lo_s, hi_s) = spans
    out = minmax_normalize_between(recency, lo_r, hi_r)
    out *= float(w[0])
    for wi, col, lo, hi in ((w[1], importance, lo_i, hi_i), (w[2], relevance, lo_s, hi_s)):
        c = minmax_normalize_between(col, lo, hi)
        c *= float(wi)
        out += c
    return out


def minmax_normalize_ref(x: Sequence[float]) -> list[float]:
    if not x:
        return []
    lo, hi = min(x), max(x)
    return [0.5 if hi == lo else (v - lo) / (hi - lo) for v in x]


def generative_agents_score_ref(
    recency: Sequence[float],
    importance: Sequence[float],
    relevance: Sequence[float],
    w: Sequence[float] = (1.0, 1.0, 1.0),
) -> list[float]:
    cols = [
        minmax_normalize_ref(recency),
        minmax_normalize_ref(importance),
        minmax_normalize_ref(relevance),
    ]
    return [decay.weighted_sum_ref(w, [c[i] for c in cols]) for i in range(len(recency))]


_PAPER = "Park et al. 2023 §4.1"
_CODE = "generative_agents retrieve.py (released code)"
_SCRATCH = (
    "generative_agents@51072d4 scratch.py line 197 loads recency_decay from the persona's "
    "bootstrap scratch.json, 0.995 in every shipped persona (base_the_ville_n25 .../"
    "scratch.json line 27); 0.99, scratch.py line 60, only without a bootstrap file"
)

# The paper variant's recall bounds each row's score from a recency cap kept per row
# (ranking.DecayCaps: a row's recency only falls until it is used again), recomputed for
# every row once it is this old (a looser bound only evaluates more rows exactly, never
# changes one: on steady-30k, 22 rows a query at 1 day, 20 at 0.25 with four times the
# refreshes, 40 at 4).
_CAP_REFRESH_DAYS = 1.0
# The extreme recencies come from the rows whose last use is within this many e-foldings
# (over ln(1 / decay)) of the oldest / newest: any other row's recency differs from theirs by
# a factor of at least 1 + 2^-30, which np.power's rounding cannot bridge (normal numbers)
_SPAN_REACH = 2.0**-30
# The code variant's recall bounds the recency of the rows past this rank by the largest
# decay ** rank past it; the rows that may be before it (kept in the order's first slots) by
# the weight of recency itself
_FRONT_RANKS = 1024


@dataclass(frozen=True)
class GenerativeAgentsParams(Params):
    variant: str = param("paper", choices=("paper", "code"), doc=f"{_PAPER} / {_CODE}")
    recency_decay: float = param(
        0.995, lo=0.0, hi=1.0, lo_open=True, doc=f"{_PAPER}: 0.995 ^ hours since last access"
    )
    code_recency_decay: float = param(
        0.995, lo=0.0, hi=1.0, lo_open=True, doc=f"{_CODE}: recency_decay ^ rank; {_SCRATCH}"
    )
    w_recency: float = param(1.0, lo=0.0, doc=f"{_PAPER}: alpha_recency = 1")
    w_importance: float = param(1.0, lo=0.0, doc=f"{_PAPER}: alpha_importance = 1")
    w_relevance: float = param(1.0, lo=0.0, doc=f"{_PAPER}: alpha_relevance = 1")
    code_rank_order: str = param(
        "oldest_first",
        choices=("oldest_first", "newest_first"),
        doc=f"{_CODE}: new_retrieve sorts by last_accessed ascending and extract_recency gives "
        "recency_decay^1 to the first node (oldest_first); newest_first is the paper's direction",
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
        # (base, base ** [1, 2, ...], their running min and max, and max from each rank on),
        # grown by doubling
        self._rank_powers = (0.0, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
        # the paper variant's recall: each row's last use (of the first _known rows), the cap
        # of its recency (_recency_caps), and the importance term of the live rows under
        # their (min, max) (see _importance_terms)
        self._known = 0
        self._last_uses = np.zeros(0)
        self._caps = ranking.DecayCaps(1.0, _CAP_REFRESH_DAYS)  # decay ** hours <= 1
        self._imp_rows: np.ndarray | None = None  # the live rows when not every row
        self._imp_known, self._imp_span, self._imp_weight = 0, (0.0, 0.0), math.nan
        self._imp_terms = np.zeros(0)
        self._imp_version = 0  # counts the times the terms were computed anew
        # the code variant's recall (every row live): the recency order of the rows as a log
        # of slots (rank order, reversed for newest_first), where a row moved to the recent
        # end leaves a stale slot (kept sorted); the rows touched since it was brought up to
        # date; a bound of the sum of recency and importance terms past _FRONT_RANKS
        self._log = np.zeros(0, dtype=np.int64)
        self._log_len = 0
        self._slot = np.zeros(0, dtype=np.int64)
        self._stale = np.zeros(0, dtype=np.int64)
        self._logged = 0
        self._log_max = -math.inf  # at least the last use of every logged row
        self._log_newest_first: bool | None = None
        self._touched: list[np.ndarray] = []
        self._rest_version, self._rest_eps, self._rest_known = -1, math.nan, 0
        self._rest_sums = np.zeros(0)

    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        # no importance from the LLM: the middle of the scale (min-max normalizes anyway)
        imp = claim.importance
        return {"importance": 0.5 if imp is None else float(imp)}

    def _review(self, rows: np.ndarray, now: float) -> None:
        self._touch(rows, now)

    def _touch(self, rows: np.ndarray, now: float) -> None:
        """Set the last access of ``rows`` to ``now`` (a retrieval or a review), and their
        kept last use and recency cap."""
        self.store["last_access"][rows] = now
        known = rows[rows < self._known]
        self._last_uses[known] = now
        self._caps.used(rows)
        if self.params.variant == "code":
            self._touched.append(np.asarray(rows, dtype=np.int64).copy())

    def _last_use(self, rows: np.ndarray | None = None) -> np.ndarray:
        la = self.store.at("last_access", rows)
        return np.where(np.isnan(la), self.store.at("created", rows), la)

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        return self._recency(now, self._last_use(rows))

    def _recency(self, now: float, last_use: np.ndarray) -> np.ndarray:
        """The paper's recency, ``decay ^ hours`` since ``last_use``."""
        hours = np.maximum(now - last_use, 0.0) * 24.0
        return np.power(self.params.recency_decay, hours)

    # -- recall ---------------------------------------------------------------------------
    def _rank_query(self, q: Query, v: np.ndarray, rows: np.ndarray, now: float) -> Ranking:
        """ReferencePolicy's ranking, the scores computed exactly on the few rows that can
        reach the top k only (_paper_ranking, _code_ranking): the same rankings and scores.
        The code variant scores every live row (_scores) once a user forgot some."""
        if self.params.variant == "paper":
            return self._paper_ranking(q, v, rows, now)
        if len(rows) == self.store.n:
            return self._code_ranking(q, v, now)
        self._touched, self._log_newest_first = [], None  # no kept order from here
        return super()._rank_query(q, v, rows, now)

    def _accessed(self, rows: np.ndarray, now: float) -> None:
        self._touch(rows, now)

    def _paper_ranking(self, q: Query, v: np.ndarray, rows: np.ndarray, now: float) -> Ranking:
        """:meth:`ranking` of :meth:`_scores` for the live ``rows`` (ascending): each
        component's (min, max) over them found without scoring every row, then an upper
        bound of every row's score (recency at its cap, ranking.topk_support) and the exact
        score of the rows that can reach the top k (the same operations on the same numbers:
        generative_agents_score_between)."""
        p, s = self.params, self.store
        self._know_rows()
        every = len(rows) == s.n  # then rows is 0..n-1 (no user forget): no gathers
        prods = s.query_products(v) if every else s.query_products(v, rows)
        last_uses = self._last_uses[: s.n] if every else self._last_uses[rows]
        importance = s["importance"]
        w = (p.w_recency, p.w_importance, p.w_relevance)
        imp_span, imp_terms = self._importance_terms(rows if not every else None, w[1])
        spans = (
            self._recency_span(now, last_uses),
            imp_span,
            (float(prods.min()), float(prods.max())),
        )
        # the bound: the score's operations in its order, with the recency at its cap
        caps = self._recency_caps(now)
        bound = minmax_normalize_between(caps if every else caps[rows], *spans[0])
        bound *= float(w[0])
        bound += imp_terms
        rel = minmax_normalize_between(prods, *spans[2])
        rel *= float(w[2])
        bound += rel

        def exact(at: np.ndarray) -> np.ndarray:
            r = rows[at]
            recency = self._recency(now, self._last_uses[r])
            return generative_agents_score_between(recency, importance[r], prods[at], w, spans)

        at, scores = ranking.topk_support(bound, exact, q.k)
        return self.ranking_among(rows[at], scores, q.k, q.id)

    def _know_rows(self) -> None:
        """Bring the kept last uses and recency caps to the rows added since (their last
        use read from the store; a cap any recency stays under)."""
        n, m = self.store.n, self._known
        if n == m:
            return
        self._last_uses = _room(self._last_uses, n)
        self._last_uses[m:n] = self._last_use(np.arange(m, n))
        self._known = n

    def _recency_caps(self, now: float) -> np.ndarray:
        """Per row, at least its recency at ``now`` (and at every later time until it is
        used), as np.power computes it (ranking.DecayCaps)."""
        n = self.store.n
        return self._caps.at(now, n, lambda t: self._recency(t, self._last_uses[:n]))

    def _recency_span(self, now: float, last_uses: np.ndarray) -> tuple[float, float]:
        """(min, max) of the recency of rows last used at ``last_uses``, as the recency of
        every row gives them: recency falls with the time since last use, so they are the
        recency of the rows last used longest ago / most recently, or of rows used within
        _SPAN_REACH of those (np.power is not promised monotone); every row when the
        smallest is not a normal number (no relative rounding bound there)."""
        decay = self.params.recency_decay
        reach = math.inf if decay >= 1.0 else _SPAN_REACH / -math.log(decay) / 24.0
        oldest = last_uses[last_uses <= last_uses.min() + reach]
        newest = last_uses[last_uses >= last_uses.max() - reach]
        lo = float(self._recency(now, oldest).min())
        hi = float(self._recency(now, newest).max())
        if not lo >= np.finfo(np.float64).tiny:
            every = self._recency(now, last_uses)
            lo, hi = float(every.min()), float(every.max())
        return lo, hi

    def _importance_terms(
        self, rows: np.ndarray | None, w: float
    ) -> tuple[tuple[float, float], np.ndarray]:
        """(min, max) of the importance of the live ``rows`` (None: every row) and each
        one's normalized importance times ``w`` (the score's operations): importance is set
        once, at creation, so they are kept, extended when only rows were added and the
        extremes stay (``_imp_version`` counts the other times: computed anew)."""
        imp, n, m = self.store["importance"], self.store.n, self._imp_known
        same = self._imp_weight == w and m > 0
        if same and rows is not None and self._imp_rows is rows:  # rows_with's: no change
            return self._imp_span, self._imp_terms[: len(rows)]
        if same and rows is None and self._imp_rows is None and m <= n:
            lo, hi = self._imp_span
            new = imp[m:n]
            if not len(new):
                return (lo, hi), self._imp_terms[:n]
            if float(np.minimum(lo, new.min())) == lo and float(np.maximum(hi, new.max())) == hi:
                self._imp_terms = _room(self._imp_terms, n)
                self._imp_terms[m:n] = self._importance_of(new, lo, hi, w)
                self._imp_known = n
                return (lo, hi), self._imp_terms[:n]
        values = imp[:n] if rows is None else imp[rows]
        lo, hi = float(values.min()), float(values.max())
        self._imp_terms = self._importance_of(values, lo, hi, w)
        self._imp_rows, self._imp_known = rows, n
        self._imp_span, self._imp_weight = (lo, hi), w
        self._imp_version += 1
        return (lo, hi), self._imp_terms

    @staticmethod
    def _importance_of(values: np.ndarray, lo: float, hi: float, w: float) -> np.ndarray:
        terms = minmax_normalize_between(values, lo, hi)
        terms *= w
        return terms

    def _scores(self, sims: np.ndarray, live: np.ndarray, now: float, k: int) -> np.ndarray:
        p = self.params
        idx = np.flatnonzero(live)
        if p.variant == "code":
            # retrieve.py: a stable sort of the stream (kept newest node first) by last
            # access, ascending, then recency_decay^1 to the first: rank 1 = the least recently
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
        out[idx] = generative_agents_score(recency, self.store["importance"][idx], sims[idx], w)
        return out

    def _powers_of_rank(self, base: float, n: int) -> np.ndarray:
        """``np.power(base, [1.0, ..., n])``, the same numbers, from a table kept between
        queries: a pow per live row per query was most of the code variant's scoring."""
        kept_base, powers = self._rank_powers[:2]
        if kept_base != base or len(powers) < n:
            cap = max(n, 2 * len(powers))
            powers = np.power(base, np.arange(1, cap + 1, dtype=np.float64))
            self._rank_powers = (
                base,
                powers,
                np.minimum.accumulate(powers),
                np.maximum.accumulate(powers),
                np.maximum.accumulate(powers[::-1])[::-1],
            )
        return powers[:n]

    def _rank_table(self, base: float, n: int) -> tuple[np.ndarray, float, float, float]:
        """``_powers_of_rank(base, n)``, their min and max, and at least every one of them
        from rank _FRONT_RANKS + 1 on (0 when there is none)."""
        powers = self._powers_of_rank(base, n)
        _, table, low, high, tail = self._rank_powers
        past = float(tail[_FRONT_RANKS]) if _FRONT_RANKS < len(table) else 0.0
        return powers, float(low[n - 1]), float(high[n - 1]), past

    def _code_ranking(self, q: Query, v: np.ndarray, now: float) -> Ranking:
        """:meth:`ranking` of :meth:`_scores` of the code variant when every row is live:
        the (min, max) of each component over them (recency: decay ** [1..n], from the kept
        table), then an upper bound of every row's score (the score itself for the rows
        that may rank in the first _FRONT_RANKS, recency at most decay ** (_FRONT_RANKS + 1)
        past them: ranking.topk_support) and the exact score of the rows that can reach the
        top k (generative_agents_score_between), their ranks read from the kept
        order."""
        p, s = self.params, self.store
        n = s.n
        self._know_rows()
        newest_first = p.code_rank_order == "newest_first"
        self._bring_log_up_to_date(newest_first)
        prods = s.query_products(v)
        powers, rec_lo, rec_hi, past = self._rank_table(p.code_recency_decay, n)
        w = (p.code_w_recency, p.code_w_importance, p.code_w_relevance)
        imp_span, imp_terms = self._importance_terms(None, w[1])
        spans = ((rec_lo, rec_hi), imp_span, (float(prods.min()), float(prods.max())))
        rel = minmax_normalize_between(prods, *spans[2])
        rel *= float(w[2])
        # the recency term of a row past the front: the score's operations on ``past``
        rec_past = minmax_normalize_between(np.array([past]), *spans[0])
        rec_past *= float(w[0])
        bound = rel + self._rest_sums_of(float(rec_past[0]), imp_terms)
        # the rows that may rank in front: their scores themselves (few rows)
        front = self._front_rows(newest_first)
        rec_front = minmax_normalize_between(powers[self._ranks(front, newest_first)], *spans[0])
        rec_front *= float(w[0])
        rec_front += imp_terms[front]
        rec_front += rel[front]
        bound[front] = rec_front

        def exact(rows: np.ndarray) -> np.ndarray:
            recency = powers[self._ranks(rows, newest_first)]
            return generative_agents_score_between(
                recency, s["importance"][rows], prods[rows], w, spans
            )

        at, scores = ranking.topk_support(bound, exact, q.k)
        return self.ranking_among(at, scores, q.k, q.id)

    def _rest_sums_of(self, eps: float, imp_terms: np.ndarray) -> np.ndarray:
        """``eps + imp_terms`` with ``eps`` at least the given one: kept while the importance
        terms are only extended and ``eps`` stays above the given one (it falls as the
        store grows: decay ** n falls, the span of recency grows)."""
        n, m = len(imp_terms), self._rest_known
        if self._rest_version != self._imp_version or not eps <= self._rest_eps or m > n:
            self._rest_sums = eps + imp_terms
            self._rest_version, self._rest_eps, self._rest_known = self._imp_version, eps, n
        elif m < n:
            self._rest_sums = _room(self._rest_sums, n)
            self._rest_sums[m:n] = self._rest_eps + imp_terms[m:n]
            self._rest_known = n
        return self._rest_sums[:n]

    def _bring_log_up_to_date(self, newest_first: bool) -> None:
        """The recency order of _recency_order, kept as a log (see setup): the rows touched
        since and the new rows are sorted among themselves (``np.lexsort`` of the same keys)
        and appended at the recent end when all of them were used later than every other
        row was (``_log_max``, at least that), leaving stale slots; any other change sorts
        every row anew. The stale slots are dropped once there are more than _FRONT_RANKS."""
        s, n, m = self.store, self.store.n, self._logged
        lu, created = self._last_uses, s["created"]
        touched = np.unique(np.concatenate(self._touched)) if self._touched else self._stale[:0]
        self._touched = []
        touched = touched[touched < m]
        changed = np.concatenate((touched, np.arange(m, n, dtype=np.int64)))
        if not len(changed) and newest_first == self._log_newest_first:
            return
        salt = f"{self.seed}:recency-rank"
        sign = -1.0 if newest_first else 1.0  # access: last use, or its negation
        if newest_first != self._log_newest_first or not lu[changed].min() > self._log_max:
            rows = np.arange(n)
            order = rows[np.lexsort((s.tie_keys(salt, rows), -created[:n], sign * lu[:n]))]
            self._set_log(order[::-1] if newest_first else order)
            self._log_max = float(lu[:n].max())
        else:
            ties = s.tie_keys(salt, changed)
            recent = changed[np.lexsort((ties, -created[changed], sign * lu[changed]))]
            self._stale = np.sort(np.concatenate((self._stale, self._slot[touched])))
            self._append_to_log(recent[::-1] if newest_first else recent)
            self._log_max = max(self._log_max, float(lu[changed].max()))
            if len(self._stale) > _FRONT_RANKS:
                slots = np.arange(self._log_len)
                held = self._log[: self._log_len]
                self._set_log(held[self._slot[held] == slots])
        self._logged, self._log_newest_first = n, newest_first

    def _set_log(self, order: np.ndarray) -> None:
        self._log, self._log_len, self._stale = order.copy(), len(order), order[:0].copy()
        self._slot = _room(self._slot, len(order))
        self._slot[order] = np.arange(len(order))

    def _append_to_log(self, rows: np.ndarray) -> None:
        end = self._log_len + len(rows)
        self._log = _room(self._log, end)
        self._log[self._log_len : end] = rows
        self._slot = _room(self._slot, int(rows.max()) + 1 if len(rows) else 0)
        self._slot[rows] = np.arange(self._log_len, end)
        self._log_len = end

    def _ranks(self, rows: np.ndarray, newest_first: bool) -> np.ndarray:
        """0-based recency rank of ``rows`` (every row live): their slot less the stale
        slots before it, counted from the other end for newest_first."""
        slots = self._slot[rows]
        at = slots - np.searchsorted(self._stale, slots)
        return self.store.n - 1 - at if newest_first else at

    def _front_rows(self, newest_first: bool) -> np.ndarray:
        """The rows held in the slots where a rank under _FRONT_RANKS may be (at least every
        such row): rank = slot - stale slots before it (from the other end: newest_first)."""
        n, end = self.store.n, self._log_len
        lo, hi = (
            (max(0, n - _FRONT_RANKS), end)
            if newest_first
            else (0, min(end, _FRONT_RANKS + len(self._stale)))
        )
        slots = np.arange(lo, hi)
        held = self._log[lo:hi]
        return held[self._slot[held] == slots]

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
        doc=f"generative-agents-code: {_CODE} (0.995 ^ rank recency, weights 0.5 / 3 / 2)",
    )


class GenerativeAgentsCode(GenerativeAgents):
    """Generative Agents as built (docs/policies/generative-agents.md §The code variant)."""

    Params: ClassVar[type[Params]] = GenerativeAgentsCodeParams


def _room(a: np.ndarray, n: int) -> np.ndarray:
    """``a``, or a copy of it with room for ``n`` elements (capacity doubled)."""
    if len(a) >= n:
        return a
    out = np.zeros(max(n, 2 * len(a)), dtype=a.dtype)
    out[: len(a)] = a
    return out
