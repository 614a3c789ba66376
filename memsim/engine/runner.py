"""The runner: drives one policy through one stream on a simulated clock.

Events are processed in batches (consecutive events of one type sharing a time). Before a
batch at time ``t`` every maintenance tick ``T < t`` that has not run yet is run, so a tick
at ``T`` sees every event with time ``<= T``; after the last batch the ticks up to the
stream's horizon run. A tick calls ``policy.maintain(T, jobs)`` once with every job due at
``T`` (in schedule order).

What happens is recorded in a :class:`Trace`: per-query rankings with a snapshot of the
returned memories' provenance, per-event outcomes, the footprint after every batch and
tick, and the store's change logs. Timings are kept apart from this deterministic content,
so two runs with the same seed have equal ``Trace.content()``.
"""

from __future__ import annotations

import heapq
import math
import time as _time
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from .errors import PolicyContractError, StreamError
from .events import Claim, Episode, Event, Forget, Protect, Query, Recover, Stream
from .policy import IdleSkipping, Job, Outcome, Policy, Ranking
from .store import Statuses

# Maintenance ticks one run may take. Each tick is a Python call into the policy (~10-100 us
# on a small store), so this bounds a run at well under a minute of ticking; a daily job
# over 500 years fits. A stream beyond it is refused up front instead of hanging.
MAX_TICKS = 200_000

# user-action event type -> (capability, the policy's method for it)
_Act = Callable[[Policy[Any], list[Any], float], list[Outcome]]
_ACTIONS: dict[type[Event], tuple[str, _Act]] = {
    Forget: ("forget", lambda p, events, now: p.forget(events, now)),
    Protect: ("protect", lambda p, events, now: p.protect(events, now)),
    Recover: ("recover", lambda p, events, now: p.recover(events, now)),
}


@dataclass(frozen=True)
class QueryRecord:
    """What one query returned. ``provenance[i]`` is memory ``ids[i]``'s provenance at
    recall time (a read-only set: the store's ProvenanceSnapshot, which shares the row's
    log rather than copying it). ``status_log_len`` / ``provenance_log_len`` are the
    store's log lengths right after the recall batch, so metrics can reconstruct exactly
    what was remembered at that moment (times alone cannot order same-time events)."""

    query_id: str
    time: float
    ids: np.ndarray
    scores: np.ndarray
    provenance: tuple[AbstractSet[str], ...]
    k: int
    group: str
    footprint: int
    status_log_len: int
    provenance_log_len: int
    # (key, value) each returned memory states at recall time; None for text-only memories
    stated: tuple[tuple[str, str] | None, ...] = ()

    def content(self) -> tuple[Any, ...]:
        return (
            self.query_id,
            self.time,
            self.ids.tobytes(),
            self.scores.tobytes(),
            tuple(tuple(sorted(p)) for p in self.provenance),
            self.k,
            self.group,
            self.footprint,
            self.status_log_len,
            self.provenance_log_len,
            self.stated,
        )


@dataclass(frozen=True)
class OutcomeRecord:
    """One thing a policy did: at ``time``, for event (or job) ``event``."""

    time: float
    event: str
    action: str
    memory: int
    detail: str


