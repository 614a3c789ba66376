"""Engram (seed 001): episodes stored as they arrive; beliefs only from cold consolidation.

Beliefs carry Beta-Bernoulli confidence ``alpha / (alpha + beta)`` (001 "Bayesian Brain"),
storage strength ``evidence`` that never decreases, and retrieval strength
``R(t) = exp(-t / S)`` whose stability S grows with spaced retrievals (001 §Belief Lifecycle
7). The consolidation cycle (001 §How It Works 1-6) clusters new episodes, synthesizes one
candidate belief per cluster, matches it against active beliefs (reinforce > 0.92,
four-way classification in [0.70, 0.92], novel below 0.70), then runs the rule-based
revision / split / merge / archival gates, within a per-cycle budget whose unfinished
work carries over. Choices the document leaves open are Params fields, explained in
docs/policies/engram.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine import decay, ranking
from memsim.engine.arrays import as_float64
from memsim.engine.errors import MemsimError
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.llm import CONTRADICTS, PARTIAL, SUPPORTS
from memsim.engine.params import Params, param
from memsim.engine.policy import Job, Outcome, Policy, Ranking, SimilarityRule, in_episode_order
from memsim.engine.store import Statuses


def beta_mean(alpha: ArrayLike, beta: ArrayLike) -> np.ndarray:
    """``alpha / (alpha + beta)``: Engram belief confidence (Beta posterior mean)."""
    a = as_float64(alpha)
    return a / (a + as_float64(beta))


def stability_update(
    stability: ArrayLike, hours_since_last: ArrayLike, cap: ArrayLike, bonus: ArrayLike = 0.1
) -> np.ndarray:
    """``min(cap, S * (1 + bonus * ln(1 + hours / 24)))``: Engram spaced-repetition bonus
    on each retrieval (bonus 0.1, cap 365 days in the seed)."""
    grown = as_float64(stability) * (
        1.0 + as_float64(bonus) * np.log1p(as_float64(hours_since_last) / 24.0)
    )
    return np.minimum(as_float64(cap), grown)


def beta_mean_ref(alpha: float, beta: float) -> float:
    return alpha / (alpha + beta)


def stability_update_ref(
    stability: float, hours_since_last: float, cap: float, bonus: float = 0.1
) -> float:
    return min(cap, stability * (1 + bonus * math.log(1 + hours_since_last / 24)))


_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric runs: ``"owner.city"`` -> ``["owner", "city"]``."""
    return _TOKEN.findall(text.lower())


def retrieval_strength(t_days: np.ndarray, stability: np.ndarray) -> np.ndarray:
    """001 §Belief Lifecycle 7: ``R(t) = exp(-t / S)``, t and S in days."""
    return decay.retrieval_strength(t_days, stability)


def updated_stability(
    stability: np.ndarray, hours_since_last: np.ndarray, bonus: float, cap: float
) -> np.ndarray:
    """001 §Belief Lifecycle 7: ``S *= 1 + bonus * ln(1 + hours/24)``, capped at ``cap`` days."""
    return stability_update(stability, hours_since_last, cap, bonus=bonus)


def belief_score(
    confidence: np.ndarray,
    cosine: np.ndarray,
    r: np.ndarray,
    bm25: np.ndarray,
    w_sim: float,
    w_r: float,
    w_bm25: float,
) -> np.ndarray:
    """001 §Architecture Decisions: ``0.5 * (confidence * vectorSim) + 0.3 * R + 0.2 * bm25``."""
    return decay.weighted_sum((w_sim, w_r, w_bm25), (np.asarray(confidence) * cosine, r, bm25))


