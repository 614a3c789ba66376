"""Shared machinery of the reference memory models (ACT-R, FSRS-6, Ebisu,
MemoryBank, Generative Agents): published models of memory placed beside the seeds.

None of these models says what an assistant's "review" is; memsim's choices, the same for
all of them (each a documented parameter of every model's Params):

- one memory per extracted claim (the LLM's ``extract``), the creating episode being its
  first presentation / review;
- a later claim whose embedding has cosine >= ``reinforce_cosine`` with a retrievable
  memory is a repetition of it (the creating claim is re-presented: a reinforcement, one more
  review); anything else is a new memory. Episodes are handled one by one inside a batch, so
  batched ingest equals one-by-one ingest;
- each memory returned by a recall is a retrieval: another presentation / successful review
  (``retrieval_is_review``), recorded after the query is ranked, before the next query;
- forgetting: a daily ``decay`` job marks ``decayed`` (terminal) every memory whose model
  retention fell under ``forget_below`` (0 switches it off); user forget marks ``forgotten``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from memsim.engine import similarity
from memsim.engine.candidate_index import REPETITION_INDEX
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.policy import Job, Outcome, Policy, Ranking
from memsim.engine.store import Statuses

from .baselines import claim_text

_NONE = np.float32(-np.inf)  # the product of no row


def _best(near: tuple[np.ndarray, np.ndarray]) -> tuple[int, np.float32]:
    """The row with the highest product of ascending ``rows`` and their ``products``
    (argmax: ties to the lower row), or (-1, -inf) when there is none."""
    rows, products = near
    if not len(rows):
        return -1, _NONE
    j = int(np.argmax(products))
    return int(rows[j]), products[j]


REVIEW_DOC = "memsim choice (policies/reference.py): what counts as a review"


class ReferencePolicy(Policy):
    """Base of the reference models. Subclasses implement ``_create`` (columns of new rows),
    ``_review`` (one presentation of ``rows`` at ``now``), ``retention`` (model recall
    probability per row) and may override ``_scores`` (ranking of one query)."""

    statuses: ClassVar[Statuses] = Statuses(
        ("active", "decayed", "forgotten"),
        terminal=frozenset({"decayed", "forgotten"}),
        retrievable=frozenset({"active"}),
    )
    schedule: tuple[Job, ...] = (Job("decay", 1.0),)
    strength_range = (0.0, 1.0)
    # The per-claim repetition scan is an exact range search through the candidate index's
    # cones from 2,000 stored rows (`_repetition`; docs/performance.md)
    default_index: ClassVar[Mapping[str, Any]] = REPETITION_INDEX
    index_modes: ClassVar[frozenset[str]] = frozenset({"ivf", "cones"})
    # _live's mask and the (store, rows, status changes) it was computed at
    _live_mask: np.ndarray
    _live_key: tuple[int, int, int] | None = None

    # -- hooks -------------------------------------------------------------------
    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        return {}

    def _after_create(self, row: int, now: float) -> None:
        """Per-row state kept outside the store (e.g. presentation histories)."""

    def _review(self, rows: np.ndarray, now: float) -> None:
        raise NotImplementedError

    def repeat_cosine(self) -> float:
        """The cosine at which a claim is a repetition of a live memory (a review of it):
        ``reinforce_cosine``; a model whose memories never merge returns infinity."""
        return float(self.params.reinforce_cosine)

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """The model's recall probability of every row at ``now`` (float64, length n), or
        of ``rows`` only (the same numbers)."""
        raise NotImplementedError

    def _scores(self, sims: np.ndarray, live: np.ndarray, now: float, k: int) -> np.ndarray:
        """Ranking score of every row for one query (cosine ``sims``) that asks for ``k``;
        -inf where not live (and, for a model that bounds its scores, where a row cannot
        reach the top k). The retention of the live rows only (decayed rows stay in the
        store)."""
        rows = np.flatnonzero(live)
        out = np.full(len(sims), -np.inf)
        out[rows] = sims[rows] * self.retention(now, rows)
        return out

    # -- interface -----------------------------------------------------------------
    def _live(self) -> np.ndarray:
        """Whether each row is "active" (read-only). Kept between calls while the store has
        as many rows and status changes as when it was computed (every status change is
        logged, every new row adds one): the repetition check asks for it at every claim,
        a scan of every row, and rows rarely change status between claims."""
        s = self.store
        key = (id(s), s.n, len(s.status_log))
        if self._live_key != key:
            live = s["status"][: s.n] == self.statuses.code("active")
            live.flags.writeable = False  # shared by the callers until the next change
            self._live_mask, self._live_key = live, key
        return self._live_mask

    def strength(self, now: float) -> np.ndarray:
        if self.store.n == 0:
            return np.zeros(0)
        return np.where(self._live(), self.retention(now), 0.0).astype(np.float64)

    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        out: list[Outcome] = []
        for ep in episodes:  # one by one: batched ingest equals sequential by construction
            out.extend(self._ingest_one(ep, now))
        return out

    def _ingest_one(self, ep: Episode, now: float) -> list[Outcome]:
        claims = self.llm.extract(ep)
        if claims is None:  # extraction failed: keep the raw text as one text-only claim
            claims = (Claim(key="", value=ep.text, category="fact"),)
        if not claims:
            return [Outcome(ep.id, "drop", -1, "extraction returned no claims")]
        keys = [f"{ep.id}#{i}" for i in range(len(claims))]
        emb = self.llm.embed(list(claims), keys)
        out: list[Outcome] = []
        s = self.store
        # float32 products of unit vectors exceed 1 by rounding only (well under the screen
        # margin): a threshold above 1 + margin is never met, every claim is a new memory,
        # and the scan of the store for a repetition is skipped (Generative Agents' 2.0)
        can_repeat = self.repeat_cosine() <= 1.0 + similarity.screen_margin(s.dim)
        for i, c in enumerate(claims):
            if not emb.ok[i]:
                out.append(Outcome(ep.id, "drop", -1, f"embedding failed for claim {keys[i]}"))
                continue
            vec = np.asarray(emb.vectors[i], dtype=np.float32)
            vec = vec / np.linalg.norm(vec)
            live = self._live() if can_repeat else None
            if live is not None and live.any():
                best, sim = self._repetition(vec, live)
                if sim >= self.repeat_cosine():
                    s.add_provenance(best, (ep.id,), now)
                    self._review(np.array([best]), now)
                    s["updated"][best] = now
                    out.append(Outcome(ep.id, "reinforce", best))
                    continue
            row = int(
                s.add(
                    now,
                    vec[None, :],
                    texts=[claim_text(c)],
                    claims=[c],
                    provenance=[(ep.id,)],
                    **self._create(c, now),  # type: ignore[arg-type]
                )[0]
            )
            self._after_create(row, now)
            out.append(Outcome(ep.id, "create", row))
        return out

    def _repetition(self, vec: np.ndarray, live: np.ndarray) -> tuple[int, np.float32]:
        """The live row most similar to ``vec`` and its float32 product, as far as the
        decision needs them: the full scan's ``argmax`` (ties to the lower row), or, when
        the candidate index answers (store of at least ``min_rows``), the argmax over
        ``rows_near(vec, reinforce_cosine, live)``: the same row and product bit for bit
        whenever the full scan's best reaches ``reinforce_cosine`` (and, in mode ivf, the
        probed lists hold it), and (-1, -inf) when no row found comes near it (a new memory,
        as the full scan decides whenever its best stays under the threshold). In mode ivf
        every ``audit_every``-th indexed decision is also taken as the full scan takes it
        (from the rows that can reach the threshold, exactly: ``rows_reaching``), and the
        audit records whether the two differ (reinforce which row, or create); mode cones,
        the default, is exact and not audited."""
        thr = self.repeat_cosine()
        near = self.candidates.rows_near(vec, thr, live)
        if near is None:
            return self._repetition_exact(vec, live)
        best, sim = _best(near)
        if self.candidates.audit_due():
            # the full scan's decision from the rows that can reach the threshold only
            # (CandidateIndex.rows_reaching: every list whose cone can hold one, exact)
            reaching = self.candidates.rows_reaching(vec, thr, live)
            exact, exact_sim = (
                _best(reaching) if reaching is not None else self._repetition_exact(vec, live)
            )
            got = best if sim >= thr else -1
            want = exact if exact_sim >= thr else -1
            self.candidates.record(got != want, decision=True)
        return best, sim

    def _repetition_exact(self, vec: np.ndarray, live: np.ndarray) -> tuple[int, np.float32]:
        """The full scan: the live row with the highest float32 product (ties to the lower
        row) and that product."""
        sims = self.store.products(vec, live)
        best = int(np.argmax(sims))
        return best, sims[best]

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        s = self.store
        out: list[Ranking] = []
        for q in queries:  # in order: a retrieval is a review before the next query
            v = self.llm.embed_query(q)
            rows = s.rows_with(("active",)) if s.n else np.zeros(0, dtype=np.int64)
            if v is None or not len(rows):
                out.append(Ranking.empty())
                continue
            ranking = self._rank_query(q, v, rows, now)
            ids = ranking.ids
            out.append(ranking)
            if len(ids):
                self._accessed(ids, now)
                s["access_count"][ids] += 1
                if self.params.retrieval_is_review:
                    self._review(ids, now)
        return out

    def _rank_query(self, q: Query, v: np.ndarray, rows: np.ndarray, now: float) -> Ranking:
        """One query's ranking over the live ``rows`` (ascending, not empty): ``_scores`` of
        every row, ties in the seeded order (never row)."""
        live = self._live()
        # the query's products, kept between its calls (decayed rows are masked out)
        sims = np.where(live, self.store.query_products(v), np.float32(0.0)).astype(np.float64)
        return self.ranking(self._scores(sims, live, now, q.k), q.k, q.id)

    def _accessed(self, rows: np.ndarray, now: float) -> None:
        """Record that recall returned ``rows`` at ``now``."""
        self.store["last_access"][rows] = now

    def maintain(self, now: float, jobs: Sequence[str]) -> list[Outcome]:
        if "decay" not in jobs or self.store.n == 0:
            return []
        doomed = self._doomed(now)
        if not len(doomed):
            return [Outcome("decay", "skip")]
        self.store.set_status(doomed, "decayed", now)
        return [Outcome("decay", "prune", int(r), "retention under threshold") for r in doomed]

    def idle_until(self, now: float, until: float) -> float:
        """The runner's skip hook: with no event before ``until``, the decay job changes
        nothing until some live row's retention falls under ``forget_below`` (retention only
        falls between reviews, in every reference model). Returns a time at or before that
        crossing: found by doubling the step from ``now``, then bisection; ``until`` when no
        row crosses before it."""
        live = np.flatnonzero(self._live()) if self.store.n else np.zeros(0, dtype=np.int64)
        if self.params.forget_below <= 0 or not len(live):
            return until

        def crossed(t: float) -> bool:
            with np.errstate(all="ignore"):
                r = self.retention(t, live)
            return bool((r < self.params.forget_below).any() or not np.isfinite(r).all())

        if not crossed(until):
            return until
        lo, step = now, 1.0
        while now + step < until and not crossed(now + step):
            lo, step = now + step, step * 2
        hi = min(now + step, until)
        while hi - lo > 1e-3 * max(1.0, hi - now) and hi - lo > 1e-6:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if crossed(mid) else (mid, hi)
        return lo

    def _doomed(self, now: float) -> np.ndarray:
        """Rows the decay job forgets: the live rows :meth:`_forgets` picks (decayed rows
        stay in the store and are not evaluated again)."""
        live = np.flatnonzero(self._live())
        return live[self._forgets(now, live)]

    def _forgets(self, now: float, rows: np.ndarray) -> np.ndarray:
        """Which of the live ``rows`` the decay job forgets at ``now``: retention under
        ``forget_below`` (never, at 0)."""
        if self.params.forget_below <= 0:
            return np.zeros(len(rows), dtype=bool)
        out: np.ndarray = self.retention(now, rows) < self.params.forget_below
        return out

    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        return self.mark_memories_of(
            events, now, status="forgotten", action="forget", among=("active",)
        )
