"""Izzie: per-category exponential decay, ranked by relevance x strength.

Seed document: ../shared/seeds/003_29547c4578628b7b.txt ("Memory Persistence Flow").

- §Data Flow Example / §Save Memories: every item of the LLM's ``memoriesToSave`` is stored
  (no deduplication: "Automatic deduplication" is listed under §Future Enhancements), with
  ``sourceType='chat'``, ``sourceId`` (the chat session: the episode's conversation, or the
  episode id when it has none) and ``sourceDate`` (the episode time), and the decay rate of
  its category.
- §Memory Categories & Decay Rates: decay rate and default importance per category.
- §Importance Levels: high 0.9 / med 0.7 / low 0.6.
- §Memory Strength Calculation: ``strength = importance * exp(-decayRate * daysSinceAccess)``,
  where days since access count from ``lastAccessed`` (= ``createdAt`` until first retrieved).
- §Context Retrieval: "Semantic search for relevant memories; Apply temporal decay; Rank by
  relevance x strength": the semantic search returns the ``search_limit`` most similar
  memories, which are then ranked by ``relevance * strength`` (``ranking`` names the
  variants: ``one_stage`` over the whole store, izzie v1; ``search_then_strength``).
  A retrieval refreshes ``lastAccessed`` (the stored record carries it) and counts accesses.
- §Chat API route step 2 (context retrieval for every incoming message) is a variant
  (``message_context_k``), off by default: see docs/policies/izzie.md.
- importance: a claim the LLM gave no importance (None) takes its category's default
  importance (§Memory Categories & Decay Rates).

memsim choices (the document is silent; see docs/policies/izzie.md):
- importance: the claim's own importance is what the LLM "set" (the document's LLM sets 0.9
  explicitly, above the preference default 0.8), so it wins by default
  (``importance_source="claim"``); ``"category"`` always uses the category default and
  ``"level"`` snaps the LLM's number to the nearest documented importance level.
- categories outside the table map through ``category_aliases`` (procedural -> fact,
  value/drive -> preference, goal -> decision, observation/meta -> fact, emotion ->
  sentiment), anything else to ``fallback_category`` (fact).
- forgetting a memory sets status ``forgotten`` (terminal; deletion is a future enhancement
  of the document); there is no scheduled maintenance: decay is computed when read.
- an LLM extraction failure means an unparseable response: nothing is saved (``drop``);
  a failed embedding cannot be saved to Weaviate: that item is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine import decay, ranking
from memsim.engine.arrays import as_float64
from memsim.engine.errors import ParamError
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.params import Params, param
from memsim.engine.policy import Outcome, Policy, Ranking, in_episode_order
from memsim.engine.store import MemoryStore, Statuses


def exp_decay(x0: ArrayLike, rate: ArrayLike, dt: ArrayLike) -> np.ndarray:
    """``x0 * exp(-rate * dt)``: Izzie's strength (003 §Memory Strength Calculation). The
    expression's steps in its own shapes, each written over the array before it where the
    shape allows (the same bits, NaN signs included): each fresh array of a million rows is
    8 MB of pages to fault in."""
    x, r, d = as_float64(x0), as_float64(rate), as_float64(dt)
    if not np.broadcast_shapes(x.shape, r.shape, d.shape):
        return x * np.exp(-r * d)
    z = np.negative(r, out=np.empty(r.shape))
    z = np.multiply(z, d, out=z) if z.shape == np.broadcast_shapes(z.shape, d.shape) else z * d
    np.exp(z, out=z)
    if z.shape == np.broadcast_shapes(x.shape, z.shape):
        return np.multiply(x, z, out=z)
    out: np.ndarray = x * z
    return out


def exp_decay_ref(x0: float, rate: float, dt: float) -> float:
    return x0 * math.exp(-rate * dt)


CATEGORIES = ("preference", "fact", "relationship", "decision", "event", "sentiment", "reminder")
_DOC_TABLE = "003 §Memory Categories & Decay Rates"
_DOC_LEVELS = "003 §Importance Levels"


@dataclass(frozen=True)
class IzzieParams(Params):
    """Constants of 003 (defaults are the document's values)."""

    decay_rate_preference: float = param(0.01, lo=0.0, doc=_DOC_TABLE)
    decay_rate_fact: float = param(0.02, lo=0.0, doc=_DOC_TABLE)
    decay_rate_relationship: float = param(0.02, lo=0.0, doc=_DOC_TABLE)
    decay_rate_decision: float = param(0.03, lo=0.0, doc=_DOC_TABLE)
    decay_rate_event: float = param(0.05, lo=0.0, doc=_DOC_TABLE)
    decay_rate_sentiment: float = param(0.1, lo=0.0, doc=_DOC_TABLE)
    decay_rate_reminder: float = param(0.2, lo=0.0, doc=_DOC_TABLE)
    default_importance_preference: float = param(0.8, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    default_importance_fact: float = param(0.7, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    default_importance_relationship: float = param(0.7, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    default_importance_decision: float = param(0.6, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    default_importance_event: float = param(0.5, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    default_importance_sentiment: float = param(0.4, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    default_importance_reminder: float = param(0.6, lo=0.0, hi=1.0, doc=_DOC_TABLE)
    importance_high: float = param(0.9, lo=0.0, hi=1.0, doc=_DOC_LEVELS)
    importance_med: float = param(0.7, lo=0.0, hi=1.0, doc=_DOC_LEVELS)
    importance_low: float = param(0.6, lo=0.0, hi=1.0, doc=_DOC_LEVELS)
    importance_source: str = param(
        "claim",
        choices=("claim", "category", "level"),
        doc="003 §Data Flow Example (LLM sets importance); memsim choice",
    )
    category_aliases: tuple[str, ...] = param(
        (
            "procedural:fact",
            "value:preference",
            "drive:preference",
            "goal:decision",
            "observation:fact",
            "meta:fact",
            "emotion:sentiment",
        ),
        doc="memsim choice: categories outside 003's table, as FROM:TO",
    )
    fallback_category: str = param(
        "fact", choices=CATEGORIES, doc="memsim choice: any other category"
    )
    ranking: str = param(
        "search_then_score",
        choices=("search_then_score", "one_stage", "search_then_strength"),
        doc="003 §Context Retrieval: 'Semantic search for relevant memories; Apply temporal "
        "decay; Rank by relevance x strength' = search_then_score (the top search_limit by "
        "cosine, then relevance x strength). Variants: one_stage (relevance x strength over "
        "the whole store, izzie v1) and search_then_strength (the top search_limit by cosine, "
        "then strength alone)",
    )
    search_limit: int = param(
        20,
        lo=1,
        doc="003 §Context Retrieval semantic search limit (no value given: memsim's choice, "
        "20; never fewer than the query's k)",
    )
    message_context_k: int = param(
        0,
        lo=0,
        doc="003 §Chat API route step 2 'Build context (retrieve existing memories)' per "
        "message: k > 0 retrieves the k best memories for each incoming message (embedded "
        "from its text) and refreshes their lastAccessed; 0 (default) = not modelled, see "
        "docs/policies/izzie.md",
    )
    # -- code variant (izzie-code): what Izzie's public code does, not in 003 ----------------
    strength_form: str = param(
        "document",
        choices=("document", "code"),
        doc="003 §Memory Strength Calculation importance x exp(-rate days) ('document'); "
        "izzie-code: exp(-rate x (1 - importance_slowing x importance) x days) ('code')",
    )
    importance_slowing: float = param(
        0.5, lo=0.0, hi=1.0, doc="izzie-code: importance slows the rate by (1 - 0.5 x importance)"
    )
    limit_before_filter: bool = param(
        False,
        doc="izzie-code: take the result limit (top k by similarity) first, then drop "
        "memories below min_strength; False = the document's one-stage ranking",
    )
    min_strength: float = param(
        0.1,
        lo=0.0,
        hi=1.0,
        doc="izzie-code strength filter (strength >= min_strength); the value is a memsim "
        "choice (issue 11 names the filter, not its threshold)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for item in self.category_aliases:
            src, sep, dst = item.partition(":")
            if not sep or not src or dst not in CATEGORIES:
                raise ParamError(
                    f"IzzieParams.category_aliases: {item!r} must be FROM:TO with TO "
                    f"one of {', '.join(CATEGORIES)}"
                )

    def decay_rate(self, category: str) -> float:
        return getattr(self, f"decay_rate_{category}")

    def default_importance(self, category: str) -> float:
        return getattr(self, f"default_importance_{category}")

    def table_category(self, category: str) -> str:
        """The 003 table category a claim's category stands for."""
        if category in CATEGORIES:
            return category
        for item in self.category_aliases:
            src, _, dst = item.partition(":")
            if src == category:
                return dst
        return self.fallback_category


def strength_scalar(importance: float, decay_rate: float, days_since_access: float) -> float:
    """003 §Memory Strength Calculation, scalar (policies.izzie.exp_decay_ref)."""
    return exp_decay_ref(importance, decay_rate, days_since_access)


def strength_vector(
    importance: np.ndarray, decay_rate: np.ndarray, days_since_access: np.ndarray
) -> np.ndarray:
    """Vectorized twin of :func:`strength_scalar` (policies.izzie.exp_decay)."""
    return exp_decay(importance, decay_rate, days_since_access)


def code_strength_vector(
    importance: np.ndarray, decay_rate: np.ndarray, days_since_access: np.ndarray, slowing: float
) -> np.ndarray:
    """izzie-code: ``exp(-rate x (1 - slowing x importance) x days)`` (importance slows the
    rate and does not scale the strength)."""
    rate = np.asarray(decay_rate, dtype=np.float64) * (
        1.0 - slowing * np.asarray(importance, dtype=np.float64)
    )
    return exp_decay(1.0, rate, days_since_access).astype(np.float64)


class Izzie(Policy[IzzieParams]):
    """003's memory model. See the module docstring for the document sections."""

    Params: ClassVar[type[Params]] = IzzieParams
    statuses: ClassVar[Statuses] = Statuses(
        ("active", "forgotten"),
        terminal=frozenset({"forgotten"}),
        retrievable=frozenset({"active"}),
    )
    kinds: ClassVar[tuple[str, ...]] = ("memory",)
    strength_range = (0.0, 1.0)
    curve_attributes: ClassVar[frozenset[str]] = frozenset()
    # recall's first stage (the top search_limit by cosine), where the ranking reads one;
    # mode cones answers range searches only, so it would leave recall a full scan
    index_modes: ClassVar[frozenset[str]] = frozenset({"ivf"})

    def setup(self) -> None:
        s = self.store
        s.add_column("importance", np.float64, 0.0)
        s.add_column("decay_rate", np.float64, 0.0)
        s.add_column("category", np.int8, 0)  # index into CATEGORIES
        s.add_column("source_date", np.float64, np.nan)
        self.source_type: list[str] = []  # "chat" for every memory (003 §Save Memories)
        self.source_id: list[str] = []  # chat session id
        self._category_rows: dict[str, tuple[str, int, float, float]] = {}

    # -- ingest ----------------------------------------------------------------
    def _importance(self, claim: Claim, default: float) -> float:
        """The memory's importance; ``default``: its category's (``_category_row``)."""
        p = self.params
        imp = claim.importance
        if p.importance_source == "category" or imp is None:
            # 003 §Memory Categories: the LLM set no importance -> the category default.
            return default
        if p.importance_source == "level":
            levels = (p.importance_high, p.importance_med, p.importance_low)
            return min(levels, key=lambda v: (abs(v - imp), -v))
        return float(imp)

    def _category_row(self, category: str) -> tuple[str, int, float, float]:
        """A claim category's table category, its code in CATEGORIES, its decay rate and its
        default importance (003 §Memory Categories & Decay Rates); kept per category, since
        every claim asks and the params do not change."""
        row = self._category_rows.get(category)
        if row is None:
            p = self.params
            cat = p.table_category(category)
            row = (cat, CATEGORIES.index(cat), p.decay_rate(cat), p.default_importance(cat))
            self._category_rows[category] = row
        return row

    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        self._message_context(episodes, now)
        # each episode's drops (extraction, then embedding), before its creates: the order
        # one episode at a time gives
        drops: dict[int, list[Outcome]] = {}
        owner: list[int] = []  # the episode (index) of each claim
        claims: list[Claim] = []
        keys: list[str] = []  # item key <episode>#<i>
        extract = self.llm.extract
        for e, ep in enumerate(episodes):
            found = extract(ep)
            if found is None:
                drops[e] = [
                    Outcome(ep.id, "drop", detail="LLM response could not be parsed: nothing saved")
                ]
                continue
            if not found:
                drops[e] = [Outcome(ep.id, "drop", detail="memoriesToSave is empty")]
            for i, c in enumerate(found):
                owner.append(e)
                claims.append(c)
                keys.append(f"{ep.id}#{i}")
        owners, created = (
            self._store_items(episodes, owner, claims, keys, drops, now) if claims else ([], [])
        )
        return in_episode_order(len(episodes), drops, owners, created)

    def _store_items(
        self,
        episodes: Sequence[Episode],
        owner: list[int],
        claims: list[Claim],
        keys: list[str],
        drops: dict[int, list[Outcome]],
        now: float,
    ) -> tuple[list[int], list[Outcome]]:
        """Embed and store the claims; a failed embedding is a drop. Returns the stored
        claims' episodes (indices) and their create outcomes, in order."""
        emb = self.llm.embed(claims, keys)
        ok = np.asarray(emb.ok, dtype=bool)
        vectors = emb.vectors
        if not ok.all():
            for i in np.flatnonzero(~ok).tolist():
                e = owner[i]
                drops.setdefault(e, []).append(
                    Outcome(episodes[e].id, "drop", detail=f"embedding failed for {keys[i]}")
                )
            keep = np.flatnonzero(ok)
            if not len(keep):
                return [], []
            vectors = vectors[keep]
            owner = [owner[i] for i in keep.tolist()]
            claims = [claims[i] for i in keep.tolist()]
        rows = [self._category_row(c.category) for c in claims]
        importance = [self._importance(c, row[3]) for c, row in zip(claims, rows)]
        ids = self.store.add(
            now,
            vectors,
            texts=[f"{c.key}: {c.value}" if c.key else c.value for c in claims],
            claims=claims,
            provenance=[(episodes[e].id,) for e in owner],
            importance=np.array(importance),
            decay_rate=np.array([row[2] for row in rows]),
            category=np.array([row[1] for row in rows], dtype=np.int8),
            source_date=np.array([episodes[e].time for e in owner], dtype=np.float64),
        )
        self.source_type.extend(["chat"] * len(claims))
        self.source_id.extend(episodes[e].conversation or episodes[e].id for e in owner)
        return owner, [
            Outcome(episodes[e].id, "create", row, detail=cat[0])
            for e, row, cat in zip(owner, ids.tolist(), rows)
        ]

    # -- strength and recall -----------------------------------------------------
    def days_since_access(self, now: float) -> np.ndarray:
        """Days since lastAccessed, which equals createdAt until the first retrieval."""
        return self.store.days_since_access(now)

    def strength(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """Strength of every row, or of ``rows`` only (the same numbers, element by element)."""
        s = self.store
        pick = slice(None) if rows is None else rows
        days = decay.days_since_access(now, s["last_access"][pick], s["created"][pick])
        if self.params.strength_form == "code":
            return code_strength_vector(
                s["importance"][pick], s["decay_rate"][pick], days, self.params.importance_slowing
            )
        return strength_vector(s["importance"][pick], s["decay_rate"][pick], days).astype(
            np.float64
        )

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        s = self.store
        if s.n == 0:
            return [Ranking.empty() for _ in queries]
        qvecs = [self.llm.embed_query(q) for q in queries]
        if self.candidates.approximate and self._searches_first():
            return self._recall_candidates(queries, qvecs, now)
        good = [i for i, v in enumerate(qvecs) if v is not None]
        sims = np.zeros((len(queries), s.n))
        for i in good:
            # float32 products, kept between the vector's calls (converting the whole
            # matrix to float64 per query cost more than the product itself)
            sims[i] = s.query_products(qvecs[i])
        retrievable = s.retrievable()
        p = self.params
        strength: np.ndarray | _RowStrength = (
            self.strength(now)
            if p.ranking == "one_stage" and not p.limit_before_filter
            else _RowStrength(self, now)  # the other readings read a few rows per query
        )
        out: list[Ranking] = []
        # Queries are answered in order: a retrieval refreshes lastAccessed before the next
        # query of the batch is scored, exactly as one-by-one recall would.
        for qi, q in enumerate(queries):
            if qvecs[qi] is None or not retrievable.any():
                out.append(Ranking.empty())
                continue
            ids, scores = self._rank(sims[qi], strength, retrievable, q.k, q.id)
            out.append(Ranking(ids, scores))
            self._touch(ids, now, strength)
        return out

    def _rank(
        self,
        sims: np.ndarray,
        strength: np.ndarray | _RowStrength,
        retrievable: np.ndarray,
        k: int,
        salt: str,
    ) -> tuple[np.ndarray, np.ndarray]:
        """003 §Context Retrieval, in the reading ``ranking`` names (see IzzieParams).
        ``strength``: every row's, or a _RowStrength (not for the one_stage reading)."""
        p = self.params
        # every stage breaks ties by the seeded order of memory identity, never by row
        tb_all = _keys_of(self.store, f"{self.seed}:{salt}")  # of the rows topk asks for

        if p.limit_before_filter:
            # izzie-code: the result limit first (top k by similarity), then the strength filter
            top = ranking.topk(np.where(retrievable, sims, -np.inf), k, tb_all)
            kept = top[strength[top] >= p.min_strength]
            scores = sims[kept].astype(np.float64) * strength[kept]
            if not len(kept):
                return kept, scores
            order = ranking.topk(scores, len(kept), tb_all(kept))
            return kept[order], np.minimum.accumulate(scores[order])
        if p.ranking == "one_stage":
            assert isinstance(strength, np.ndarray)
            scores = np.where(retrievable, sims * strength, -np.inf)
            ids = self.rank(scores, k, salt)  # ties: seeded order of memory identity
            return ids, np.minimum.accumulate(scores[ids].astype(np.float64))
        # Semantic search first: the search_limit most similar retrievable memories.
        found = ranking.topk(np.where(retrievable, sims, -np.inf), max(p.search_limit, k), tb_all)
        found = found[retrievable[found]]
        return self._stage2(found, sims[found], strength[found], k, salt)

    def _searches_first(self) -> bool:
        """Whether recall starts with a pure similarity search (the readings a candidate
        index can serve: the top search_limit by cosine, then a score over those)."""
        p = self.params
        return not p.limit_before_filter and p.ranking != "one_stage"

    def _stage2(
        self, found: np.ndarray, sims: np.ndarray, strength: np.ndarray, k: int, salt: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """The second stage of _rank over the searched rows ``found`` (sims and strength
        given for those rows only)."""
        if self.params.ranking == "search_then_score":
            stage2 = sims.astype(np.float64) * strength
        else:
            stage2 = strength.astype(np.float64)
        tb = self.store.tie_keys(f"{self.seed}:{salt}", found)
        order = ranking.topk(stage2, k, tb)
        return found[order], np.minimum.accumulate(stage2[order])

    def _recall_candidates(
        self, queries: Sequence[Query], qvecs: list, now: float
    ) -> list[Ranking]:
        """recall() through the candidate index: the search_limit most similar retrievable
        memories come from the index, then 003's score over them exactly as _rank does.
        Audited against the exact scan every ``audit_every``-th query."""
        s = self.store
        p = self.params
        retrievable = s.retrievable()
        out: list[Ranking] = []
        for qi, q in enumerate(queries):
            v = qvecs[qi]
            if v is None or not retrievable.any():
                out.append(Ranking.empty())
                continue
            v32 = np.asarray(v, dtype=np.float32)
            top = self.candidates.top_rows(  # the first stage breaks ties as _rank's does
                v32, max(p.search_limit, q.k), retrievable, _keys_of(s, f"{self.seed}:{q.id}")
            )
            assert top is not None  # approximate: the index answers
            found, sims = top
            ids, scores = self._stage2(found, sims, self.strength(now, found), q.k, q.id)
            if self.candidates.audit_due():
                exact, _ = self._rank(s.embedding @ v32, self.strength(now), retrievable, q.k, q.id)
                self.candidates.record(not np.array_equal(exact, ids))
            out.append(Ranking(ids, scores))
            if len(ids):
                s["last_access"][ids] = now
                s["access_count"][ids] += 1
        return out

    def _fresh_strength(self, rows: np.ndarray) -> np.ndarray:
        """Strength at 0 days since access: importance (document) or 1 (code form)."""
        if self.params.strength_form == "code":
            return np.ones(len(rows))
        return np.asarray(self.store["importance"][rows], dtype=np.float64)

    def _touch(self, ids: np.ndarray, now: float, strength: np.ndarray | _RowStrength) -> None:
        if len(ids):
            s = self.store
            s["last_access"][ids] = now
            s["access_count"][ids] += 1
            strength[ids] = self._fresh_strength(ids)  # days since access is now 0

    def _message_context(self, episodes: Sequence[Episode], now: float) -> None:
        """003 §Chat API step 2, per message (when message_context_k > 0): the memories the
        message retrieves for its context have their lastAccessed refreshed."""
        s = self.store
        k = self.params.message_context_k
        if k == 0 or s.n == 0 or not episodes:
            return
        emb = self.llm.embed([ep.text for ep in episodes], [f"{ep.id}:context" for ep in episodes])
        strength = self.strength(now)
        for i in range(len(episodes)):
            retrievable = s.retrievable()
            if not emb.ok[i] or not retrievable.any():
                continue
            sims = s.embedding @ np.asarray(emb.vectors[i], dtype=np.float32)
            ids, _ = self._rank(sims, strength, retrievable, k, f"{episodes[i].id}:context")
            self._touch(ids, now, strength)

    # -- user actions ------------------------------------------------------------
    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        return self.mark_memories_of(
            events, now, status="forgotten", action="forget", among=("active",)
        )


@dataclass(frozen=True)
class IzzieCodeParams(IzzieParams):
    """izzie-code: the defaults of Izzie's public code where it departs from 003 (issue 11
    "Each system as built"); every other constant is the document's."""

    strength_form: str = param(
        "code",
        choices=("document", "code"),
        doc="izzie-code: strength = exp(-rate x (1 - 0.5 x importance) x days)",
    )
    limit_before_filter: bool = param(
        True, doc="izzie-code: the result limit is applied before the strength filter"
    )


class IzzieCode(Izzie):
    """Izzie as its code is built (docs/policies/izzie-code.md)."""

    Params: ClassVar[type[Params]] = IzzieCodeParams


def _keys_of(store: MemoryStore, tag: str) -> Callable[[np.ndarray], np.ndarray]:
    """The tie keys (``MemoryStore.tie_keys`` under ``tag``) of the rows asked for."""
    return lambda rows: store.tie_keys(tag, rows)


class _RowStrength:
    """Izzie's strength at ``now`` of the rows a recall batch reads, computed for those rows
    only (``Izzie.strength(now, rows)``: the same numbers element by element) instead of for
    the whole store per batch, with the rows a query of the batch touched set to their fresh
    strength, exactly as the whole-store array the batch used to update."""

    def __init__(self, policy: Izzie, now: float) -> None:
        self._policy, self._now = policy, now
        n = policy.store.n
        self._fresh = np.zeros(n, dtype=bool)
        self._value = np.zeros(n, dtype=np.float64)

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        got = self._policy.strength(self._now, rows)
        fresh = self._fresh[rows]
        if fresh.any():
            got = np.where(fresh, self._value[rows], got)
        return got

    def __setitem__(self, rows: np.ndarray, values: np.ndarray) -> None:
        self._fresh[rows] = True
        self._value[rows] = values