@dataclass
class Trace:
    """Everything one run did. See the module docstring."""

    policy_id: str
    policy_version: int | None
    stream_name: str
    horizon: float
    statuses: Statuses
    queries: list[QueryRecord] = field(default_factory=list)
    outcomes: list[OutcomeRecord] = field(default_factory=list)
    footprint: list[tuple[float, int, int]] = field(default_factory=list)
    status_log: list[tuple[float, int, int]] = field(default_factory=list)
    provenance_log: list[tuple[float, int, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    kinds: list[str] = field(default_factory=list)  # the kind name of every row, at the end
    # (time, vector bytes, text bytes) of the retrievable memories after every query batch
    # and at the end (MemoryStore.stored_bytes)
    stored_bytes: list[tuple[float, int, int]] = field(default_factory=list)
    # seconds of recall per query (a batch's time shared by its queries): a timing
    recall_seconds: list[float] = field(default_factory=list)

    def content(self) -> tuple[Any, ...]:
        """A deterministic, comparable representation of everything but the timings.
        Arrays compare bitwise (NaN-safe)."""
        return (
            self.policy_id,
            self.policy_version,
            self.stream_name,
            self.horizon,
            self.statuses,
            tuple(q.content() for q in self.queries),
            tuple(self.outcomes),
            tuple(self.footprint),
            tuple(self.status_log),
            tuple(self.provenance_log),
            tuple(self.kinds),
            tuple(self.stored_bytes),
        )

    def stored_bytes_summary(self) -> dict[str, float]:
        """``stored_bytes_mean`` (mean over the query batches of the retrievable memories'
        vector and text bytes; NaN without queries), ``stored_bytes_final`` and
        ``stored_text_bytes_final`` (at the end of the run)."""
        at_queries = [v + t for _, v, t in self.stored_bytes[:-1]]
        _, vectors, texts = self.stored_bytes[-1] if self.stored_bytes else (0.0, 0, 0)
        return {
            "stored_bytes_mean": float(np.mean(at_queries)) if at_queries else math.nan,
            "stored_bytes_final": float(vectors + texts),
            "stored_text_bytes_final": float(texts),
        }

    def queries_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "query_id": [q.query_id for q in self.queries],
                "time": np.array([q.time for q in self.queries], dtype=np.float64),
                "k": np.array([q.k for q in self.queries], dtype=np.int64),
                "group": [q.group for q in self.queries],
                "returned": np.array([len(q.ids) for q in self.queries], dtype=np.int64),
                "ids": [q.ids.tolist() for q in self.queries],
                "scores": [q.scores.tolist() for q in self.queries],
                "footprint": np.array([q.footprint for q in self.queries], dtype=np.int64),
            }
        )

    def outcomes_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "time": np.array([o.time for o in self.outcomes], dtype=np.float64),
                "event": [o.event for o in self.outcomes],
                "action": [o.action for o in self.outcomes],
                "memory": np.array([o.memory for o in self.outcomes], dtype=np.int64),
                "detail": [o.detail for o in self.outcomes],
            }
        )

    def footprint_frame(self) -> pd.DataFrame:
        arr = self.footprint
        return pd.DataFrame(
            {
                "time": np.array([f[0] for f in arr], dtype=np.float64),
                "retrievable": np.array([f[1] for f in arr], dtype=np.int64),
                "rows": np.array([f[2] for f in arr], dtype=np.int64),
            }
        )


def latency_timings(recall_seconds: Sequence[float], timings: dict[str, float]) -> dict[str, float]:
    """What a run's timings add to the phases': recall latency per query in milliseconds
    (``recall_ms_mean``, ``recall_ms_p95``; NaN without queries) and ``maintenance`` seconds
    (ingest and maintenance ticks)."""
    ms = np.asarray(recall_seconds, dtype=np.float64) * 1000.0
    return {
        "recall_ms_mean": float(ms.mean()) if len(ms) else math.nan,
        "recall_ms_p95": float(np.percentile(ms, 95)) if len(ms) else math.nan,
        "maintenance": timings["ingest"] + timings["maintain"],
    }


def _stated(claim: Claim | None) -> tuple[str, str] | None:
    """The (key, value) a memory states, if it states a structured fact."""
    return (claim.key, claim.value) if claim is not None and claim.key else None