@dataclass(frozen=True)
class EngramParams(Params):
    """Every BELIEF_CONFIG constant of 001 §Configuration, plus documented choices."""

    episode_threshold: int = param(20, lo=1, doc="001 §Configuration EPISODE_THRESHOLD")
    min_cluster_size: int = param(3, lo=1, doc="001 §Configuration MIN_CLUSTER_SIZE")
    cluster_similarity: float = param(
        0.70, lo=-1.0, hi=1.0, doc="001 §Configuration CLUSTER_SIMILARITY_THRESHOLD"
    )
    reinforce_threshold: float = param(
        0.92, lo=-1.0, hi=1.0, doc="001 §Configuration REINFORCE_THRESHOLD (strict >)"
    )
    related_threshold: float = param(
        0.70, lo=-1.0, hi=1.0, doc="001 §Configuration RELATED_THRESHOLD (>= classifies; choice)"
    )
    min_confidence_for_recall: float = param(
        0.4, lo=0.0, hi=1.0, doc="001 §Configuration MIN_CONFIDENCE_FOR_RECALL (>=)"
    )
    revision_confidence: float = param(
        0.4, lo=0.0, hi=1.0, doc="001 §Belief Lifecycle 4 REVISION_CONFIDENCE_THRESHOLD (<)"
    )
    revision_prior_confidence: float = param(
        0.5, lo=0.0, hi=1.0, doc="001 §Belief Lifecycle 4 'previously above 0.5' (>)"
    )
    revision_min_contradictions: int = param(3, lo=0, doc="001 §Belief Lifecycle 4 (>=)")
    revision_min_evidence: int = param(5, lo=0, doc="001 §Belief Lifecycle 4 (>=)")
    archive_confidence: float = param(
        0.3, lo=0.0, hi=1.0, doc="001 §Configuration ARCHIVE_CONFIDENCE_THRESHOLD (<)"
    )
    split_min_contradictions: int = param(
        3, lo=0, doc="001 §Configuration SPLIT_MIN_CONTRADICTIONS (>=)"
    )
    split_min_supports: int = param(3, lo=0, doc="001 §Configuration SPLIT_MIN_SUPPORTS (>=)")
    split_min_partial: int = param(2, lo=0, doc="001 §Configuration SPLIT_MIN_PARTIAL_COUNT (>=)")
    split_min_evidence: int = param(5, lo=0, doc="001 §Configuration SPLIT_MIN_EVIDENCE (>=)")
    merge_min_similarity: float = param(
        0.92, lo=-1.0, hi=1.0, doc="001 §Configuration MERGE_MIN_SIMILARITY (>)"
    )
    merge_min_confidence: float = param(
        0.6, lo=0.0, hi=1.0, doc="001 §Configuration MERGE_MIN_CONFIDENCE (>)"
    )
    merge_cooldown_days: float = param(
        7.0, lo=0.0, doc="001 §Configuration MERGE_COOLDOWN_DAYS (days, >=)"
    )
    merge_cooldown_from: str = param(
        "revision",
        choices=("revision", "update"),
        doc="001 §Belief Lifecycle 6 'neither revised in the last 7 days': the cooldown "
        "counts from the revision that made the belief (a belief never revised passes); "
        "'update': from its last update (001 §Configuration 'days since last update'), "
        "under which a belief touched this cycle never merges",
    )
    merges_per_cycle: int = param(1, lo=0, doc="001 §Belief Lifecycle 6 'only one pair per cycle'")
    archive_stale_days: float = param(
        90.0, lo=0.0, doc="001 §Configuration ARCHIVE_STALE_DAYS (>=; choice)"
    )
    archive_min_evidence: int = param(5, lo=0, doc="001 §Configuration ARCHIVE_MIN_EVIDENCE (<)")
    gate_scope: str = param(
        "unreinforced",
        choices=("unreinforced", "affected", "all"),
        doc="001 §How It Works 5-6: merge needs a belief affected this cycle in the pair (5 "
        "'on affected beliefs') and every active belief not reinforced in this cycle is "
        "evaluated for archival (6); 'affected': archival of affected beliefs only; 'all': "
        "merge and archival scan every active belief (the code's checkAndMerge, "
        "archiveDecayed)",
    )
    strict_day_gates: bool = param(
        False,
        doc="001 gives no comparison for '90 days' or '7 days' (>=, choice); engram-code: "
        "belief-utils.ts shouldArchive and shouldMerge compare elapsed days strictly (>)",
    )
    archive_long_stale_days: float = param(
        -1.0,
        lo=-1.0,
        doc="not in 001 (-1 = off); engram-code: belief-utils.ts shouldArchive also archives "
        "a belief not reinforced for > 180 days whose confidence is < 0.5",
    )
    archive_long_stale_confidence: float = param(
        0.5,
        lo=0.0,
        hi=1.0,
        doc="engram-code: belief-utils.ts shouldArchive, confidence < 0.5 with > 180 days "
        "(read only when archive_long_stale_days >= 0)",
    )
    max_belief_bites: int = param(2, lo=0, doc="001 §Configuration MAX_BELIEF_BITES")
    max_clusters_per_cycle: int = param(10, lo=1, doc="001 §Configuration MAX_CLUSTERS_PER_CYCLE")
    max_classifications: int = param(
        5, lo=1, doc="001 §Configuration MAX_CLASSIFICATIONS_PER_CLUSTER"
    )
    cycle_budget_s: float = param(
        120.0, lo=0.0, doc="001 §Configuration MAX_CYCLE_BUDGET_MS / 1000"
    )
    call_seconds: float = param(
        10.0,
        lo=0.0,
        lo_open=True,
        doc=(
            "001 §Configuration PER_CALL_TIMEOUT_MS: modelled time per LLM call (choice: every "
            "call takes its timeout)"
        ),
    )
    cycle_every_days: float = param(
        1.0 / 6.0, lo=0.0, lo_open=True, doc="001 §How It Works: the 4-hour cold cycle"
    )
    initial_stability: float = param(
        7.0, lo=0.0, lo_open=True, doc="001 §Belief Lifecycle 7: S at creation (choice; not given)"
    )
    stability_bonus: float = param(
        0.1, lo=0.0, doc="001 §Belief Lifecycle 7: S *= 1 + 0.1 ln(1 + h/24)"
    )
    stability_cap: float = param(
        365.0, lo=0.0, lo_open=True, doc="001 §Belief Lifecycle 7: capped at 365 days"
    )
    w_similarity: float = param(
        0.5, lo=0.0, doc="001 §Architecture Decisions: 0.5 x (confidence x vectorSim)"
    )
    w_retrieval: float = param(
        0.3, lo=0.0, doc="001 §Architecture Decisions: 0.3 x retrievalStrength"
    )
    w_bm25: float = param(0.2, lo=0.0, doc="001 §Architecture Decisions: 0.2 x bm25Score")
    episode_w_similarity: float = param(
        0.5,
        lo=0.0,
        doc=(
            "choice: episode bites = 0.5 cos + 0.3 R (001 leaves episode scoring to "
            "handleMemoryRecall)"
        ),
    )
    episode_w_retrieval: float = param(0.3, lo=0.0, doc="choice: see episode_w_similarity")
    prior_alpha: float = param(
        1.0, lo=0.0, lo_open=True, doc="001 §Belief Lifecycle 1: alpha=1 (uniform prior)"
    )
    prior_beta: float = param(
        1.0, lo=0.0, lo_open=True, doc="001 §Belief Lifecycle 1: beta=1 (uniform prior)"
    )
    forget_deletes_beliefs: bool = param(
        True, doc="choice: forgetting an episode deletes beliefs whose evidence holds it"
    )
    evidence_per_episode: bool = param(
        False,
        doc="001 §Belief Lifecycle 1-3: a new belief starts at alpha=1 and each SUPPORTS / "
        "CONTRADICTS adds 1; engram-code: belief-consolidator.ts counts every episode of the "
        "cluster (alpha = 1 + N at creation, +N per SUPPORTS or CONTRADICTS, +N/2 to both "
        "on PARTIAL)",
    )
    recall_confidence_strict: bool = param(
        False,
        doc="001 §Configuration MIN_CONFIDENCE_FOR_RECALL 0.4 (>=, choice); engram-code: "
        "the recall handler skips confidence <= 0.4 (strictly above)",
    )
    match_first: bool = param(
        False,
        doc="001 §How It Works 4: every classified belief takes the cluster's evidence and a "
        "cluster all IRRELEVANT makes no belief; engram-code: belief-consolidator.ts "
        "matchCandidate stops at the first SUPPORTS / CONTRADICTS / PARTIAL and creates a "
        "new belief when none matched",
    )
    # -- code variant (engram-code): what Engram's public code does, not in 001 ---------------
    never_accessed_strength: float = param(
        -1.0,
        lo=-1.0,
        hi=1.0,
        doc="001 §Belief Lifecycle 7 decays R from creation (-1 = off); engram-code: a memory "
        "never accessed has R = 0.5 ('neutral')",
    )
    stability_on_recall: bool = param(
        True,
        doc="001 §Belief Lifecycle 7: each retrieval raises S; engram-code: S changes only on "
        "expand (a full view memsim streams never ask for), so recall leaves S alone",
    )


