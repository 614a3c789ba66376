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
import re
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
        0.5,
        lo=0.0,
        hi=1.0,
        doc="izzie-code: importance slows the rate by (1 - 0.5 x importance) (decay.ts:50)",
    )
    limit_before_filter: bool = param(
        False,
        doc="izzie-code: take the search's limit first, then drop memories below "
        "min_strength (retrieval.ts:78-79, 137-141); False = the document's reading "
        "(ranking: the semantic search, then relevance x strength), no strength filter",
    )
    min_strength: float = param(
        0.3,
        lo=0.0,
        hi=1.0,
        doc="izzie-code strength filter: strength >= minMemoryStrength 0.3 "
        "(context-retrieval.ts:66, retrieval.ts:139); read only when limit_before_filter",
    )
    search: str = param(
        "cosine",
        choices=("cosine", "bm25"),
        doc="003 §Context Retrieval 'Semantic search' ('cosine'); izzie-code: Weaviate "
        "keyword search, collection.query.bm25 over the memory's content ('bm25', "
        "retrieval.ts:78-79), its result ranked by rank_weight_* (decay.ts:100)",
    )
    bm25_k1: float = param(
        1.2, lo=0.0, doc="izzie-code: Weaviate's BM25 k1 (default 1.2; the code sets none)"
    )
    bm25_b: float = param(
        0.75, lo=0.0, hi=1.0, doc="izzie-code: Weaviate's BM25 b (default 0.75; the code sets none)"
    )
    rank_weight_strength: float = param(
        0.5, lo=0.0, doc="izzie-code: score = strength x 0.5 + ... (decay.ts:100)"
    )
    rank_weight_confidence: float = param(
        0.3, lo=0.0, doc="izzie-code: ... + confidence x 0.3 + ... (decay.ts:100)"
    )
    rank_weight_importance: float = param(
        0.2, lo=0.0, doc="izzie-code: ... + importance x 0.2 (decay.ts:100)"
    )
    refresh_top: int = param(
        0,
        lo=0,
        doc="memories a retrieval refreshes (lastAccessed): 0 = every one returned (003 "
        "§Context Retrieval); izzie-code: the top 5 of each search (retrieval.ts:175-176)",
    )
    query_min_term_length: int = param(
        3,
        lo=1,
        doc="izzie-code extractQueryTerms: a query word is kept when its letters number > 2 "
        "(context-retrieval.ts:219)",
    )
    query_stop_words: tuple[str, ...] = param(
        tuple(
            "the a an and or but in on at to for of with by from as is was are been be have "
            "has had do does did will would should could can may might must what when where "
            "who which how why".split()
        ),
        doc="izzie-code extractQueryTerms stop words (context-retrieval.ts:167-211)",
    )
    preference_limit: int = param(
        0,
        lo=0,
        doc="izzie-code: every message also searches 'user preferences name' (limit 5) for "
        "preference memories of importance >= 0.8, merged first (context-retrieval.ts:275-281, "
        "303-314); 0 = no such search (003)",
    )
    preference_query: str = param(
        "user preferences name", doc="izzie-code: the preference search (context-retrieval.ts:276)"
    )
    preference_min_importance: float = param(
        0.8, lo=0.0, hi=1.0, doc="izzie-code: minImportance 0.8 (context-retrieval.ts:279)"
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
    # the fields the long studies move without --fields (memsim sensitivity, --sobol, tune;
    # results/sensitivity.md, tuning.md), and the tuning's trials
    study_fields: ClassVar[dict[str, tuple[str, ...]]] = {
        "sensitivity": (
            "min_strength",
            "importance_high",
            "importance_med",
            "importance_low",
            "importance_slowing",
            "default_importance_preference",
            "default_importance_fact",
            "default_importance_relationship",
            "default_importance_decision",
            "default_importance_event",
            "default_importance_sentiment",
            "default_importance_reminder",
            "decay_rate_fact",
            "decay_rate_preference",
            "search_limit",
        ),
        "sobol": (
            "search_limit",
            "decay_rate_fact",
            "decay_rate_preference",
            "default_importance_fact",
            "importance_slowing",
        ),
        "tune": (
            "search_limit",
            "decay_rate_fact",
            "decay_rate_preference",
            "default_importance_fact",
            "default_importance_preference",
        ),
    }
    study_trials: ClassVar[int] = 16
    statuses: ClassVar[Statuses] = Statuses(
        ("active", "forgotten"),
        terminal=frozenset({"forgotten"}),
        retrievable=frozenset({"active"}),
    )
    kinds: ClassVar[tuple[str, ...]] = ("memory",)
    strength_range = (0.0, 1.0)
    curve_attributes: ClassVar[frozenset[str]] = frozenset()
    # no search goes through a candidate index: recall's exact scan keeps each query
    # vector's products between calls, which the IVF index lost to (docs/performance.md)

    def setup(self) -> None:
        s = self.store
        s.add_column("importance", np.float64, 0.0)
        s.add_column("decay_rate", np.float64, 0.0)
        s.add_column("category", np.int8, 0)  # index into CATEGORIES
        s.add_column("source_date", np.float64, np.nan)
        s.add_column("confidence", np.float64, 1.0)  # the extraction's (izzie-code ranks by it)
        self.source_type: list[str] = []  # "chat" for every memory (003 §Save Memories)
        self.source_id: list[str] = []  # chat session id
        self._category_rows: dict[str, tuple[str, int, float, float]] = {}
        self._bm25: BM25Index | None = None  # izzie-code's keyword index, built on first use

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
            confidence=np.array([c.confidence for c in claims], dtype=np.float64),
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
        if self.params.search == "bm25":
            return self._recall_keyword(queries, now)
        qvecs = [self.llm.embed_query(q) for q in queries]
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

    # -- izzie-code: keyword search (retrieval.ts searchMemories, context-retrieval.ts) ------
    def query_terms(self, text: str) -> str:
        """extractQueryTerms (context-retrieval.ts:166-233): the message's lower-cased words
        whose letters (punctuation removed) number at least query_min_term_length and are no
        stop word, then its capitalized runs lower-cased, each once; the message itself when
        none is left."""
        p = self.params
        stop = set(p.query_stop_words)
        cleaned = [(w, re.sub(r"[^A-Za-z0-9_]", "", w)) for w in text.lower().split()]
        words = [w for w, c in cleaned if len(c) >= p.query_min_term_length and c not in stop]
        names = [m.lower() for m in re.findall(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b", text)]
        return " ".join(dict.fromkeys(words + names)) or text

    def keyword_scores(self, text: str) -> np.ndarray:
        """Every stored memory's BM25 score for ``text`` (bm25_k1, bm25_b; 0: no shared
        word), the index brought up to the store's rows first."""
        if self._bm25 is None:
            self._bm25 = BM25Index()
        index, s = self._bm25, self.store
        index.add(s.text[index.n : s.n])
        return index.scores(tokens(text), self.params.bm25_k1, self.params.bm25_b)

    def _keyword_search(self, text: str, limit: int, salt: str) -> np.ndarray:
        """Weaviate's bm25 over every stored memory's content (deleted ones included: the
        code drops them after the limit, retrieval.ts:92): the ``limit`` best rows with a
        positive score, best first, ties in the seeded order of memory identity."""
        scores = self.keyword_scores(text)
        hit = np.flatnonzero(scores > 0)
        if not len(hit):
            return hit
        order = ranking.topk(scores[hit], min(limit, len(hit)), self.store.tie_keys(salt, hit))
        return hit[order]

    def _code_search(
        self,
        text: str,
        limit: int,
        now: float,
        salt: str,
        *,
        keep: Callable[[np.ndarray], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """searchMemories (retrieval.ts:66-176): the search's rows, then the filters after
        its limit (not deleted, ``keep``), ranked by rankMemoriesByRelevance (decay.ts:95-103,
        a stable sort: ties keep the search's order). Returns rows and scores, best first."""
        p = self.params
        found = self._keyword_search(text, limit, salt)
        found = found[self.store.retrievable()[found]]
        found = found[keep(found)]
        score = (
            p.rank_weight_strength * self.strength(now, found)
            + p.rank_weight_confidence * self.store["confidence"][found]
            + p.rank_weight_importance * self.store["importance"][found]
        )
        order = np.argsort(-score, kind="stable")
        return found[order], score[order]

    def _recall_keyword(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        """izzie-code's retrieveContext (context-retrieval.ts:240-330) per query, in order:
        the keyword search of the message's terms (limit search_limit, then strength >=
        min_strength) and, when preference_limit > 0, the preference search (its query,
        limit preference_limit, preference memories of importance >= preference_min_importance)
        run together; the preferences first, then the other results not among them, at most
        k. Each search refreshes its own top refresh_top (retrieval.ts:175-176)."""
        p, s = self.params, self.store
        pref_code = CATEGORIES.index("preference")
        out: list[Ranking] = []
        for q in queries:
            if s.n == 0:
                out.append(Ranking.empty())
                continue
            rows, scores = self._code_search(
                self.query_terms(q.text),
                max(p.search_limit, 1),
                now,
                f"{self.seed}:{q.id}",
                keep=lambda r: self.strength(now, r) >= p.min_strength,
            )
            searches = [rows]
            if p.preference_limit > 0:
                prefs, pref_scores = self._code_search(
                    p.preference_query,
                    p.preference_limit,
                    now,
                    f"{self.seed}:{q.id}:preferences",
                    keep=lambda r: (
                        (s["category"][r] == pref_code)
                        & (s["importance"][r] >= p.preference_min_importance)
                    ),
                )
                searches.insert(0, prefs)
                fresh = ~np.isin(rows, prefs)
                rows = np.concatenate([prefs, rows[fresh]])
                scores = np.concatenate([pref_scores, scores[fresh]])
            ids, sc = rows[: q.k], scores[: q.k].astype(np.float64)
            out.append(Ranking(ids, np.minimum.accumulate(sc) if len(sc) else sc))
            for found in searches:  # (both searches ranked before either refreshes)
                top = self.refreshed(found)
                if len(top):
                    s["last_access"][top] = now
                    s["access_count"][top] += 1
        return out

    def _fresh_strength(self, rows: np.ndarray) -> np.ndarray:
        """Strength at 0 days since access: importance (document) or 1 (code form)."""
        if self.params.strength_form == "code":
            return np.ones(len(rows))
        return np.asarray(self.store["importance"][rows], dtype=np.float64)

    def refreshed(self, ids: np.ndarray) -> np.ndarray:
        """The returned memories a retrieval refreshes: all of them, or the first
        ``refresh_top`` (izzie-code)."""
        return ids[: self.params.refresh_top] if self.params.refresh_top else ids

    def _touch(self, ids: np.ndarray, now: float, strength: np.ndarray | _RowStrength) -> None:
        ids = self.refreshed(ids)
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
    """izzie-code: Izzie's public code where it departs from 003 ("each system as built"),
    every other constant the document's. Upstream bobmatnyc/izzie2 (the index holds only
    two of its memory files, none of these); followed in its fork Zeeeepa/izzie2 at commit
    1604fd6323de75da14fb4fc9bc709b7074de9051, the one commit at which the index holds all
    three files: src/lib/chat/context-retrieval.ts (retrieveContext, extractQueryTerms),
    src/lib/memory/retrieval.ts (searchMemories) and src/lib/memory/decay.ts (strength,
    rankMemoriesByRelevance). Facts and lines: docs/policies/izzie-code.md; tests:
    tests/policies/test_izzie_code.py."""

    strength_form: str = param(
        "code",
        choices=("document", "code"),
        doc="izzie-code: strength = exp(-rate x (1 - 0.5 x importance) x days) (decay.ts:50-55)",
    )
    limit_before_filter: bool = param(
        True,
        doc="izzie-code: the search limit is applied before the strength filter "
        "(retrieval.ts:78-79 then 137-141)",
    )
    search_limit: int = param(
        10,
        lo=1,
        doc="izzie-code: searchMemories limit = maxMemories 10 (context-retrieval.ts:65, 272)",
    )
    search: str = param(
        "bm25",
        choices=("cosine", "bm25"),
        doc="izzie-code: keyword search, collection.query.bm25 (retrieval.ts:78-79)",
    )
    refresh_top: int = param(
        5, lo=0, doc="izzie-code: the top 5 of each search are refreshed (retrieval.ts:175-176)"
    )
    preference_limit: int = param(
        5,
        lo=0,
        doc="izzie-code: the preference search, limit 5, merged first "
        "(context-retrieval.ts:275-281, 303-314)",
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


def tokens(text: str) -> list[str]:
    """Weaviate's word tokenization: lower-cased runs of letters and digits."""
    return re.findall(r"[a-z0-9]+", text.lower())


class BM25Index:
    """An exact BM25 over documents added in row order (Weaviate's bm25 on one property):
    ``idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))`` and
    ``idf(t) x tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`` summed over the query's
    distinct tokens, N the documents, n_t those holding t, dl a document's tokens and avgdl
    their mean. float64 throughout."""

    def __init__(self) -> None:
        self.n = 0
        self._length: list[int] = []
        self._postings: dict[str, tuple[list[int], list[int]]] = {}  # token -> rows, counts

    def add(self, texts: Sequence[str]) -> None:
        """Index the next documents (rows n, n + 1, ...)."""
        for text in texts:
            counts: dict[str, int] = {}
            for t in tokens(text):
                counts[t] = counts.get(t, 0) + 1
            for t, c in counts.items():
                rows, tfs = self._postings.setdefault(t, ([], []))
                rows.append(self.n)
                tfs.append(c)
            self._length.append(sum(counts.values()))
            self.n += 1

    def scores(self, query: Sequence[str], k1: float, b: float) -> np.ndarray:
        """Every document's BM25 score for the query tokens (0 where none occurs)."""
        out = np.zeros(self.n)
        if not self.n:
            return out
        length = np.asarray(self._length, dtype=np.float64)
        avgdl = float(length.mean()) or 1.0
        for t in dict.fromkeys(query):
            posting = self._postings.get(t)
            if posting is None:
                continue
            rows = np.asarray(posting[0], dtype=np.int64)
            tf = np.asarray(posting[1], dtype=np.float64)
            idf = math.log(1.0 + (self.n - len(rows) + 0.5) / (len(rows) + 0.5))
            out[rows] += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length[rows] / avgdl))
        return out
