"""The events a stream is made of, and the Stream that validates their order.

Time is in days (float) on a simulated clock that starts at 0. Events are frozen
dataclasses so a policy cannot change what every other policy will see.

Ground truth lives in the events, never in a policy: an Episode carries the claims it
makes (fact key, value, category, importance, subject, confidence, noise flag); a Query
names the fact keys it asks about and/or the episode ids that answer it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import limits
from .errors import StreamError

MAX_K = limits.MAX_K  # the longest ranking a query may ask for (docs/limits.md)


def _check_time(kind: str, ident: str, t: Any) -> None:
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise StreamError(f"{kind} {ident!r}: time must be a number of days, got {t!r}")
    if (isinstance(t, int) and t > 1e308) or not math.isfinite(t) or t < 0:  # int: exactly
        raise StreamError(f"{kind} {ident!r}: time must be finite and >= 0, got {t!r}")


def _check_unit(where: str, name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 <= v <= 1.0):
        raise StreamError(f"{where}: {name} must be a number in [0, 1], got {v!r}")


def topic_of(key: str) -> str:
    """A claim key's topic: everything before its last dot ("owner.city" -> "owner")."""
    return key.rsplit(".", 1)[0] if "." in key else key


@dataclass(frozen=True)
class Claim:
    """One fact an episode asserts: ``key`` (e.g. ``"owner.name"``) has ``value``.

    ``category`` is the seed-neutral kind of fact (fact, preference, relationship, decision,
    event, sentiment, reminder, procedural, value, drive, ...): each policy maps it onto its
    own vocabulary. ``importance`` and ``confidence`` are in [0, 1]; ``importance`` is None
    when the statement sets none (each policy then uses its documented default, e.g. Izzie's
    per-category table). ``noise`` marks chatter
    nobody will ask about. ``attrs`` holds extra seed-named attributes as (name, value)
    pairs, e.g. ``(("ttl_policy", "keep_forever"),)``. The topic is the key's prefix before
    its last dot: claims of one topic are related, which the mock embedder reflects.
    A claim with ``key=""`` is text-only (no structured fact): it is embedded by text.
    """

    key: str
    value: str = ""
    category: str = "fact"
    importance: float | None = None
    subject: str = "owner"
    confidence: float = 0.9
    noise: bool = False
    attrs: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        where = f"claim {self.key!r}"
        if not isinstance(self.key, str):
            raise StreamError(f"{where}: key must be a string, got {self.key!r}")
        if not isinstance(self.value, str):
            raise StreamError(f"{where}: value must be a string, got {self.value!r}")
        if not isinstance(self.category, str) or not self.category:
            raise StreamError(
                f"{where}: category must be a non-empty string, got {self.category!r}"
            )
        if self.importance is not None:
            _check_unit(where, "importance", self.importance)
        _check_unit(where, "confidence", self.confidence)
        if not isinstance(self.attrs, tuple) or not all(
            isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) for a in self.attrs
        ):
            raise StreamError(
                f"{where}: attrs must be a tuple of (name, value) pairs, got {self.attrs!r}"
            )

    @property
    def topic(self) -> str:
        return topic_of(self.key)

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == name:
                return v
        return default