class Engram(Policy[EngramParams]):
    """Engram's dual episodic/semantic memory (seed 001). See the module docstring."""

    Params: ClassVar[type[Params]] = EngramParams
    # the fields the long studies move without --fields (memsim sensitivity, --sobol, tune;
    # results/sensitivity.md, tuning.md), and the tuning's trials
    study_fields: ClassVar[dict[str, tuple[str, ...]]] = {
        "sensitivity": (
            "reinforce_threshold",
            "related_threshold",
            "cluster_similarity",
            "min_confidence_for_recall",
            "archive_confidence",
            "revision_confidence",
            "revision_prior_confidence",
            "merge_min_similarity",
            "merge_min_confidence",
            "never_accessed_strength",
            "episode_threshold",
            "min_cluster_size",
            "archive_stale_days",
            "archive_min_evidence",
            "initial_stability",
            "merge_cooldown_days",
        ),
        "sobol": (
            "never_accessed_strength",
            "initial_stability",
            "min_cluster_size",
            "related_threshold",
            "reinforce_threshold",
            "episode_threshold",
            "archive_confidence",
        ),
        "tune": (
            "reinforce_threshold",
            "archive_confidence",
            "related_threshold",
            "min_confidence_for_recall",
            "cluster_similarity",
        ),
    }
    study_trials: ClassVar[int] = 24
    similarity_rules: ClassVar[tuple[SimilarityRule, ...]] = (
        SimilarityRule("reinforce (001 REINFORCE_THRESHOLD)", "reinforce_threshold", False),
        SimilarityRule("classify as related (001 RELATED_THRESHOLD)", "related_threshold"),
        SimilarityRule("cluster episodes (001 CLUSTER_SIMILARITY)", "cluster_similarity"),
        SimilarityRule("merge beliefs (001 MERGE_MIN_SIMILARITY)", "merge_min_similarity", False),
    )
    statuses: ClassVar[Statuses] = Statuses(
        ("active", "revised", "split", "merged", "archived", "deleted"),
        terminal=frozenset({"deleted"}),
        retrievable=frozenset({"active"}),
    )
    kinds: ClassVar[tuple[str, ...]] = ("episode", "belief")
    curve_attributes: ClassVar[frozenset[str]] = frozenset(
        {"alpha", "beta", "stability", "belief_confidence", "evidence_count"}
    )

    params: EngramParams

    # -- set-up -----------------------------------------------------------------
    def setup(self) -> None:
        p = self.params
        self.schedule = (Job("consolidate", p.cycle_every_days),)
        s = self.store
        s.add_column("alpha", np.float64, p.prior_alpha)
        s.add_column("beta", np.float64, p.prior_beta)
        s.add_column("stability", np.float64, p.initial_stability)
        s.add_column("evidence", np.int64, 0)  # storage strength: never decreases
        s.add_column("n_support", np.int64, 0)  # supporting episodes
        s.add_column("n_contra", np.int64, 0)  # contradicting episodes
        s.add_column("n_partial", np.int64, 0)  # PARTIAL classifications
        s.add_column("last_reinforced", np.float64, np.nan)
        s.add_column("peak_confidence", np.float64, 0.0)  # highest confidence ever held
        s.add_column("parent", np.int64, -1)  # parent_belief_id (revision / split)
        s.add_column("revised_at", np.float64, -np.inf)  # made by a revision at (never: -inf)
        self.fields: dict[
            int, tuple[str, str, str, str]
        ] = {}  # subject, predicate, context, timeframe
        self.evidence_rows: dict[
            int, dict[str, list[int]]
        ] = {}  # belief -> {"support"/"contra"/"partial": episode rows}
        self.episode_row_of: dict[str, list[int]] = {}
        self.episode_project: dict[str, str] = {}  # episode id -> project ("" = global)
        self.arrivals: list[int] = []  # episode rows in arrival order
        self.arrival_episodes: list[str] = []  # the episode id of each arrival row
        self.checkpoint = 0  # arrivals[:checkpoint] have been read by a cycle
        self.queue: list[
            tuple[int, ...]
        ] = []  # clusters read but not yet processed (budget carry-over)
        self._bm25_cache: tuple[tuple[int, ...], Any] | None = None
        # recall's episode bites: each row's retrieval term (episode_w_retrieval x R) capped
        # (R only falls until the row is recalled again; ranking.DecayCaps)
        top = p.episode_w_retrieval * max(1.0, p.never_accessed_strength)
        self._retrieval_caps = ranking.DecayCaps(top)

    @property
    def call_budget(self) -> int:
        """The 2-minute cycle budget as a number of LLM calls (120 s / 10 s = 12)."""
        return int(math.floor(self.params.cycle_budget_s / self.params.call_seconds + 1e-9))

    # -- ingest: episodes stored as they arrive -------------------------------------
    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        """Every episode's claims stored as bites, in order. Storing decides nothing, so a
        batch is extracted, embedded and added at once: the same rows, outcomes and store as
        one episode at a time (benchmarks/bench_ingest.py checks it)."""
        for ep in episodes:
            if ep.project:
                self.episode_project[ep.id] = ep.project
        claims_of = [self._claims_of(ep) for ep in episodes]
        # each claim's episode (index), item key <episode>#<i> and episode text
        owner = [e for e, claims in enumerate(claims_of) for _ in claims]
        flat = [c for claims in claims_of for c in claims]
        keys = [
            f"{ep.id}#{i}" for ep, claims in zip(episodes, claims_of) for i in range(len(claims))
        ]
        texts = [ep.text for ep, claims in zip(episodes, claims_of) for _ in claims]
        vecs, ok = self._embed_claims(flat, keys, texts, np.float32)
        # each episode's outcomes as one episode at a time gives them: its drops, its rows
        drops: dict[int, list[Outcome]] = {}
        if ok.all():
            kept = flat
        else:
            at: dict[int, int] = {}  # a claim's position within its episode
            for j in range(len(flat)):
                e = owner[j]
                at[e] = i = at.get(e, -1) + 1
                if not ok[j]:
                    drop = Outcome(episodes[e].id, "drop", -1, f"claim {i}: embedding failed")
                    drops.setdefault(e, []).append(drop)
            good = np.flatnonzero(ok).tolist()
            vecs, owner, texts = vecs[good], [owner[j] for j in good], [texts[j] for j in good]
            kept = [flat[j] for j in good]
        created: list[Outcome] = []
        if kept:
            ids = [episodes[e].id for e in owner]
            rows = self.store.add(
                now,
                vecs,
                texts=texts,
                claims=kept,
                provenance=[(ep_id,) for ep_id in ids],
                status="active",
                kind="episode",
                last_reinforced=now,
                evidence=1,
            ).tolist()
            self.arrivals.extend(rows)
            self.arrival_episodes.extend(ids)
            row_of = self.episode_row_of
            for r, ep_id in zip(rows, ids):
                row_of.setdefault(ep_id, []).append(r)
            created = [Outcome(ep_id, "create", r, "episode") for r, ep_id in zip(rows, ids)]
        return in_episode_order(len(episodes), drops, owner, created)

    def _claims_of(self, ep: Episode) -> tuple[Claim, ...]:
        claims = self.llm.extract(ep)
        if not claims:  # extraction failed: keep the episode as a text-only bite
            claims = (Claim(key="", value=ep.text),)
        return tuple(claims)

    def _embed_claims(
        self,
        claims: Sequence[Claim],
        keys: Sequence[str],
        texts: Sequence[str],
        dtype: type[np.floating[Any]] = np.float64,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Claim vectors; where the claims embedder fails, the text embedder; ok mask.
        float64 for similarities; ``dtype=np.float32`` for rows that only go to the store
        (the LLM's own numbers, not copied unless a failed row is filled in)."""
        emb = self.llm.embed(list(claims), keys=list(keys))
        vecs = np.asarray(emb.vectors, dtype=dtype)
        ok = np.asarray(emb.ok, dtype=bool)
        if not ok.all():
            vecs, ok = np.array(vecs, dtype=dtype, copy=True), ok.copy()
            bad = np.flatnonzero(~ok)
            retry = self.llm.embed(
                [texts[i] for i in bad.tolist()], keys=[keys[i] + ":text" for i in bad.tolist()]
            )
            vecs[bad] = retry.vectors
            ok[bad] = retry.ok
        return vecs, ok

    # -- confidence / strength ----------------------------------------------------
    def confidence(self, rows: Any = None) -> np.ndarray:
        """001 §Architecture Decisions: ``alpha / (alpha + beta)``."""
        a, b = self.store["alpha"], self.store["beta"]
        if rows is not None:
            a, b = a[rows], b[rows]
        return beta_mean(a, b)

    def _since_access(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        return self.store.days_since_access(now, rows)

    def strength(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """R(t) = exp(-t/S) for every row (beliefs and episode bites alike), or for ``rows``
        only (the same numbers), t from the last access or creation."""
        s = self.store
        r = retrieval_strength(self._since_access(now, rows), s.at("stability", rows))
        if self.params.never_accessed_strength >= 0.0:  # engram-code: neutral R if never seen
            r = np.where(
                np.isnan(s.at("last_access", rows)), self.params.never_accessed_strength, r
            )
        return r

    # -- recall ------------------------------------------------------------------
    def _bm25_scores(self, belief_rows: np.ndarray, tokens: list[str]) -> np.ndarray:
        """BM25 (rank_bm25 Okapi) of ``tokens`` against the texts of ``belief_rows``,
        clipped at 0 and divided by the query's best score (so in [0, 1])."""
        if len(belief_rows) == 0 or not tokens:
            return np.zeros(len(belief_rows))
        key = tuple(belief_rows.tolist())
        if self._bm25_cache is None or self._bm25_cache[0] != key:
            from rank_bm25 import BM25Okapi

            corpus = [tokenize(self.store.text[r]) or ["_"] for r in key]
            self._bm25_cache = (key, BM25Okapi(corpus))
        raw = np.maximum(np.asarray(self._bm25_cache[1].get_scores(tokens), dtype=np.float64), 0.0)
        top = raw.max()
        return raw / top if top > 0 else np.zeros_like(raw)

    def _query_cosines(self, q: Query) -> np.ndarray:
        """The query's float32 product with every row, held in float64 (zeros when the
        query embedding failed)."""
        qv = self.llm.embed_query(q)
        if qv is None:
            return np.zeros(self.store.n)
        return self.store.query_products(qv).astype(np.float64)  # kept between its calls

    def _belief_rows(self, q: Query) -> np.ndarray:
        """The beliefs ``q`` may recall, ascending: active, confident enough, and (001
        §Testing) project-scoped ones only within their project, global ones everywhere."""
        rows = self.store.rows_with(("active",), ("belief",))
        conf, floor = self.confidence(rows), self.params.min_confidence_for_recall
        rows = rows[conf > floor] if self.params.recall_confidence_strict else rows[conf >= floor]
        if self.episode_project:
            rows = np.array(
                [r for r in rows.tolist() if self.project_of(r) in ("", q.project)],
                dtype=np.int64,
            )
        return rows

    def _belief_scores(self, q: Query, rows: np.ndarray, cos: np.ndarray, now: float) -> np.ndarray:
        """001 §Architecture Decisions: the belief score of each of ``rows``."""
        p = self.params
        bm = self._bm25_scores(rows, tokenize(q.text))
        conf, r = self.confidence(rows), self.strength(now, rows)
        return belief_score(conf, cos[rows], r, bm, p.w_similarity, p.w_retrieval, p.w_bm25)

    def _episode_scores(self, cos: np.ndarray, r: np.ndarray | float) -> np.ndarray:
        """An episode bite's score from its cosine and retrieval strength."""
        return self.params.episode_w_similarity * cos + self.params.episode_w_retrieval * r

    def _episode_ok(self) -> np.ndarray:
        """The rows recall may return as episode bites: active, not beliefs (a new array,
        from the mask the store keeps between calls, MemoryStore.kept_mask; Engram's kinds
        are episode and belief): taken anew per query it cost ~80 us at 150,000 rows, and
        rows are added between most queries."""
        ok: np.ndarray = self.store.kept_mask(["active"], ["episode"])
        return ok

    def _episode_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_episode_ok` and its negation, read-only (recall's bound needs both)."""
        ok = self._episode_ok()
        masks = (ok, ~ok)
        for m in masks:
            m.flags.writeable = False
        return masks

    def score_query(self, q: Query, now: float) -> tuple[np.ndarray, np.ndarray]:
        """(belief scores, episode scores) over all rows; -inf where not eligible."""
        s = self.store
        cos = self._query_cosines(q)
        b_rows = self._belief_rows(q)
        b_score = np.full(s.n, -np.inf)
        b_score[b_rows] = self._belief_scores(q, b_rows, cos, now)
        e_score = np.where(
            self._episode_ok(), self._episode_scores(cos, self.strength(now)), -np.inf
        )
        return b_score, e_score

    def _top_episodes(self, q: Query, cos: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`rank` of the episode scores of :meth:`score_query` and those scores, with
        the retrieval strength computed only for the rows that can reach the top k: each
        row's score with its retrieval term at the row's cap (at least the term now:
        ranking.DecayCaps; the same operations, so at least the score as computed) bounds it
        (ranking.topk_support). With the top of R (1) for every row instead, some 2,000 to
        20,000 rows a query were scored exactly at the steady year's 100,000; with the caps,
        50 to 80."""
        e_ok, not_ok = self._episode_masks()
        w = self.params.episode_w_retrieval
        # the score's operations, its retrieval term (w x R, as computed) at the row's cap
        bound = self.params.episode_w_similarity * cos
        bound += self._retrieval_caps.at(now, self.store.n, lambda t: w * self.strength(t))
        np.copyto(bound, -np.inf, where=not_ok)

        def exact(rows: np.ndarray) -> np.ndarray:
            r = self.strength(now, rows)
            return np.where(e_ok[rows], self._episode_scores(cos[rows], r), -np.inf)

        rows, scores = ranking.topk_support(bound, exact, q.k)
        at = self.rank_among(rows, scores, q.k, q.id)
        return rows[at], scores[at]

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        out = []
        for q in queries:  # sequential: a query sees the accesses of the ones before it
            # the rankings of score_query's two score vectors, computed on fewer rows
            cos = self._query_cosines(q)
            b_rows = self._belief_rows(q)
            b_all = self._belief_scores(q, b_rows, cos, now)
            at = self.rank_among(b_rows, b_all, min(self.params.max_belief_bites, q.k), q.id)
            episodes, e_scores = self._top_episodes(q, cos, now)
            cand = np.concatenate([b_rows[at], episodes])
            scores = np.concatenate([b_all[at], e_scores])
            tb = self.store.tie_keys(f"{self.seed}:{q.id}", cand)
            order = ranking.topk(scores, q.k, tb)
            ids, sc = cand[order], np.minimum.accumulate(scores[order])
            self._access(ids, now)
            out.append(Ranking(ids.astype(np.int64), sc.astype(np.float64)))
        return out

    def _access(self, rows: np.ndarray, now: float) -> None:
        """001 §Belief Lifecycle 7: each retrieval raises S by the spacing bonus."""
        if len(rows) == 0:
            return
        s, p = self.store, self.params
        if p.stability_on_recall:
            hours = self._since_access(now, rows) * 24.0  # of the recalled rows only
            s["stability"][rows] = updated_stability(
                s["stability"][rows], hours, p.stability_bonus, p.stability_cap
            )
        s["last_access"][rows] = now
        s["access_count"][rows] += 1
        self._retrieval_caps.used(rows)  # R back at its top (S changes only here too)

    # -- beliefs -------------------------------------------------------------------
    @staticmethod
    def belief_text(c: Claim) -> str:
        if not c.key:
            return c.value
        return f"{c.subject} {c.key.replace('.', ' ').replace('_', ' ')} {c.value}"

    def _new_belief(
        self,
        claim: Claim,
        vec: np.ndarray,
        now: float,
        evidence_rows: dict[str, list[int]],
        alpha: float | None = None,
        beta: float | None = None,
        parent: int = -1,
        stability: float | None = None,
    ) -> int:
        p = self.params
        eps = sorted(
            {
                e
                for r in evidence_rows.get("support", [])
                + evidence_rows.get("contra", [])
                + evidence_rows.get("partial", [])
                for e in self.store.provenance[r]
            }
        )
        n_ev = sum(len(v) for v in evidence_rows.values())
        a = p.prior_alpha if alpha is None else alpha
        b = p.prior_beta if beta is None else beta
        row = int(
            self.store.add(
                now,
                vec,
                texts=[self.belief_text(claim)],
                claims=[claim],
                provenance=[eps],
                status="active",
                kind="belief",
                alpha=a,
                beta=b,
                stability=p.initial_stability if stability is None else stability,
                evidence=n_ev,
                n_support=len(evidence_rows.get("support", [])),
                n_contra=len(evidence_rows.get("contra", [])),
                last_reinforced=now,
                peak_confidence=a / (a + b),
                parent=parent,
            )[0]
        )
        self.fields[row] = (
            claim.subject,
            claim.key,
            str(claim.attr("context", claim.topic)),
            str(claim.attr("timeframe", "")),
        )
        self.evidence_rows[row] = {k: list(v) for k, v in evidence_rows.items()}
        return row

    def _add_evidence(self, belief: int, kind: str, rows: Sequence[int], now: float) -> None:
        s = self.store
        ev = self.evidence_rows.setdefault(belief, {})
        ev.setdefault(kind, []).extend(rows)
        s["evidence"][belief] += len(rows)
        # 001: one observation per classification; the code: one per episode of the cluster
        weight = float(len(rows)) if self.params.evidence_per_episode else 1.0
        if kind == "support":
            s["alpha"][belief] += weight
            s["n_support"][belief] += len(rows)
            s["last_reinforced"][belief] = now
        elif kind == "contra":
            s["beta"][belief] += weight
            s["n_contra"][belief] += len(rows)
        else:
            s["n_partial"][belief] += 1
            if self.params.evidence_per_episode:  # the code's PARTIAL: half to each side
                s["alpha"][belief] += 0.5 * weight
                s["beta"][belief] += 0.5 * weight
        s["updated"][belief] = now
        s["peak_confidence"][belief] = max(
            s["peak_confidence"][belief], self.confidence([belief])[0]
        )
        s.add_provenance(belief, {e for r in rows for e in s.provenance[r]}, now)

    # -- consolidation --------------------------------------------------------------
    def cluster(self, rows: Sequence[int]) -> list[tuple[int, ...]]:
        """Greedy leader clustering in arrival order: a row joins the most similar leader
        with cosine >= cluster_similarity, else leads a new cluster. Clusters smaller than
        min_cluster_size are dropped; the rest are ordered largest first (ties: earlier leader)."""
        p = self.params
        emb = self.store.embedding
        leaders: list[int] = []
        members: list[list[int]] = []
        for r in rows:
            if leaders:
                sims = emb[leaders].astype(np.float64) @ emb[r].astype(np.float64)
                if self.episode_project:  # 001: episodes are consolidated per project
                    proj = self.project_of(r)
                    sims[[self.project_of(x) != proj for x in leaders]] = -np.inf
                j = int(np.argmax(sims))
                if sims[j] >= p.cluster_similarity:
                    members[j].append(r)
                    continue
            leaders.append(r)
            members.append([r])
        big = [tuple(m) for m in members if len(m) >= p.min_cluster_size]
        order = sorted(range(len(big)), key=lambda i: (-len(big[i]), big[i][0]))
        return [big[i] for i in order]

    def maintain(self, now: float, jobs: Sequence[str]) -> list[Outcome]:
        out: list[Outcome] = []
        for job in jobs:
            if job == "consolidate":
                out.extend(self.consolidate(now))
        return out

    def idle_until(self, now: float, until: float) -> float:
        """The runner's skip hook: with no event before ``until``, a cycle does nothing (the
        "skip" branch of ``consolidate``) while fewer than episode_threshold episodes are
        unread and no cluster is queued; nothing else in Engram moves with time alone."""
        new = len(set(self.arrival_episodes[self.checkpoint :]))
        return until if new < self.params.episode_threshold and not self.queue else now

    def consolidate(self, now: float) -> list[Outcome]:
        """One cold cycle (001 §How It Works 1-6), budget-capped with carry-over."""
        p, s = self.params, self.store
        ev = "consolidate"
        new = len(set(self.arrival_episodes[self.checkpoint :]))
        if new < p.episode_threshold and not self.queue:
            return [Outcome(ev, "skip", -1, f"{new} new episodes < {p.episode_threshold}")]
        out: list[Outcome] = []
        if new >= p.episode_threshold:
            live = [r for r in self.arrivals[self.checkpoint :] if s.status_of(r) == "active"]
            clusters = self.cluster(live)
            self.queue.extend(clusters)
            self.checkpoint = len(self.arrivals)
            out.append(
                Outcome(ev, "checkpoint", -1, f"{new} new episodes read, {len(clusters)} clusters")
            )
        affected: set[int] = set()
        calls = 0
        done = 0
        while self.queue and done < p.max_clusters_per_cycle and calls < self.call_budget:
            cluster = tuple(r for r in self.queue.pop(0) if s.status_of(r) == "active")
            done += 1
            if len(cluster) < p.min_cluster_size:  # members forgotten since clustering
                out.append(Outcome(ev, "drop", -1, "cluster shrank below the minimum size"))
                continue
            used, outs, rows = self._process_cluster(cluster, now)
            calls += used
            out.extend(outs)
            affected.update(rows)
        if self.queue:
            out.append(
                Outcome(
                    ev, "skip", -1, f"budget: {len(self.queue)} clusters carried to the next cycle"
                )
            )
        out.extend(self._gates(sorted(affected), now))
        return out

    def _process_cluster(
        self, cluster: tuple[int, ...], now: float
    ) -> tuple[int, list[Outcome], set[int]]:
        """Synthesize, embed and match one cluster. Returns (LLM calls, outcomes, affected)."""
        p, s = self.params, self.store
        ev = "consolidate"
        key = f"cluster:{min(s.provenance[cluster[0]])}:{cluster[0]}"
        claim = self.llm.synthesize([s.claim[r] for r in cluster], key=key)
        calls = 1
        vecs, ok = self._embed_claims([claim], [key], [self.belief_text(claim)])
        if not ok[0]:
            return calls, [Outcome(ev, "drop", -1, "candidate belief: embedding failed")], set()
        v = vecs[0]
        active_beliefs = np.flatnonzero(s.mask(["active"], kinds=["belief"]))
        sims = (
            s.embedding[active_beliefs].astype(np.float64) @ v
            if len(active_beliefs)
            else np.zeros(0)
        )
        band = self.match_band(float(sims.max()) if len(sims) else -1.0)
        rows = list(cluster)
        if band == "reinforce":
            b = int(active_beliefs[int(np.argmax(sims))])
            self._add_evidence(b, "support", rows, now)
            return (
                calls,
                [Outcome(ev, "reinforce", b, f"cosine {sims.max():.3f} > {p.reinforce_threshold}")],
                {b},
            )
        if band == "classify":
            related = np.flatnonzero(sims >= p.related_threshold)
            order = related[np.lexsort((active_beliefs[related], -sims[related]))][
                : p.max_classifications
            ]
            targets = [int(active_beliefs[i]) for i in order]
            replies = self.llm.classify(
                claim, [s.claim[b] for b in targets], answer="relation", key=key
            )
            calls += len(targets)
            if isinstance(replies, str):
                replies = [replies]
            outs: list[Outcome] = []
            matched: set[int] = set()
            for b, reply in zip(targets, list(replies) + [""] * (len(targets) - len(replies))):
                kind = {SUPPORTS: "support", CONTRADICTS: "contra", PARTIAL: "partial"}.get(reply)
                if kind is None:  # IRRELEVANT, or an invalid reply counted as IRRELEVANT
                    outs.append(
                        Outcome(ev, "skip", b, f"classified {reply!r}: counted as IRRELEVANT")
                    )
                    continue
                self._add_evidence(b, kind, rows, now)
                action = {"support": "reinforce", "contra": "weaken", "partial": "link"}[kind]
                outs.append(Outcome(ev, action, b, f"classified {reply}"))
                matched.add(b)
                if p.match_first:  # the code asks no further once one matched
                    calls -= len(targets) - len(outs)
                    break
            if matched or not p.match_first:
                return calls, outs, set(targets)
            b = self._new_belief(claim, v, now, {"support": rows}, alpha=self._novel_alpha(rows))
            outs.append(Outcome(ev, "create", b, "every classification IRRELEVANT"))
            return calls, outs, set(targets) | {b}
        b = self._new_belief(claim, v, now, {"support": rows}, alpha=self._novel_alpha(rows))
        return calls, [Outcome(ev, "create", b, "novel belief")], {b}

    def _novel_alpha(self, rows: Sequence[int]) -> float:
        """A novel belief's alpha: the uniform prior (001 §Belief Lifecycle 1), or the prior
        plus one per episode of its cluster (evidence_per_episode, the code)."""
        p = self.params
        return p.prior_alpha + (len(rows) if p.evidence_per_episode else 0)

    def match_band(self, best_similarity: float) -> str:
        """001 §How It Works 4: "reinforce" above 0.92, "classify" in [0.70, 0.92], else "novel"."""
        p = self.params
        if best_similarity > p.reinforce_threshold:
            return "reinforce"
        if best_similarity >= p.related_threshold:
            return "classify"
        return "novel"

    # -- the rule-based gates (001 §Belief Lifecycle 4-8) ----------------------------
    def should_revise(self, row: int) -> bool:
        p, s = self.params, self.store
        return bool(
            self.confidence([row])[0] < p.revision_confidence
            and s["peak_confidence"][row] > p.revision_prior_confidence
            and s["n_contra"][row] >= p.revision_min_contradictions
            and s["evidence"][row] >= p.revision_min_evidence
        )

    def should_split(self, row: int) -> bool:
        p, s = self.params, self.store
        return bool(
            s["n_contra"][row] >= p.split_min_contradictions
            and s["n_support"][row] >= p.split_min_supports
            and s["n_partial"][row] >= p.split_min_partial
            and s["evidence"][row] >= p.split_min_evidence
        )

    def archive_mask(self, now: float, exempt: Sequence[int] = ()) -> np.ndarray:
        """Active beliefs to archive (001 §Belief Lifecycle 8): confidence < 0.3, or not
        reinforced for >= 90 days with evidence < 5. Beliefs reinforced (or created) in this
        cycle, ``exempt``, are not evaluated (001 §How It Works 6). A mask over the store
        of :meth:`archive_rows`."""
        mask = np.zeros(self.store.n, dtype=bool)
        mask[self.archive_rows(now, exempt)] = True
        return mask

    def archive_rows(self, now: float, exempt: Sequence[int] = ()) -> np.ndarray:
        """The rows of :meth:`archive_mask`, ascending, read off the active beliefs only
        (not a pass over every episode each cycle)."""
        p, s = self.params, self.store
        rows = s.rows_with(["active"], ["belief"])
        if len(exempt):
            rows = rows[~np.isin(rows, np.asarray(exempt, dtype=np.int64))]
        days = now - s["last_reinforced"][rows]
        conf = self.confidence(rows)
        stale = self._days_past(days, p.archive_stale_days) & (
            s["evidence"][rows] < p.archive_min_evidence
        )
        if p.archive_long_stale_days >= 0.0:  # the code's third rule
            stale |= self._days_past(days, p.archive_long_stale_days) & (
                conf < p.archive_long_stale_confidence
            )
        out: np.ndarray = rows[(conf < p.archive_confidence) | stale]
        return out

    def _days_past(self, days: np.ndarray, limit: float) -> np.ndarray:
        """``days`` at least ``limit`` (001, a choice), or beyond it (strict_day_gates: the
        code's ``>``)."""
        return days > limit if self.params.strict_day_gates else days >= limit

    def project_of(self, row: int) -> str:
        """001 scopes beliefs by project: the one project all of a row's episodes share,
        else "" (global)."""
        if not self.episode_project:
            return ""
        projects = {self.episode_project.get(e, "") for e in self.store.provenance[row]}
        return projects.pop() if len(projects) == 1 else ""

    def merge_pair(self, now: float, among: Sequence[int] | None = None) -> tuple[int, int] | None:
        """The most similar pair of active beliefs passing the merge gate, or None:
        cosine > 0.92, same scope (subject) and project, both confidence > 0.6, neither
        revised in the last 7 days (or, merge_cooldown_from="update", both unchanged for 7
        days); with ``among``, one of the pair must be in it. Returns (survivor, absorbed):
        the survivor has more evidence."""
        p, s = self.params, self.store
        beliefs = s.rows_with(["active"], ["belief"])  # (not a pass over every episode)
        since = s["revised_at" if p.merge_cooldown_from == "revision" else "updated"][beliefs]
        rows = beliefs[
            (self.confidence(beliefs) > p.merge_min_confidence)
            & self._days_past(now - since, p.merge_cooldown_days)
        ]
        if len(rows) < 2:
            return None
        e = s.embedding[rows].astype(np.float64)
        sim = e @ e.T
        scope = np.array(
            [f"{self.fields.get(int(r), ('',))[0]}\x00{self.project_of(int(r))}" for r in rows],
            dtype=object,
        )
        ok = (sim > p.merge_min_similarity) & (scope[:, None] == scope[None, :])
        ok &= np.triu(np.ones_like(ok, dtype=bool), 1)
        if among is not None:
            inside = np.isin(rows, np.asarray(list(among), dtype=np.int64))
            ok &= inside[:, None] | inside[None, :]
        if not ok.any():
            return None
        cand = np.argwhere(ok)
        best = cand[np.lexsort((cand[:, 1], cand[:, 0], -sim[cand[:, 0], cand[:, 1]]))[0]]
        a, b = int(rows[best[0]]), int(rows[best[1]])
        if s["evidence"][b] > s["evidence"][a]:
            a, b = b, a
        return a, b

    def _gates(self, affected: Sequence[int], now: float) -> list[Outcome]:
        s, p = self.store, self.params
        ev = "consolidate"
        out: list[Outcome] = []
        for b in affected:
            if s.status_of(b) != "active":
                continue
            if self.should_revise(b):
                out.extend(self._revise(b, now))
            elif self.should_split(b):
                out.extend(self._split(b, now))
        for _ in range(p.merges_per_cycle):
            pair = self.merge_pair(now, None if p.gate_scope == "all" else affected)
            if pair is None:
                break
            keep, gone = pair
            self._absorb(keep, gone, now)
            out.append(Outcome(ev, "merge", gone, f"merged into belief {keep}"))
        # the beliefs reinforced in this cycle (the archive reads no other row: an
        # episode's last_reinforced is its creation)
        beliefs = s.rows_with(s.statuses.names, ["belief"])
        reinforced = beliefs[s["last_reinforced"][beliefs] == now].tolist()
        # (the code's archiveDecayed evaluates every active belief, reinforced ones too)
        archive = self.archive_rows(now, [] if p.gate_scope == "all" else reinforced)
        if p.gate_scope == "affected":
            archive = archive[np.isin(archive, np.asarray(list(affected), dtype=np.int64))]
        for b in archive.tolist():
            s.set_status(b, "archived", now)
            out.append(
                Outcome(
                    ev,
                    "archive",
                    b,
                    f"confidence {self.confidence([b])[0]:.3f}, evidence {int(s['evidence'][b])}",
                )
            )
        self._bm25_cache = None
        return out

    def _all_evidence(self, b: int) -> list[int]:
        ev = self.evidence_rows.get(b, {})
        return [r for k in ("support", "contra", "partial") for r in ev.get(k, [])]

    def _revise(self, b: int, now: float) -> list[Outcome]:
        """Old belief -> revised; a new belief re-synthesized from all evidence, parent link."""
        s = self.store
        rows = self._all_evidence(b)
        key = f"revise:{b}"
        # a planted belief has no evidence rows: it is re-synthesized from its own statement
        claim = self.llm.synthesize([s.claim[r] for r in rows] or [s.claim[b]], key=key)
        vecs, ok = self._embed_claims([claim], [key], [self.belief_text(claim)])
        s.set_status(b, "revised", now)
        out = [Outcome("consolidate", "supersede", b, "revision gate")]
        if ok[0]:
            child = self._new_belief(
                claim,
                vecs[0],
                now,
                {k: list(v) for k, v in self.evidence_rows[b].items()},
                parent=b,
            )
            # a fresh hypothesis: uniform prior and fresh gate counters; storage strength kept
            for col in ("n_support", "n_contra", "n_partial"):
                s[col][child] = 0
            s["revised_at"][child] = now  # the merge cooldown's clock (§Belief Lifecycle 6)
            out.append(Outcome("consolidate", "synthesize", child, f"revision of belief {b}"))
        return out

    def _split(self, b: int, now: float) -> list[Outcome]:
        """Original -> split; one child belief per context of its evidence (the claim's
        ``context`` attr, else its (key, value))."""
        s = self.store
        groups: dict[str, list[int]] = {}
        for r in self._all_evidence(b):
            c = s.claim[r]
            ctx = (
                str(c.attr("context"))
                if c is not None and c.attr("context") is not None
                else (f"{c.key}={c.value}" if c is not None else "")
            )
            groups.setdefault(ctx, []).append(r)
        s.set_status(b, "split", now)
        out = [Outcome("consolidate", "supersede", b, f"split gate: {len(groups)} contexts")]
        for i, (ctx, rows) in enumerate(sorted(groups.items())):
            key = f"split:{b}:{i}"
            claim = self.llm.synthesize([s.claim[r] for r in rows], key=key)
            vecs, ok = self._embed_claims([claim], [key], [self.belief_text(claim)])
            if not ok[0]:
                continue
            child = self._new_belief(claim, vecs[0], now, {"support": rows}, parent=b)
            out.append(Outcome("consolidate", "synthesize", child, f"split child of {b}: {ctx}"))
        return out

    def _absorb(self, keep: int, gone: int, now: float) -> None:
        """Survivor takes the absorbed belief's evidence (prior counted once) and provenance."""
        s, p = self.store, self.params
        s["alpha"][keep] += s["alpha"][gone] - p.prior_alpha
        s["beta"][keep] += s["beta"][gone] - p.prior_beta
        for col in ("evidence", "n_support", "n_contra", "n_partial"):
            s[col][keep] += s[col][gone]
        for k, v in self.evidence_rows.get(gone, {}).items():
            self.evidence_rows.setdefault(keep, {}).setdefault(k, []).extend(v)
        s["last_reinforced"][keep] = max(s["last_reinforced"][keep], s["last_reinforced"][gone])
        s["updated"][keep] = now
        s["peak_confidence"][keep] = max(s["peak_confidence"][keep], self.confidence([keep])[0])
        s.add_provenance(keep, s.provenance[gone], now)
        s.set_status(gone, "merged", now)

    # -- user actions -----------------------------------------------------------------
    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        """The episode's bites are deleted; with forget_deletes_beliefs, so is every belief
        whose evidence holds the episode (beliefs are views of episodes, 001 §Architecture)."""
        s = self.store
        out: list[Outcome] = []
        belief = s.kind_code("belief")
        for f in events:
            rows = s.rows_from(f.episode_id)
            for r in rows.tolist():
                if s.status_of(r) == "deleted":
                    continue
                if s["kind"][r] == belief and not self.params.forget_deletes_beliefs:
                    continue
                s.set_status(r, "deleted", now)
                out.append(
                    Outcome(f.id, "forget", r, "belief" if s["kind"][r] == belief else "episode")
                )
            if not out or out[-1].event != f.id:
                out.append(Outcome(f.id, "drop", -1, f"no memory of episode {f.episode_id!r}"))
        self._bm25_cache = None
        return out

    # -- decay-curve seeding --------------------------------------------------------------
    def plant(self, episode: Episode, now: float) -> int:
        """Seed one belief as if a consolidation cycle had produced it from this episode.

        Attributes (``claim.attrs``): alpha, beta (default: prior 1/1), or belief_confidence c
        (alpha = 2c, beta = 2(1 - c); Claim.confidence is extraction confidence, unused);
        stability (default ``initial_stability``); evidence_count (default 1)."""
        claim = episode.claims[0] if episode.claims else self._claims_of(episode)[0]
        given = dict(claim.attrs)
        p = self.params

        def num(name: str, default: float, lo: float = 0.0, open_lo: bool = True) -> float:
            v = given.get(name, default)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise MemsimError(
                    f"engram: memory attribute {name}={v!r} is not a number"
                ) from None
            if not math.isfinite(v) or v < lo or (open_lo and v == lo):
                raise MemsimError(
                    f"engram: memory attribute {name}={v!r} must be {'>' if open_lo else '>='} {lo}"
                )
            return v

        if "belief_confidence" in given and not ({"alpha", "beta"} & set(given)):
            c = num("belief_confidence", 0.5)
            if c >= 1.0:
                raise MemsimError(
                    f"engram: memory attribute belief_confidence={c!r} must be in (0, 1)"
                )
            alpha, beta = 2.0 * c, 2.0 * (1.0 - c)
        else:
            alpha, beta = num("alpha", p.prior_alpha), num("beta", p.prior_beta)
        stability = num("stability", p.initial_stability)
        evidence = int(num("evidence_count", 1.0, open_lo=False))
        vecs, ok = self._embed_claims([claim], [f"{episode.id}#0"], [episode.text])
        if not ok[0]:
            raise MemsimError(f"engram: could not embed the planted episode {episode.id!r}")
        row = self._new_belief(claim, vecs[0], now, {}, alpha=alpha, beta=beta, stability=stability)
        self.store.add_provenance(row, {episode.id}, now)
        self.store["evidence"][row] = evidence
        return row


@dataclass(frozen=True)
class EngramCodeParams(EngramParams):
    """engram-code: Engram's public code where it departs from 001 ("each system as built");
    every other constant is the document's. Repository EthanGabis/claude-memory, commit
    acac56b01d5599ad0c6616b4d6b91d523c394faf, files processor/belief-consolidator.ts,
    processor/belief-utils.ts and the recall handler (mcp/server.ts). Its initial stability
    (7.0 days) and its ranking formula (0.5 conf x sim + 0.3 R + 0.2 bm25) are the ones the
    documented policy already uses (docs/policies/engram-code.md)."""

    never_accessed_strength: float = param(
        0.5, lo=-1.0, hi=1.0, doc="engram-code: R = 0.5 for a memory never accessed"
    )
    stability_on_recall: bool = param(
        False, doc="engram-code: stability is updated only on expand, not on recall"
    )
    evidence_per_episode: bool = param(
        True,
        doc="engram-code: belief-consolidator.ts createNewBelief alpha = 1 + N; "
        "reinforceBelief / contradictBelief add N (the cluster's episodes)",
    )
    recall_confidence_strict: bool = param(
        True, doc="engram-code: the recall handler skips confidence <= 0.4"
    )
    match_first: bool = param(
        True,
        doc="engram-code: matchCandidate stops at the first non-IRRELEVANT classification "
        "and creates a new belief when none matched",
    )
    gate_scope: str = param(
        "all",
        choices=("unreinforced", "affected", "all"),
        doc="engram-code: checkAndMerge checks all pairs, archiveDecayed every active belief",
    )
    merge_cooldown_from: str = param(
        "update",
        choices=("revision", "update"),
        doc="engram-code: belief-utils.ts shouldMerge counts the cooldown from updated_at",
    )
    strict_day_gates: bool = param(
        True, doc="engram-code: shouldArchive > 90 days, shouldMerge > 7 days (strict)"
    )
    archive_long_stale_days: float = param(
        180.0,
        lo=-1.0,
        doc="engram-code: belief-utils.ts shouldArchive archives confidence < 0.5 after "
        "> 180 days without reinforcement",
    )


class EngramCode(Engram):
    """Engram as its code is built (docs/policies/engram-code.md)."""

    Params: ClassVar[type[Params]] = EngramCodeParams
