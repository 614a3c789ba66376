"""Cosmo (seed 002): salience decay with recall frequency, spacing effect and candidate states.

Every node (episodic Sources and semantic Person / Concept / Entity nodes, Storylines,
Macros) carries salience, state (candidate -> active -> core -> archived), recall_frequency,
decay_gradient and ttl_policy (002 §Memory Lifecycle & Decay). Decay:
``rate = 0.02 / (1 + recall_frequency ** decay_gradient)``, times ``1 + (1 - confidence) * 2``
for candidates below confidence 0.8, zero for candidates at or above it; salience follows
``salience_0 * exp(-rate * days_unused)`` (002 §Decay Formula) by default, or the literal
nightly job that multiplies the stored salience every night (``decay_mode="nightly"``).
Choices the document leaves open are Params fields, explained in docs/policies/cosmo.md.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine.arrays import as_float64
from memsim.engine.errors import MemsimError
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.params import Params, param
from memsim.engine.policy import Job, Outcome, Policy, Ranking
from memsim.engine.store import MemoryStore, Statuses, as_unit_vectors


def cosmo_decay_rate(
    recall_frequency: ArrayLike,
    decay_gradient: ArrayLike,
    base_rate: ArrayLike = 0.02,
    state_is_candidate: ArrayLike = False,
    confidence: ArrayLike = 1.0,
    penalty_threshold: float = 0.8,
    penalty_slope: ArrayLike = 2.0,
) -> np.ndarray:
    """Cosmo's nightly decay rate (002 §Candidate Semantics / Offline decay job).

    ``base_rate / (1 + recall_frequency ** decay_gradient)``; for candidates with
    ``confidence < penalty_threshold`` times ``1 + (1 - confidence) * penalty_slope``; for
    candidates at or above the threshold 0 (no decay until first retrieval). With
    recall_frequency 0 and a negative gradient the power is +inf and the rate 0 (the limit).
    """
    rf, g = as_float64(recall_frequency), as_float64(decay_gradient)
    with np.errstate(divide="ignore", over="ignore"):
        rate = as_float64(base_rate) / (1.0 + np.power(rf, g))
    conf = as_float64(confidence)
    cand = np.asarray(state_is_candidate, dtype=bool)
    penalty = np.where(
        conf < penalty_threshold, 1.0 + (1.0 - conf) * as_float64(penalty_slope), 0.0
    )
    return np.where(cand, rate * penalty, rate)


def cosmo_decay_rate_ref(
    recall_frequency: float,
    decay_gradient: float,
    base_rate: float = 0.02,
    state_is_candidate: bool = False,
    confidence: float = 1.0,
    penalty_threshold: float = 0.8,
    penalty_slope: float = 2.0,
) -> float:
    if recall_frequency == 0 and decay_gradient < 0:
        power = math.inf  # 0 ** negative: the limit
    else:
        power = recall_frequency**decay_gradient
    base_decay_rate = base_rate / (1 + power)
    if state_is_candidate and confidence < penalty_threshold:
        return base_decay_rate * (1 + (1 - confidence) * penalty_slope)
    if state_is_candidate:
        return 0.0
    return base_decay_rate


SEMANTIC = ("person", "concept", "entity")
TTL_POLICIES = (
    "decay",
    "ephemeral",
    "keep_forever",
)  # ascending precedence (002 §TTL Policy Table)
TTL_CODE = {name: i for i, name in enumerate(TTL_POLICIES)}
STATES = ("candidate", "active", "core", "archived", "deleted")
# category -> semantic node kind (choice, see docs/policies/cosmo.md)
PERSON_CATEGORIES = frozenset({"relationship"})
CONCEPT_CATEGORIES = frozenset(
    {"preference", "value", "sentiment", "procedural", "drive", "meta", "opinion"}
)


def decay_rate(
    recall_frequency: np.ndarray,
    decay_gradient: np.ndarray,
    candidate: np.ndarray,
    confidence: np.ndarray,
    *,
    base_rate: float,
    confident: float,
    penalty: float,
    confidence_applies: np.ndarray | bool = True,
) -> np.ndarray:
    """002 §Offline/Nightly Decay Job step 2, vectorized.

    ``base = base_rate / (1 + rf ** g)`` (policies.cosmo.cosmo_decay_rate: with rf 0 and a
    negative gradient the power is +inf and the rate 0, the limit); candidates with
    confidence < ``confident`` decay ``1 + (1 - confidence) * penalty`` times faster, candidates
    at or above it not at all; other states at the base rate. ``confidence_applies`` is False
    for rows without an extraction confidence (Sources)."""
    cand = np.asarray(candidate, dtype=bool) & np.asarray(confidence_applies, dtype=bool)
    return cosmo_decay_rate(
        recall_frequency,
        decay_gradient,
        base_rate=base_rate,
        state_is_candidate=cand,
        confidence=confidence,
        penalty_threshold=confident,
        penalty_slope=penalty,
    )


def spaced_gradient(
    gradient: np.ndarray, interval: np.ndarray, last_interval: np.ndarray, p: CosmoParams
) -> np.ndarray:
    """002 §Offline/Nightly Decay Job 4 (spacing effect): a longer interval than the last one
    raises the gradient by ``spacing_longer``, a shorter one lowers it by ``spacing_shorter``."""
    g = np.asarray(gradient, dtype=np.float64)
    return np.where(
        interval > last_interval,
        g + p.spacing_longer,
        np.where(interval < last_interval, g - p.spacing_shorter, g),
    )


def spacing_boost(interval: np.ndarray, p: CosmoParams) -> np.ndarray:
    """cosmo-code's spacing boost of a recall interval (days), in [spacing_boost_floor, 1]:
    ``floor + (1 - floor) x min(1, (1 - exp(-d / tau)) / (1 - exp(-horizon / tau)))``
    (Saturn decayService.ts, see CosmoCodeParams)."""
    d = np.asarray(interval, dtype=np.float64)
    tau = p.spacing_boost_tau
    grown = (1.0 - np.exp(-d / tau)) / (1.0 - math.exp(-p.spacing_boost_horizon / tau))
    return p.spacing_boost_floor + (1.0 - p.spacing_boost_floor) * np.minimum(1.0, grown)


def code_spaced_gradient(
    gradient: np.ndarray, interval: np.ndarray, last_interval: np.ndarray, p: CosmoParams
) -> np.ndarray:
    """cosmo-code's spacing rule: a longer interval than the last raises the gradient by
    ``spacing_longer x boost``; an equal or shorter one lowers it by
    ``spacing_shorter x (1 - boost)``; the result is never below ``gradient_floor``."""
    g = np.asarray(gradient, dtype=np.float64)
    boost = spacing_boost(interval, p)
    moved = np.where(
        interval > last_interval,
        g + p.spacing_longer * boost,
        g - p.spacing_shorter * (1.0 - boost),
    )
    return np.maximum(p.gradient_floor, moved)


@dataclass(frozen=True)
class CosmoParams(Params):
    """Every constant of 002 (§Memory Lifecycle & Decay, §Hierarchical Memory Promotion,
    §Phase 2, §Governance Hooks) plus documented choices."""

    initial_salience: float = param(
        0.5, lo=0.0, hi=1.0, doc="002 §Phase 0 / §Initial Values: salience 0.5"
    )
    base_rate: float = param(0.02, lo=0.0, doc="002 §Decay Formula: base_rate = 0.02")
    initial_decay_gradient: float = param(1.0, doc="002 §Initial Values: decay_gradient 1.0")
    access_boost: float = param(
        0.1, lo=0.05, hi=0.1, doc="002 §Salience Updates: alpha in [0.05, 0.1] (choice: 0.1)"
    )
    salience_cap: float = param(
        1.0, lo=0.0, doc="002 §Salience Updates: min(1.0, salience + alpha)"
    )
    core_retrievals: int = param(10, lo=1, doc="002 §Transition Rules: core at access_count >= 10")
    archive_salience: float = param(
        0.01, lo=0.0, doc="002 §Offline/Nightly Decay Job 5: archive below 0.01 (<)"
    )
    confident_candidate: float = param(
        0.8, lo=0.0, hi=1.0, doc="002 §Candidate Semantics: no decay at confidence >= 0.8"
    )
    confidence_penalty: float = param(
        2.0, lo=0.0, doc="002 §Candidate Semantics: 1 + (1 - confidence) x 2"
    )
    spacing_longer: float = param(
        0.1, doc="002 §Offline/Nightly Decay Job 4: gradient += 0.1 (longer interval)"
    )
    spacing_shorter: float = param(
        0.05, doc="002 §Offline/Nightly Decay Job 4: gradient -= 0.05 (shorter interval)"
    )
    decay_mode: str = param(
        "closed_form",
        choices=("closed_form", "nightly"),
        doc="002 §Decay Formula (closed form, default) vs §Offline/Nightly Decay Job (compounds)",
    )
    nightly_spacing: bool = param(
        False,
        doc="cosmo-code: the nightly job also applies the spacing rule (002 §Offline/Nightly "
        "Decay Job 4) with the interval since the last access, so the gradient drifts up "
        "every night without a recall; False = the rule runs on recall only",
    )
    # -- cosmo-code (CaptainCrouton89/Saturn @ 4be0950d, backend/src/services/decayService.ts;
    # see CosmoCodeParams): inert in the documented defaults -----------------------------
    spacing_form: str = param(
        "document",
        choices=("document", "code"),
        doc="002 §Offline/Nightly Decay Job 4 flat +0.1 / -0.05 ('document'); cosmo-code "
        "('code'): +0.1 x spacing boost for a longer interval, -0.05 x (1 - boost) for an "
        "equal or shorter one, floored at gradient_floor (decayService.ts:82-87, 94)",
    )
    spacing_boost_floor: float = param(
        0.05, lo=0.0, hi=1.0, doc="cosmo-code: boost = 0.05 + 0.95 x ... (decayService.ts:74)"
    )
    spacing_boost_tau: float = param(
        20.0, lo=1e-9, doc="cosmo-code: 1 - exp(-interval / 20) (decayService.ts:75-76)"
    )
    spacing_boost_horizon: float = param(
        90.0, lo=1e-9, doc="cosmo-code: / (1 - exp(-90 / 20)), capped at 1 (decayService.ts:75-76)"
    )
    gradient_floor: float = param(
        0.5, lo=0.0, doc="cosmo-code: decay_gradient never below 0.5 (decayService.ts:86, 94)"
    )
    recall_spacing: bool = param(
        True,
        doc="002 §Offline/Nightly Decay Job 4 'If recalled': the spacing rule runs at "
        "retrieval; False (cosmo-code): a retrieval leaves the gradient alone, only the "
        "nightly job moves it",
    )
    missing_confidence: float = param(
        0.5,
        lo=0.0,
        hi=1.0,
        doc="cosmo-code: coalesce(n.confidence, 0.5), the confidence of a node without one "
        "(Sources) in the candidate penalty (decayService.ts:55-58); read only when "
        "penalize_missing_confidence",
    )
    penalize_missing_confidence: bool = param(
        False,
        doc="False (002: a Source has no confidence, so the candidate rule does not apply "
        "to it); True (cosmo-code): a candidate without one is penalized at missing_confidence",
    )
    whole_days: bool = param(
        False,
        doc="cosmo-code: the nightly job counts whole days since the last access "
        "(duration.between(...).days, decayService.ts:42-48, 67-70); False: fractional days",
    )
    decay_archived: bool = param(
        True,
        doc="002 §Offline/Nightly Decay Job 'For all nodes with salience > 0' (archived "
        "included); False (cosmo-code): the job skips archived nodes (decayService.ts:29)",
    )
    # -- 002 §Note Retention / §Note Cleanup ---------------------------------------------
    note_lifetime: str = param(
        "month",
        choices=("week", "month", "year", "forever"),
        doc="002 §Note Retention: a note's lifetime when the agent chooses none: "
        "'\"month\" for typical contextual information (default)'",
    )
    note_week_days: float = param(
        7.0, lo=0.0, doc="a 'week' note's lifetime in days (002 names it; Saturn getExpiresAt: 7)"
    )
    note_month_days: float = param(
        30.0,
        lo=0.0,
        doc="a 'month' note's lifetime in days (002 names it; Saturn getExpiresAt: 30)",
    )
    note_year_days: float = param(
        365.0,
        lo=0.0,
        doc="a 'year' note's lifetime in days (002 names it; Saturn getExpiresAt: 365)",
    )
    min_extraction_confidence: float = param(
        0.7, lo=0.0, hi=1.0, doc="002 §Phase 2 Step 1: confidence >= 7/10"
    )
    min_subpoints: int = param(3, lo=0, doc="002 §Phase 2 Step 1: subpoints > 2, i.e. >= 3")
    claim_subpoints: int = param(
        3, lo=0, doc="choice: a structured claim (key, value, category) counts as 3 subpoints"
    )
    ephemeral_episodic_days: float = param(
        30.0, lo=0.0, doc="002 §TTL Policy Table: ephemeral 30d episodic (>=)"
    )
    ephemeral_semantic_days: float = param(
        90.0, lo=0.0, doc="002 §TTL Policy Table: ephemeral 90d semantic (>=)"
    )
    storyline_min_sources: int = param(
        5, lo=1, doc="002 §Nightly Storyline Promotion: source_count >= 5"
    )
    storyline_min_days: int = param(
        3, lo=1, doc="002 §Nightly Storyline Promotion: distinct_source_days >= 3"
    )
    storyline_min_age_days: float = param(
        3.0, lo=0.0, doc="002 §Nightly Storyline Promotion: first mention > 3 days ago"
    )
    storyline_limit: int = param(100, lo=1, doc="002 §Nightly Storyline Promotion: LIMIT 100")
    storyline_attach_days: float = param(
        90.0, lo=0.0, doc="002 §Phase 2 Step 4.5: last_source_at within 90 days"
    )
    storyline_refresh_sources: int = param(
        10, lo=1, doc="002 §Nightly Storyline Refresh: last 10 Source summaries"
    )
    macro_min_storylines: int = param(
        2, lo=1, doc="002 §Weekly Macro Promotion: storylineCount >= 2"
    )
    macro_min_age_days: float = param(
        30.0, lo=0.0, doc="002 §Weekly Macro Promotion: first mention > 30 days ago"
    )
    macro_limit: int = param(50, lo=1, doc="002 §Weekly Macro Promotion: LIMIT 50")
    consolidate_age_days: float = param(
        7.0, lo=0.0, doc="002 §Memory Consolidation: Source older than 7 days (>)"
    )
    consolidate_salience: float = param(
        0.2, lo=0.0, doc="002 §Memory Consolidation: salience < 0.2"
    )
    consolidate_min_sources: int = param(
        5,
        lo=0,
        doc="002 §Memory Consolidation trigger 2: multiple sources (5+) with overlapping "
        "entities (0: off)",
    )
    granularity: int = param(
        1,
        choices=(1, 2, 3),
        doc="002 §Retrieval Granularity Controls: 1 micro (default), 2 meso, 3 macro",
    )
    include_archived: bool = param(
        False,
        doc="choice: an explicit search path that also returns (and re-activates) archived nodes",
    )
    salience_weight: float = param(
        0.1,
        lo=0.0,
        doc="choice: recall score = cosine + 0.1 x salience (002 names no ranking formula)",
    )
    owner_node: bool = param(
        True,
        doc=(
            "002 §Phase 2 Step 2: owner Person node per user (confidence 1, salience 1, core, "
            "keep_forever)"
        ),
    )


class _NewRows:
    """A batch's plan (Cosmo.ingest): the rows it adds, in order, their ids from the store's
    next row on; the provenance entries in the order one episode at a time logs them (a
    row: its own; (row, episodes): ``add_provenance``; ``MemoryStore.log_in_order``); and the
    nodes each mention counts (Step 3.5)."""

    def __init__(self, store: MemoryStore) -> None:
        self.first = store.n
        self.has_meso = store["has_meso"]  # (no row's changes while the batch is planned)
        self.vectors: list[np.ndarray] = []
        self.texts: list[str] = []
        self.claims: list[Claim | None] = []
        self.provenance: list[tuple[str, ...]] = []
        self.status: list[str] = []
        self.kind: list[str] = []
        self.ttl: list[int] = []
        self.pinned: list[int] = []  # keep_forever rows: salience and salience0 at 1
        self.confident: list[tuple[int, float]] = []  # (row, extraction confidence)
        self.owners: list[int] = []
        self.log: list[int | tuple[int, tuple[str, ...]]] = []
        self.mentioned: list[int] = []  # a node per mention
        self.merged: list[int] = []  # nodes a mention MERGEd into
        self.new_day: list[int] = []  # nodes mentioned on a day new to them
        self._units: dict[int, np.ndarray] = {}

    def add(
        self,
        vector: np.ndarray,
        text: str,
        claim: Claim | None,
        provenance: tuple[str, ...],
        status: str,
        kind: str,
        ttl: int,
        pinned: bool = False,
        confidence: float | None = None,
        owner: bool = False,
    ) -> int:
        row = self.first + len(self.vectors)
        self.vectors.append(vector)
        self.texts.append(text)
        self.claims.append(claim)
        self.provenance.append(provenance)
        self.status.append(status)
        self.kind.append(kind)
        self.ttl.append(ttl)
        if pinned:
            self.pinned.append(row)
        if confidence is not None:
            self.confident.append((row, confidence))
        if owner:
            self.owners.append(row)
        self.log.append(row)
        return row

    def provenance_of(self, row: int) -> tuple[str, ...]:
        return self.provenance[row - self.first]

    def unit(self, row: int) -> np.ndarray:
        """The unit vector the store will hold for ``row`` (its normalization, the same
        numbers)."""
        unit = self._units.get(row)
        if unit is None:
            vector = self.vectors[row - self.first]
            unit = self._units[row] = as_unit_vectors(vector, len(vector))[0]
        return unit


class Cosmo(Policy[CosmoParams]):
    """Cosmo's salience-decay graph memory (seed 002). See the module docstring."""

    Params: ClassVar[type[Params]] = CosmoParams
    # the fields the long studies move without --fields (memsim sensitivity, --sobol, tune;
    # results/sensitivity.md, tuning.md), and the tuning's trials
    study_fields: ClassVar[dict[str, tuple[str, ...]]] = {
        "sensitivity": (
            "initial_salience",
            "confident_candidate",
            "min_extraction_confidence",
            "access_boost",
            "base_rate",
            "archive_salience",
            "consolidate_salience",
            "core_retrievals",
            "ephemeral_episodic_days",
            "ephemeral_semantic_days",
            "storyline_min_sources",
            "salience_weight",
            "confidence_penalty",
        ),
        "sobol": (
            "initial_salience",
            "min_extraction_confidence",
            "consolidate_salience",
            "base_rate",
            "confident_candidate",
            "confidence_penalty",
        ),
        "tune": (
            "base_rate",
            "archive_salience",
            "min_extraction_confidence",
            "access_boost",
            "initial_salience",
        ),
    }
    study_trials: ClassVar[int] = 16
    statuses: ClassVar[Statuses] = Statuses(
        STATES,
        terminal=frozenset({"deleted"}),
        retrievable=frozenset({"candidate", "active", "core"}),
    )
    kinds: ClassVar[tuple[str, ...]] = ("source",) + SEMANTIC + ("storyline", "macro")
    curve_attributes: ClassVar[frozenset[str]] = frozenset(
        {
            "salience",
            "state",
            "ttl_policy",
            "recall_frequency",
            "decay_gradient",
            "access_count",
            "last_recall_interval",
            "kind",
        }
    )

    params: CosmoParams

    def setup(self) -> None:
        p, s = self.params, self.store
        self.schedule = (Job("nightly", 1.0), Job("weekly", 7.0))
        s.add_column("salience", np.float64, p.initial_salience)  # stored salience
        s.add_column(
            "salience0", np.float64, p.initial_salience
        )  # salience at the last access (closed form)
        s.add_column("anchor_time", np.float64, np.nan)  # when salience0 was set (NaN: creation)
        s.add_column("confidence", np.float64, np.nan)  # NaN: no extraction confidence (Sources)
        s.add_column("recall_frequency", np.int64, 0)
        s.add_column("last_recall_interval", np.float64, 0.0)
        s.add_column("decay_gradient", np.float64, p.initial_decay_gradient)
        s.add_column("ttl", np.int8, TTL_CODE["decay"])
        s.add_column("source_count", np.int64, 0)
        s.add_column("first_mentioned", np.float64, np.nan)
        s.add_column("last_mentioned", np.float64, np.nan)
        s.add_column("distinct_days", np.int64, 0)
        s.add_column("has_meso", np.bool_, False)
        s.add_column("has_macro", np.bool_, False)
        s.add_column("is_dirty", np.bool_, False)
        s.add_column("last_source_at", np.float64, np.nan)
        s.add_column("anchor", np.int64, -1)  # storyline/macro -> anchor node
        s.add_column("owner", np.bool_, False)
        self.node_of: dict[tuple[str, str, str], int] = {}  # (user, kind, canonical name) -> row
        self.owner_of: dict[str, int] = {}
        self.days_of: dict[int, set[int]] = {}  # node -> distinct mention days
        self.mentions: dict[int, list[int]] = {}  # node -> source rows mentioning it
        self.mentioned_by: dict[int, list[int]] = {}  # source -> nodes it mentions
        self.notes: dict[int, list[Claim]] = {}  # node -> claims noted on it (latest last)
        # 002 §Note Retention: each note's expires_at (parallel to notes; inf: "forever"),
        # the notes ever dropped by the cleanup per node, and (expires_at, node) due next
        self.note_expiry: dict[int, list[float]] = {}
        self.notes_dropped: dict[int, int] = {}
        self._expiring: list[tuple[float, int]] = []
        self.storylines_of: dict[int, list[int]] = {}  # anchor -> storyline rows
        self.includes: dict[int, list[int]] = {}  # storyline -> source rows; macro -> storylines
        # a storyline's sources as a set: attaching asks whether it holds the Source (a list
        # of a popular anchor's sources is tens of thousands long by the year)
        self.included: dict[int, set[int]] = {}
        self.macros_of: dict[int, list[int]] = {}  # storyline -> macros grouping it
        # consolidation's trigger 2, kept from the status log (_crowded_nodes): node -> the
        # live Sources mentioning it, the nodes with enough of them, the log entries read
        self._live_mentions: dict[int, set[int]] = {}
        self._crowded: set[int] = set()
        self._mentions_logged = 0
        # storyline -> (sources summed, their float64 sum): its centroid, carried on
        self._source_sums: dict[int, tuple[int, np.ndarray]] = {}

    # -- helpers ------------------------------------------------------------------
    def rates(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Every row's current decay rate (002 §Offline/Nightly Decay Job step 2), or the
        rates of ``rows`` only (element-wise: the same numbers)."""
        s, p = self.store, self.params
        conf = s.at("confidence", rows)
        missing = np.isnan(conf)
        if p.penalize_missing_confidence:  # cosmo-code: coalesce(n.confidence, 0.5)
            conf, missing = np.where(missing, p.missing_confidence, conf), np.zeros_like(missing)
        return decay_rate(
            s.at("recall_frequency", rows),
            s.at("decay_gradient", rows),
            s.at("status", rows) == s.statuses.code("candidate"),
            np.nan_to_num(conf, nan=1.0),
            base_rate=p.base_rate,
            confident=p.confident_candidate,
            penalty=p.confidence_penalty,
            confidence_applies=~missing,
        )

    def salience_at(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """Salience at ``now``: the closed form ``salience_0 * exp(-rate * days_unused)``,
        or in nightly mode the stored value; keep_forever rows stay at 1.0. ``rows``: those
        rows' only (element-wise: the same numbers; a query needs its searchable rows')."""
        s = self.store
        if self.params.decay_mode == "closed_form":
            anchor_time = s.at("anchor_time", rows)
            anchor = np.where(np.isnan(anchor_time), s.at("created", rows), anchor_time)
            days = np.maximum(now - anchor, 0.0)
            sal = s.at("salience0", rows) * np.exp(-self.rates(rows) * days)
        else:
            sal = s.at("salience", rows).copy()
        return np.where(s.at("ttl", rows) == TTL_CODE["keep_forever"], 1.0, sal)

    def strength(self, now: float) -> np.ndarray:
        """Salience for every kind (Sources, semantic nodes, Storylines, Macros)."""
        return self.salience_at(now)

    def _set_state(self, rows: Sequence[int], state: str, now: float) -> None:
        self.store.set_status(np.asarray(rows, dtype=np.int64), state, now)

    def spaced(
        self, gradient: np.ndarray, interval: np.ndarray, last_interval: np.ndarray
    ) -> np.ndarray:
        """The spacing rule in the form ``spacing_form`` names (document or code)."""
        if self.params.spacing_form == "code":
            return code_spaced_gradient(gradient, interval, last_interval, self.params)
        return spaced_gradient(gradient, interval, last_interval, self.params)

    def _job_days(self, days: np.ndarray) -> np.ndarray:
        """Days as the nightly job counts them: whole days under ``whole_days``."""
        return np.floor(days) if self.params.whole_days else days

    def _note_expires(self, node: int, c: Claim, now: float) -> None:
        """002 §Note Retention: the note ``c`` just noted on ``node`` expires after its
        lifetime (the claim's ``lifetime`` attr, else ``note_lifetime``); "forever" never."""
        p = self.params
        lifetime = c.attr("lifetime", p.note_lifetime) if c.attrs else p.note_lifetime
        days = {"week": p.note_week_days, "month": p.note_month_days, "year": p.note_year_days}
        if lifetime == "forever":
            self.note_expiry[node].append(math.inf)
            return
        if lifetime not in days:
            raise MemsimError(
                f"claim {c.key!r}: lifetime {lifetime!r} is not one of week, month, year, forever"
            )
        expires = now + days[lifetime]
        self.note_expiry[node].append(expires)
        heapq.heappush(self._expiring, (expires, node))

    def cleanup_notes(self, now: float) -> list[Outcome]:
        """002 §Note Cleanup (nightly, after the description consolidation): a node's notes
        whose expires_at has passed (``expires_at <= now``; a note is kept while
        ``expires_at > datetime()``) are removed and its updated_at set; "forever" notes stay.
        Only the nodes with a note due are read (a heap of expiry times)."""
        due: set[int] = set()
        while self._expiring and self._expiring[0][0] <= now:
            due.add(heapq.heappop(self._expiring)[1])
        out = []
        for node in sorted(due):
            expiry = self.note_expiry.get(node, [])
            keep = [i for i, t in enumerate(expiry) if t > now]
            if len(keep) == len(expiry):  # (a node re-created after its notes were dropped)
                continue
            dropped = len(expiry) - len(keep)
            self.notes[node] = [self.notes[node][i] for i in keep]
            self.note_expiry[node] = [expiry[i] for i in keep]
            self.notes_dropped[node] = self.notes_dropped.get(node, 0) + dropped
            self.store["updated"][node] = now
            out.append(Outcome("nightly", "prune", node, f"{dropped} expired notes removed"))
        return out

    # -- ingest ---------------------------------------------------------------------
    def node_kind(self, c: Claim) -> str:
        """Semantic kind of a claim's node: relationship -> person; preference-like -> concept;
        everything else (facts, events, decisions...) -> entity."""
        if c.category in PERSON_CATEGORIES:
            return "person"
        if c.category in CONCEPT_CATEGORIES:
            return "concept"
        return "entity"

    def subpoints(self, c: Claim) -> int:
        given = c.attr("subpoints")
        if given is not None:
            return int(given)
        return self.params.claim_subpoints if c.key else 1

    def passes_extraction(self, c: Claim) -> bool:
        """002 §Phase 2 Step 1: ``confidence >= 7/10 and subpoints > 2``."""
        p = self.params
        return c.confidence >= p.min_extraction_confidence and self.subpoints(c) >= p.min_subpoints

    @staticmethod
    def ttl_of(c: Claim | None) -> str:
        ttl = "decay" if c is None else c.attr("ttl_policy", "decay")
        if ttl not in TTL_CODE:
            raise MemsimError(
                f"claim {None if c is None else c.key!r}: ttl_policy {ttl!r} is not one of "
                f"{list(TTL_POLICIES)}"
            )
        return ttl

    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        """Each episode in order (its owner node, Source, claim nodes, storylines). The
        batch's claims are extracted and embedded at once first: an extraction and a vector
        depend only on the episode and the key ``<episode>#<i>``, never on the batch. The
        episodes are decided in order into a plan (:class:`_NewRows`; what an episode reads
        of a row an earlier episode of the batch adds, the plan holds), then the plan is
        written: the batch's rows in one ``MemoryStore.add`` per run of one status, the
        mentioned nodes' counters as array writes, and the provenance entries in the order
        one episode at a time logs them. So a batch's store is the store of its episodes one
        by one, bit for bit, at a fraction of the calls."""
        if not episodes:
            return []
        extracted = [self._claims_of(ep) for ep in episodes]
        items = [c for claims in extracted for c in claims]
        keys = [
            f"{ep.id}#{i}" for ep, claims in zip(episodes, extracted) for i in range(len(claims))
        ]
        vecs, ok = self._embed(items, keys)  # every episode has a claim (or its text)
        good = ok.tolist()
        new = _NewRows(self.store)
        out = self._plan(episodes, extracted, vecs, good, now, new)
        self._write(new, now)
        return out

    def _claims_of(self, ep: Episode) -> tuple[Claim, ...]:
        claims = self.llm.extract(ep)
        if not claims:  # extraction failed: the Source is kept, nothing semantic
            return (Claim(key="", value=ep.text),)
        return tuple(claims)

    def _embed(self, items: Sequence[Any], keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        emb = self.llm.embed(list(items), keys=list(keys))
        return np.asarray(emb.vectors, dtype=np.float64), np.asarray(emb.ok, dtype=bool)

    def _ensure_owner(self, user: str, new: _NewRows) -> list[Outcome]:
        if not self.params.owner_node or user in self.owner_of:
            return []
        vecs, ok = self._embed([f"owner {user}"], [f"owner:{user}"])
        if not ok[0]:
            return []
        row = new.add(
            vecs[0],
            f"owner {user}",
            None,
            (),
            "core",
            "person",
            TTL_CODE["keep_forever"],
            pinned=True,
            confidence=1.0,
            owner=True,
        )
        self.owner_of[user] = row
        self.node_of[(user, "person", user)] = row
        return [Outcome("owner", "create", row, f"owner node of {user!r}")]

    def _plan(
        self,
        episodes: Sequence[Episode],
        extracted: list[tuple[Claim, ...]],
        vecs: np.ndarray,
        ok: list[bool],
        now: float,
        new: _NewRows,
    ) -> list[Outcome]:
        """Each episode in order, its claims extracted and embedded (``vecs`` and ``ok``
        the batch's, claim by claim), decided into ``new`` (:meth:`ingest`). One loop over
        the batch, with what every episode reads held in locals."""
        s = self.store
        owner_of, node_of, notes = self.owner_of, self.node_of, self.notes
        days_of, mentions, mentioned_by = self.days_of, self.mentions, self.mentioned_by
        add_row, log, merged = new.add, new.log, new.merged
        counted, new_day = new.mentioned, new.new_day
        day = int(math.floor(now))
        out: list[Outcome] = []
        at = 0
        for ep, claims in zip(episodes, extracted):
            end = at + len(claims)
            good = ok[at:end]
            user = ep.speaker
            if user not in owner_of:
                out += self._ensure_owner(user, new)
            if len(good) == 1 and good[0]:  # the centroid of one claim is its vector
                src_vec = vecs[at]
            elif any(good):  # the Source embeds as the centroid of its claims (its topics)
                src_vec = vecs[at:end][good].mean(axis=0)
                if np.linalg.norm(src_vec) < 1e-9:
                    src_vec = vecs[at:end][good][0]
            else:
                v2, ok2 = self._embed([ep.text], [f"{ep.id}:text"])
                if not ok2[0]:
                    out.append(Outcome(ep.id, "drop", -1, "embedding failed"))
                    at = end
                    continue
                src_vec = v2[0]
            # (a claim with no attributes is "decay"; ttl_of validates a given one)
            ttls = ["decay" if not c.attrs else self.ttl_of(c) for c in claims]
            ttl = ttls[0] if len(ttls) == 1 else max(ttls, key=TTL_CODE.__getitem__)
            provenance = (ep.id,)
            src = add_row(
                src_vec,
                ep.text,
                claims[0],
                provenance,
                "candidate",
                "source",
                TTL_CODE[ttl],
                ttl == "keep_forever",
            )
            out.append(Outcome(ep.id, "create", src, "source"))
            mentioned: list[int] = []
            mentioned_by[src] = mentioned
            for i, c in enumerate(claims):
                if not c.key or not good[i]:
                    continue
                if not self.passes_extraction(c):
                    out.append(
                        Outcome(
                            ep.id,
                            "drop",
                            -1,
                            f"claim {c.key!r}: confidence {c.confidence} or "
                            f"subpoints {self.subpoints(c)} below the extraction filter",
                        )
                    )
                    continue
                kind = self.node_kind(c)
                ident = (user, kind, c.key)
                node = node_of.get(ident)
                # (a node the batch added is a candidate, never deleted)
                if node is None or (node < new.first and s.status_of(node) == "deleted"):
                    node_ttl = ttls[i]
                    node = add_row(
                        vecs[at + i],
                        f"{c.subject} {c.key} {c.value}",
                        c,
                        provenance,
                        "candidate",
                        kind,
                        TTL_CODE[node_ttl],
                        node_ttl == "keep_forever",
                        c.confidence,
                    )
                    node_of[ident] = node
                    notes[node] = []
                    self.note_expiry[node] = []
                    out.append(Outcome(ep.id, "create", node, kind))
                else:  # MERGE ... ON MATCH SET updated_at
                    log.append((node, provenance))
                    merged.append(node)
                    out.append(Outcome(ep.id, "reinforce", node, f"MERGE {kind} {c.key!r}"))
                notes[node].append(c)
                self._note_expires(node, c, now)
                # Step 3.5: hierarchical counters (written with the batch: _write)
                counted.append(node)
                days = days_of.get(node)
                if days is None:
                    days = days_of[node] = set()
                if day not in days:
                    days.add(day)
                    new_day.append(node)
                mentions.setdefault(node, []).append(src)
                if node not in mentioned:
                    mentioned.append(node)
            if mentioned:
                out += self._attach_to_storylines(src, now, new)
            at = end
        return out

    def _attach_to_storylines(self, src: int, now: float, new: _NewRows) -> list[Outcome]:
        """002 §Phase 2 Step 4.5: attach the Source (a row of ``new``) to its anchors'
        recent Storylines."""
        s = self.store
        out: list[Outcome] = []
        for anchor in self.mentioned_by.get(src, []):
            if anchor >= new.first or not new.has_meso[anchor]:  # a node the batch added has none
                continue
            live = set(s.statuses.codes(["active", "core"]).tolist())
            status, last_source_at = s["status"], s["last_source_at"]
            cutoff = now - self.params.storyline_attach_days
            cands = [
                st
                for st in self.storylines_of.get(anchor, [])
                if int(status[st]) in live and last_source_at[st] > cutoff
            ]
            if not cands:
                continue
            # best match: highest cosine with the Source, ties to the most recent storyline
            sims = s.embedding[cands].astype(np.float64) @ new.unit(src).astype(np.float64)
            best = cands[int(np.lexsort((-np.array(cands), -last_source_at[cands], -sims))[0])]
            if src in self.included[best]:
                continue
            self.includes[best].append(src)
            self.included[best].add(src)
            episodes = new.provenance_of(src)
            s["source_count"][best] += 1
            last_source_at[best] = max(last_source_at[best], now)  # the Source's creation
            s["is_dirty"][best] = True
            s["updated"][best] = now
            new.log.append((best, episodes))
            for m in self.macros_of.get(best, []):  # the macro grouping it
                s["source_count"][m] += 1
                last_source_at[m] = max(last_source_at[m], now)
                s["is_dirty"][m] = True
                new.log.append((m, episodes))
            out.append(Outcome("attach", "link", best, f"source {src} attached to storyline"))
        return out

    def _write(self, new: _NewRows, now: float) -> None:
        """The batch's plan into the store: its rows (one add per run of one status), the
        mentioned nodes' Step 3.5 counters, then the provenance entries in episode order."""
        s = self.store
        at = 0
        for status, run in groupby(new.status):
            m = len(list(run))
            part = slice(at, at + m)
            s.add(
                now,
                np.array(new.vectors[part]),
                texts=new.texts[part],
                claims=new.claims[part],
                provenance=new.provenance[part],
                status=status,
                kind=new.kind[part],
                ttl=new.ttl[part],
                log_provenance=False,
            )
            at += m
        if new.pinned:
            s["salience"][new.pinned] = 1.0
            s["salience0"][new.pinned] = 1.0
        if new.confident:
            rows, values = zip(*new.confident)
            s["confidence"][list(rows)] = values
        if new.owners:
            s["owner"][new.owners] = True
        if new.mentioned:
            nodes = np.array(new.mentioned)
            s["is_dirty"][nodes] = True
            np.add.at(s["source_count"], nodes, 1)
            s["last_mentioned"][nodes] = now
            first = s["first_mentioned"]
            first[nodes[np.isnan(first[nodes])]] = now
            s["distinct_days"][new.new_day] += 1  # (a node once per batch: one day)
            s["updated"][new.merged] = now
        s.log_in_order(new.log, now)

    # -- recall ------------------------------------------------------------------------
    def _searchable_sets(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(states, kinds) of the searchable rows: the configured granularity (1: Sources +
        semantic nodes; 2: Storylines; 3: Macros) in a searchable state (archived only with
        include_archived)."""
        p = self.params
        kinds = {1: ("source",) + SEMANTIC, 2: ("storyline",), 3: ("macro",)}[p.granularity]
        states = ("candidate", "active", "core") + (("archived",) if p.include_archived else ())
        return states, kinds

    def searchable(self) -> np.ndarray:
        """Mask of the searchable rows (:meth:`_searchable_sets`)."""
        states, kinds = self._searchable_sets()
        return self.store.mask(states, kinds=kinds)

    def score_rows(self, q: Query, now: float) -> tuple[np.ndarray, np.ndarray]:
        """The searchable rows and their scores: cosine + salience_weight x salience(now)."""
        s = self.store
        qv = self.llm.embed_query(q)
        rows = s.rows_with(*self._searchable_sets())  # not a scan of every row's state
        cos = (
            np.zeros(len(rows))
            if qv is None
            # the query's products, kept between its calls (similarity.RecurringScans)
            else s.query_products(qv, rows).astype(np.float64)
        )
        return rows, cos + self.params.salience_weight * self.salience_at(now, rows)

    def score_query(self, q: Query, now: float) -> np.ndarray:
        """:meth:`score_rows` as one score per store row, -inf where not searchable."""
        rows, scores = self.score_rows(q, now)
        score = np.full(self.store.n, -np.inf)
        score[rows] = scores
        return score

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        out = []
        for q in queries:  # sequential: later queries see earlier accesses
            ranking = self.ranking_among(*self.score_rows(q, now), q.k, q.id)
            self.access(ranking.ids, now)
            out.append(ranking)
        return out

    def access(self, rows: np.ndarray, now: float) -> None:
        """002 §Salience Updates + §Transition Rules + spacing effect, for returned rows."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return
        s, p = self.store, self.params
        current = self.salience_at(now, rows)
        if p.recall_spacing:  # (cosmo-code: only the nightly job moves the gradient)
            interval = s.days_since_access(now, rows)
            old = s["last_recall_interval"][rows]
            s["decay_gradient"][rows] = self.spaced(s["decay_gradient"][rows], interval, old)
            s["last_recall_interval"][rows] = interval
        s["access_count"][rows] += 1
        s["recall_frequency"][rows] += 1
        s["last_access"][rows] = now
        boosted = np.minimum(p.salience_cap, current + p.access_boost)
        boosted = np.where(s["ttl"][rows] == TTL_CODE["keep_forever"], 1.0, boosted)
        s["salience"][rows] = boosted
        s["salience0"][rows] = boosted
        s["anchor_time"][rows] = now
        movable = ~s["owner"][rows]  # the owner node is always core
        core = s["access_count"][rows] >= p.core_retrievals
        self._set_state(rows[movable & core], "core", now)
        self._set_state(rows[movable & ~core], "active", now)

    # -- maintenance ------------------------------------------------------------------------
    def maintain(self, now: float, jobs: Sequence[str]) -> list[Outcome]:
        out: list[Outcome] = []
        for job in jobs:
            if job == "nightly":
                out.extend(self.nightly_decay(now))
                out.extend(self.consolidate_episodic(now))
                out.extend(self.refresh_descriptions(now))
                out.extend(self.cleanup_notes(now))
                out.extend(self.promote_storylines(now))
                out.extend(self.refresh_storylines(now))
            elif job == "weekly":
                out.extend(self.promote_macros(now))
                out.extend(self.refresh_macros(now))
        return out

    def nightly_decay(self, now: float) -> list[Outcome]:
        """002 §Offline/Nightly Decay Job + §TTL Policy Table.

        closed_form: stored salience := salience_0 exp(-rate days_unused) (no compounding);
        nightly: salience *= exp(-rate days_since(last_accessed_at or created_at)) (compounds).
        keep_forever: salience 1.0, never archived. ephemeral: archived at its deadline.
        decay: archived when salience < 0.01."""
        s, p = self.store, self.params
        live = s.mask(["candidate", "active", "core", "archived"])
        # the rows the job decays (cosmo-code skips archived ones)
        decayed = live if p.decay_archived else s.mask(["candidate", "active", "core"])
        if self.params.decay_mode == "closed_form":
            s["salience"][live] = self.salience_at(now)[live]
        else:
            days = self._job_days(s.days_since_access(now))
            s["salience"][decayed] = s["salience"][decayed] * np.exp(
                -self.rates()[decayed] * days[decayed]
            )
        if p.nightly_spacing:  # cosmo-code: step 4 every night, the interval keeps growing
            if p.spacing_form == "code":  # of the nodes ever accessed (interval_days not null)
                rows = np.flatnonzero(decayed & ~np.isnan(s["last_access"]))
            else:
                rows = np.flatnonzero(live)
            interval = self._job_days(s.days_since_access(now, rows))
            s["decay_gradient"][rows] = self.spaced(
                s["decay_gradient"][rows], interval, s["last_recall_interval"][rows]
            )
            s["last_recall_interval"][rows] = interval
        forever = s["ttl"] == TTL_CODE["keep_forever"]
        s["salience"][forever & live] = 1.0
        s["salience0"][forever & live] = 1.0
        age = now - s["created"]
        episodic = s["kind"] == s.kind_code("source")
        deadline = np.where(episodic, p.ephemeral_episodic_days, p.ephemeral_semantic_days)
        expired = (s["ttl"] == TTL_CODE["ephemeral"]) & (age >= deadline)
        faded = s["salience"] < p.archive_salience  # decay rules hold under ephemeral too
        arch = np.flatnonzero(
            s.mask(["candidate", "active", "core"]) & ~forever & (expired | faded)
        )
        out = []
        # the rate changes with the state (a candidate's penalty ends): re-anchor the closed form
        s["salience0"][arch] = s["salience"][arch]
        s["anchor_time"][arch] = now
        for r in arch.tolist():
            s.set_status(r, "archived", now)
            why = (
                "ephemeral deadline"
                if expired[r]
                else f"salience {s['salience'][r]:.4f} < {p.archive_salience}"
            )
            out.append(Outcome("nightly", "archive", r, why))
        return out

    def consolidate_episodic(self, now: float) -> list[Outcome]:
        """002 §Memory Consolidation: Sources that meet a trigger are archived after their
        insight is noted on the nodes they mention (provenance kept). Trigger 1: older than
        7 days with salience < 0.2. Trigger 2: "multiple sources (5+) with overlapping
        entities": every live Source mentioning a semantic node that at least
        ``consolidate_min_sources`` live Sources mention (the cluster shares that entity).
        Trigger 3 is not modelled (docs/policies/cosmo.md). keep_forever Sources stay.
        Only the live Sources are read (``MemoryStore.rows_with``; most are archived by the
        year, and each row's salience is its own: salience_at of those rows)."""
        s, p = self.store, self.params
        live = s.rows_with(["candidate", "active", "core"], kinds=["source"])
        ttl, forever = s["ttl"], TTL_CODE["keep_forever"]
        aged = live[(ttl[live] != forever) & ((now - s["created"][live]) > p.consolidate_age_days)]
        why = {
            r: "episodic source consolidated into its semantic nodes"
            for r in aged[self.salience_at(now, aged) < p.consolidate_salience].tolist()
        }
        if p.consolidate_min_sources > 0:
            for node, srcs in self._crowded_nodes():
                if s.status_of(node) == "deleted":
                    continue
                for r in srcs:
                    if ttl[r] != forever and r not in why:
                        why[r] = (
                            f"one of {len(srcs)} sources sharing an entity, consolidated "
                            "into its semantic nodes"
                        )
        rows = np.array(sorted(why), dtype=np.int64)
        out = []
        # (each row's salience before any of them is archived, as it stood when they met)
        for r, sal in zip(rows.tolist(), self.salience_at(now, rows).tolist()):
            for node in self.mentioned_by.get(r, []):
                if s.status_of(node) != "deleted":
                    s.add_provenance(node, s.provenance[r], now)
                    s["is_dirty"][node] = True
            s["salience0"][r] = sal
            s["anchor_time"][r] = now
            s.set_status(r, "archived", now)
            out.append(Outcome("nightly", "archive", r, why[r]))
        return out

    def _crowded_nodes(self) -> list[tuple[int, list[int]]]:
        """Consolidation's trigger 2 (:meth:`consolidate_episodic`): each node that at least
        ``consolidate_min_sources`` live Sources (candidate, active or core) mention, by row,
        with those Sources sorted. Each node's live Sources are kept as a set, brought up to
        date from the store's status log (every status change is logged, with the row's
        first at its creation): the Sources logged since the last call are looked at again,
        not every mention of every node, whose lists grow with the stream."""
        s, need = self.store, self.params.consolidate_min_sources
        log = s.status_log
        if self._mentions_logged > len(log):  # (a log shorter than read: count again)
            self._live_mentions, self._crowded, self._mentions_logged = {}, set(), 0
        if self._mentions_logged < len(log):
            live_codes = set(s.statuses.codes(["candidate", "active", "core"]).tolist())
            status = s["status"]
            live, crowded = self._live_mentions, self._crowded
            for r in s.rows_logged(self._mentions_logged).tolist():
                nodes = self.mentioned_by.get(r)  # (Sources only mention nodes)
                if not nodes:
                    continue
                alive = int(status[r]) in live_codes
                for node in nodes:
                    srcs = live.setdefault(node, set())
                    if alive:
                        srcs.add(r)
                    else:
                        srcs.discard(r)
                    if len(srcs) >= need:
                        crowded.add(node)
                    else:
                        crowded.discard(node)
            self._mentions_logged = len(log)
        return [(node, sorted(self._live_mentions[node])) for node in sorted(self._crowded)]

    def refresh_descriptions(self, now: float) -> list[Outcome]:
        """002 §Nightly Description Consolidation: "1. Gather current description + all notes
        (sorted by date_added) 2. LLM synthesizes updated description incorporating new notes
        ... 4. Regenerate embedding from updated description + notes". The node's notes are
        kept in the order they were added (the first is the one that created the node, its
        first description), so the LLM's ``synthesize`` is given them in date order; the
        claim it returns becomes the node's description and, through ``embed``, its vector.
        Which value wins is the mock LLM's ``modes.synthesis``, not this policy's choice."""
        s = self.store
        rows = np.flatnonzero(
            s["is_dirty"] & s.mask(["candidate", "active", "core", "archived"], kinds=SEMANTIC)
        )
        out = []
        noted = [r for r in rows.tolist() if self.notes.get(r)]
        if noted:  # one synthesize call per dirty node, one embedding call for all of them
            # (the notes ever noted: a cleanup never makes a key repeat)
            keys = [f"node:{r}:{len(self.notes[r]) + self.notes_dropped.get(r, 0)}" for r in noted]
            described = [
                self.llm.synthesize(list(self.notes[r]), key=k) for r, k in zip(noted, keys)
            ]
            vecs, ok = self._embed(described, keys)
            for r, c, v, good in zip(noted, described, vecs, ok):
                if good:
                    s.set_embedding(r, v)
                    s.set_text(r, f"{c.subject} {c.key} {c.value}")
                    s.claim[r] = c
        s["is_dirty"][rows] = False
        s["updated"][rows] = now
        if len(rows):
            out.append(
                Outcome("nightly", "synthesize", -1, f"{len(rows)} node descriptions refreshed")
            )
        return out

    def _centroid(self, rows: Sequence[int], summed: np.ndarray | None = None) -> np.ndarray:
        """The unit mean of the rows' vectors (float64; the first row's vector where the mean
        is ~0). ``summed``: their float64 sum, row after row, already taken (the mean's own
        sum: numpy sums the rows of a (rows, dim) array one after another)."""
        E = self.store.embedding
        if summed is None:
            v = E[list(rows)].astype(np.float64).mean(axis=0)
        else:
            v = summed / len(rows)
        n = np.linalg.norm(v)
        return v / n if n > 1e-9 else E[rows[0]].astype(np.float64)

    def _storyline_centroid(self, st: int) -> np.ndarray:
        """:meth:`_centroid` of storyline ``st``'s sources, their sum carried on from its
        last refresh: sources are only appended to a storyline, and a Source's vector is
        never replaced (only semantic nodes', storylines' and macros' are), so the sources
        summed before are summed again to the same number. A refresh reads the sources
        attached since, not the tens of thousands a popular anchor's storyline gathers."""
        sources = self.includes[st]
        done, total = self._source_sums.get(st, (0, np.zeros(0)))
        if done > len(sources):  # (not appended to: summed again)
            done = 0
        if done < len(sources):
            added = self.store.embedding[sources[done:]].astype(np.float64)
            if done:  # the running sum first, then each added row in turn: the full sum's
                added = np.concatenate((total[None, :], added))  # order
            total = np.add.reduce(added, axis=0)
            self._source_sums[st] = (len(sources), total)
        return self._centroid(sources, total)

    def storyline_candidates(self, now: float) -> np.ndarray:
        """002 §Nightly Storyline Promotion: semantic anchors with source_count >= 5, state
        active/core, distinct_source_days >= 3, first mention > 3 days ago, not has_meso;
        by source_count descending, at most 100."""
        s, p = self.store, self.params
        ok = (
            s.mask(["active", "core"], kinds=SEMANTIC)
            & (s["source_count"] >= p.storyline_min_sources)
            & (s["distinct_days"] >= p.storyline_min_days)
            & ((now - s["first_mentioned"]) > p.storyline_min_age_days)
            & ~s["has_meso"]
        )
        rows = np.flatnonzero(ok)
        order = np.lexsort((rows, -s["source_count"][rows]))
        return rows[order][: p.storyline_limit]

    def promote_storylines(self, now: float) -> list[Outcome]:
        s = self.store
        out = []
        for anchor in self.storyline_candidates(now).tolist():
            sources = [r for r in self.mentions.get(anchor, []) if s.status_of(r) != "deleted"]
            if not sources:
                continue
            text = self.llm.summarize([s.text[r] for r in sources], key=f"storyline:{anchor}")
            prov = set().union(*(s.provenance[r] for r in sources))
            row = int(
                s.add(
                    now,
                    self._centroid(sources),
                    texts=[text],
                    claims=[s.claim[anchor]],
                    provenance=[prov],
                    status="active",
                    kind="storyline",
                    anchor=anchor,
                    source_count=len(sources),
                    last_source_at=float(max(s["created"][sources])),
                    first_mentioned=s["first_mentioned"][anchor],
                )[0]
            )
            self.includes[row] = list(sources)
            self.included[row] = set(sources)
            self.storylines_of.setdefault(anchor, []).append(row)
            s["has_meso"][anchor] = True
            out.append(Outcome("nightly", "synthesize", row, f"storyline about node {anchor}"))
        return out

    def refresh_storylines(self, now: float) -> list[Outcome]:
        """002 §Nightly Storyline Refresh: dirty active/core storylines with a source in the
        last 90 days are re-summarized from their last 10 sources and re-embedded."""
        s, p = self.store, self.params
        rows = np.flatnonzero(
            s["is_dirty"]
            & s.mask(["active", "core"], kinds=["storyline"])
            & (s["last_source_at"] > now - p.storyline_attach_days)
        )
        rows = rows[np.lexsort((rows, -s["source_count"][rows]))][: p.storyline_limit]
        out = []
        for st in rows.tolist():
            recent = self.includes[st][-p.storyline_refresh_sources :]
            s.set_text(
                st,
                self.llm.summarize(
                    [s.text[st]] + [s.text[r] for r in recent],
                    key=f"refresh:{st}:{len(self.includes[st])}",
                ),
            )
            s.set_embedding(st, self._storyline_centroid(st))
            s["is_dirty"][st] = False
            s["updated"][st] = now
            out.append(Outcome("nightly", "synthesize", st, "storyline refreshed"))
        return out

    def macro_candidates(self, now: float) -> list[tuple[int, list[int]]]:
        """002 §Weekly Macro Promotion: anchors with >= 2 active/core storylines, first
        mention > 30 days ago, not has_macro; by storyline count descending, at most 50."""
        s, p = self.store, self.params
        live = set(s.statuses.codes(["active", "core"]).tolist())
        found = []
        for anchor, sts in self.storylines_of.items():
            sts = [st for st in sts if int(s["status"][st]) in live]
            if (
                len(sts) >= p.macro_min_storylines
                and now - s["first_mentioned"][anchor] > p.macro_min_age_days
                and not s["has_macro"][anchor]
            ):
                found.append((anchor, sts))
        found.sort(key=lambda a: (-len(a[1]), a[0]))
        return found[: p.macro_limit]

    def promote_macros(self, now: float) -> list[Outcome]:
        s = self.store
        out = []
        for anchor, sts in self.macro_candidates(now):
            text = self.llm.summarize([s.text[st] for st in sts], key=f"macro:{anchor}")
            prov = set().union(*(s.provenance[st] for st in sts))
            row = int(
                s.add(
                    now,
                    self._centroid(sts),
                    texts=[text],
                    claims=[s.claim[anchor]],
                    provenance=[prov],
                    status="active",
                    kind="macro",
                    anchor=anchor,
                    source_count=int(sum(s["source_count"][sts])),
                    last_source_at=float(max(s["last_source_at"][sts])),
                )[0]
            )
            self.includes[row] = list(sts)
            for st in sts:
                self.macros_of.setdefault(st, []).append(row)
            s["has_macro"][anchor] = True
            out.append(Outcome("weekly", "synthesize", row, f"macro rooted in node {anchor}"))
        return out

    def refresh_macros(self, now: float) -> list[Outcome]:
        """002 §Weekly Macro Refresh: dirty active/core macros re-summarized and re-embedded."""
        s, p = self.store, self.params
        rows = np.flatnonzero(s["is_dirty"] & s.mask(["active", "core"], kinds=["macro"]))
        rows = rows[np.lexsort((rows, -s["source_count"][rows]))][: p.macro_limit]
        out = []
        for m in rows.tolist():
            sts = self.includes[m]
            s.set_text(
                m,
                self.llm.summarize(
                    [s.text[st] for st in sts], key=f"refresh:{m}:{int(s['source_count'][m])}"
                ),
            )
            s.set_embedding(m, self._centroid(sts))
            s["is_dirty"][m] = False
            s["updated"][m] = now
            out.append(Outcome("weekly", "synthesize", m, "macro refreshed"))
        return out

    # -- user actions ---------------------------------------------------------------------------
    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        """Every node whose provenance holds the episode is deleted (the Source, the semantic
        nodes, storylines and macros that include it). The owner node has no provenance."""
        s = self.store
        out: list[Outcome] = []
        for f in events:
            n0 = len(out)
            for r in s.rows_from(f.episode_id).tolist():
                if s.status_of(r) != "deleted":
                    s.set_status(r, "deleted", now)
                    out.append(Outcome(f.id, "forget", r, s.kinds[int(s["kind"][r])]))
            if len(out) == n0:
                out.append(Outcome(f.id, "drop", -1, f"no memory of episode {f.episode_id!r}"))
        return out

    # -- decay-curve seeding -----------------------------------------------------------------------
    def plant(self, episode: Episode, now: float) -> int:
        """Create one node with the claim's attributes (default: a concept node in state
        candidate with the document's initial values; ``kind=source`` plants a Source, which
        has no extraction confidence). Claim.confidence is the node's confidence."""
        if not episode.claims:
            raise MemsimError(f"cosmo: planted episode {episode.id!r} has no claim")
        c = episode.claims[0]
        s, p = self.store, self.params
        kind = str(c.attr("kind", "concept"))
        if kind not in ("source",) + SEMANTIC:
            raise MemsimError(
                f"cosmo: memory attribute kind={kind!r} is not one of {['source', *SEMANTIC]}"
            )
        state = str(c.attr("state", "candidate"))
        if state not in ("candidate", "active", "core", "archived"):
            raise MemsimError(
                f"cosmo: memory attribute state={state!r} is not one of candidate, active, core, "
                "archived"
            )
        ttl = self.ttl_of(c)

        def num(
            name: str, default: float, lo: float | None = None, hi: float | None = None
        ) -> float:
            v = c.attr(name, default)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise MemsimError(f"cosmo: memory attribute {name}={v!r} is not a number") from None
            if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
                raise MemsimError(f"cosmo: memory attribute {name}={v!r} is outside [{lo}, {hi}]")
            return v

        salience = 1.0 if ttl == "keep_forever" else num("salience", p.initial_salience, 0.0, 1.0)
        vecs, ok = self._embed([c], [f"{episode.id}#0"])
        if not ok[0]:
            raise MemsimError(f"cosmo: could not embed the planted episode {episode.id!r}")
        row = int(
            s.add(
                now,
                vecs,
                texts=[episode.text],
                claims=[c],
                provenance=[{episode.id}],
                status=state,
                kind=kind,
                salience=salience,
                salience0=salience,
                confidence=np.nan if kind == "source" else c.confidence,
                ttl=TTL_CODE[ttl],
                recall_frequency=int(num("recall_frequency", 0, 0)),
                access_count=int(num("access_count", 0, 0)),
                decay_gradient=num("decay_gradient", p.initial_decay_gradient),
                last_recall_interval=num("last_recall_interval", 0.0, 0.0),
                first_mentioned=now,
                last_mentioned=now,
            )[0]
        )
        self.notes[row] = [c]
        self.note_expiry[row] = []
        self._note_expires(row, c, now)
        self.mentioned_by.setdefault(row, [])
        return row


@dataclass(frozen=True)
class CosmoCodeParams(CosmoParams):
    """cosmo-code: Cosmo's public code where it departs from 002 ("each system as built"),
    every other constant the document's. Repository CaptainCrouton89/Saturn (the backend
    that implements 002's model), commit 4be0950d494294e4dbaa4488eed0835973d777ec, file
    backend/src/services/decayService.ts (the nightly decay job, runNightlyDecay); the
    retrieval boost from backend/src/repositories/ConceptRepository.ts (incrementAccess),
    which the index holds at 77ad7c1fb7c980ba57a12a29b2c1930d3d73d138 only. Facts and lines:
    docs/policies/cosmo-code.md; tests: tests/policies/test_cosmo_code.py."""

    decay_mode: str = param(
        "nightly",
        choices=("closed_form", "nightly"),
        doc="cosmo-code: the nightly job compounds the decay (decayService.ts:65)",
    )
    nightly_spacing: bool = param(
        True,
        doc="cosmo-code: the nightly job moves the gradient of every node ever accessed "
        "(decayService.ts:67-70, 80-90)",
    )
    spacing_form: str = param(
        "code",
        choices=("document", "code"),
        doc="cosmo-code: +0.1 x spacing boost, -0.05 x (1 - boost) on an equal or shorter "
        "interval, floored at 0.5 (decayService.ts:82-87, 94)",
    )
    recall_spacing: bool = param(
        False,
        doc="cosmo-code: a retrieval leaves the gradient alone (ConceptRepository.ts:598-619)",
    )
    penalize_missing_confidence: bool = param(
        True,
        doc="cosmo-code: a candidate without a confidence (Source) is penalized at "
        "coalesce(n.confidence, 0.5) (decayService.ts:55-58)",
    )
    whole_days: bool = param(
        True, doc="cosmo-code: whole days since the last access (decayService.ts:42-48, 67-70)"
    )
    decay_archived: bool = param(
        False, doc="cosmo-code: the nightly job skips archived nodes (decayService.ts:29)"
    )
    access_boost: float = param(
        0.075,
        lo=0.05,
        hi=0.1,
        doc="cosmo-code: salienceBoost = 0.075, 'Mid-point of [0.05, 0.1] range' "
        "(ConceptRepository.ts:599, incrementAccess at 77ad7c1)",
    )


class CosmoCode(Cosmo):
    """Cosmo as its code is built (docs/policies/cosmo-code.md)."""

    Params: ClassVar[type[Params]] = CosmoCodeParams