@dataclass(frozen=True)
class Episode:
    """Something the user said or did at ``time`` (days). ``conversation`` groups turns;
    ``project`` (optional, "" = none) names the project it belongs to, for the policies
    whose documents scope memories by project."""

    id: str
    time: float
    text: str
    claims: tuple[Claim, ...] = ()
    speaker: str = "user"
    conversation: str = ""
    project: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise StreamError(f"episode id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.project, str):
            raise StreamError(
                f"episode {self.id!r}: project must be a string, got {self.project!r}"
            )
        _check_time("episode", self.id, self.time)
        if not isinstance(self.text, str):
            raise StreamError(f"episode {self.id!r}: text must be a string, got {self.text!r}")
        if not isinstance(self.claims, tuple) or not all(isinstance(c, Claim) for c in self.claims):
            raise StreamError(f"episode {self.id!r}: claims must be a tuple of Claim")


@dataclass(frozen=True)
class Query:
    """A question at ``time``: asks about fact ``keys`` and/or is answered by ``answers``
    (episode ids, for real data). ``group`` labels it for breakdowns (a LoCoMo category).
    ``subject`` names who the question is about, when the text names someone. ``project``
    (optional) is the project the question is asked in."""

    id: str
    time: float
    text: str
    keys: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    k: int = 10
    subject: str = ""
    group: str = ""
    project: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise StreamError(f"query id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.project, str):
            raise StreamError(f"query {self.id!r}: project must be a string, got {self.project!r}")
        _check_time("query", self.id, self.time)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise StreamError(
                f"query {self.id!r}: k must be an integer in [1, {MAX_K}], got {self.k!r}"
            )
        if not isinstance(self.keys, tuple) or not isinstance(self.answers, tuple):
            raise StreamError(f"query {self.id!r}: keys and answers must be tuples")
        if not self.keys and not self.answers:
            raise StreamError(f"query {self.id!r}: names neither fact keys nor answering episodes")


@dataclass(frozen=True)
class Forget:
    """The user asks to forget what episode ``episode_id`` said."""

    id: str
    time: float
    episode_id: str

    def __post_init__(self) -> None:
        _check_time("forget", self.id, self.time)


@dataclass(frozen=True)
class Protect:
    """The user marks what episode ``episode_id`` said as protected from forgetting."""

    id: str
    time: float
    episode_id: str

    def __post_init__(self) -> None:
        _check_time("protect", self.id, self.time)


@dataclass(frozen=True)
class Recover:
    """The user recovers a forgotten (tombstoned) memory of episode ``episode_id``."""

    id: str
    time: float
    episode_id: str

    def __post_init__(self) -> None:
        _check_time("recover", self.id, self.time)


Event = Episode | Query | Forget | Protect | Recover
EVENT_TYPES = (Episode, Query, Forget, Protect, Recover)


@dataclass(frozen=True)
class Stream:
    """A validated, time-ordered tuple of events with a name.

    Raises StreamError naming the first wrong event (its position, id and value) when
    events are out of time order, ids repeat, or a reference points nowhere.
    ``horizon`` is the simulated end time (>= the last event); maintenance runs up to it.
    """

    events: tuple[Event, ...]
    name: str = "stream"
    horizon: float = 0.0
    description: str = ""
    meta: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        events = tuple(self.events)
        object.__setattr__(self, "events", events)
        limits.at_most(
            f"stream {self.name}", "events", len(events), limits.MAX_STREAM_EVENTS, StreamError
        )
        seen: dict[str, Event] = {}
        episode_time: dict[str, float] = {}
        prev = -math.inf
        for i, ev in enumerate(events):
            if not isinstance(ev, EVENT_TYPES):
                raise StreamError(f"{self.name}: event #{i} is not an event: {ev!r}")
            if ev.id in seen:
                raise StreamError(f"{self.name}: event #{i}: id {ev.id!r} is used twice")
            if ev.time < prev:
                raise StreamError(
                    f"{self.name}: event #{i} ({type(ev).__name__} {ev.id!r}) at time "
                    f"{ev.time!r} comes after an event at time {prev!r}: out of time order"
                )
            prev = ev.time
            seen[ev.id] = ev
            if isinstance(ev, Episode):
                episode_time[ev.id] = ev.time
            elif isinstance(ev, Query):
                for a in ev.answers:
                    if a not in episode_time:
                        raise StreamError(
                            f"{self.name}: query {ev.id!r} names answering episode {a!r}, "
                            "which is not an earlier episode of the stream"
                        )
            elif ev.episode_id not in episode_time:
                raise StreamError(
                    f"{self.name}: {type(ev).__name__.lower()} {ev.id!r} names episode "
                    f"{ev.episode_id!r}, which is not an earlier episode of the stream"
                )
        last = events[-1].time if events else 0.0
        if self.horizon < last:
            object.__setattr__(self, "horizon", float(last))

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @property
    def episodes(self) -> list[Episode]:
        return [e for e in self.events if isinstance(e, Episode)]

    @property
    def queries(self) -> list[Query]:
        return [e for e in self.events if isinstance(e, Query)]

    def batches(self) -> Iterator[tuple[float, type[Event], list[Event]]]:
        """Runs of consecutive events of one type that share a time, in stream order."""
        run: list[Event] = []
        for ev in self.events:
            if run and (ev.time != run[0].time or type(ev) is not type(run[0])):
                yield run[0].time, type(run[0]), run
                run = []
            run.append(ev)
        if run:
            yield run[0].time, type(run[0]), run


def make_stream(
    events: Iterable[Event], name: str = "stream", horizon: float = 0.0, description: str = ""
) -> Stream:
    return Stream(tuple(events), name=name, horizon=horizon, description=description)


def sorted_events(events: Sequence[Event]) -> list[Event]:
    """Stable sort by time (generators build events per fact, then interleave them)."""
    return sorted(events, key=lambda e: e.time)