def tick_times(
    schedule: Sequence[Job], start_after: float | None
) -> Iterator[tuple[float, list[str]]]:
    """Maintenance ticks in time order: (T, names of the jobs due at T in schedule order).

    Job j is due at ``offset + n * every`` for n >= 1 when offset is 0, else n >= 0. Each
    time is computed from n directly (no accumulated rounding). Ticks at or before
    ``start_after`` are skipped (a run that continues an earlier one)."""
    heap: list[tuple[float, int, int]] = []  # (time, job position, n)
    for pos, job in enumerate(schedule):
        n = 1 if job.offset == 0 else 0
        if start_after is not None and job.offset + n * job.every <= start_after:
            n = max(n, int((start_after - job.offset) // job.every))
            while job.offset + n * job.every <= start_after:
                n += 1
        heapq.heappush(heap, (job.offset + n * job.every, pos, n))
    while heap:
        t = heap[0][0]
        due: list[int] = []
        while heap and heap[0][0] == t:
            _, pos, n = heapq.heappop(heap)
            due.append(pos)
            job = schedule[pos]
            heapq.heappush(heap, (job.offset + (n + 1) * job.every, pos, n + 1))
        yield t, [schedule[p].name for p in sorted(due)]


def count_ticks(schedule: Sequence[Job], end: float, start_after: float | None) -> float:
    """How many maintenance ticks ``tick_times`` yields up to ``end`` (a float: it may be
    astronomically large)."""
    total = 0.0
    for job in schedule:
        first = job.every if job.offset == 0 else job.offset
        lo = max(first, start_after if start_after is not None else -math.inf)
        if end >= lo:
            steps = (end - lo) / job.every  # inf for a period like 5e-324 days
            total += math.floor(steps) + 1 if math.isfinite(steps) else math.inf
    return total


def check_tick_budget(
    policy: Policy[Any], stream: Stream, end: float, start_after: float | None, ran: float = 0
) -> bool:
    """False when the run's maintenance fits in MAX_TICKS ticks. Beyond that, True when the
    policy can skip idle ticks (``idle_until``) and ``ran`` (ticks run so far) is within the
    budget; otherwise refuse (a horizon or an event time of 1e7 days with a daily job),
    naming what would be needed."""
    schedule = tuple(policy.schedule)
    n = count_ticks(schedule, end, start_after)
    if n <= MAX_TICKS:
        return False
    every = min(j.every for j in schedule)
    can_skip = isinstance(policy, IdleSkipping)
    resolved = end / every < 2.0**52  # consecutive tick times still differ as floats
    if can_skip and resolved and ran <= MAX_TICKS:
        return True
    jobs = ", ".join(f"{j.name!r} every {j.every:g} days" for j in schedule)
    what = "horizon" if end == float(stream.horizon) else "the last event or observation time"
    if not can_skip:
        why = f"would take {n:.3g} maintenance ticks (it cannot skip idle days: no idle_until)"
    elif not resolved:
        why = f"ticks every {every:g} days, which floats cannot tell apart that far out"
    else:
        why = f"ran {ran:.0f} ticks, idle days skipped, without finishing"
    raise StreamError(
        f"{stream.name}: {what} {end:g} days: {type(policy).__name__} ({jobs}) {why}; at "
        f"most {MAX_TICKS} ticks are allowed: shorten the horizon and event times to at most "
        f"about {MAX_TICKS * every / len(schedule):.0f} days"
    )


def _capabilities(policy: Policy[Any]) -> frozenset[str]:
    spec = policy.spec  # None for a policy built without the registry
    return frozenset(spec.capabilities) if spec is not None else frozenset()


def _check_status_column(store: Any, policy_id: str) -> None:
    """PolicyContractError when the footprint the run recorded (``store.count``, kept by
    add and set_status) is not the status column's: a status written without set_status,
    named by its row."""
    if store.count() == int(np.count_nonzero(store.mask())):
        return
    found, names = store.status_log_mismatch(), (*store.statuses.names, None)
    where = (
        "its retrievable rows are not those its status log and counts hold"
        if found is None
        else f"row {found[0]} has status {names[found[1]]!r} in the store's status column "
        f"but {names[found[2]]!r} in its status log"
    )
    raise PolicyContractError(
        f"{policy_id}: {where} (a status written without MemoryStore.set_status)"
    )


def _check_rankings(policy: Policy[Any], queries: Sequence[Query], rankings: Any) -> None:
    name = type(policy).__name__
    if not isinstance(rankings, (list, tuple)) or len(rankings) != len(queries):
        got = len(rankings) if isinstance(rankings, (list, tuple)) else type(rankings).__name__
        raise PolicyContractError(
            f"{name}.recall returned {got} rankings for {len(queries)} queries"
        )
    status = policy.store["status"]
    live = policy.store.statuses.retrievable_codes
    for q, r in zip(queries, rankings):
        if not isinstance(r, Ranking):
            raise PolicyContractError(
                f"{name}.recall answered query {q.id!r} with {type(r).__name__}, not a Ranking"
            )
        ids = np.asarray(r.ids)
        if len(ids) > q.k:
            raise PolicyContractError(
                f"{name}.recall returned {len(ids)} ids for query {q.id!r} (k={q.k})"
            )
        if len(np.asarray(r.scores)) != len(ids):
            raise PolicyContractError(
                f"{name}.recall: query {q.id!r} has {len(ids)} ids but "
                f"{len(np.asarray(r.scores))} scores"
            )
        if len(ids):
            if ids.min() < 0 or ids.max() >= policy.store.n:
                raise PolicyContractError(
                    f"{name}.recall returned row ids {ids.tolist()} for query {q.id!r}, "
                    f"outside the store's {policy.store.n} rows"
                )
            # (a set test per row: np.isin costs ~10 us on a query's few rows)
            bad = [i for i, c in zip(ids.tolist(), status[ids].tolist()) if c not in live]
            if bad:
                raise PolicyContractError(
                    f"{name}.recall returned memories {bad} for query {q.id!r}, "
                    "which are not retrievable now"
                )


def run(
    policy: Policy[Any],
    stream: Stream,
    *,
    observe: Iterable[float] = (),
    observer: Callable[[Policy[Any], float], Any] | None = None,
    progress: bool = False,
    start_after: float | None = None,
    ingest_one_by_one: bool = False,
    footprint: Sequence[tuple[float, int]] | None = None,
) -> Trace:
    """Drive ``policy`` through ``stream``; returns the Trace.

    ``observer(policy, t)`` is called at each time of ``observe`` (sorted) after every event
    with time <= t and every tick <= t; ticks run up to max(horizon, last observation).
    ``start_after`` continues an earlier run: ticks at or before it are taken as done.
    ``ingest_one_by_one`` ingests each episode of a batch alone (conformance checks compare
    this with batched ingest).

    Only a policy whose spec declares ``clairvoyant`` sees the stream ahead of time: its
    ``foresee(stream, footprint)`` is called first (``footprint``: a budget per time,
    (time, memories) pairs, e.g. another run's ``Trace.footprint``; None for its own budget).
    """
    spec = policy.spec
    if spec is not None and spec.clairvoyant:
        policy.foresee(stream, footprint=footprint)  # type: ignore[attr-defined]
    elif footprint is not None:
        raise ValueError("a footprint series is for a clairvoyant policy only")
    caps = _capabilities(policy)
    store = policy.store
    trace = Trace(
        policy_id=spec.id if spec is not None else type(policy).__name__,
        policy_version=spec.version if spec is not None else None,
        stream_name=stream.name,
        horizon=float(stream.horizon),
        statuses=store.statuses,
    )
    timings = {"ingest": 0.0, "recall": 0.0, "maintain": 0.0, "actions": 0.0}
    observations = sorted(float(o) for o in observe)
    if observations and observer is None:
        raise ValueError("observe times given without an observer")
    end = max([float(stream.horizon)] + observations[-1:])
    skip_idle = check_tick_budget(policy, stream, end, start_after)
    skipper = policy if skip_idle and isinstance(policy, IdleSkipping) else None
    ticks = tick_times(tuple(policy.schedule), start_after)
    next_tick = next(ticks, None)
    obs_i = 0
    ran = 0  # ticks run (counted when idle ticks are skipped)

    def record(t: float, outs: Any, default_event: str) -> None:
        for o in outs or ():
            if isinstance(o, Outcome):
                trace.outcomes.append(
                    OutcomeRecord(float(t), o.event, o.action, int(o.memory), o.detail)
                )
            else:
                raise PolicyContractError(
                    f"{type(policy).__name__} returned {o!r} for {default_event!r}, not an Outcome"
                )

    count = store.count  # kept by add and set_status: no pass over the store

    def sample(t: float) -> None:
        trace.footprint.append((float(t), count(), store.n))

    def advance(until: float, inclusive: bool) -> None:
        """Run ticks and observations up to ``until``, ticks first at equal times."""
        nonlocal next_tick, obs_i, ticks, ran
        while True:
            tick_ok = next_tick is not None and (
                next_tick[0] <= until if inclusive else next_tick[0] < until
            )
            obs_ok = obs_i < len(observations) and (
                observations[obs_i] <= until if inclusive else observations[obs_i] < until
            )
            if (
                tick_ok
                and next_tick is not None  # (tick_ok says so: for the type checker)
                and (not obs_ok or next_tick[0] <= observations[obs_i])
            ):
                T, jobs = next_tick
                t0 = _time.perf_counter()
                outs = policy.maintain(T, jobs)
                timings["maintain"] += _time.perf_counter() - t0
                record(T, outs, ",".join(jobs))
                sample(T)
                next_tick = next(ticks, None)
                if skipper is not None and next_tick is not None:
                    ran += 1
                    check_tick_budget(policy, stream, end, start_after, ran)
                    limit = min([until] + observations[obs_i : obs_i + 1])
                    idle = float(skipper.idle_until(T, limit))
                    if idle > next_tick[0]:  # restart the ticks at the first one >= idle
                        ticks = tick_times(tuple(policy.schedule), math.nextafter(idle, -math.inf))
                        next_tick = next(ticks, None)
            elif obs_ok:
                observer(policy, observations[obs_i])  # type: ignore[misc]
                obs_i += 1
            else:
                return

    batches = stream.batches()
    if progress:
        from tqdm import tqdm

        batches = tqdm(  # on stderr, and only for a run that lasts
            batches, desc=f"{trace.policy_id} on {stream.name}", unit="batch", delay=1.0
        )
    for t, kind, events in batches:
        advance(t, inclusive=False)
        if kind is Episode:
            episodes = cast("list[Episode]", events)
            t0 = _time.perf_counter()
            if ingest_one_by_one:
                outs: list[Outcome] = []
                for e in episodes:
                    outs.extend(policy.ingest([e], t) or ())
            else:
                outs = policy.ingest(list(episodes), t)
            timings["ingest"] += _time.perf_counter() - t0
            record(t, outs, events[0].id)
        elif kind is Query:
            queries = cast("list[Query]", events)
            t0 = _time.perf_counter()
            rankings = policy.recall(list(queries), t)
            took = _time.perf_counter() - t0
            timings["recall"] += took
            trace.recall_seconds.extend([took / len(queries)] * len(queries))
            _check_rankings(policy, queries, rankings)
            fp, slen, plen = count(), len(store.status_log), len(store.provenance_log)
            for q, r in zip(queries, rankings):
                ids = np.asarray(r.ids, dtype=np.int64).copy()
                trace.queries.append(
                    QueryRecord(
                        q.id,
                        float(t),
                        ids,
                        np.asarray(r.scores, dtype=np.float64).copy(),
                        store.provenance_of(ids.tolist()),
                        q.k,
                        q.group,
                        fp,
                        slen,
                        plen,
                        tuple(_stated(store.claim[i]) for i in ids.tolist()),
                    )
                )
            trace.stored_bytes.append((float(t), *store.stored_bytes()))
        else:
            action, act = _ACTIONS[kind]
            if action in caps:
                t0 = _time.perf_counter()
                outs = act(policy, list(events), t)
                timings["actions"] += _time.perf_counter() - t0
                record(t, outs, events[0].id)
            else:
                for ev in events:
                    trace.outcomes.append(
                        OutcomeRecord(
                            float(t),
                            ev.id,
                            "unsupported",
                            -1,
                            f"{trace.policy_id} does not declare {action}",
                        )
                    )
        sample(t)
    advance(end, inclusive=True)
    _check_status_column(store, trace.policy_id)
    trace.status_log = list(store.status_log)
    trace.provenance_log = list(store.provenance_log)
    trace.kinds = [store.kinds[int(c)] for c in store["kind"]]
    trace.stored_bytes.append((end, *store.stored_bytes()))
    timings["total"] = sum(timings.values())
    timings.update(latency_timings(trace.recall_seconds, timings))
    trace.timings = timings
    return trace
