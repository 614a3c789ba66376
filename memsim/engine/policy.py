"""The one interface every memory policy implements.

A policy is constructed from its frozen ``Params`` (every constant of its seed document,
defaults equal to the document's values) plus shared services (the LLM, a seed). Learned
state lives in ``self.store`` (a MemoryStore) and in attributes set by ``setup``; everything
a policy knows about time comes through ``now`` (days).

| method | does |
| --- | --- |
| ``ingest(episodes, now)`` | extract, embed, dedup / reinforce / contradict / create, link |
| ``recall(queries, now)`` | rank retrievable memories, record access |
| ``maintain(now, jobs)`` | the scheduled jobs named in ``jobs`` (decay, prune, consolidate...) |
| ``schedule`` | the jobs and their period in days |
| ``strength(now)`` | every memory's documented effective strength, one array |
| ``forget / protect / recover`` | user actions, where the spec declares the capability |

Batched ingest must give exactly the outcome of one-by-one ingest of the same episodes.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast, runtime_checkable

import numpy as np

from .candidate_index import CandidateIndex
from .events import Episode, Forget, Protect, Query, Recover
from .llm import LLM
from .params import Params
from .store import MemoryStore, Statuses

if TYPE_CHECKING:
    from .registry import PolicySpec


@dataclass(frozen=True)
class Job:
    """A maintenance job run every ``every`` days at times ``offset + n * every`` (n >= 1
    when offset is 0). The runner calls ``maintain(now, jobs)`` with the jobs due at now;
    a job at time T sees every event with time <= T."""

    name: str
    every: float
    offset: float = 0.0

    def __post_init__(self) -> None:
        if not self.every > 0:
            raise ValueError(f"job {self.name!r}: every must be > 0 days, got {self.every}")


@dataclass(frozen=True)
class SimilarityRule:
    """A cosine threshold a policy acts on, its bounds named by Params fields (the constants
    stay in ``Params``): ``what`` fires at a cosine above ``lo`` (``>=`` if ``lo_inclusive``,
    else ``>``) and, if ``hi`` names a field, below ``hi`` (``<=`` if ``hi_inclusive``, else
    ``<``); ``between`` two memories or a question and a memory. Read by ``memsim bands
    --thresholds`` (how often each fires on a band)."""

    what: str
    lo: str
    lo_inclusive: bool = True
    hi: str = ""
    hi_inclusive: bool = False
    between: str = "memories"  # or "question": a question's cosine with a memory

    def bounds(self, params: Params) -> tuple[float, float | None]:
        """(lower bound, upper bound or None) under ``params``."""
        values = params.to_dict()
        return float(values[self.lo]), float(values[self.hi]) if self.hi else None

    def passes(self, params: Params, cosines: np.ndarray) -> np.ndarray:
        """Which of ``cosines`` the rule fires on under ``params``."""
        lo, hi = self.bounds(params)
        out = cosines >= lo if self.lo_inclusive else cosines > lo
        if hi is not None:
            out &= cosines <= hi if self.hi_inclusive else cosines < hi
        passed: np.ndarray = out
        return passed


@dataclass(frozen=True, init=False)
class Outcome:
    """What a policy did for one event or job: ``action`` on memory row ``memory`` (-1 when
    none). Actions used across policies: create, reinforce, weaken, invalidate, supersede,
    link, merge, synthesize, prune, archive, forget, protect, recover, drop (an episode that
    leaves no memory, with the reason in ``detail``), skip (a job with nothing to do)."""

    event: str
    action: str
    memory: int = -1
    detail: str = ""

    def __init__(self, event: str, action: str, memory: int = -1, detail: str = "") -> None:
        # the fields written into the instance dict: a frozen dataclass's own __init__ sets
        # each through object.__setattr__ (0.7 against 0.47 us; every ingested claim makes one)
        fields = self.__dict__
        fields["event"], fields["action"] = event, action
        fields["memory"], fields["detail"] = memory, detail


def in_episode_order(
    episodes: int,
    drops: Mapping[int, Sequence[Outcome]],
    owners: Sequence[int],
    created: Sequence[Outcome],
) -> list[Outcome]:
    """A batch's outcomes in the order one episode at a time gives them: each episode's
    drops (``drops[e]``, in order), then what it created (``created[i]`` belongs to episode
    ``owners[i]``, owners ascending). Batched ingest decides per claim, so a drop found late
    in the batch still goes before its episode's creates."""
    if not drops:
        return list(created)
    out: list[Outcome] = []
    at = 0
    for e in range(episodes):
        out.extend(drops.get(e, ()))
        while at < len(created) and owners[at] == e:
            out.append(created[at])
            at += 1
    return out


