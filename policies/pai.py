"""Personal AI ("pai"): seed document 000_ec17278fb0252727.txt ("Memory Lifecycle").

Beliefs decay with a fixed half-life, ``confidence * 0.5 ** (days / (30 * stability))`` (§7);
an incoming belief reinforces (> 0.85), is checked for contradiction (0.70-0.85) or is created
and linked to up to 3 Zettelkasten neighbours (0.40-0.85) (§1, §4); recall is a multi-factor
score with graph expansion and access-driven stability (§2); reflect / merge / synthesize /
prune run as scheduled jobs (§3); conversations of >= 4 turns are consolidated into summary
episodes that create no belief (§8). Every open choice is listed in docs/policies/pai.md.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from memsim.engine import decay, ranking, similarity
from memsim.engine.batch_reach import BatchReach
from memsim.engine.batch_screen import BatchScreen
from memsim.engine.candidate_index import INGEST_INDEX, REPETITION_INDEX, CandidateIndex
from memsim.engine.errors import MemsimError
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.llm import CONTRADICTS, NONE, SUPPORTS
from memsim.engine.params import Params, param
from memsim.engine.policy import Job, Outcome, Policy, Ranking, SimilarityRule
from memsim.engine.store import Statuses
from policies import pai_formulas
from policies.pai_fastscore import (
    PaiColumns,
    pai_topk_from_cos,
    pai_topk_screened,
    score_weights,
)

DOC = "000"

# factType vocabulary (§6 "type"); meta is synthesized, insight the legacy default.
TYPES = ("factual", "preference", "procedural", "architectural", "meta", "insight")
TYPE_CODE = {name: i for i, name in enumerate(TYPES)}

# Seed-neutral Claim.category -> the document's factType (§1 "Validate factType in {factual,
# preference, procedural, architectural}"). The document's four types are about facts, likes,
# how-tos and design decisions; every category memsim streams use is mapped onto the nearest
# one and anything unknown is "factual" (the validation fallback, see docs/policies/pai.md).
CATEGORY_TO_TYPE = {
    "fact": "factual",
    "factual": "factual",
    "relationship": "factual",
    "event": "factual",
    "preference": "preference",
    "sentiment": "preference",
    "value": "preference",
    "drive": "preference",
    "procedural": "procedural",
    "reminder": "procedural",
    "procedure": "procedural",
    "decision": "architectural",
    "architectural": "architectural",
}
# extractBeliefs() returns {fact, ..., insight}; the insight is skipped (§1 note, lines 268-269).
SKIPPED_CATEGORIES = frozenset({"insight"})

_WORD = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def statement(claim: Claim) -> str:
    """The belief's statement text: the fact as a sentence-like string (FTS fallback, audit)."""
    if not claim.key:
        return claim.value
    return f"{claim.subject}: {claim.key.replace('.', ' ').replace('_', ' ')} = {claim.value}"


