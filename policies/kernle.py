"""Kernle: hyperbolic salience, protection, a tombstoning forgetting cycle, agent-driven
consolidation into beliefs with revision chains.

Seed document: ../shared/seeds/004_e8e020057e4a0858.txt ("Kernle Memory Model").

- §Memory Layer Hierarchy / §Raw -> Structured: every extracted claim is a raw capture that
  the agent promotes at once with ``process_raw`` to an episode, a note or a belief, by its
  category (``belief_categories`` / ``note_categories``; value and drive claims become
  values and drives, the rest episodes). ``self.raw_entries`` gives the captures with
  ``processed_into``.
- §3 Beliefs: ``confidence``, ``times_reinforced``, revision chains (``supersedes`` /
  ``superseded_by``; a superseded belief has ``is_active=False``, status ``superseded``).
- §4 Values / §7 Drives: ``is_protected=True`` by default. §Protection: any memory can be
  protected (memsim.engine.events.Protect); protected memories are never forgotten.
- §Meta-Memory System: confidence, source_type, source_episodes (= store provenance),
  derived_from, last_verified, verification_count, confidence_history;
  ``verify_memory`` raises confidence by ``verify_step``; ``get_uncertain_memories``.
- §Forgetting System / §Salience Formula:
  ``salience = (confidence * log(times_accessed + 1)) / (days_since_access / half_life + 1)``
  (natural log). §Forgetting Cycle: memories with salience below ``forgetting_threshold``
  (0.3) are tombstoned (status ``forgotten``, recoverable with Recover); ``dry_run`` only
  reports the candidates.
- §Consolidation Process: agent-driven. The mock LLM plays the agent and everything it
  knows comes through the LLM protocol (never a claim's key or value as the stream states
  them): it reads the reflection scaffold (unreflected episodes, existing beliefs) once at
  least ``min_episodes`` (``--min-episodes 3``) are waiting, groups the episodes that are
  about the same thing (cosine >= ``pattern_similarity``), and for each group of at least
  ``pattern_min_episodes`` synthesizes a statement (``llm.synthesize``); it then asks the
  LLM how the statement relates to each similar active belief (``llm.classify``, relation
  mode): SUPPORTS reinforces the belief (``times_reinforced + 1``), CONTRADICTS has a new
  belief at ``belief_confidence`` (0.8, ``belief add ... --confidence 0.8``) supersede it.
  Beliefs captured directly since the last run are in the scaffold too: one that an older
  similar belief CONTRADICTS supersedes it (the agent revises what it believed).
- §Search Functionality: search ranks by relevance (cosine); each returned memory counts
  one access (``times_accessed``) and refreshes its last access. When the query cannot be
  embedded, local search "falls back to text matching": memories ranked by the share of the
  query's words their text contains.

The agent's judgement in consolidation is modelled by the LLM protocol; the grouping cosine
(``pattern_similarity`` 0.70) and the two-episode minimum (``pattern_min_episodes``) are
memsim's choices, not 004's (004 says consolidation is agent-driven and calls no AI).

kernle-code (``KernleCode``) follows github.com/Emergent-Instruments/kernle at commit
7345648dbe2ae94324d0240799bcccb904b7aa25 (kernle/features/forgetting.py,
kernle/storage/sqlite.py), its consolidation the code's own lesson count
(kernle/stack/components/consolidation.py@4ef01db); docs/policies/kernle-code.md.

THE FINDING (docs/policies/kernle.md): a memory never accessed has ``times_accessed = 0``,
``log(0 + 1) = 0``, so its salience is 0 however confident and recent it is, and the first
forgetting cycle tombstones it. The default follows the document; ``access_floor > 0`` is a
non-default variant that counts every memory as accessed at least that many times.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memsim.engine import similarity
from memsim.engine.arrays import as_float64
from memsim.engine.events import Claim, Episode, Forget, Protect, Query, Recover
from memsim.engine.llm import CONTRADICTS, IRRELEVANT, RELATIONS, SUPPORTS
from memsim.engine.params import Params, param
from memsim.engine.policy import Job, Outcome, Policy, Ranking, SimilarityRule
from memsim.engine.store import Statuses


def hyperbolic_salience(
    confidence: ArrayLike,
    times_accessed: ArrayLike,
    dt: ArrayLike,
    half_life: ArrayLike,
    offset: ArrayLike = 0.0,
) -> np.ndarray:
    """``confidence * ln(times_accessed + 1) / (dt / half_life + 1)``: Kernle salience.

    The seed writes ``log``; Kernle is Python, where ``math.log`` is the natural log, so
    we use ln. (Any base only rescales salience against the forgetting threshold.) Note
    the formula gives 0 for a memory never accessed. ``offset`` is added to the log term
    (``ln(n + 1) + offset``; 0 in the document).
    """
    return (
        as_float64(confidence)
        * (np.log(as_float64(times_accessed) + 1.0) + as_float64(offset))
        / (as_float64(dt) / as_float64(half_life) + 1.0)
    )


def hyperbolic_salience_ref(
    confidence: float, times_accessed: float, dt: float, half_life: float, offset: float = 0.0
) -> float:
    return confidence * (math.log(times_accessed + 1) + offset) / (dt / half_life + 1)


_SAL = "004 §Forgetting System / Salience Formula"
_CYCLE = "004 §Forgetting Cycle"
_CONS = "004 §Consolidation Process"
_META = "004 §Meta-Memory System"
# kernle-code's pinned files (Emergent-Instruments/kernle)
_FORGETTING = "kernle/features/forgetting.py@7345648"
_STORAGE = "kernle/storage/sqlite.py@7345648"
_STACK_CONS = "kernle/stack/components/consolidation.py@4ef01db"
_STACK_FORGETTING = "kernle/stack/components/forgetting.py@639c505"
KINDS = ("episode", "note", "belief", "value", "drive")
_WORD = re.compile(r"[0-9a-z]+")
# Performance only (no model constant): float32 products per block of belief revision's screen
REVISE_SCREEN_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class KernleParams(Params):
    """Constants of 004 (defaults are the document's values; where it gives none, the choice
    is documented here and in docs/policies/kernle.md)."""

    half_life: float = param(
        30.0, lo=0.0, lo_open=True, doc=f"{_SAL} (no value given: memsim's choice, 30 days)"
    )
    access_floor: float = param(
        0.0,
        lo=0.0,
        doc=f"{_SAL}: NOT in the document; 0 = literal formula, "
        "k > 0 counts every memory as accessed at least k times",
    )
    forgetting_threshold: float = param(0.3, lo=0.0, doc=f"{_CYCLE} threshold=0.3")
    # -- code variant (kernle-code): what Kernle's public code does, not in 004 ---------------
    log_offset: float = param(
        0.0,
        lo=0.0,
        doc=f"{_SAL}: 0 = the document; kernle-code adds 0.1 to the log term "
        f"({_STORAGE} get_forgetting_candidates, {_FORGETTING} calculate_salience)",
    )
    forget_limit: int = param(
        0,
        lo=0,
        doc=f"{_CYCLE} gives no limit (0 = none); kernle-code: {_FORGETTING} "
        "run_forgetting_cycle(limit=10) forgets at most 10 per cycle",
    )
    candidate_pool: int = param(
        0,
        lo=0,
        doc=f"0 = every candidate; kernle-code: {_FORGETTING} get_forgetting_candidates asks "
        "the storage for the limit * 2 = 20 lowest-salience memories, then keeps those < threshold",
    )
    oldest_per_kind: int = param(
        0,
        lo=0,
        doc=f"0 = every memory; kernle-code: {_STORAGE} get_forgetting_candidates scores only the "
        "limit * 2 = 40 oldest (ORDER BY created_at ASC LIMIT ?) of each memory type",
    )
    forget_kinds: tuple[str, ...] = param(
        KINDS,
        doc=f"{_CYCLE}: any unprotected memory; kernle-code: {_STORAGE} types episode, belief, "
        "goal, note, relationship (values and drives never)",
    )
    forget_by: str = param(
        "salience",
        choices=("salience", "strength"),
        doc=f"{_CYCLE} and kernle-code forget by salience; 'strength' names the later stack "
        f"revision ({_STACK_FORGETTING}: a stored strength moved at each maintenance)",
    )
    strength_initial: float = param(
        1.0,
        lo=0.0,
        hi=1.0,
        doc=f"forget_by='strength': a memory's strength at creation ({_STACK_FORGETTING})",
    )
    strength_decay_step: float = param(
        0.01,
        lo=0.0,
        doc=f"forget_by='strength': strength -= step x days_since_access / half_life "
        f"({_STACK_FORGETTING} _compute_decayed_strength)",
    )
    strength_reinforce_step: float = param(
        0.001,
        lo=0.0,
        doc=f"forget_by='strength': strength += step x ln(times_accessed + 1), 0.1 x 0.01 "
        f"({_STACK_FORGETTING} _compute_decayed_strength)",
    )
    unaccessed_floor: float = param(
        0.0,
        lo=0.0,
        hi=1.0,
        doc=f"forget_by='strength': a memory never accessed keeps strength >= this; 0 = "
        f"{_STACK_FORGETTING}, which clips to [0, 1] only (0.5: memsim's earlier reading)",
    )
    dry_run: bool = param(False, doc=f"{_CYCLE} dry_run: report candidates, change nothing")
    forgetting_every: float = param(
        7.0, lo=0.0, lo_open=True, doc=f"{_CYCLE} (no cadence given: memsim's choice, weekly)"
    )
    consolidation_every: float = param(
        1.0, lo=0.0, lo_open=True, doc=f"{_CONS} (no cadence given: memsim's choice, daily)"
    )
    min_episodes: int = param(3, lo=1, doc=f"{_CONS} kernle consolidate --min-episodes 3")
    pattern_min_episodes: int = param(
        2,
        lo=1,
        doc=f"{_CONS} (memsim's choice: a pattern needs a repeat; kernle-code: {_STACK_CONS} "
        "cnt >= 2)",
    )
    pattern_rule: str = param(
        "cosine",
        choices=("cosine", "repeated-lesson"),
        doc=f"{_CONS} (memsim's choice: the agent groups episodes at cosine >= "
        f"pattern_similarity); kernle-code: {_STACK_CONS} counts identical lessons",
    )
    consolidation_window: int = param(
        0,
        lo=0,
        doc=f"0 = every unreflected episode; kernle-code: {_STACK_CONS} "
        "get_episodes(limit=50), the 50 most recent",
    )
    pattern_similarity: float = param(
        0.70,
        lo=-1.0,
        hi=1.0,
        doc=f"{_CONS} (memsim's choice: cosine at which the agent sees two episodes, or a "
        "statement and a belief, as about the same thing; the same-fact band 0.70 the other "
        "documents use)",
    )
    belief_confidence: float = param(
        0.8, lo=0.0, hi=1.0, doc=f"{_CONS} belief add ... --confidence 0.8"
    )
    verify_step: float = param(
        0.1,
        lo=0.0,
        hi=1.0,
        doc=f"{_META} verify_memory increases confidence (step: memsim's choice)",
    )
    uncertainty_threshold: float = param(
        0.5, lo=0.0, hi=1.0, doc=f"{_META} get_uncertain_memories(threshold=0.5)"
    )
    belief_categories: tuple[str, ...] = param(
        ("fact", "preference", "observation", "relationship"),
        doc=(
            "004 §3 Beliefs belief_type fact/preference/observation (+relationship: memsim's "
            "choice)"
        ),
    )
    note_categories: tuple[str, ...] = param(
        ("decision", "insight", "quote", "note", "reminder", "procedural"),
        doc=(
            "004 §6 Notes note_type decision/insight/quote (+reminder, procedural: memsim's choice)"
        ),
    )
    protected_kinds: tuple[str, ...] = param(
        ("value", "drive"), doc="004 §4 Values / §7 Drives: is_protected=True by default"
    )


def salience_scalar(
    confidence: float, times_accessed: float, days_since_access: float, half_life: float
) -> float:
    """004 §Salience Formula, scalar (policies.kernle.hyperbolic_salience_ref; log = ln)."""
    return hyperbolic_salience_ref(confidence, times_accessed, days_since_access, half_life)


def salience_vector(
    confidence: np.ndarray,
    times_accessed: np.ndarray,
    days_since_access: np.ndarray,
    half_life: float,
    offset: float = 0.0,
) -> np.ndarray:
    """Vectorized twin of :func:`salience_scalar` (policies.kernle.hyperbolic_salience);
    ``offset`` is added to the log term (kernle-code: 0.1)."""
    return hyperbolic_salience(confidence, times_accessed, days_since_access, half_life, offset)


def next_strength(
    strength: np.ndarray,
    times_accessed: np.ndarray,
    days_since_access: np.ndarray,
    p: KernleParams,
) -> np.ndarray:
    """kernle-code's forgetting strength after one cycle: ``strength - decay_step x days /
    half_life + reinforce_step x ln(times_accessed + 1)``, clipped to [0, 1]; a memory never
    accessed keeps at least ``unaccessed_floor``."""
    n = np.asarray(times_accessed, dtype=np.float64)
    out = (
        np.asarray(strength, dtype=np.float64)
        - p.strength_decay_step * np.asarray(days_since_access, dtype=np.float64) / p.half_life
        + p.strength_reinforce_step * np.log(n + 1.0)
    )
    out = np.clip(out, 0.0, 1.0)
    return np.where(n == 0, np.maximum(out, p.unaccessed_floor), out)


class Kernle(Policy[KernleParams]):
    """004's memory model. See the module docstring for the document sections."""

    Params: ClassVar[type[Params]] = KernleParams
    # the fields the long studies move without --fields (memsim sensitivity, --sobol, tune;
    # results/sensitivity.md, tuning.md), and the tuning's trials
    study_fields: ClassVar[dict[str, tuple[str, ...]]] = {
        "sensitivity": (
            "forgetting_threshold",
            "half_life",
            "strength_initial",
            "unaccessed_floor",
            "pattern_similarity",
            "belief_confidence",
            "verify_step",
            "uncertainty_threshold",
            "strength_decay_step",
            "min_episodes",
            "forgetting_every",
        ),
        "sobol": (
            "forgetting_threshold",
            "forgetting_every",
            "half_life",
            "pattern_similarity",
            "strength_initial",
        ),
        "tune": (
            "forgetting_threshold",
            "half_life",
            "forgetting_every",
            "pattern_similarity",
        ),
    }
    study_trials: ClassVar[int] = 16
    similarity_rules: ClassVar[tuple[SimilarityRule, ...]] = (
        SimilarityRule("group episodes into a pattern (004)", "pattern_similarity"),
    )
    statuses: ClassVar[Statuses] = Statuses(
        ("active", "forgotten", "superseded"),
        terminal=frozenset({"superseded"}),
        retrievable=frozenset({"active"}),
    )
    kinds: ClassVar[tuple[str, ...]] = KINDS
    strength_range = (0.0, math.inf)
    # Seed-named attributes the decay-curve tool may set on a planted memory.
    curve_attributes: ClassVar[frozenset[str]] = frozenset({"protected", "times_accessed"})

    def setup(self) -> None:
        self.schedule = (
            Job("consolidate", self.params.consolidation_every),
            Job("forget", self.params.forgetting_every),
        )
        s = self.store
        s.add_column("confidence", np.float64, 0.0)
        s.add_column("protected", np.bool_, False)
        s.add_column("times_reinforced", np.int64, 0)
        s.add_column("supersedes", np.int64, -1)
        s.add_column("superseded_by", np.int64, -1)
        s.add_column("is_active", np.bool_, True)
        s.add_column("verification_count", np.int64, 0)
        s.add_column("last_verified", np.float64, np.nan)
        s.add_column("reflected", np.bool_, False)  # episodes: lessons drawn by consolidation
        s.add_column("forget_strength", np.float64, self.params.strength_initial)  # kernle-code
        self.source_type: list[str] = []
        self.derived_from: list[tuple[int, ...]] = []
        self.confidence_history: list[list[tuple[float, float]]] = []
        # each raw capture as (content, episode, kind, row): raw_entries builds their records
        self.captures: list[tuple[str, str, str, int]] = []

    # -- layer 0 -> structured -------------------------------------------------
    @property
    def raw_entries(self) -> list[dict[str, Any]]:
        """The raw captures (§Raw -> Structured), each processed into its memory: records
        built on each read from ``captures`` (ingest keeps four fields per capture)."""
        return [
            {
                "content": content,
                "source": "auto_capture",
                "processed": True,
                "processed_into": [f"{kind}:{row}"],
                "episode": episode,
            }
            for content, episode, kind, row in self.captures
        ]

    def kind_for(self, claim: Claim) -> str:
        """process_raw(as_type=...): the layer a claim is promoted to, by its category."""
        p, category = self.params, claim.category
        if not claim.key:
            return "episode"  # an unstructured capture is an experience
        if category in ("value", "drive"):
            return category
        if category in p.belief_categories:
            return "belief"
        if category in p.note_categories:
            return "note"
        return "episode"

    def _add(
        self,
        now: float,
        vectors: np.ndarray,
        claims: list[Claim],
        texts: list[str],
        provenance: list[tuple[str, ...]],
        kinds: list[str],
        source_type: str,
        confidence: list[float],
        derived: list[tuple[int, ...]] | None = None,
    ) -> list[int]:
        if not claims:
            return []
        protected = self.params.protected_kinds
        rows: list[int] = self.store.add(
            now,
            vectors,
            texts=texts,
            claims=claims,
            provenance=provenance,
            kind=kinds,
            confidence=confidence,
            protected=[k in protected for k in kinds],
        ).tolist()
        at, m = float(now), len(rows)
        self.source_type.extend([source_type] * m)
        self.derived_from.extend(derived if derived else [()] * m)
        self.confidence_history.extend([[(at, float(c))] for c in confidence])
        return rows

    def _claims_of(self, ep: Episode) -> Sequence[Claim]:
        found = self.llm.extract(ep)
        if found is None:
            # The raw capture stays; the agent promotes it as a plain episode of its text.
            return (Claim(key="", value=ep.text, category="event"),)
        return found

    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        claims_of = [self._claims_of(ep) for ep in episodes]
        # each claim's episode and item key <episode>#<i>
        owners = [ep for ep, found in zip(episodes, claims_of) for _ in found]
        claims = [c for found in claims_of for c in found]
        keys = [f"{ep.id}#{i}" for ep, found in zip(episodes, claims_of) for i in range(len(found))]
        if not claims:
            return []
        emb = self.llm.embed(claims, keys)
        vectors, ok = emb.vectors, np.asarray(emb.ok, dtype=bool)
        if not ok.all():
            vectors, ok = np.array(vectors, dtype=np.float32, copy=True), ok.copy()
            failed = np.flatnonzero(~ok).tolist()
            # §Search Functionality: "falls back to text matching" when vectors are unavailable.
            texts = [owners[i].text or claims[i].value for i in failed]
            fb = self.llm.embed(texts, [f"{keys[i]}:text" for i in failed])
            for j, i in enumerate(failed):
                if fb.ok[j]:
                    vectors[i] = fb.vectors[j]
                    ok[i] = True
        oks = ok.tolist()
        if all(oks):
            kept, kept_owners = claims, owners
        else:
            vectors = vectors[ok]
            kept = [c for c, good in zip(claims, oks) if good]
            kept_owners = [ep for ep, good in zip(owners, oks) if good]
        kinds = [self.kind_for(c) for c in kept]
        rows = self._add(
            now,
            vectors,
            kept,
            [f"{c.key}: {c.value}" if c.key else c.value for c in kept],
            [(ep.id,) for ep in kept_owners],
            kinds,
            "direct_experience",
            [float(c.confidence) for c in kept],
        )
        self.captures.extend(
            (ep.text, ep.id, kind, row) for ep, kind, row in zip(kept_owners, kinds, rows)
        )
        created = [
            Outcome(ep.id, "create", row, detail=kind)
            for ep, kind, row in zip(kept_owners, kinds, rows)
        ]
        if kept is claims:  # nothing dropped
            return created
        made = iter(created)
        return [
            next(made) if good else Outcome(ep.id, "drop", detail=f"no embedding for {key}")
            for ep, key, good in zip(owners, keys, oks)
        ]

    # -- salience --------------------------------------------------------------
    def days_since_access(self, now: float) -> np.ndarray:
        return self.store.days_since_access(now)

    def strength(self, now: float) -> np.ndarray:
        """Salience of every row (004 §Salience Formula)."""
        s = self.store
        accessed = np.maximum(s["access_count"].astype(np.float64), self.params.access_floor)
        return salience_vector(
            s["confidence"],
            accessed,
            self.days_since_access(now),
            self.params.half_life,
            self.params.log_offset,
        ).astype(np.float64)

    # -- search ----------------------------------------------------------------
    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        s = self.store
        out: list[Ranking] = []
        rows = s.rows_with()  # the retrievable rows (forgotten rows stay in the store)
        for q in queries:
            v = self.llm.embed_query(q)
            if not len(rows):
                out.append(Ranking.empty())
                continue
            if v is None:
                # §Search Functionality: "falls back to text matching".
                scores = np.where(s.retrievable(), self.text_match(q.text), -np.inf)
                scores[scores <= 0.0] = -np.inf  # no shared word: not a match
                ids = self.rank(scores, q.k, q.id)
                ids = ids[np.isfinite(scores[ids])]
                out.append(Ranking(ids, np.minimum.accumulate(scores[ids])))
            else:
                cos = s.query_products(v, rows).astype(np.float64)
                ranking = self.ranking_among(rows, cos, q.k, q.id)
                ids = ranking.ids
                out.append(ranking)
            s["access_count"][ids] += 1
            s["last_access"][ids] = now
        return out

    def text_match(self, text: str) -> np.ndarray:
        """Per row, the share of the query's distinct words that occur in the row's text
        (004 §Search Functionality text fallback; case-insensitive, whole words)."""
        words = set(_WORD.findall(text.lower()))
        out = np.zeros(self.store.n, dtype=np.float64)
        if not words:
            return out
        for r, t in enumerate(self.store.text):
            out[r] = len(words & set(_WORD.findall(t.lower()))) / len(words)
        return out

    # -- maintenance -----------------------------------------------------------
    def maintain(self, now: float, jobs: Sequence[str]) -> list[Outcome]:
        out: list[Outcome] = []
        # Consolidation first: the agent reflects on today's episodes before the cycle runs.
        if "consolidate" in jobs:
            out += self.consolidate(now)
        if "forget" in jobs:
            out += self.run_forgetting_cycle(now)
        return out

    def get_forgetting_candidates(self, now: float, threshold: float | None = None) -> np.ndarray:
        """Active, unprotected rows of the ``forget_kinds`` whose salience (or, forget_by
        'strength', stored strength) is strictly below the threshold, ascending by row. With
        kernle-code's limits (sqlite.py / forgetting.py @7345648): only the
        ``oldest_per_kind`` oldest of each kind are scored, the ``candidate_pool`` lowest of
        them are kept, those below the threshold are candidates, at most ``forget_limit``."""
        s, p = self.store, self.params
        t = p.forgetting_threshold if threshold is None else threshold
        if s.n == 0:
            return np.zeros(0, dtype=np.int64)
        score = self.strength(now) if p.forget_by == "salience" else s["forget_strength"][: s.n]
        eligible = s.mask(("active",), p.forget_kinds) & ~s["protected"][: s.n]
        if not (p.oldest_per_kind or p.candidate_pool or p.forget_limit):
            return np.flatnonzero(eligible & (score < t))
        # the storage's scan: kind by kind, oldest first (ORDER BY created_at ASC LIMIT ?);
        # equal times and equal scores go in a seeded order of memory identity, never by row
        tie = s.tie_keys(f"{self.seed}:forget")
        scanned = []
        for kind in p.forget_kinds:
            rows = np.flatnonzero(eligible & s.mask(("active",), (kind,)))
            rows = rows[np.lexsort((tie[rows], s["created"][rows]))]
            scanned.append(rows[: p.oldest_per_kind] if p.oldest_per_kind else rows)
        order = np.concatenate(scanned) if scanned else np.zeros(0, dtype=np.int64)
        order = order[np.lexsort((tie[order], score[order]))]  # results.sort(key=score)
        if p.candidate_pool:
            order = order[: p.candidate_pool]
        order = order[score[order] < t]
        if p.forget_limit:
            order = order[: p.forget_limit]
        return np.sort(order)

    def _update_forget_strength(self, now: float) -> None:
        """kernle-code: each forgetting cycle first moves every row's stored strength."""
        s = self.store
        if s.n:
            s["forget_strength"][:] = next_strength(
                s["forget_strength"], s["access_count"], self.days_since_access(now), self.params
            )

    def run_forgetting_cycle(self, now: float) -> list[Outcome]:
        if self.params.forget_by == "strength":
            self._update_forget_strength(now)
        rows = self.get_forgetting_candidates(now)
        if not len(rows):
            return [Outcome("forget", "skip", detail="no candidates")]
        sal = self.strength(now)
        if self.params.dry_run:
            return [
                Outcome(
                    "forget", "candidate", int(r), detail=f"dry run: salience={float(sal[r])!r}"
                )
                for r in rows.tolist()
            ]
        self.store.set_status(rows, "forgotten", now)
        return [
            Outcome("forget", "forget", int(r), detail=f"salience={float(sal[r])!r}")
            for r in rows.tolist()
        ]

    def consolidate(self, now: float) -> list[Outcome]:
        s = self.store
        out = self._revise_new_beliefs(now)
        waiting = np.flatnonzero(s.mask(("active",), ("episode",)) & ~s["reflected"])
        if self.params.consolidation_window and len(waiting) > self.params.consolidation_window:
            # the older ones fall out of get_episodes(limit=...): never looked at again
            s["reflected"][waiting[: -self.params.consolidation_window]] = True
            waiting = waiting[-self.params.consolidation_window :]
        if len(waiting) < self.params.min_episodes:
            return out + [
                Outcome(
                    "consolidate",
                    "skip",
                    detail=f"{len(waiting)} unreflected episodes < min_episodes",
                )
            ]
        s["reflected"][waiting] = True
        # Text-only captures (no structured claim) carry no fact a belief could state.
        structured = [r for r in waiting.tolist() if s.claim[r] is not None and s.claim[r].key]
        groups = (
            self._repeated_lessons(structured)
            if self.params.pattern_rule == "repeated-lesson"
            else self._patterns(structured)
        )
        for rows in groups:
            if len(rows) >= self.params.pattern_min_episodes:
                out += self._reflect(rows, now)
        return out or [Outcome("consolidate", "skip", detail="no pattern among the episodes")]

    def _patterns(self, rows: list[int]) -> list[list[int]]:
        """Groups of episodes the agent sees as one pattern: greedy, in row order, each
        episode joins the first group whose first episode has cosine >= pattern_similarity."""
        emb = self.store.embedding
        groups: list[list[int]] = []
        for r in rows:
            for g in groups:
                if float(np.dot(emb[g[0]].astype(np.float64), emb[r])) >= (
                    self.params.pattern_similarity
                ):
                    g.append(r)
                    break
            else:
                groups.append([r])
        return groups

    def _repeated_lessons(self, rows: list[int]) -> list[list[int]]:
        """kernle-code's patterns (consolidation.py@4ef01db: Counter(all_lessons), cnt >= 2):
        episodes whose lesson, the statement the LLM extracted from them, is the same text,
        grouped in order of first appearance."""
        groups: dict[str, list[int]] = {}
        for r in rows:
            groups.setdefault(self.store.text[r], []).append(r)
        return list(groups.values())

    def _similar_beliefs(self, vector: np.ndarray, exclude: int = -1) -> list[int]:
        s = self.store
        beliefs = np.flatnonzero(s.mask(("active",), ("belief",)))
        beliefs = beliefs[beliefs != exclude]
        if not len(beliefs):
            return []
        # float64 decisions as E[beliefs].astype(float64) @ vector, screened in float32
        near = similarity.rows_at_least(
            s.embedding, beliefs, vector, self.params.pattern_similarity
        )
        return near.tolist()

    def _relations(self, claim: Claim, rows: list[int], key: str) -> list[str]:
        """The LLM's relation of ``claim`` to each row's claim (an invalid reply counts as
        IRRELEVANT: the agent does nothing it cannot read)."""
        if not rows:
            return []
        claims = self.store.claim
        replies = self.llm.classify(claim, [claims[r] for r in rows], answer="relation", key=key)
        return [r if r in RELATIONS else IRRELEVANT for r in replies]

    def _revise_new_beliefs(self, now: float) -> list[Outcome]:
        """Beliefs captured since the last run: one contradicting an older similar belief
        supersedes it (004 §3 Beliefs revision chain)."""
        s = self.store
        beliefs = s.mask(("active",), ("belief",))
        new = np.flatnonzero(beliefs & ~s["reflected"])
        out: list[Outcome] = []
        # The older similar beliefs of every new one (_similar_beliefs(E[b], exclude=b), rows
        # under b) screened by one float32 product per block of new beliefs instead of one
        # scan of the store per belief: rows only leave the active beliefs in this loop, so
        # the screen over those at the start, minus the rows superseded since, holds every
        # candidate, and similarity.rows_at_least decides them as float64 does.
        pool = np.flatnonzero(beliefs)
        emb, active = s.embedding, s.statuses.code("active")
        block = max(1, REVISE_SCREEN_ELEMENTS // max(1, len(pool)))
        screens, at = np.zeros((0, 0), dtype=np.float32), -1
        for j, b in enumerate(new.tolist()):
            s["reflected"][b] = True
            if s.status_of(b) != "active":
                continue  # superseded earlier in this loop by a newer capture
            if j // block != at:
                at = j // block
                # (a new belief's screens in a row: its comparisons read contiguous memory)
                screens = emb[new[at * block : (at + 1) * block]] @ emb[pool].T
            # the screen decides where it is clear of the threshold by its margin, float64
            # near it (a belief's many paraphrases, far above it, cost no float64); then the
            # older ones still active
            near = similarity.rows_at_least(
                emb, pool, emb[b], self.params.pattern_similarity, screen=screens[j % block]
            )
            older = near[(near < b) & (s["status"][near] == active)].tolist()
            rel = self._relations(s.claim[b], older, f"kernle:revise:{b}:{now!r}")
            contradicted = [old for old, r in zip(older, rel) if r == CONTRADICTS]
            for old in contradicted:
                s["supersedes"][b] = old
                out += self._supersede(old, b, now)
        return out

    def _reflect(self, rows: list[int], now: float) -> list[Outcome]:
        s = self.store
        tag = f"{min(rows)}:{now!r}"
        claim = self.llm.synthesize([s.claim[r] for r in rows], key=f"consolidate:{tag}")
        episodes = sorted(set().union(*(s.provenance[r] for r in rows)))
        emb = self.llm.embed([claim], [f"belief:{tag}"])
        if not emb.ok[0]:
            return [Outcome("consolidate", "drop", detail=f"no embedding for the belief of {tag}")]
        beliefs = self._similar_beliefs(emb.vectors[0])
        rel = self._relations(claim, beliefs, f"kernle:reflect:{tag}")
        same = [b for b, r in zip(beliefs, rel) if r == SUPPORTS]
        contradicted = [b for b, r in zip(beliefs, rel) if r == CONTRADICTS]
        out: list[Outcome] = []
        if same:
            b = same[-1]
            s["times_reinforced"][b] += 1
            s["updated"][b] = now
            s.add_provenance(b, episodes, now)
            out.append(Outcome("consolidate", "reinforce", b, detail=tag))
            for old in contradicted:
                out += self._supersede(old, b, now)
            return out
        text = f"{claim.key}: {claim.value}" if claim.key else claim.value
        new = self._add(
            now,
            emb.vectors[:1],
            [claim],
            [text],
            [tuple(episodes)],
            ["belief"],
            "consolidation",
            [self.params.belief_confidence],
            [tuple(rows)],
        )[0]
        s["reflected"][new] = True  # the agent's own statement: already weighed against beliefs
        out.append(Outcome("consolidate", "create", new, detail=tag))
        if contradicted:
            s["supersedes"][new] = contradicted[-1]
            for old in contradicted:
                out += self._supersede(old, new, now)
        return out

    def _supersede(self, old: int, new: int, now: float) -> list[Outcome]:
        s = self.store
        s["superseded_by"][old] = new
        s["is_active"][old] = False
        s.set_status(old, "superseded", now)
        return [Outcome("consolidate", "supersede", old, detail=f"superseded_by={new}")]

    # -- meta-memory -----------------------------------------------------------
    def verify_memory(self, row: int, now: float) -> float:
        """004 §Meta-Memory: confirm a memory; confidence rises by ``verify_step`` (max 1)."""
        s = self.store
        s["confidence"][row] = min(1.0, s["confidence"][row] + self.params.verify_step)
        s["verification_count"][row] += 1
        s["last_verified"][row] = now
        self.confidence_history[row].append((float(now), float(s["confidence"][row])))
        return float(s["confidence"][row])

    def get_uncertain_memories(self, threshold: float | None = None) -> np.ndarray:
        """Active rows with confidence strictly below ``threshold`` (default 0.5)."""
        t = self.params.uncertainty_threshold if threshold is None else threshold
        s = self.store
        return np.flatnonzero(s.mask(("active",)) & (s["confidence"] < t))

    def get_memory_lineage(self, row: int) -> dict[str, Any]:
        s = self.store
        return {
            "source_type": self.source_type[row],
            "source_episodes": sorted(s.provenance[row]),
            "derived_from": list(self.derived_from[row]),
            "supersedes": int(s["supersedes"][row]),
            "superseded_by": int(s["superseded_by"][row]),
        }

    def get_belief_history(self, row: int) -> list[int]:
        """The revision chain through ``row``, oldest first."""
        s = self.store
        chain = [row]
        while s["supersedes"][chain[0]] >= 0:
            chain.insert(0, int(s["supersedes"][chain[0]]))
        while s["superseded_by"][chain[-1]] >= 0:
            chain.append(int(s["superseded_by"][chain[-1]]))
        return chain

    # -- user actions ----------------------------------------------------------
    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        """Tombstone (never delete) what an episode said; Recover brings it back."""
        return self.mark_memories_of(
            events, now, status="forgotten", action="forget", among=("active",)
        )

    def protect(self, events: Sequence[Protect], now: float) -> list[Outcome]:
        out: list[Outcome] = []
        for ev in events:
            rows = self.store.rows_from(ev.episode_id).tolist()
            if not rows:
                out.append(Outcome(ev.id, "skip", detail=f"no memory of {ev.episode_id}"))
            for r in rows:
                self.store["protected"][r] = True
                out.append(Outcome(ev.id, "protect", r))
        return out

    def recover(self, events: Sequence[Recover], now: float) -> list[Outcome]:
        return self.mark_memories_of(
            events, now, status="active", action="recover", among=("forgotten",)
        )

    def plant(self, episode: Episode, now: float) -> int:
        """Default plant, then the seed-named attributes: ``protected`` and ``times_accessed``."""
        row = super().plant(episode, now)
        claim = episode.claims[0] if episode.claims else None
        if claim is not None:
            protected = claim.attr("protected")
            if protected is not None:
                self.store["protected"][row] = _as_bool("protected", protected)
            ta = claim.attr("times_accessed")
            if ta is not None:
                self.store["access_count"][row] = _as_count("times_accessed", ta)
        return row


def _as_bool(name: str, v: Any) -> bool:
    from memsim.engine.errors import ParamError

    if isinstance(v, bool):
        return v
    low = str(v).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ParamError(f"memory attribute {name}={v!r} is not true/false")


def _as_count(name: str, v: Any) -> int:
    from memsim.engine.errors import ParamError

    try:
        n = int(str(v).strip()) if not isinstance(v, int) else v
    except ValueError:
        raise ParamError(f"memory attribute {name}={v!r} is not a whole number") from None
    if isinstance(n, bool) or n < 0:
        raise ParamError(f"memory attribute {name}={v!r} must be >= 0")
    return n


@dataclass(frozen=True)
class KernleCodeParams(KernleParams):
    """kernle-code: Kernle as its public code is built, github.com/Emergent-Instruments/kernle
    at commit 7345648dbe2ae94324d0240799bcccb904b7aa25 (kernle/features/forgetting.py,
    kernle/storage/sqlite.py), the revision of forgetting.py the index lists, whose salience
    forgetting cycle is the one 004 describes; consolidation counts lessons as
    kernle/stack/components/consolidation.py@4ef01db does. Every other constant is the
    document's."""

    log_offset: float = param(
        0.1,
        lo=0.0,
        doc=f"kernle-code: {_STORAGE} get_forgetting_candidates salience = confidence x "
        "(ln(times_accessed + 1) + 0.1) / (days_since / 30 + 1)",
    )
    forget_limit: int = param(
        10, lo=0, doc=f"kernle-code: {_FORGETTING} run_forgetting_cycle(threshold=0.3, limit=10)"
    )
    candidate_pool: int = param(
        20,
        lo=0,
        doc=f"kernle-code: {_FORGETTING} get_forgetting_candidates: storage limit = limit * 2",
    )
    oldest_per_kind: int = param(
        40,
        lo=0,
        doc=f"kernle-code: {_STORAGE} get_forgetting_candidates: per type ORDER BY created_at "
        "ASC LIMIT limit * 2",
    )
    forget_kinds: tuple[str, ...] = param(
        ("episode", "belief", "note"),
        doc=f"kernle-code: {_STORAGE} types = episode, belief, goal, note, relationship "
        "(memsim's relationship claims are beliefs; no goals)",
    )
    pattern_rule: str = param(
        "repeated-lesson",
        choices=("cosine", "repeated-lesson"),
        doc=f"kernle-code: {_STACK_CONS} common = [lesson for lesson, cnt in "
        "Counter(all_lessons).items() if cnt >= 2]",
    )
    consolidation_window: int = param(
        50, lo=0, doc=f"kernle-code: {_STACK_CONS} get_episodes(limit=50)"
    )


class KernleCode(Kernle):
    """Kernle as its code is built (docs/policies/kernle-code.md)."""

    Params: ClassVar[type[Params]] = KernleCodeParams