@dataclass(frozen=True)
class Ranking:
    """A recall answer: memory rows best first, and their scores."""

    ids: np.ndarray
    scores: np.ndarray

    @staticmethod
    def empty() -> Ranking:
        return Ranking(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


# A policy's own Params type: ``class PersonalAI(Policy[PaiParams])`` makes ``self.params``
# a PaiParams for the type checker (``Params`` below names the same class at run time).
P = TypeVar("P", bound=Params)


@runtime_checkable
class IdleSkipping(Protocol):
    """A policy whose maintenance is a closed form of time, so the runner may skip the ticks
    that change nothing (checked with isinstance; a policy need not be one)."""

    def idle_until(self, now: float, until: float) -> float:
        """Called after a tick at ``now`` when no event arrives before ``until``: a time U in
        (now, until] such that no tick before U would change anything (e.g. the next moment
        a retention crosses a threshold). The runner then skips those ticks, but only in a
        run with more than runner.MAX_TICKS ticks (so ordinary runs stay byte-identical);
        without it such a run is refused."""


class Policy(abc.ABC, Generic[P]):
    """Base class. Subclasses set the class attributes and implement the abstract methods."""

    Params: ClassVar[type[Params]] = Params
    statuses: ClassVar[Statuses] = Statuses(("active",), retrievable=frozenset({"active"}))
    kinds: ClassVar[tuple[str, ...]] = ("memory",)
    # The maintenance jobs, read by the runner from the instance: a policy whose cadences are
    # parameters sets ``self.schedule`` in ``setup()``; the default is no jobs.
    schedule: tuple[Job, ...] = ()
    # Documented range of strength(now); upper may be inf (e.g. Kernle's salience).
    strength_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    # Seed-named memory attributes (beyond Claim's own fields) that plant() reads from
    # claim.attrs, e.g. {"stability", "state"}: the decay-curve tool rejects any other name.
    curve_attributes: ClassVar[frozenset[str]] = frozenset()
    # The cosine thresholds the policy's seed document sets on a pair of memories (or a
    # question and a memory), e.g. reinforce above 0.85 (empty: it only ranks by cosine).
    similarity_rules: ClassVar[tuple[SimilarityRule, ...]] = ()
    # The candidate index a policy searches through unless told otherwise (use_index): exact
    # (every search the full scan), or a mode with the store size it starts at where a
    # policy's measurements show it pays (docs/performance.md).
    default_index: ClassVar[Mapping[str, Any]] = MappingProxyType({"mode": "exact"})
    # The candidate index modes other than "exact" that some search of the policy goes
    # through, under its defaults or another reading of its parameters (empty: none does);
    # a run asking another mode of it would change nothing, so the workbench refuses it
    # (memsim.workbench.runs.execution.check_index), and a run whose reading searches none says so.
    index_modes: ClassVar[frozenset[str]] = frozenset()
    # A reference whose run with ``budget=B`` and these Params overrides is a point of the
    # workbench's retention frontier (memsim.workbench.studies.calibrate); None: not one.
    at_budget: ClassVar[Mapping[str, Any] | None] = None
    # The registry entry a policy was made from (PolicySpec.make sets it); None for a policy
    # built directly from its class (a test's, a notebook's).
    spec: PolicySpec | None = None

    def __init__(self, params: P | None = None, *, llm: LLM | None = None, seed: int = 0) -> None:
        if params is None:
            params = cast(P, self.Params())
        if not isinstance(params, self.Params):
            raise TypeError(
                f"{type(self).__name__} takes {self.Params.__qualname__}, "
                f"got {type(params).__qualname__}"
            )
        if llm is None:
            from .mockllm import MockLLM

            llm = MockLLM(seed=seed)
        self.params: P = params
        self.llm = llm
        self.seed = int(seed)
        self.store = MemoryStore(dim=llm.dim, statuses=self.statuses, kinds=self.kinds)
        self.candidates = CandidateIndex(self.store, seed=self.seed, **self.default_index)
        self.setup()

    def setup(self) -> None:  # noqa: B027 optional hook, deliberately empty: not abstract
        """Register policy columns on ``self.store`` and create other learned state."""

    @abc.abstractmethod
    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        """Store what a batch of same-time episodes says."""

    @abc.abstractmethod
    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        """One Ranking per query (at most ``query.k`` rows), recording access."""

    @abc.abstractmethod
    def strength(self, now: float) -> np.ndarray:
        """Every row's documented effective strength at ``now`` (float64, length store.n)."""

    def maintain(self, now: float, jobs: Sequence[str]) -> list[Outcome]:
        """Run the scheduled ``jobs`` due at ``now`` (names from ``schedule``)."""
        return []

    # Optional: ``idle_until`` (see IdleSkipping). Not defined here: a policy that defines
    # it is an IdleSkipping, which is how the runner knows it may skip idle ticks.

    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        raise NotImplementedError(f"{type(self).__name__} does not support forget")

    def protect(self, events: Sequence[Protect], now: float) -> list[Outcome]:
        raise NotImplementedError(f"{type(self).__name__} does not support protect")

    def recover(self, events: Sequence[Recover], now: float) -> list[Outcome]:
        raise NotImplementedError(f"{type(self).__name__} does not support recover")

    def plant(self, episode: Episode, now: float) -> int:
        """Create the memory of one episode for decay-curve analysis and return its row.

        Default: ingest the episode and return the newest row whose provenance holds it.
        Policies whose memories never come from a single episode (Engram's beliefs need a
        consolidation cycle) override this to seed one memory directly, as documented."""
        self.ingest([episode], now)
        rows = [i for i in range(self.store.n) if episode.id in self.store.provenance[i]]
        if not rows:
            raise ValueError(f"{type(self).__name__} kept no memory of episode {episode.id!r}")
        return rows[-1]

    # -- helpers shared by policies -------------------------------------------
    def mark_memories_of(
        self,
        events: Sequence[Forget | Recover],
        now: float,
        *,
        status: str,
        action: str,
        among: Iterable[str],
    ) -> list[Outcome]:
        """Set ``status`` on every memory whose provenance holds each event's episode and
        whose current status is in ``among`` (a user forget or recover); one Outcome per
        memory changed, or a ``skip`` naming the episode when there is none."""
        out: list[Outcome] = []
        allowed = set(among)
        for ev in events:
            rows = [
                r
                for r in self.store.rows_from(ev.episode_id).tolist()
                if self.store.status_of(r) in allowed
            ]
            if not rows:
                out.append(
                    Outcome(
                        ev.id,
                        "skip",
                        -1,
                        f"no {'/'.join(sorted(allowed))} memory of episode {ev.episode_id}",
                    )
                )
                continue
            self.store.set_status(rows, status, now)
            out.extend(Outcome(ev.id, action, r) for r in rows)
        return out

    def use_index(self, mode: str, **knobs: Any) -> None:
        """Search large stores through a candidate index
        (memsim.engine.candidate_index.CandidateIndex: ``mode`` "ivf", faiss, audited; "cones",
        exact range searches only; knobs min_rows / nprobe / audit_every) or exactly ("exact");
        ``default_index`` is the class's own. Policies that do not search through
        ``self.candidates`` are unaffected."""
        new = CandidateIndex(self.store, mode, seed=self.seed, **knobs)  # (may raise)
        self.candidates.detach()
        self.candidates = new

    def index_audit(self) -> dict[str, Any]:
        """The candidate index's exactness audit (see CandidateIndex.summary)."""
        return self.candidates.summary()

    def footprint(self) -> int:
        """Retrievable memories right now."""
        return self.store.count()

    @staticmethod
    def topk(scores: np.ndarray, k: int) -> np.ndarray:
        """Indices of the k largest scores, best first; ties broken by lower index (for
        rankings over something other than the store's rows; recall uses :meth:`rank`)."""
        from .ranking import topk

        return topk(scores, k)

    def rank(self, scores: np.ndarray, k: int, salt: str) -> np.ndarray:
        """Top k of ``scores`` (one per store row) with the default tie rule: scores equal
        within memsim.engine.ranking.TIE_RTOL go in a seeded random order, a pure function
        of (policy seed, ``salt`` e.g. the query id, memory identity), never storage order."""
        from .ranking import topk

        # keys of the candidate rows only (tie_keys is element-wise): O(k), not O(store)
        store, tag = self.store, f"{self.seed}:{salt}"
        return topk(scores, k, lambda rows: store.tie_keys(tag, rows))

    def rank_among(self, rows: np.ndarray, scores: np.ndarray, k: int, salt: str) -> np.ndarray:
        """:meth:`rank` of a ranking over store ``rows`` only (ascending, ``scores[i]`` the
        score of ``rows[i]``), as positions into ``rows``: the same rows in the same order as
        :meth:`rank` of a store-long array with -inf elsewhere, at the cost of ``rows``."""
        from .ranking import topk

        store, tag = self.store, f"{self.seed}:{salt}"
        return topk(scores, k, lambda at: store.tie_keys(tag, rows[at]))

    def ranking_among(self, rows: np.ndarray, scores: np.ndarray, k: int, salt: str) -> Ranking:
        """:meth:`rank_among` as a Ranking of store rows: :meth:`ranking` of a store-long
        array with -inf outside ``rows``."""
        at = self.rank_among(rows, scores, k, salt)
        sc = np.minimum.accumulate(np.asarray(scores, dtype=np.float64)[at])
        return Ranking(np.asarray(rows, dtype=np.int64)[at], sc)

    def ranking(self, scores: np.ndarray, k: int, salt: str) -> Ranking:
        """:meth:`rank` as a Ranking. Tied rows (within TIE_RTOL) may come in any score
        order, so the reported scores are the running minimum (non-increasing)."""
        ids = self.rank(scores, k, salt)
        sc = np.minimum.accumulate(np.asarray(scores, dtype=np.float64)[ids])
        return Ranking(ids.astype(np.int64), sc)
