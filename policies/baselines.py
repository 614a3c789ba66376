"""Baselines every seed policy must beat: KeepAll (remember everything, rank by cosine) and
Recency (cosine times an exponential recency factor, least-recently-used eviction beyond
a memory budget). They prove the Policy interface and set the bar.

Both keep one memory per extracted claim, with the episode as its provenance, and use only
the store's columns. Ties (scores equal within memsim.engine.ranking.TIE_RTOL: every memory
of one fact has the same cosine with a query for it, whatever its value) go in a seeded
random order (Policy.rank: run seed, query id, memory identity), not storage order.
Rankings in one recall batch are computed against the state at the start of the batch;
access is recorded afterwards.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar

import numpy as np

from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.params import Params, param
from memsim.engine.policy import Outcome, P, Policy, Ranking
from memsim.engine.ranking import TIE_RTOL, topk
from memsim.engine.store import Statuses


def claim_text(c: Claim) -> str:
    return c.value if not c.key else f"{c.subject} {c.key} = {c.value}"


class _CosineBase(Policy[P]):
    """Shared ingest (one memory per claim), cosine scoring and forget."""

    def _live(self) -> np.ndarray:
        """Retrievable rows ("active" is the only retrievable status; faster than store.mask)."""
        return self.store["status"] == self.statuses.code("active")

    def _extract(self, ep: Episode) -> tuple[Claim, ...]:
        claims = self.llm.extract(ep)
        if claims is None:  # extraction failed: keep the raw text as one text-only claim
            return (Claim(key="", value=ep.text, category="fact"),)
        return tuple(claims)

    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        items: list[Claim] = []
        keys: list[str] = []
        owner: list[Episode] = []
        outcomes: list[Outcome] = []
        for ep in episodes:
            claims = self._extract(ep)
            if not claims:
                outcomes.append(Outcome(ep.id, "drop", -1, "extraction returned no claims"))
            for i, c in enumerate(claims):
                items.append(c)
                keys.append(f"{ep.id}#{i}")
                owner.append(ep)
        if not items:
            return outcomes
        emb = self.llm.embed(items, keys)
        ok = np.asarray(emb.ok, dtype=bool)
        keep = np.flatnonzero(ok)
        for i in np.flatnonzero(~ok).tolist():
            outcomes.append(
                Outcome(owner[i].id, "drop", -1, f"embedding failed for claim {keys[i]}")
            )
        if len(keep):
            rows = self.store.add(
                now,
                np.asarray(emb.vectors)[keep],
                texts=[claim_text(items[i]) for i in keep.tolist()],
                claims=[items[i] for i in keep.tolist()],
                provenance=[(owner[i].id,) for i in keep.tolist()],
            )
            outcomes.extend(
                Outcome(owner[i].id, "create", int(r)) for i, r in zip(keep.tolist(), rows.tolist())
            )
        outcomes.extend(self._after_ingest(episodes, now))
        return outcomes

    def _after_ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        return []

    def _weights(self, now: float, rows: np.ndarray | None = None) -> np.ndarray | None:
        """Per-row multiplier of the cosine, of every row or of ``rows`` (None: plain
        cosine)."""
        return None

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        vecs = [self.llm.embed_query(q) for q in queries]
        out = [Ranking.empty() for _ in queries]
        have = [i for i, v in enumerate(vecs) if v is not None]
        if not have or self.store.n == 0:
            return out
        rows = self.store.rows_with(("active",))  # the live rows only: the others never return
        if not len(rows):
            return out
        q = np.stack([np.asarray(vecs[i], dtype=np.float32) for i in have])
        if len(q) == 1:  # the live rows' products only: the numbers of the product below
            # (every row live: rows_with's distinct rows are all of them, read without a gather)
            every = len(rows) == self.store.n
            sims = self.store.query_products(q[0], None if every else rows)
            sims = sims.astype(np.float64)[:, None]
        else:
            sims = (self.store.embedding @ q.T)[rows].astype(np.float64)  # (rows, queries)
        w = self._weights(now, rows)
        if w is not None:
            sims *= w[:, None]
        touched = []
        for j, i in enumerate(have):
            # tied rows (within TIE_RTOL) may come in any score order: the ranking reports
            # the running minimum so scores stay non-increasing
            out[i] = self.ranking_among(rows, sims[:, j], queries[i].k, queries[i].id)
            touched.append(out[i].ids)
        rows = np.concatenate(touched)
        if len(rows):
            self.store["last_access"][rows] = now
            np.add.at(self.store["access_count"], rows, 1)
        return out

    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        return self.mark_memories_of(
            events, now, status="forgotten", action="forget", among=self.store.statuses.retrievable
        )


@dataclass(frozen=True)
class KeepAllParams(Params):
    """KeepAll has no parameters."""


class KeepAll(_CosineBase[KeepAllParams]):
    """Stores every extracted claim, never decays, ranks by cosine."""

    Params = KeepAllParams
    statuses = Statuses(
        ("active", "forgotten"),
        terminal=frozenset({"forgotten"}),
        retrievable=frozenset({"active"}),
    )

    def strength(self, now: float) -> np.ndarray:
        return self._live().astype(np.float64)


@dataclass(frozen=True)
class RecencyParams(Params):
    rate: float = param(0.023, lo=0.0, doc="baseline: recency decay per day (half-life ~30 days)")
    budget: int = param(10000, lo=1, doc="baseline: most retrievable memories before LRU eviction")


class Recency(_CosineBase[RecencyParams]):
    """score = cosine x exp(-rate x days since last access or creation); LRU eviction."""

    Params = RecencyParams
    # the frontier's "recency at budget B" reference (issue 13): keep the B most recently
    # used memories (budget=B), rank them by cosine alone
    at_budget: ClassVar[dict[str, Any]] = {"rate": 0.0}
    _lru: OrderedDict[int, float] | None = None  # see _lru_queue
    _lru_rows = 0  # rows of the store the queue has seen
    _lru_log = 0  # entries of the store's status log the queue has seen
    _evict_keys: dict[int, int] | None = None  # tie keys of rows at the front, see _in_tie_order
    _evict_keys_store: object = None  # the store they are keys of
    _front: _Front | None = None  # see _front_victims
    FRONT_KEPT = 16  # rows left at a front of near times from which it is kept (_front_victims)
    # rows of the queue past an eviction's own, in cliques apart, planned with it: the next
    # evictions pop them (_front_victims) instead of scanning the front again each
    PLAN_AHEAD = 16
    KEYS_AHEAD = 64  # rows of the queue whose tie keys are computed at once (_tie_keys_of)
    statuses = Statuses(
        ("active", "evicted", "forgotten"),
        terminal=frozenset({"evicted", "forgotten"}),
        retrievable=frozenset({"active"}),
    )

    def _last_use(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Time of the last access, else of creation: the LRU order of eviction (of ``rows``
        only, when given: the live rows, not the whole store, per ingest)."""
        la, created = self.store["last_access"], self.store["created"]
        if rows is not None:
            la, created = la[rows], created[rows]
        return np.where(np.isnan(la), created, la)

    def _weights(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        return np.exp(-self.params.rate * self.store.days_since_access(now, rows))

    def strength(self, now: float) -> np.ndarray:
        return np.where(self._live(), self._weights(now), 0.0)

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        out = super().recall(queries, now)
        lru = self._lru_queue()
        front = self._front
        if front is not None and any(
            lru[r] < front.stop_time or r == front.stop_row for o in out for r in o.ids.tolist()
        ):
            self._front = None  # a row of it moves to the back
        for r in out:
            if not self._to_back(lru, r.ids.tolist(), now):
                self._lru = None  # time went back: sorted again at the next use
                break
        return out

    @staticmethod
    def _to_back(lru: OrderedDict[int, float], rows: list[int], t: float) -> bool:
        """Move ``rows``, used at ``t``, to the back of the queue; False (nothing moved)
        when ``t`` is earlier than the last use in it (the order would break)."""
        if rows and lru and t < next(reversed(lru.values())):
            return False
        for row in rows:
            lru[row] = t
            lru.move_to_end(row)
        return True

    @staticmethod
    def _to_back_new(lru: OrderedDict[int, float], rows: range, times: list[float]) -> bool:
        """``_to_back`` of each of ``rows`` (not in the queue yet) at its time of ``times``,
        in order, in one loop (once per ingest); False at the first that goes back."""
        last = next(reversed(lru.values())) if lru else -np.inf
        for row, t in zip(rows, times):
            if t < last:
                return False
            lru[row] = last = t  # a new key joins at the back
        return True

    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        lru = self._lru_queue()
        out = super().forget(events, now)
        self._front = None
        for o in out:
            if o.action == "forget":
                lru.pop(o.memory, None)
        self._lru_log = len(self.store.status_log)
        return out

    def _lru_queue(self) -> OrderedDict[int, float]:
        """The live rows in order of last use, least recent first, with their last-use
        times: a row's last use is always the latest time so far (simulated time only goes
        forward), so a use moves it to the back and the front holds the eviction candidates.
        New rows join at the back; evicted and forgotten rows leave. Rebuilt by sorting when
        absent (a policy from before it), when time went back, or when the store's status
        log holds a change the queue did not make (a status written outside this policy)."""
        s, lru = self.store, self._lru
        n, seen = s.n, self._lru_rows
        # each new row logged its status once; new rows join at their creation time
        consistent = len(s.status_log) == self._lru_log + (n - seen)
        if lru is not None and consistent:
            if not self._to_back_new(lru, range(seen, n), s["created"][seen:n].tolist()):
                lru = None
        else:
            lru = None
        if lru is None:
            self._front = None
            live = s.rows_with(("active",))
            used = self._last_use(live)
            order = np.argsort(used, kind="stable")
            lru = OrderedDict(zip(live[order].tolist(), used[order].tolist()))
        self._lru, self._lru_rows, self._lru_log = lru, s.n, len(s.status_log)
        return lru

    def _evict_candidates(
        self, lru: OrderedDict[int, float], excess: int
    ) -> tuple[list[list[int]], bool, tuple[int, float] | None] | None:
        """The front of the queue that holds the ``excess`` least recently used live rows and
        every row tied with them (within TIE_RTOL, chained): ``topk`` over these rows equals
        ``topk`` over every live row (the same k-th value, tie chain and candidates), in
        O(excess + ties) rather than O(live). As cliques in queue order, rows whose last
        uses span at most half of TIE_RTOL (so one tie group, whichever of them are left),
        and whether two cliques are near (apart by at most twice TIE_RTOL, a margin; else
        each clique is a tie group of its own), and the row behind them with its last use
        (None: the queue ended). None when a row's last use is not the queue's (the store
        was written outside the queue)."""
        used, created = self.store["last_access"], self.store["created"]
        cliques: list[list[int]] = []
        taken = 0
        near = False
        first = last = -np.inf
        stop = None
        for r, t in lru.items():
            if _last_used(used, created, r) != t:
                return None
            if cliques and _same_clique(first, t):
                cliques[-1].append(r)
            else:
                apart = _apart(last, t)
                if taken >= excess and apart:  # past the cut and past its tie chain
                    stop = (r, t)
                    break
                near = near or (bool(cliques) and not apart)
                cliques.append([r])
                first = t
            last = t
            taken += 1
        # topk puts infinite scores first by another rule: its tie groups decide them too
        near = near or (taken > 1 and not -np.inf < lru[cliques[0][0]] <= last < np.inf)
        return cliques, near, stop

    def _tie_keys_of(self, rows: list[int]) -> dict[int, int]:
        """A dict that holds the eviction's tie keys (store.tie_keys) of ``rows``, among
        those of other rows at the front: each row's key is computed once, with those of
        the next KEYS_AHEAD rows of the queue (the next to reach the front; one call to
        tie_keys, element-wise, for many cliques)."""
        keys = self._evict_keys
        if keys is None or self._evict_keys_store is not self.store:
            keys = self._evict_keys = {}
            self._evict_keys_store = self.store
        new = [r for r in rows if r not in keys]
        if new:
            ahead = islice(self._lru or (), self.KEYS_AHEAD)
            new = list(dict.fromkeys(new + [r for r in ahead if r not in keys]))
            tag = f"{self.seed}:evict"
            keys.update(zip(new, self.store.tie_keys(tag, np.array(new)).tolist()))
        return keys

    def _in_tie_order(self, cliques: list[list[int]], excess: int) -> list[int]:
        """The first ``excess`` rows of ``cliques`` (each one tie group, apart from the
        next) in topk's order: clique by clique, and within one by tie key, then row."""
        victims: list[int] = []
        for rows in cliques:
            if len(rows) > 1:
                keys = self._tie_keys_of(rows)
                if len(victims) + 1 == excess:  # the last one: the least, without a sort
                    rows = [min(rows, key=lambda r: (keys[r], r))]
                else:
                    rows = sorted(rows, key=lambda r: (keys[r], r))
            victims.extend(rows[: excess - len(victims)])
            if len(victims) == excess:
                break
        return victims

    def _front_victims(self, excess: int) -> list[int] | None:
        """The ``excess`` rows to evict from the front kept by the last eviction (None: no
        front kept, or it holds fewer rows). The front kept is the queue's front as it was
        then, less its victims; nothing but new rows behind it has changed the queue since
        (a recall that moves one of its rows back, a forget or a rebuild drops it), so it is
        a prefix of the queue that ends apart from the row behind it and holds ``excess``
        rows: topk over it is topk over every live row. The rows an eviction reads are
        checked against the store first, as _evict_candidates checks those it reads: of a
        plan, the cliques its victims are taken from and the row behind them (a row planned
        later is checked at its turn), of a front of near times every row; and the row behind
        the front."""
        front = self._front
        if front is None or front.store is not self.store or front.size() < excess:
            self._front = None
            return None
        used, created = self.store["last_access"], self.store["created"]
        if _last_used(used, created, front.stop_row) != front.stop_time:
            self._front = None
            return None
        plan = front.plan
        if plan is not None:  # cliques apart: their order is the eviction's
            # the rows _evict_candidates would read: the cliques the victims are taken from
            # and the row behind them (Python floats: a few rows, once per ingest)
            last = plan[excess - 1][2]
            for r, t, clique in plan:
                if _last_used(used, created, r) != t:
                    self._front = None
                    return None
                if clique > last:
                    break
            victims = [r for r, _, _ in plan[:excess]]
            del plan[:excess]
            return victims
        assert front.rows is not None and front.times is not None
        if not np.array_equal(self._last_use(front.rows), front.times):
            self._front = None
            return None
        order = topk(-front.times, excess, front.keys)
        victims = front.rows[order].tolist()
        keep = np.ones(len(front.rows), dtype=bool)
        keep[order] = False
        front.rows, front.times = front.rows[keep], front.times[keep]
        if front.keys is not None:
            front.keys = front.keys[keep]
        return victims

    def _cliques_ahead(
        self, lru: OrderedDict[int, float], start: int
    ) -> tuple[list[list[int]], tuple[int, float]] | None:
        """Cliques of the queue from its ``start``-th row on (the row behind an eviction's
        front, apart from it), each apart from the next, of about PLAN_AHEAD rows in all,
        and the row behind the last of them, apart from it: topk over the front and these
        cliques, one after another, is each next eviction's while the queue keeps them at
        its front. None when the queue offers no such clique (near times, an infinite or
        written-over last use, or its end: a row to come could join the last clique)."""
        used, created = self.store["last_access"], self.store["created"]
        cliques: list[list[int]] = []
        cut: tuple[int, tuple[int, float]] | None = None
        first = last = 0.0
        taken = 0
        for r, t in islice(lru.items(), start, None):
            if _last_used(used, created, r) != t or not -np.inf < t < np.inf:
                break
            if cliques and _same_clique(first, t):
                cliques[-1].append(r)
            else:
                if cliques:
                    if not _apart(last, t):
                        break  # near: the cliques before it stand, the last may chain
                    cut = (len(cliques), (r, t))
                    if taken >= self.PLAN_AHEAD:
                        break
                cliques.append([r])
                first = t
            last = t
            taken += 1
        if cut is None:
            return None
        return cliques[: cut[0]], cut[1]

    def _victims_among(
        self,
        lru: OrderedDict[int, float],
        excess: int,
        cliques: list[list[int]],
        near: bool,
        stop: tuple[int, float] | None,
    ) -> list[int]:
        """The ``excess`` rows to evict from the front the queue's scan found. Where its
        cliques are apart, the next PLAN_AHEAD rows' cliques are planned with them and kept
        for the next evictions; a front of near times left with FRONT_KEPT rows or more is
        kept as rows (_front_victims)."""
        taken = sum(len(rows) for rows in cliques)
        if not near:
            ahead = None if stop is None else self._cliques_ahead(lru, taken)
            if ahead is not None:
                more, stop = ahead
                cliques = cliques + more
                taken += sum(len(rows) for rows in more)
            if stop is None or taken == excess:  # nothing left to plan
                if excess == 1 and len(cliques) == 1 and len(cliques[0]) == 1:
                    return [cliques[0][0]]  # one row apart from the next
                return self._in_tie_order(cliques, excess)
            order = self._in_tie_order(cliques, taken)
            clique_of = {r: i for i, rows in enumerate(cliques) for r in rows}
            plan = [(r, lru[r], clique_of[r]) for r in order[excess:]]
            self._front = _Front(self.store, None, None, stop[0], stop[1], plan)
            return order[:excess]
        # a chain of near times: topk's tie groups decide (rows ascending)
        cand = sorted((r, lru[r]) for rows in cliques for r in rows)
        rows = np.array([r for r, _ in cand], dtype=np.int64)
        times = np.array([t for _, t in cand])
        key_of = self._tie_keys_of(rows.tolist())
        keys = np.array([key_of[r] for r in rows.tolist()], dtype=np.uint64)
        first = topk(-times, excess, keys)
        if stop is not None and taken - excess >= self.FRONT_KEPT:
            keep = np.ones(len(rows), dtype=bool)
            keep[first] = False
            self._front = _Front(
                self.store, rows[keep], times[keep], stop[0], stop[1], None, keys[keep]
            )
        victims: list[int] = rows[first].tolist()
        return victims

    def _after_ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        for _ in range(2):  # a second time only after the queue was rebuilt from the store
            lru = self._lru_queue()
            excess = len(lru) - self.params.budget
            if excess <= 0:
                return []
            victims = None if self._front is None else self._front_victims(excess)
            if victims is None:
                front = self._evict_candidates(lru, excess)
                if front is not None:
                    victims = self._victims_among(lru, excess, *front)
            if victims is not None:
                break
            self._lru = None
        assert victims is not None, "a rebuilt LRU queue agrees with the store"
        # least recently used first; equal times in a seeded random order of memory
        # identity (not row order), among the front of the LRU queue only
        keys = self._evict_keys or {}
        for r in victims:
            del lru[r]
            keys.pop(r, None)
        self.store.set_status(victims, "evicted", now)
        self._lru_log = len(self.store.status_log)
        cause, detail = episodes[-1].id, f"over budget {self.params.budget}"
        return [Outcome(cause, "evict", r, detail) for r in victims]


def _last_used(used: np.ndarray, created: np.ndarray, row: int) -> float:
    """A row's last use as a Python float (the queue's loops run once per ingest): its last
    access, or its creation while it was never accessed (NaN)."""
    u: float = used.item(row)
    return created.item(row) if u != u else u


def _same_clique(first: float, t: float) -> bool:
    """Whether a last use ``t`` (queue order, ``t >= first``) joins the clique that starts at
    ``first``: within half of TIE_RTOL, so the clique is one tie group whichever of its rows
    are left."""
    return t - first <= 0.5 * TIE_RTOL * min(abs(first), abs(t))


def _apart(last: float, t: float) -> bool:
    """Whether a last use ``t`` is apart from the ``last`` one before it in the queue: more
    than twice TIE_RTOL, so topk never chains the two into one tie group."""
    return t - last > 2 * TIE_RTOL * max(abs(t), abs(last))


@dataclass
class _Front:
    """The front of Recency's LRU queue kept between evictions (see _front_victims): its
    rows in eviction order with their last uses (``plan``) when they are cliques apart,
    else its rows ascending with their last uses and tie keys, for topk."""

    store: object
    rows: np.ndarray | None  # ascending (a front of near times)
    times: np.ndarray | None  # their last uses
    stop_row: int  # the row behind them, apart
    stop_time: float
    # (row, last use, clique) in eviction order (cliques apart, numbered in queue order)
    plan: list[tuple[int, float, int]] | None
    keys: np.ndarray | None = None  # the rows' tie keys (a front of near times)

    def size(self) -> int:
        if self.plan is not None:
            return len(self.plan)
        return 0 if self.rows is None else len(self.rows)