@dataclass(frozen=True)
class PaiParams(Params):
    """Every constant document 000 names, with its value as default (doc = section)."""

    # -- §1 / §4 ingestion thresholds ---------------------------------------------------
    reinforce_above: float = param(
        0.85, lo=0.0, hi=1.0, doc="000 §1,§4 reinforce: top similarity > 0.85"
    )
    grey_lo: float = param(
        0.70,
        lo=0.0,
        hi=1.0,
        doc="000 §1,§4 contradiction grey zone 0.70-0.85 (lower end, inclusive)",
    )
    link_lo: float = param(
        0.40,
        lo=0.0,
        hi=1.0,
        doc="000 §1,§4 Zettelkasten link band 0.40-0.85 (lower end, inclusive)",
    )
    link_hi: float = param(
        0.85, lo=0.0, hi=1.0, doc="000 §1,§4 Zettelkasten link band upper end (exclusive)"
    )
    max_links: int = param(3, lo=0, doc="000 §1,§4 link to the top 3 neighbours")
    similar_limit: int = param(5, lo=1, doc="000 §1 findSimilarBeliefs(embedding, limit=5)")
    reinforce_step: float = param(0.1, lo=0.0, hi=1.0, doc="000 §1,§6 reinforce +0.1 confidence")
    confidence_cap: float = param(1.0, lo=0.0, hi=1.0, doc="000 §6 confidence cap 1.0")
    weaken_step: float = param(0.2, lo=0.0, hi=1.0, doc="000 §1,§6 weaken -0.2 confidence")
    confidence_floor: float = param(0.1, lo=0.0, hi=1.0, doc="000 §1,§6 weaken floor (min 0.1)")
    support_threshold: int = param(
        3, lo=1, doc="000 §1 >= 3 supporting episodes: weaken, else invalidate"
    )
    default_confidence: float = param(0.6, lo=0.0, hi=1.0, doc="000 §6 confidence default 0.6")
    embed_fail_confidence: float = param(
        0.6, lo=0.0, hi=1.0, doc="000 §1 embedding failed: create at confidence 0.6"
    )
    default_stability: float = param(1.0, lo=0.0, lo_open=True, doc="000 §6 stability default 1.0")
    importance_min: int = param(1, lo=0, doc="000 §1 clamp importance 1-10")
    importance_max: int = param(10, lo=1, doc="000 §1 clamp importance 1-10")
    fallback_importance: int = param(5, lo=1, hi=10, doc="000 §1 parse failure: importance=5")
    fallback_subject: str = param("owner", doc="000 §1,§6 parse failure / default subject 'owner'")
    fallback_type: str = param(
        "factual", choices=TYPES[:4], doc="000 §1 parse failure: raw text as 'factual'"
    )
    # -- §2 recall -----------------------------------------------------------------------
    w_cosine: float = param(0.50, lo=0.0, doc="000 §2 score weight of cosine")
    w_importance: float = param(0.20, lo=0.0, doc="000 §2 score weight of importance/10")
    w_recency: float = param(0.10, lo=0.0, doc="000 §2 score weight of recency")
    w_stability: float = param(0.05, lo=0.0, doc="000 §2 score weight of stability/5")
    w_subject: float = param(0.15, lo=0.0, doc="000 §2 score weight of subjectMatch")
    importance_scale: float = param(
        10.0, lo=0.0, lo_open=True, doc="000 §2,§6 importance normalized /10"
    )
    stability_scale: float = param(5.0, lo=0.0, lo_open=True, doc="000 §2 stability normalized /5")
    insight_multiplier: float = param(0.5, lo=0.0, doc="000 §2 insight-type beliefs: score *= 0.5")
    cosine_floor: float = param(
        0.20, lo=-1.0, hi=1.0, doc="000 §2,§4 semantic search cutoff cosine >= 0.20"
    )
    graph_parents: int = param(3, lo=0, doc="000 §2 graph traversal from the top-3 results")
    neighbour_factor: float = param(0.8, lo=0.0, doc="000 §2 neighbour score = parent score * 0.8")
    recency_rate: float = param(0.023, lo=0.0, doc="000 §2 recency = exp(-0.023 * daysSinceAccess)")
    access_stability_step: float = param(0.1, lo=0.0, doc="000 §2,§7 access: stability += 0.1")
    stability_cap: float = param(5.0, lo=0.0, lo_open=True, doc="000 §2,§6 stability capped at 5.0")
    # -- §7 decay ------------------------------------------------------------------------
    half_life_days: float = param(
        30.0, lo=0.0, lo_open=True, doc="000 §7 halfLife = 30 * stability days"
    )
    # -- §3 maintenance ------------------------------------------------------------------
    reflect_limit: int = param(200, lo=1, doc="000 §3 reflect loads up to 200 active beliefs")
    duplicate_threshold: float = param(
        0.85, lo=0.0, hi=1.0, doc="000 §3,§4 duplicate pairs cosine >= 0.85"
    )
    stale_threshold: float = param(
        0.10, lo=0.0, hi=1.0, doc="000 §3,§4 stale: effectiveConfidence < 0.10"
    )
    synthesis_threshold: float = param(
        0.60, lo=0.0, hi=1.0, doc="000 §3,§4 thematic clusters cosine >= 0.60"
    )
    synthesis_max_clusters: int = param(5, lo=0, doc="000 §3 synthesize up to 5 clusters")
    meta_confidence: float = param(0.8, lo=0.0, hi=1.0, doc="000 §3 meta-belief confidence=0.8")
    meta_stability: float = param(
        3.0, lo=0.0, lo_open=True, doc="000 §3,§6 meta-belief stability=3.0"
    )
    prune_threshold: float = param(
        0.05, lo=0.0, hi=1.0, doc="000 §3,§4 prune: effectiveConfidence < 0.05"
    )
    curator_lo: float = param(
        0.40,
        lo=0.0,
        hi=1.0,
        doc="000 §4 contradiction candidates 0.40-0.85 (findContradictions, curator plugin)",
    )
    curator_hi: float = param(
        0.85, lo=0.0, hi=1.0, doc="000 §4 contradiction candidates upper end (inclusive)"
    )
    resynthesize: bool = param(
        False,
        doc="not in 000: False = a cluster already synthesized (all members "
        "sources of one active meta-belief) and meta-beliefs themselves "
        "are not synthesized again on the next run",
    )
    # -- cadences (not in the document: see docs/policies/pai.md) ------------------------
    reflect_every: float = param(
        1.0, lo=0.0, lo_open=True, doc="cadence (days) of reflect+mergeDuplicates; not in 000"
    )
    synthesize_every: float = param(
        7.0, lo=0.0, lo_open=True, doc="cadence (days) of synthesize; not in 000"
    )
    prune_every: float = param(
        1.0, lo=0.0, lo_open=True, doc="cadence (days) of pruneBeliefs; not in 000"
    )
    # -- §8 conversation consolidation ----------------------------------------------------
    consolidation_min_turns: int = param(4, lo=1, doc="000 §8 consolidate when >= 4 turns")
    consolidation_every_turns: int = param(
        5, lo=1, doc="000 §8 triggered every 5th chat turn by the server"
    )
    conversation_end_days: float = param(
        1.0,
        lo=0.0,
        doc="000 §8 'every conversation chunk (when >= 4 turns)': memsim's choice, a "
        "conversation with no turn for this many days has ended and its remaining turns "
        "(fewer than 5) are offered as its last chunk at the next reflect run; 0 = never "
        "(only every 5th turn, so the >= 4 rule could never decline a chunk)",
    )
    episode_similarity: float = param(
        0.30, lo=-1.0, hi=1.0, doc="000 §4 episode similarity > 0.30 (getMemoryContext)"
    )
    # -- the public code's rules (pai-code; docs/policies/pai-code.md) ----------------------
    recency_from: str = param(
        "created",
        choices=("created", "updated"),
        doc="000 §2 daysSinceAccess of a belief never accessed counts from its creation; "
        "'updated': from updated_at, as memory.ts semanticSearch does (pai-code)",
    )
    grey_zone: str = param(
        "contradiction",
        choices=("contradiction", "relationship"),
        doc="000 §1 checkContradiction: one index reply over the grey-zone beliefs, weaken "
        "-0.2; 'relationship': remember.ts classifyRelationship per candidate above grey_lo "
        "(REINFORCEMENT reinforces, CONTRADICTION weakens by min(0.2, 1/(n+1))) (pai-code)",
    )
    grey_candidates: int = param(
        3, lo=1, doc="remember.ts: the grey zone classifies the top 3 candidates (pai-code)"
    )
    neighbours_after: bool = param(
        False,
        doc="000 §2 'Combine results + neighbors, limit to N': one list by score (memsim's "
        "reading); True: memory.ts semanticSearch appends the neighbours after the direct "
        "results, so they only fill places the results leave (pai-code)",
    )
    type_cap_divisor: int = param(
        0,
        lo=0,
        doc="not in 000 (0 = off); pai-code: memory.ts prioritizeRecallTypes returns at most "
        "max(1, floor(limit / 3)) insight or meta beliefs",
    )
    challenger_base: float = param(
        0.4,
        lo=0.0,
        hi=1.0,
        doc="remember.ts: a belief challenging a well-supported one starts at "
        "min(0.6, 1/(n+1) + 0.4) (pai-code)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from memsim.engine.errors import ParamError

        if not self.grey_lo <= self.reinforce_above:
            raise ParamError(
                f"PaiParams: grey_lo={self.grey_lo} must be <= "
                f"reinforce_above={self.reinforce_above}"
            )
        if not self.link_lo <= self.link_hi:
            raise ParamError(f"PaiParams: link_lo={self.link_lo} must be <= link_hi={self.link_hi}")
        if not self.importance_min <= self.importance_max:
            raise ParamError(
                f"PaiParams: importance_min={self.importance_min} must be <= "
                f"importance_max={self.importance_max}"
            )
        if not self.confidence_floor <= self.confidence_cap:
            raise ParamError(
                f"PaiParams: confidence_floor={self.confidence_floor} must be <= "
                f"confidence_cap={self.confidence_cap}"
            )


@dataclass
class SummaryEpisode:
    """A consolidated conversation chunk (§8): episodic memory, never a belief."""

    id: str
    conversation: str
    time: float
    text: str
    episode_ids: tuple[str, ...]
    embedding: np.ndarray | None
    forgotten: bool = False


# ---------------------------------------------------------------------------- kernels


def effective_confidence(
    confidence: np.ndarray,
    stability: np.ndarray,
    updated: np.ndarray,
    now: float,
    half_life_days: float = 30.0,
) -> np.ndarray:
    """§7: confidence * 0.5 ** (daysSinceUpdate / (half_life_days * stability))."""
    days = np.maximum(now - np.asarray(updated, dtype=np.float64), 0.0)
    return pai_formulas.half_life_decay(
        confidence, days, half_life_days * np.asarray(stability, dtype=np.float64)
    )


def recall_scores(
    cosine: np.ndarray,
    importance: np.ndarray,
    days_since_access: np.ndarray,
    stability: np.ndarray,
    subject_match: np.ndarray,
    is_insight: np.ndarray,
    p: PaiParams,
) -> np.ndarray:
    """§2 multi-factor score of every row (no floor applied): ``pai_formulas.pai_score`` with the
    recency ``exp(-recency_rate * daysSinceAccess)``."""
    recency = np.exp(-p.recency_rate * days_since_access)
    return pai_formulas.pai_score(
        cosine,
        importance,
        recency,
        stability,
        subject_match,
        **score_weights(p),
        insight=is_insight,
    )


def is_reinforce(similarity: float, p: PaiParams) -> bool:
    """§4 "Reinforce (merge) > 0.85": strictly above."""
    return similarity > p.reinforce_above


def in_grey_zone(similarity: float, p: PaiParams) -> bool:
    """§4 "Contradiction check 0.70 - 0.85": both ends inclusive (0.85 itself is not a
    reinforcement, since that needs > 0.85, so it belongs here)."""
    return p.grey_lo <= similarity <= p.reinforce_above


def in_link_band(similarity: float, p: PaiParams) -> bool:
    """§4 "Zettelkasten linking 0.40 - 0.85": [0.40, 0.85)."""
    return p.link_lo <= similarity < p.link_hi


def importance_1_10(importance01: float, p: PaiParams) -> int:
    """Claim importance in [0, 1] -> the LLM's 1-10 scale (x10, half-up), clamped (§1)."""
    raw = math.floor(importance01 * p.importance_scale + 0.5)
    return int(min(max(raw, p.importance_min), p.importance_max))


# ---------------------------------------------------------------------------- policy


class PersonalAI(Policy[PaiParams]):
    """Personal AI memory lifecycle (document 000). See module docstring."""

    Params: ClassVar[type[Params]] = PaiParams
    # the fields the long studies move without --fields (memsim sensitivity, --sobol, tune;
    # results/sensitivity.md, tuning.md; sensitivity: every declared-range field), and the
    # tuning's trials
    study_fields: ClassVar[dict[str, tuple[str, ...]]] = {
        "sobol": (
            "prune_threshold",
            "default_confidence",
            "duplicate_threshold",
            "cosine_floor",
            "synthesis_threshold",
            "stale_threshold",
        ),
        "tune": (
            "prune_threshold",
            "reinforce_above",
            "grey_lo",
            "duplicate_threshold",
            "default_confidence",
        ),
    }
    study_trials: ClassVar[int] = 24
    similarity_rules: ClassVar[tuple[SimilarityRule, ...]] = (
        SimilarityRule("reinforce (000 §1)", "reinforce_above", lo_inclusive=False),
        SimilarityRule("contradiction check (000 §1)", "grey_lo", True, "reinforce_above", True),
        SimilarityRule("link (000 §1)", "link_lo", True, "link_hi", False),
        SimilarityRule("duplicate at reflect (000 §3)", "duplicate_threshold"),
        SimilarityRule("thematic cluster (000 §3)", "synthesis_threshold"),
        SimilarityRule("search cutoff (000 §2)", "cosine_floor", between="question"),
    )
    statuses: ClassVar[Statuses] = Statuses(
        ("active", "invalidated", "forgotten", "pruned"),
        terminal=frozenset({"invalidated", "forgotten", "pruned"}),
        retrievable=frozenset({"active"}),
    )
    kinds: ClassVar[tuple[str, ...]] = ("belief",)
    strength_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    curve_attributes: ClassVar[frozenset[str]] = frozenset({"stability"})
    # findSimilarBeliefs goes through the candidate index from 5,000 stored rows (`_similar`):
    # the steady year's run 91 -> 77 s, 0 of 7,906 audited searches differing
    # (docs/performance.md).
    default_index: ClassVar[Mapping[str, Any]] = INGEST_INDEX
    # (mode cones would leave findSimilarBeliefs a full scan: its top-k is not a range search)
    index_modes: ClassVar[frozenset[str]] = frozenset({"ivf"})
    # Whether a belief reinforces a row is asked first of an exact range search at
    # reinforce_above through the cones from 2,000 rows (the reference models' repetition
    # check; _reinforced_in_range): 91% of the steady year's beliefs reinforce one.
    # use_index("exact") turns it off (the full scans, the reference runs compare with).
    reinforce_index: ClassVar[Mapping[str, Any]] = REPETITION_INDEX

    params: PaiParams

    def setup(self) -> None:
        p = self.params
        s = self.store
        s.add_column("confidence", np.float64, p.default_confidence)
        s.add_column("stability", np.float64, p.default_stability)
        s.add_column("importance", np.float64, float(p.fallback_importance))
        s.add_column("subject", np.int32, 0)
        s.add_column("type", np.int8, TYPE_CODE["factual"])
        s.add_column("supersedes", np.int64, -1)
        s.add_column("superseded_by", np.int64, -1)
        s.add_column("has_embedding", np.bool_, True)
        self.reinforcing = CandidateIndex(s, seed=self.seed, **self.reinforce_index)
        self.schedule = (
            Job("reflect", p.reflect_every),
            Job("synthesize", p.synthesize_every),
            Job("prune", p.prune_every),
        )
        self.subjects: list[str] = [p.fallback_subject]
        self._subject_code: dict[str, int] = {p.fallback_subject: 0}
        self.links: dict[int, set[int]] = {}  # symmetric belief_links (Zettelkasten)
        self.meta_sources: dict[int, frozenset[int]] = {}
        self.summaries: list[SummaryEpisode] = []  # §8 consolidated episodes
        self._turns: dict[str, list[Episode]] = {}  # pending turns per conversation
        self._chunks: dict[str, int] = {}
        self._tokens: list[frozenset[str]] = []  # FTS-like token sets per row
        self._placeholder = np.full(
            self.store.dim, 1.0 / math.sqrt(self.store.dim), dtype=np.float32
        )

    # -- small helpers -------------------------------------------------------------------
    def _code_subject(self, subject: str) -> int:
        code = self._subject_code.get(subject)
        if code is None:
            code = len(self.subjects)
            self.subjects.append(subject)
            self._subject_code[subject] = code
        return code

    def _searchable(self) -> np.ndarray:
        """Active rows that have a belief embedding (failed embeddings are never searched).
        Kept, read-only, while the store holds the same rows and status log: every status
        change is logged (MemoryStore.set_status; the runner checks the column against the
        log) and has_embedding is written at creation only. Taken anew per search it cost
        ~12 us, some 100,000 times in a steady year."""
        s = self.store
        kept = self.__dict__.get("_searchable_kept")
        if kept is None or kept[0] is not s or kept[1] != (s.n, len(s.status_log)):
            mask = s.mask() & s["has_embedding"]
            mask.flags.writeable = False
            kept = self._searchable_kept = (s, (s.n, len(s.status_log)), mask)
        searchable: np.ndarray = kept[2]
        return searchable

    def _cosine(self, vec: np.ndarray) -> np.ndarray:
        """Cosine of every row with ``vec`` (one matrix-vector product), float64."""
        return (self.store.embedding @ vec.astype(np.float32)).astype(np.float64)

    def _similar(
        self, vec: np.ndarray, tag: str, screen: tuple[BatchScreen, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """findSimilarBeliefs(embedding, limit) (000 §1): the ``similar_limit`` searchable
        rows most similar to ``vec`` (float32 products, ties by the seeded keys of ``tag``)
        and their float64 cosines, most similar first. Through the candidate index when it
        answers (:meth:`CandidateIndex.top_rows`: the full scan's rows whenever the probed
        lists hold its cut), every ``audit_every``-th search also by the full scan, and the
        audit records whether the rows the decision reads differ. Where the scan would run,
        ``screen`` (the batch's :class:`BatchScreen` and ``vec``'s place in it) gives its
        rows bit for bit from the batch's one matrix product."""
        s = self.store
        searchable = self._searchable()
        keys = functools.partial(s.tie_keys, tag)  # keys of the rows at the cut only
        k = self.params.similar_limit
        v32 = np.asarray(vec, dtype=np.float32)

        def full_scan() -> np.ndarray:  # products over the searchable rows' blocks only
            # (topk of those, rows ascending, is topk of the store-long scan with -inf at
            # every other row, at the cost of the searchable rows)
            rows = np.flatnonzero(searchable)
            sims = s.products_at(v32, rows).astype(np.float64)
            return rows[ranking.topk(sims, k, lambda at: keys(rows[at]))]

        found = (
            self.candidates.top_rows(v32, k, searchable, keys)
            if self.candidates.approximate
            else None
        )
        if found is None:
            top = None if screen is None else screen[0].top_rows(screen[1], k, searchable, keys)
            return self._by_cosine(full_scan() if top is None else top, vec)
        top, sims = self._by_cosine(found[0], vec)
        if self.candidates.audit_due():
            exact, _ = self._by_cosine(full_scan(), vec)
            self.candidates.record(not np.array_equal(top, exact), decision=True)
        return top, sims

    def use_index(self, mode: str, **knobs: Any) -> None:
        """Policy.use_index; "exact" also turns off the reinforcement check's range search
        (every search the full scan)."""
        super().use_index(mode, **knobs)
        check = {"mode": "exact"} if mode == "exact" else self.reinforce_index
        self.reinforcing.detach()
        self.reinforcing = CandidateIndex(self.store, seed=self.seed, **check)

    def _best_if_reinforced(
        self,
        vec: np.ndarray,
        screen: tuple[BatchScreen, int] | None,
        reach: tuple[BatchReach, int] | None = None,
    ) -> tuple[int, float] | None:
        """The row a belief reinforces and its cosine, where findSimilarBeliefs' first row
        is settled (its product apart from every other live row's: first in the scan's
        top-k and by float64 cosine) and is above the reinforce threshold: read off the
        batch's screen where the store is scanned, else by :meth:`_reinforced_in_range`
        (through the batch's ``reach`` when there is one); None where :meth:`_similar`
        decides (not settled, or not a reinforcement)."""
        if screen is None or self.candidates.approximate:
            return self._reinforced_in_range(vec, reach)
        # the cones as a search one at a time leaves them (trained at the same belief)
        self.reinforcing.catch_up()
        row = screen[0].best_row(screen[1], self._searchable())
        if row is None:
            return None
        # the cosine _by_cosine gives the row whichever rows are ranked with it
        sim = screen[0].cosine(screen[1], row)
        return (row, sim) if is_reinforce(sim, self.params) else None

    def _reinforced_in_range(
        self, vec: np.ndarray, reach: tuple[BatchReach, int] | None = None
    ) -> tuple[int, float] | None:
        """The row a belief reinforces and its cosine, from the exact range search of the
        searchable rows whose product with ``vec`` reaches reinforce_above (``reinforcing``:
        every such row, with the full scan's products): where the best of them is apart
        from every other searchable row (the others in range, the rest under
        reinforce_above) by more than a product's rounding and the tie tolerance, it is
        findSimilarBeliefs' first row by product and by float64 cosine, whatever the other
        rows of its top-k. None where the search does not answer (small store, exact mode,
        cones holding too many rows), or the best row is not settled or not a
        reinforcement. ``reach``: the batch's range searches (:class:`BatchReach`: the
        same answer, reading each list once for the batch; where its screens settle the
        first row, :meth:`BatchReach.lead`, no product is computed) and ``vec``'s place in
        them."""
        p = self.params
        searchable = self._searchable()
        # the batch's screens settle most beliefs' first row without a product
        lead = None if reach is None else reach[0].lead(reach[1], searchable)
        if lead is None:
            found = (
                self.reinforcing.rows_near(vec, p.reinforce_above, searchable)
                if reach is None
                else reach[0].rows_near(reach[1], searchable)
            )
            if found is None or not len(found[0]):
                return None
            rows, products = found
            vals = products.tolist()
            at = max(range(len(vals)), key=vals.__getitem__)
            second = max((x for i, x in enumerate(vals) if i != at), default=p.reinforce_above)
            v = np.asarray(vec, dtype=np.float64)
            gap = similarity.settled_gap(self.store.dim, math.sqrt(float(v @ v)))
            if not vals[at] - max(second, p.reinforce_above) > gap:
                return None
            lead = int(rows[at])
        elif lead < 0:
            return None
        row = lead
        # the cosine _by_cosine gives the row whichever rows are ranked with it
        if reach is None:
            sim = similarity.exact_cosine(self.store.embedding, row, vec)
        else:
            sim = reach[0].cosine(reach[1], row)
        return (row, sim) if is_reinforce(sim, p) else None

    def _reinforced(self, ep: Episode, row: int, similarity: float, now: float) -> list[Outcome]:
        """§1: a belief more similar than reinforce_above to ``row`` reinforces it."""
        self._reinforce(row, now)
        self.store.add_provenance(row, [ep.id], now)
        above = self.params.reinforce_above
        return [Outcome(ep.id, "reinforce", row, f"similarity {similarity:.4f} > {above}")]

    def _by_cosine(self, top: np.ndarray, vec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``top`` in descending float64 cosine with ``vec`` (stable) and those cosines: the
        §4 bands (0.70 / 0.85) are decided on float64 cosines of the stored vectors, since a
        float32 product rounds differently across BLAS builds and can cross a boundary. Each
        row's cosine is summed on its own (``similarity.exact_cosines``): the same number
        whichever rows are ranked with it."""
        sims = similarity.exact_cosines(self.store.embedding[top], vec)
        order = np.argsort(-sims, kind="stable")
        return top[order], sims[order]

    def _link(self, a: int, b: int) -> None:
        self.links.setdefault(a, set()).add(b)
        self.links.setdefault(b, set()).add(a)

    def effective(self, now: float) -> np.ndarray:
        s = self.store
        return effective_confidence(
            s["confidence"], s["stability"], s["updated"], now, self.params.half_life_days
        )

    def strength(self, now: float) -> np.ndarray:
        """§7 effective confidence of every row (terminal rows included, by the formula)."""
        return self.effective(now)

    def _reinforce(self, row: int, now: float) -> None:
        p = self.params
        conf = self.store["confidence"]
        conf[row] = min(p.confidence_cap, conf[row] + p.reinforce_step)
        self.store["updated"][row] = now

    def _create(
        self,
        claim: Claim,
        text: str,
        vec: np.ndarray | None,
        *,
        now: float,
        provenance,
        confidence: float,
        stability: float,
        importance: float,
        subject: str,
        type_name: str,
    ) -> int:
        has = vec is not None
        row = int(
            self.store.add(
                now,
                (vec if vec is not None else self._placeholder)[None, :],
                texts=[text],
                claims=[claim],
                provenance=[provenance],
                confidence=confidence,
                stability=stability,
                importance=float(importance),
                subject=self._code_subject(subject),
                type=TYPE_CODE[type_name],
                has_embedding=has,
            )[0]
        )
        self._tokens.append(_tokens(text))
        return row

    # -- §1 ingestion --------------------------------------------------------------------
    def _beliefs_of(self, episode: Episode) -> tuple[list[tuple], list[Outcome]]:
        """extractBeliefs(): (claim, text, type, importance 1-10, subject) per belief."""
        p = self.params
        claims = self.llm.extract(episode)
        if claims is None:
            fallback = Claim(
                key="",
                value=episode.text,
                category="fact",
                importance=p.fallback_importance / p.importance_scale,
                subject=p.fallback_subject,
            )
            return [
                (fallback, episode.text, p.fallback_type, p.fallback_importance, p.fallback_subject)
            ], []
        out: list[tuple] = []
        drops: list[Outcome] = []
        for c in claims:
            if c.category in SKIPPED_CATEGORIES:
                drops.append(Outcome(episode.id, "drop", -1, "insight skipped (000 §1)"))
                continue
            type_name = CATEGORY_TO_TYPE.get(c.category.lower(), "factual")
            subject = c.subject.strip().lower() or p.fallback_subject
            # §1: an importance the LLM did not give is the parse-failure default (5).
            imp = (
                p.fallback_importance if c.importance is None else importance_1_10(c.importance, p)
            )
            out.append((c, statement(c), type_name, imp, subject))
        if not claims:
            drops.append(Outcome(episode.id, "drop", -1, "extraction found no claim"))
        return out, drops

    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        """remember() for each episode, in order. The batch is extracted and embedded at once
        (keys ``<episode>#<i>`` make each vector independent of the batch), then every belief
        is decided sequentially against the store, so batch == one by one."""
        plans: list[tuple[Episode, list[tuple], list[Outcome]]] = []
        items: list[Claim] = []
        keys: list[str] = []
        for ep in episodes:
            beliefs, drops = self._beliefs_of(ep)
            plans.append((ep, beliefs, drops))
            for i, b in enumerate(beliefs):
                items.append(b[0])
                keys.append(f"{ep.id}#{i}")
        vectors = ok = None
        screen = reach = None
        if items:
            emb = self.llm.embed(items, keys)
            vectors, ok = emb.vectors, np.asarray(emb.ok, dtype=bool)
            if len(items) > 1:  # the batch's vectors against the store in one product,
                screen = BatchScreen(self.store, vectors)  # and through the cones' lists
                reach = BatchReach(self.reinforcing, vectors, self.params.reinforce_above)
        out: list[Outcome] = []
        summaries: list[SummaryEpisode] = []  # the batch's, embedded together at its end
        j = 0
        for ep, beliefs, drops in plans:
            out.extend(drops)
            for i, b in enumerate(beliefs):
                assert vectors is not None and ok is not None  # a belief, so items were embedded
                vec = vectors[j] if ok[j] else None
                at = None if screen is None else (screen, j)
                near = None if reach is None else (reach, j)
                out.extend(self._process_new_belief(ep, i, b, vec, now, at, near))
                j += 1
            out.extend(self._consolidate(ep, now, summaries))
        self._embed_summaries(summaries)
        return out

    def _process_new_belief(
        self,
        ep: Episode,
        i: int,
        belief: tuple,
        vec: np.ndarray | None,
        now: float,
        screen: tuple[BatchScreen, int] | None = None,
        reach: tuple[BatchReach, int] | None = None,
    ) -> list[Outcome]:
        """processNewBelief() (§1 flowchart). ``screen`` and ``reach``: the batch's
        comparison with the store and its range searches, and this belief's place in them."""
        p = self.params
        claim, text, type_name, importance, subject = belief
        kw = dict(
            now=now,
            provenance={ep.id},
            stability=p.default_stability,
            importance=importance,
            subject=subject,
            type_name=type_name,
        )
        if vec is None:
            row = self._create(claim, text, None, confidence=p.embed_fail_confidence, **kw)
            return [Outcome(ep.id, "create", row, "embedding failed: no dedup (000 §1)")]
        s = self.store
        best = self._best_if_reinforced(vec, screen, reach)
        if best is not None:  # what the search's first row decides, without the others
            return self._reinforced(ep, *best, now)
        top, sims = self._similar(vec, f"{self.seed}:{ep.id}#{i}", screen)
        if len(top) and is_reinforce(sims[0], p):
            return self._reinforced(ep, int(top[0]), float(sims[0]), now)
        if p.grey_zone == "relationship":
            return self._relate_new_belief(ep, i, belief, vec, now, top, sims)
        out: list[Outcome] = []
        old = -1
        note = ""
        grey = [int(r) for r, c in zip(top, sims) if in_grey_zone(c, p)]
        if grey:
            reply = self.llm.classify(
                claim, [s.claim[r] for r in grey], answer="index", key=f"{ep.id}#{i}"
            )
            idx = parse_index(reply, len(grey))
            if idx is None:
                if not (isinstance(reply, str) and reply.strip().upper() == NONE):
                    note = f"; invalid classifier reply {reply!r} treated as NONE (000 §1)"
            else:
                old = grey[idx]
        if old >= 0:
            support = len(s.provenance[old])
            if support >= p.support_threshold:
                conf = s["confidence"]
                conf[old] = max(p.confidence_floor, conf[old] - p.weaken_step)
                out.append(
                    Outcome(ep.id, "weaken", old, f"contradicted; {support} supporting episodes")
                )
            else:
                s.set_status(old, "invalidated", now)
                out.append(
                    Outcome(
                        ep.id, "invalidate", old, f"contradicted; {support} supporting episodes"
                    )
                )
        row = self._create(claim, text, vec, confidence=p.default_confidence, **kw)
        out.append(
            Outcome(
                ep.id,
                "create",
                row,
                f"top similarity {sims[0]:.4f}{note}" if len(top) else f"no similar belief{note}",
            )
        )
        if old >= 0:
            s["supersedes"][row] = old
            s["superseded_by"][old] = row
            out.append(Outcome(ep.id, "supersede", row, f"supersedes {old}"))
        return out + self._link_neighbours(ep, row, top, sims)

    def _relate_new_belief(
        self,
        ep: Episode,
        i: int,
        belief: tuple,
        vec: np.ndarray,
        now: float,
        top: np.ndarray,
        sims: np.ndarray,
    ) -> list[Outcome]:
        """processNewBelief() as the public code runs its grey zone (remember.ts,
        ``grey_zone="relationship"``): each of the top ``grey_candidates`` similar beliefs
        above grey_lo is classified in turn; the first REINFORCEMENT reinforces it (as a
        > 0.85 match does), the first CONTRADICTION weakens it by min(0.2, 1/(n+1)) with
        updated_at reset and a challenger at min(0.6, 1/(n+1) + 0.4) when it has n >= 3
        supporting episodes, else invalidates it; INDEPENDENT goes on to the next. Neither
        path links neighbours: only a belief created with no match does."""
        p = self.params
        s = self.store
        claim, text, type_name, importance, subject = belief
        kw = dict(
            now=now,
            provenance={ep.id},
            stability=p.default_stability,
            importance=importance,
            subject=subject,
            type_name=type_name,
        )
        grey = [(int(r), float(c)) for r, c in zip(top, sims) if c > p.grey_lo]
        grey = grey[: p.grey_candidates]
        replies: list[str] = []
        if grey:
            got = self.llm.classify(
                claim, [s.claim[r] for r, _ in grey], answer="relation", key=f"{ep.id}#{i}"
            )
            replies = [got] if isinstance(got, str) else list(got)
        for (old, sim), reply in zip(grey, replies):
            relation = reply.strip().upper() if isinstance(reply, str) else ""
            if relation.startswith(SUPPORTS):  # REINFORCEMENT: the same core meaning
                self._reinforce(old, now)
                s.add_provenance(old, [ep.id], now)
                return [Outcome(ep.id, "reinforce", old, f"grey zone {sim:.4f}: REINFORCEMENT")]
            if not relation.startswith(CONTRADICTS):  # INDEPENDENT: the next candidate
                continue
            support = len(s.provenance[old])
            out: list[Outcome] = []
            confidence = p.default_confidence
            if support >= p.support_threshold:
                share = 1.0 / (support + 1)
                conf = s["confidence"]
                conf[old] = max(p.confidence_floor, conf[old] - min(p.weaken_step, share))
                s["updated"][old] = now
                confidence = min(p.default_confidence, share + p.challenger_base)
                out.append(
                    Outcome(ep.id, "weaken", old, f"contradicted; {support} supporting episodes")
                )
            else:
                s.set_status(old, "invalidated", now)
                out.append(
                    Outcome(
                        ep.id, "invalidate", old, f"contradicted; {support} supporting episodes"
                    )
                )
            row = self._create(claim, text, vec, confidence=confidence, **kw)
            s["supersedes"][row] = old
            s["superseded_by"][old] = row
            out.append(Outcome(ep.id, "create", row, f"grey zone {sim:.4f}: CONTRADICTION"))
            out.append(Outcome(ep.id, "supersede", row, f"supersedes {old}"))
            return out
        row = self._create(claim, text, vec, confidence=p.default_confidence, **kw)
        out = [
            Outcome(
                ep.id,
                "create",
                row,
                f"top similarity {sims[0]:.4f}" if len(top) else "no similar belief",
            )
        ]
        return out + self._link_neighbours(ep, row, top, sims)

    def _link_neighbours(
        self, ep: Episode, row: int, top: np.ndarray, sims: np.ndarray
    ) -> list[Outcome]:
        """Zettelkasten: up to max_links of the similar beliefs in [link_lo, link_hi), still
        active, linked to the new belief ``row``."""
        p = self.params
        out: list[Outcome] = []
        active = self.store.mask_at(top).tolist()
        linked = 0
        for r, c, live in zip(top.tolist(), sims.tolist(), active):
            if linked >= p.max_links:
                break
            if r != row and live and in_link_band(c, p):
                self._link(row, r)
                linked += 1
                out.append(Outcome(ep.id, "link", row, f"linked to {r} (similarity {c:.4f})"))
        return out

    # -- §8 conversation consolidation ------------------------------------------------------
    def _consolidate(
        self, ep: Episode, now: float, later: list[SummaryEpisode] | None = None
    ) -> list[Outcome]:
        p = self.params
        if not ep.conversation:
            return []
        pending = self._turns.setdefault(ep.conversation, [])
        pending.append(ep)
        if len(pending) < p.consolidation_every_turns:
            return []
        chunk = list(pending)
        pending.clear()
        return self.consolidate_conversation(ep.conversation, chunk, now, ep.id, later)

    def _end_conversations(self, now: float) -> list[Outcome]:
        """Conversations idle for ``conversation_end_days`` offer their remaining turns."""
        end = self.params.conversation_end_days
        out: list[Outcome] = []
        if end <= 0.0:
            return out
        for conv in sorted(self._turns):
            pending = self._turns[conv]
            if pending and now - pending[-1].time >= end:
                chunk = list(pending)
                pending.clear()
                out += self.consolidate_conversation(conv, chunk, now, f"{conv}#end")
        return out

    def consolidate_conversation(
        self,
        conversation: str,
        chunk: list[Episode],
        now: float,
        ident: str,
        later: list[SummaryEpisode] | None = None,
    ) -> list[Outcome]:
        """§8 consolidateConversation(turns): null below 4 turns, else a 1-3 sentence
        summary (NONE: null) stored as an embedded summary episode. ``later``: the summary
        episode is appended there to be embedded with the others of an ingested batch
        (:meth:`_embed_summaries`; nothing reads a summary's embedding during ingest)."""
        p = self.params
        n = self._chunks.get(conversation, 0)
        self._chunks[conversation] = n + 1
        if len(chunk) < p.consolidation_min_turns:
            return [
                Outcome(
                    ident,
                    "skip",
                    -1,
                    f"conversation chunk of {len(chunk)} turns < "
                    f"{p.consolidation_min_turns} (000 §8)",
                )
            ]
        texts = [f"{'User' if e.speaker == 'user' else 'Assistant'}: {e.text}" for e in chunk]
        sid = f"{conversation}#summary{n}"
        summary = self.llm.summarize(texts, key=sid)
        if summary.strip().upper() == NONE:
            return [Outcome(ident, "drop", -1, "conversation summary NONE (000 §8)")]
        episode = SummaryEpisode(sid, conversation, now, summary, tuple(e.id for e in chunk), None)
        self.summaries.append(episode)
        if later is None:
            self._embed_summaries([episode])
        else:
            later.append(episode)
        return [Outcome(ident, "consolidate", -1, f"summary episode {sid} of {len(chunk)} turns")]

    def _embed_summaries(self, episodes: list[SummaryEpisode]) -> None:
        """Each summary episode's embedding (its text, under its id), in one call: the LLM's
        vector of an item depends on the item and its key only, never on the call."""
        if not episodes:
            return
        emb = self.llm.embed([e.text for e in episodes], [e.id for e in episodes])
        for episode, vec, ok in zip(episodes, emb.vectors, emb.ok):
            episode.embedding = vec.copy() if bool(ok) else None

    def episode_context(self, query: Query) -> list[tuple[str, float]]:
        """getMemoryContext()'s episode part (§4, §8): summary episodes with cosine > 0.30,
        best first. Not part of recall(): see docs/policies/pai.md."""
        vec = self.llm.embed_query(query)
        if vec is None:
            return []
        hits = []
        for sm in self.summaries:
            if sm.forgotten or sm.embedding is None:
                continue
            c = float(sm.embedding.astype(np.float64) @ np.asarray(vec, dtype=np.float64))
            if c > self.params.episode_similarity:
                hits.append((sm.id, c))
        return sorted(hits, key=lambda h: -h[1])

    # -- §2 recall -----------------------------------------------------------------------
    def subject_codes(self, query: Query) -> list[int]:
        """Subject codes the query names (§2 subject-aware boosting): ``Query.subject`` when
        set, else every known subject whose name occurs as whole words in the query text
        (the default subject "owner" is never matched from text: it is not a name)."""
        if query.subject:
            code = self._subject_code.get(query.subject.strip().lower())
            return [] if code is None else [code]
        words = _tokens(query.text)
        return [
            c
            for name, c in self._subject_code.items()
            if name != self.params.fallback_subject and _tokens(name) and _tokens(name) <= words
        ]

    def _subject_match(self, query: Query) -> np.ndarray:
        """subjectMatch per row: 1.0 where the row's subject is one the query names."""
        codes = self.subject_codes(query)
        if not codes:
            return np.zeros(self.store.n, dtype=np.float64)
        return np.isin(self.store["subject"], codes).astype(np.float64)

    def score_rows(
        self, query: Query, vec: np.ndarray, now: float, cosine: np.ndarray | None = None
    ) -> np.ndarray:
        """§2 score of every row; -inf for rows that cannot be returned (inactive, no
        embedding, cosine below the floor)."""
        s = self.store
        p = self.params
        cos = self._cosine(vec) if cosine is None else cosine
        score = recall_scores(
            cos,
            s["importance"],
            decay.days_since_access(now, s["last_access"], s[p.recency_from]),
            s["stability"],
            self._subject_match(query),
            s["type"] == TYPE_CODE["insight"],
            p,
        )
        keep = self._searchable() & (cos >= p.cosine_floor)
        return np.where(keep, score, -np.inf)

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        """semanticSearch() per query, in order: each query's access recording is seen by
        the next, exactly as one by one. Each query's cosines are one matrix-vector product
        over the searchable rows' blocks (``store.products``: the full product's numbers; the
        others can never be returned, and a batched matrix-matrix product would round
        differently in float32 and break batch == one-by-one)."""
        out = []
        for q in queries:
            vec = self.llm.embed_query(q)
            if vec is None:
                out.append(self._text_search(q))
            elif self.store.n == 0:
                out.append(Ranking.empty())
            else:
                out.append(self._semantic_search(q, now, vec, self._searchable()))
        return out

    def _semantic_search(
        self, query: Query, now: float, vec: np.ndarray, searchable: np.ndarray
    ) -> Ranking:
        """Top N by the §2 score (fused kernel: exactly ``topk(score_rows(...), N)``), then
        the linked neighbours of the top 3 at 0.8 x the parent's score, then access. The
        cosines are the query's products (kept between its calls), or, for a vector seen
        once in a large store, those of the few rows its screen finds (the same answer:
        ``pai_topk_screened``)."""
        p = self.params
        s = self.store
        cols = PaiColumns.of_store(s, TYPE_CODE["insight"], searchable, p.recency_from)
        tag = f"{self.seed}:{query.id}"  # ties: seeded order, never row (keys at the cut only)
        codes = self.subject_codes(query)

        def tb(rows: np.ndarray) -> np.ndarray:
            return s.tie_keys(tag, rows)

        def all_cosines() -> np.ndarray:  # -inf where not searchable
            return np.where(searchable, s.query_products(vec), np.float32(-np.inf))

        screen = s.query_screen(vec)
        ranked = None
        if screen is not None:
            ranked = pai_topk_screened(
                screen, lambda rows: s.products_of(vec, rows), cols, now, codes, p, query.k, tb
            )
        if ranked is None:
            ranked = pai_topk_from_cos(all_cosines(), cols, now, codes, p, query.k, tiebreak=tb)
        top, top_scores = ranked
        if p.type_cap_divisor > 0:  # the code's prioritizeRecallTypes
            top, top_scores = self._cap_types(
                top, top_scores, query.k, all_cosines, cols, now, query, tb
            )
        if p.neighbours_after:
            ids, scores = self._neighbours_after(top, top_scores, query.k, tb)
            self._record_access(ids, now)
            return Ranking(ids, scores)
        score = dict(zip(top.tolist(), top_scores.tolist()))
        best: dict[int, float] = dict(score)
        status = s["status"]
        active = s.statuses.code("active")
        for parent in top[: p.graph_parents].tolist():
            ns = float(score[parent]) * p.neighbour_factor
            for nb in sorted(self.links.get(parent, ())):
                if status[nb] == active and ns > best.get(nb, -np.inf):
                    best[nb] = ns
        rows = np.fromiter(best.keys(), dtype=np.int64, count=len(best))
        vals = np.fromiter(best.values(), dtype=np.float64, count=len(best))
        order = ranking.topk(vals, query.k, tb(rows))
        ids = rows[order]
        scores = np.minimum.accumulate(vals[order])
        self._record_access(ids, now)
        return Ranking(ids, scores)

    def _is_capped_type(self, rows: np.ndarray) -> np.ndarray:
        types = self.store["type"][rows]
        return (types == TYPE_CODE["insight"]) | (types == TYPE_CODE["meta"])

    def _prioritize_types(
        self, rows: np.ndarray, scores: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """memory.ts prioritizeRecallTypes: ``rows`` (best first) taken in order, at most
        max(1, k // type_cap_divisor) of them insight or meta; when fewer than k are taken,
        the passed-over rows follow, in order."""
        if len(rows) <= k:
            return rows, scores
        cap = max(1, k // self.params.type_cap_divisor)
        capped = self._is_capped_type(rows)
        keep = capped.cumsum() <= cap
        keep |= ~capped
        order = np.concatenate([np.flatnonzero(keep), np.flatnonzero(~keep)])[:k]
        return rows[order], scores[order]

    def _cap_types(
        self,
        top: np.ndarray,
        top_scores: np.ndarray,
        k: int,
        all_cosines: Callable[[], np.ndarray],
        cols: PaiColumns,
        now: float,
        query: Query,
        tb: Callable[[np.ndarray], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The top k under the code's type cap: the fused top k when it holds no more
        insight or meta rows than the cap, else the cap applied to the full ranking."""
        if int(self._is_capped_type(top).sum()) <= max(1, k // self.params.type_cap_divisor):
            return top, top_scores
        cos = all_cosines()
        n = int(np.count_nonzero(np.isfinite(cos)))
        rows, scores = pai_topk_from_cos(
            cos, cols, now, self.subject_codes(query), self.params, n, tiebreak=tb
        )
        return self._prioritize_types(rows, scores, k)

    def _neighbours_after(
        self,
        top: np.ndarray,
        top_scores: np.ndarray,
        k: int,
        tb: Callable[[np.ndarray], np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """memory.ts semanticSearch's graph step as the code runs it: the active linked
        neighbours of the top ``graph_parents`` results that are not results themselves,
        each at 0.8 x its parent's score (its best parent), follow the results (best first,
        ties by the seeded keys), then the type cap and the limit; scores made
        non-increasing down the list."""
        p = self.params
        s = self.store
        status, active = s["status"], s.statuses.code("active")
        results = set(top.tolist())
        near: dict[int, float] = {}
        for parent, score in zip(top[: p.graph_parents].tolist(), top_scores.tolist()):
            ns = float(score) * p.neighbour_factor
            for nb in self.links.get(parent, ()):
                if nb not in results and status[nb] == active and ns > near.get(nb, -np.inf):
                    near[nb] = ns
        rows = np.fromiter(near.keys(), dtype=np.int64, count=len(near))
        vals = np.fromiter(near.values(), dtype=np.float64, count=len(near))
        order = ranking.topk(vals, len(rows), tb(rows))
        ids = np.concatenate([top, rows[order]])
        scores = np.concatenate([top_scores, vals[order]])
        if p.type_cap_divisor > 0:
            ids, scores = self._prioritize_types(ids, scores, k)
        ids, scores = ids[:k], scores[:k]
        return ids, np.minimum.accumulate(scores)

    def _record_access(self, rows: np.ndarray, now: float) -> None:
        if not len(rows):
            return
        s = self.store
        p = self.params
        s["access_count"][rows] += 1
        s["stability"][rows] = np.minimum(
            p.stability_cap, s["stability"][rows] + p.access_stability_step
        )
        s["last_access"][rows] = now

    def _text_search(self, query: Query) -> Ranking:
        """searchBeliefs() FTS5 fallback: active beliefs ranked by how many distinct query
        words their statement holds; beliefs sharing no word are not returned. 000 states
        no order among equal matches, so ties take the default rule (the seeded order of
        memory identity). (pai v2 put newer rows first: with one shared word, the asked
        subject's name, that made the fallback a recency ranker, and pai kept recall 0.47
        on churn with every embedding failing while each other policy fell to 0.)
        No access recording."""
        s = self.store
        words = _tokens(query.text)
        count = np.full(s.n, -np.inf)
        for r in np.flatnonzero(s.mask()).tolist():
            c = len(words & self._tokens[r])
            if c > 0:
                count[r] = float(c)
        tag = f"{self.seed}:{query.id}"
        ids = ranking.topk(count, query.k, lambda rows: s.tie_keys(tag, rows))
        return Ranking(ids, count[ids])

    # -- §3 maintenance ------------------------------------------------------------------
    def maintain(self, now: float, jobs: Sequence[str]) -> list[Outcome]:
        known = {j.name for j in self.schedule}
        unknown = set(jobs) - known
        if unknown:
            raise ValueError(
                f"PersonalAI has no job {sorted(unknown)[0]!r}; known: {sorted(known)}"
            )
        out: list[Outcome] = []
        for job in ("reflect", "synthesize", "prune"):
            if job in jobs:
                out.extend(getattr(self, f"_job_{job}")(now))
        return out

    def _reflect_rows(self, now: float) -> np.ndarray:
        """reflect() loads up to 200 active beliefs with embeddings (§3): the most recently
        updated ones, always taken in creation order (oldest first). Beliefs created (or
        updated) at the same time are ordered by the seeded permutation of their identity
        (``MemoryStore.tie_keys``), never by row. (pai v1 took them newest-updated first
        above 200 only, so clustering and synthesis saw a reversed order on large stores and
        a synthesized majority tie went to the superseded value.)"""
        s = self.store
        rows = np.flatnonzero(self._searchable())
        tb = s.tie_keys(f"{self.seed}:reflect", rows)
        if len(rows) > self.params.reflect_limit:
            newest = np.lexsort((tb, -s["updated"][rows]))[: self.params.reflect_limit]
            rows, tb = rows[newest], tb[newest]
        return rows[np.lexsort((tb, s["created"][rows]))]

    def reflect(
        self, now: float, threshold: float | None = None, rows: np.ndarray | None = None
    ) -> tuple[list[list[int]], list[int]]:
        """§3 reflect: (clusters of beliefs with pairwise-to-leader cosine >= threshold,
        stale beliefs). Leader clustering over the loaded beliefs in load order."""
        p = self.params
        thr = p.duplicate_threshold if threshold is None else threshold
        rows = self._reflect_rows(now) if rows is None else rows
        E = self.store.embedding[rows]
        near = (E @ E.T).astype(np.float64) >= thr
        np.fill_diagonal(near, False)  # (a leader is not its own member)
        used = np.zeros(len(rows), dtype=bool)
        clusters: list[list[int]] = []
        # only a belief with another one above the threshold can lead a cluster: the others
        # are passed over without a test (most of the window, once a day)
        for a in np.flatnonzero(near.any(axis=1)).tolist():
            if used[a]:
                continue
            members = np.flatnonzero(near[a] & ~used)
            if len(members):
                used[a] = True
                used[members] = True
                clusters.append([int(rows[a])] + rows[members].tolist())
        eff = self.effective(now)
        stale = rows[eff[rows] < p.stale_threshold].tolist()
        return clusters, stale

    def _job_reflect(self, now: float) -> list[Outcome]:
        clusters, stale = self.reflect(now)
        out = self._end_conversations(now) + self.merge_duplicates(clusters, now)
        return out or [Outcome("reflect", "skip", -1, f"no duplicates; {len(stale)} stale beliefs")]

    def merge_duplicates(self, clusters: list[list[int]], now: float) -> list[Outcome]:
        """§3 mergeDuplicates: winner = highest effective confidence (ties: the seeded order
        of memory identity, never row); losers' episodes go to the winner, losers
        invalidated (superseded_by = winner), winner reinforced once (+0.1, updated_at reset
        as in §1's reinforce)."""
        s = self.store
        eff = self.effective(now)
        tb = s.tie_keys(f"{self.seed}:merge")
        out: list[Outcome] = []
        for cluster in clusters:
            live = [r for r in cluster if s.status_of(r) == "active"]
            if len(live) < 2:
                continue
            live.sort(key=lambda r: (-eff[r], int(tb[r])))
            winner, losers = live[0], live[1:]
            for loser in losers:
                s.add_provenance(winner, s.provenance[loser], now)
                s.set_status(loser, "invalidated", now)
                s["superseded_by"][loser] = winner
                out.append(Outcome("reflect", "merge", loser, f"merged into {winner}"))
            self._reinforce(winner, now)
            out.append(Outcome("reflect", "reinforce", winner, f"winner of {len(live)} duplicates"))
        return out

    def _job_synthesize(self, now: float) -> list[Outcome]:
        """§3 synthesize: clusters at cosine >= 0.60 (up to 5) -> one meta-belief each."""
        p = self.params
        s = self.store
        rows = self._reflect_rows(now)
        if not p.resynthesize:
            rows = rows[s["type"][rows] != TYPE_CODE["meta"]]
        clusters, _ = self.reflect(now, p.synthesis_threshold, rows)
        out: list[Outcome] = []
        done = 0
        for cluster in clusters:
            if done >= p.synthesis_max_clusters:
                break
            members = frozenset(cluster)
            if not p.resynthesize and any(
                members <= src and s.status_of(m) == "active"
                for m, src in self.meta_sources.items()
            ):
                continue
            done += 1
            # named by its members' identities, not their rows (row-order invariance)
            key = "meta:" + ",".join(sorted(f"{int(s['tie_id'][r]):x}" for r in cluster))
            claim = self.llm.synthesize([s.claim[r] for r in cluster], key=key)
            emb = self.llm.embed([claim], [key])
            vec = emb.vectors[0] if bool(emb.ok[0]) else None
            subjects = {int(s["subject"][r]) for r in cluster}
            subject = self.subjects[subjects.pop()] if len(subjects) == 1 else p.fallback_subject
            prov = set().union(*(s.provenance[r] for r in cluster))
            row = self._create(
                claim,
                statement(claim),
                vec,
                now=now,
                provenance=prov,
                confidence=p.meta_confidence,
                stability=p.meta_stability,
                importance=float(max(s["importance"][r] for r in cluster)),
                subject=subject,
                type_name="meta",
            )
            for r in cluster:
                self._link(row, r)
            self.meta_sources[row] = members
            out.append(
                Outcome("synthesize", "synthesize", row, f"meta-belief of {sorted(cluster)}")
            )
        return out or [Outcome("synthesize", "skip", -1, "no new cluster")]

    def find_contradictions(self, now: float) -> list[tuple[int, int, float]]:
        """§4 findContradictions (curator plugin): pairs of loaded active beliefs (the
        reflect window) with cosine in [0.40, 0.85], for batch LLM analysis. A report only:
        the curator is not part of the lifecycle's scheduled jobs."""
        p = self.params
        rows = self._reflect_rows(now)
        E = self.store.embedding[rows]
        sim = (E @ E.T).astype(np.float64)
        a, b = np.nonzero(np.triu((sim >= p.curator_lo) & (sim <= p.curator_hi), k=1))
        return [(int(rows[i]), int(rows[j]), float(sim[i, j])) for i, j in zip(a, b)]

    def _job_prune(self, now: float) -> list[Outcome]:
        """§3 pruneBeliefs: active beliefs with effective confidence < 0.05 -> pruned."""
        rows = np.flatnonzero(
            self.store.mask() & (self.effective(now) < self.params.prune_threshold)
        )
        if not len(rows):
            return [Outcome("prune", "skip", -1, "nothing below the prune threshold")]
        self.store.set_status(rows, "pruned", now)
        return [
            Outcome(
                "prune", "prune", int(r), f"effective confidence < {self.params.prune_threshold}"
            )
            for r in rows
        ]

    # -- user actions ----------------------------------------------------------------------
    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        """forgetBelief() for every active belief whose provenance holds the episode; the
        summary episodes made from it are dropped from episodic context too."""
        s = self.store
        out: list[Outcome] = []
        for ev in events:
            rows = [int(r) for r in s.rows_from(ev.episode_id) if s.status_of(int(r)) == "active"]
            for r in rows:
                s.set_status(r, "forgotten", now)
                out.append(Outcome(ev.id, "forget", r, f"provenance holds {ev.episode_id}"))
            for sm in self.summaries:
                if ev.episode_id in sm.episode_ids and not sm.forgotten:
                    sm.forgotten = True
                    out.append(Outcome(ev.id, "forget", -1, f"summary episode {sm.id}"))
            if not rows:
                out.append(Outcome(ev.id, "skip", -1, f"no active belief from {ev.episode_id}"))
        return out

    def plant(self, episode: Episode, now: float) -> int:
        """Ingest one episode; a ``stability`` attr on its first claim sets the row's stability
        (decay-curve tool, §7), within the range a row's stability has: above 0 (a half-life
        of 30 x stability days) and at most ``stability_cap`` (§2, §6)."""
        stability = None
        for c in episode.claims:
            st = c.attr("stability")
            if st is not None:
                try:
                    stability = float(st)
                except (TypeError, ValueError):
                    raise MemsimError(
                        f"pai: memory attribute stability={st!r} is not a number"
                    ) from None
                cap = self.params.stability_cap
                if not (0.0 < stability <= cap):  # (NaN fails too)
                    raise MemsimError(
                        f"pai: memory attribute stability={st!r} is outside (0, {cap:g}] "
                        "(stability_cap)"
                    )
                break
        row = super().plant(episode, now)
        if stability is not None:
            self.store["stability"][row] = stability
        return row


def parse_index(reply: object, n: int) -> int | None:
    """checkContradiction()'s reply: a 1-based index in 1..n -> 0-based, anything else None
    (NONE, non-numeric, out of range: all treated as no contradiction, §1)."""
    if not isinstance(reply, str):
        return None
    text = reply.strip()
    if not text.isdigit() or not text.isascii():
        return None
    k = int(text)
    return k - 1 if 1 <= k <= n else None


@dataclass(frozen=True)
class PaiCodeParams(PaiParams):
    """pai-code: Personal AI's public code where it departs from 000 ("each system as
    built"). Repository devjarus/pai, commit 113345d79440597f761fc2933486169d07a3bc46, files
    packages/core/src/memory/memory.ts (decay, semanticSearch) and
    packages/core/src/memory/remember.ts (processNewBelief). Its decay from ``updated_at``
    and a recall score that leaves the decayed confidence out are what the documented policy
    already does (§7, §2); what changes: insight weight x0.8, recency of a never-accessed
    belief from updated_at, and the grey zone's relationship classification
    (docs/policies/pai-code.md)."""

    insight_multiplier: float = param(
        0.8, lo=0.0, doc="pai-code: insight-type beliefs score x0.8 (000 §2 says x0.5)"
    )
    recency_from: str = param(
        "updated",
        choices=("created", "updated"),
        doc="pai-code: memory.ts semanticSearch counts a never-accessed belief's recency "
        "from updated_at (000 §2: from creation)",
    )
    grey_zone: str = param(
        "relationship",
        choices=("contradiction", "relationship"),
        doc="pai-code: remember.ts classifies each grey-zone candidate REINFORCEMENT / "
        "CONTRADICTION / INDEPENDENT and weakens by min(0.2, 1/(n+1))",
    )
    neighbours_after: bool = param(
        True, doc="pai-code: memory.ts semanticSearch appends the neighbours after the results"
    )
    type_cap_divisor: int = param(
        3,
        lo=0,
        doc="pai-code: memory.ts prioritizeRecallTypes, at most max(1, floor(limit / 3)) "
        "insight or meta beliefs",
    )


class PersonalAICode(PersonalAI):
    """Personal AI as its code is built (docs/policies/pai-code.md)."""

    Params: ClassVar[type[Params]] = PaiCodeParams
