"""Expectations of scripted scenarios, checked against a run's Trace.

An expectation says what one policy (or every policy, ``"*"``) must have done, in terms any
policy can be judged by: the status log (what a memory's status was at a time), provenance
(which memories hold an episode) and query rankings (what recall returned). Vocabulary:

memory state at time ``after`` (default: the end of the stream), about the memories whose
provenance holds episode ``memory_of`` (optionally only those of ``kind``):

    status: NAME          every such memory has status NAME (and there is at least one)
    any_status: NAME      at least one such memory has status NAME
    status_in: [A, B]     every such memory has one of these statuses
    retrievable: BOOL     true: at least one is retrievable; false: none is
    memories: N           exactly N memories hold the episode
    memories_min: N       at least N memories hold the episode
    same_memory_as: EP    one memory holds both episodes (reinforced or merged together)
    distinct_from: EP     no memory holds both episodes

query rankings, about query ``query`` (provenance as of the query's time):

    top1_from: EP         the top-ranked memory holds episode EP
    top1_not_from: EP     the top-ranked memory does not hold EP (or nothing was returned)
    in_top: EP            some returned memory holds EP
    not_in_top: EP        no returned memory holds EP

footprint at time ``after``:

    footprint: N | footprint_min: N | footprint_max: N   retrievable memories (of ``kind``)

Every expectation may carry ``note:`` (the seed section it comes from). An expectation for
every policy (``"*"``) may name ``except_for: [ids]``, the policies it does not bind, with a
``note`` that says why (e.g. a policy whose forgetting is a seeded random draw cannot promise
what a deterministic one does); those policies are held to their own expectations instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memsim.engine import limits
from memsim.engine.errors import ScenarioError
from memsim.engine.events import Episode, Query, Stream
from memsim.engine.sources import Verdict

if TYPE_CHECKING:
    from memsim.engine.runner import Trace

MEMORY_CHECKS = (
    "status",
    "any_status",
    "status_in",
    "retrievable",
    "memories",
    "memories_min",
    "same_memory_as",
    "distinct_from",
)
QUERY_CHECKS = ("top1_from", "top1_not_from", "in_top", "not_in_top")
FOOTPRINT_CHECKS = ("footprint", "footprint_min", "footprint_max")
_COMMON = {"policy", "except_for", "after", "kind", "note"}


@dataclass(frozen=True)
class Expectation:
    policies: tuple[str, ...]  # ("*",) for every policy
    check: str  # one of the *_CHECKS names
    value: Any  # its argument
    memory_of: str = ""
    query: str = ""
    after: float | None = None
    kind: str = ""
    note: str = ""
    where: str = ""  # "file: expect[3]" for messages
    except_for: tuple[str, ...] = ()  # with ("*",): the policies it does not bind (see note)

    def applies_to(self, policy_id: str) -> bool:
        if policy_id in self.except_for:
            return False
        return "*" in self.policies or policy_id in self.policies

    def describe(self) -> str:
        subject = (
            f"query {self.query}"
            if self.query
            else f"memory of {self.memory_of}"
            if self.memory_of
            else "footprint"
        )
        when = "" if self.after is None else f" after day {self.after:g}"
        kind = f" ({self.kind})" if self.kind else ""
        return f"{subject}{kind}{when}: {self.check}={self.value!r}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"policy": list(self.policies), self.check: self.value}
        if self.except_for:
            d["except_for"] = list(self.except_for)
        optional = {
            "memory_of": self.memory_of,
            "query": self.query,
            "after": self.after,
            "kind": self.kind,
            "note": self.note,
        }
        for name, v in optional.items():
            if v not in ("", None):
                d[name] = v
        return d


def parse_all(items: Sequence[Any], *, file: str, stream: Stream) -> tuple[Expectation, ...]:
    episodes = {e.id: e for e in stream.events if isinstance(e, Episode)}
    queries = {e.id: e for e in stream.events if isinstance(e, Query)}
    return tuple(
        parse_one(
            raw,
            f"expect[{i}]",
            file=file,
            episodes=episodes,
            queries=queries,
            horizon=stream.horizon,
        )
        for i, raw in enumerate(items)
    )


def parse_one(
    raw: Any,
    path: str,
    *,
    file: str,
    episodes: Mapping[str, Episode],
    queries: Mapping[str, Query],
    horizon: float,
) -> Expectation:
    def fail(p: str, msg: str, value: Any) -> ScenarioError:
        return ScenarioError(f"{file}: {p}: {msg}, got {limits.shown(value)}")

    if not isinstance(raw, dict):
        raise fail(path, "must be a mapping", raw)
    checks = [k for k in raw if k in MEMORY_CHECKS + QUERY_CHECKS + FOOTPRINT_CHECKS]
    allowed = (
        _COMMON | {"memory_of", "query"} | set(MEMORY_CHECKS + QUERY_CHECKS + FOOTPRINT_CHECKS)
    )
    for k in raw:
        if k not in allowed:
            raise fail(
                f"{path}.{k}", f"unknown field (allowed: {', '.join(sorted(allowed))})", raw[k]
            )
    if len(checks) != 1:
        raise fail(
            path,
            "needs exactly one check (one of "
            f"{', '.join(MEMORY_CHECKS + QUERY_CHECKS + FOOTPRINT_CHECKS)})",
            raw,
        )
    check = checks[0]
    value = raw[check]

    pol = raw.get("policy")
    pols = (pol,) if isinstance(pol, str) else tuple(pol) if isinstance(pol, list) else None
    if not pols or not all(isinstance(p, str) and p for p in pols):
        raise fail(f"{path}.policy", 'must be a policy id, a list of ids or "*"', pol)

    exc = raw.get("except_for", [])
    if (
        not isinstance(exc, list)
        or not all(isinstance(p, str) and p for p in exc)
        or (exc and pols != ("*",))
        or (exc and not (isinstance(raw.get("note"), str) and raw["note"].strip()))
    ):
        raise fail(
            f"{path}.except_for",
            'must be a list of policy ids, with policy "*" and a note saying why',
            exc,
        )

    after = raw.get("after")
    if after is not None:
        if (
            isinstance(after, bool)
            or not isinstance(after, (int, float))
            or not 0 <= after <= horizon
        ):
            raise fail(f"{path}.after", f"must be a time in days within [0, {horizon:g}]", after)
        after = float(after)
    kind = raw.get("kind", "")
    if not isinstance(kind, str):
        raise fail(f"{path}.kind", "must be a string", kind)
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise fail(f"{path}.note", "must be a string", note)

    def episode_ref(p: str, ref: Any) -> str:
        if not isinstance(ref, str) or ref not in episodes:
            raise fail(p, "names no episode of this file", ref)
        return ref

    memory_of = query = ""
    if check in MEMORY_CHECKS:
        if "query" in raw:
            raise fail(f"{path}.query", f"{check} is about memory_of, not a query", raw["query"])
        memory_of = episode_ref(f"{path}.memory_of", raw.get("memory_of"))
        if after is not None and episodes[memory_of].time > after:
            raise fail(
                f"{path}.after",
                f"is before episode {memory_of!r} (time {episodes[memory_of].time:g})",
                after,
            )
        if check in ("status", "any_status"):
            if not isinstance(value, str) or not value:
                raise fail(f"{path}.status", "must be a status name", value)
            _known_status(fail, f"{path}.{check}", value)
        elif check == "status_in":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, str) for v in value)
            ):
                raise fail(f"{path}.status_in", "must be a list of status names", value)
            for j, v in enumerate(value):
                _known_status(fail, f"{path}.status_in[{j}]", v)
            value = tuple(value)
        elif check == "retrievable":
            if not isinstance(value, bool):
                raise fail(f"{path}.retrievable", "must be true or false", value)
        elif check in ("memories", "memories_min"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise fail(f"{path}.memories", "must be an integer >= 0", value)
        else:
            episode_ref(f"{path}.{check}", value)
    elif check in QUERY_CHECKS:
        if "memory_of" in raw or after is not None:
            raise fail(
                path, f"{check} is about a query (its time is the query's): no memory_of/after", raw
            )
        query = raw.get("query")
        if not isinstance(query, str) or query not in queries:
            raise fail(f"{path}.query", "names no query of this file", query)
        episode_ref(f"{path}.{check}", value)
        if episodes[value].time > queries[query].time:
            raise fail(f"{path}.{check}", f"episode comes after query {query!r}", value)
    else:
        if "memory_of" in raw or "query" in raw:
            raise fail(path, f"{check} counts all memories: no memory_of/query", raw)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(f"{path}.{check}", "must be an integer >= 0", value)
    return Expectation(
        pols, check, value, memory_of, query, after, kind, note, f"{file}: {path}", tuple(exc)
    )


# --------------------------------------------------------------------------- the trace side


class TraceView:
    """What expectations need from a Trace, reconstructed from its logs.

    Reads ``status_log`` [(time, row, status code)], ``provenance_log`` [(time, row, episode)],
    the status vocabulary (``trace.statuses``), the rankings of ``trace.queries`` and the
    kind of every row (``trace.kinds``).
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.statuses = trace.statuses
        self.status_log = sorted(
            ((float(t), int(r), int(c)) for t, r, c in trace.status_log), key=lambda x: x[0]
        )
        self.provenance_log = [(float(t), int(r), str(e)) for t, r, e in trace.provenance_log]
        self.rankings = {
            rec.query_id: [int(i) for i in np.asarray(rec.ids).ravel()] for rec in trace.queries
        }
        self.query_time = {rec.query_id: float(rec.time) for rec in trace.queries}
        # provenance of each returned memory as recorded at recall time (runner.QueryRecord)
        self.snapshots = {rec.query_id: tuple(rec.provenance) for rec in trace.queries}

    def rows_holding(self, episode: str, at: float) -> list[int]:
        return sorted({r for t, r, e in self.provenance_log if e == episode and t <= at})

    def provenance(self, row: int, at: float) -> set[str]:
        return {e for t, r, e in self.provenance_log if r == row and t <= at}

    def status_at(self, at: float) -> dict[int, str]:
        current: dict[int, int] = {}
        for t, r, c in self.status_log:  # stable sort: same-time changes keep log order
            if t > at:
                break
            current[r] = c
        return {r: self.statuses.names[c] for r, c in current.items()}

    def kind_of(self, row: int) -> str:
        kinds = self.trace.kinds
        if row >= len(kinds):
            raise ScenarioError(
                "this trace does not record memory kinds: an expectation with "
                "'kind:' cannot be checked"
            )
        return str(kinds[row])


def status_names() -> frozenset[str]:
    """Every status name of every registered policy (a typo like ``flying`` matches none)."""
    from memsim.engine.registry import specs

    names: set[str] = set()
    for s in specs():
        names.update(s.load().statuses.names)
    return frozenset(names)


def _known_status(fail: Any, path: str, value: str) -> None:
    known = status_names()
    if known and value not in known:
        raise fail(path, f"is no policy's status (known: {', '.join(sorted(known))})", value)


def check(
    trace: Trace,
    expectations: Iterable[Expectation],
    policy_id: str,
    *,
    horizon: float | None = None,
    query_times: Mapping[str, float] | None = None,
) -> list[str]:
    """Failed expectations for ``policy_id`` (those that apply to it), one message each.

    ``horizon`` is the default time of memory-state checks (default: the trace's last logged
    time, where its memories stand at the end); ``query_times`` overrides the time of
    queries (default: each query record's own).
    """
    view = TraceView(trace)
    if query_times:
        view.query_time.update(query_times)
    if horizon is None:
        horizon = max(
            [t for t, _, _ in view.status_log] + [t for t, _, _ in view.provenance_log] + [0.0]
        )
    failures = []
    for exp, problem in judge(view, expectations, policy_id, horizon):
        if problem:
            note = f" [{exp.note}]" if exp.note else ""
            failures.append(f"{policy_id}: {exp.where}: expected {exp.describe()}; {problem}{note}")
    return failures


def judge(
    view: TraceView, expectations: Iterable[Expectation], policy_id: str, horizon: float
) -> list[tuple[Expectation, str]]:
    """(expectation, problem) for each expectation that applies to ``policy_id``; the
    problem is "" when it holds."""
    return [(e, _check_one(view, e, horizon)) for e in expectations if e.applies_to(policy_id)]


def from_meta(stream: Stream) -> tuple[Expectation, ...]:
    """The expectations a scripted stream carries in ``meta["expect"]`` (as ``to_dict``
    wrote them), parsed again against the stream."""
    meta = dict(stream.meta)
    items = [
        {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
        for d in meta.get("expect", ())
    ]
    return parse_all(items, file=stream.name, stream=stream)


def verdicts(stream: Stream, trace: Trace, policy_id: str) -> list[Verdict]:
    """The stream's expectations for ``policy_id`` judged on ``trace`` (a scenario source's
    ``check``)."""
    exps = from_meta(stream)
    if not any(e.applies_to(policy_id) for e in exps):
        return []
    return [
        Verdict(f"expected {e.describe()}", e.where, not problem, problem, e.note)
        for e, problem in judge(TraceView(trace), exps, policy_id, stream.horizon)
    ]


def _check_one(view: TraceView, exp: Expectation, horizon: float) -> str:
    names = view.statuses
    if exp.check in QUERY_CHECKS:
        if exp.query not in view.rankings:
            return f"the trace has no ranking for query {exp.query!r}"
        at = view.query_time.get(exp.query, horizon)
        rows = view.rankings[exp.query]
        snap = view.snapshots.get(exp.query)
        held = (
            [exp.value in p for p in snap]
            if snap is not None and len(snap) == len(rows)
            else [exp.value in view.provenance(r, at) for r in rows]
        )
        if exp.check == "top1_from":
            return "" if held and held[0] else _got_rows(view, rows, at)
        if exp.check == "top1_not_from":
            return "" if not (held and held[0]) else _got_rows(view, rows, at)
        if exp.check == "in_top":
            return "" if any(held) else _got_rows(view, rows, at)
        return "" if not any(held) else _got_rows(view, rows, at)

    at = horizon if exp.after is None else exp.after
    status = view.status_at(at)

    def of_kind(rows: Iterable[int]) -> list[int]:
        return [r for r in rows if not exp.kind or view.kind_of(r) == exp.kind]

    if exp.check in FOOTPRINT_CHECKS:
        n = len(of_kind(r for r, s in status.items() if s in names.retrievable))
        ok = {
            "footprint": n == exp.value,
            "footprint_min": n >= exp.value,
            "footprint_max": n <= exp.value,
        }[exp.check]
        return "" if ok else f"got {n} retrievable memories"

    rows = of_kind(view.rows_holding(exp.memory_of, at))
    got = {r: status.get(r, "?") for r in rows}
    desc = f"memories holding it: {got}" if rows else "no memory holds it"
    if exp.check == "status":
        return "" if rows and all(s == exp.value for s in got.values()) else desc
    if exp.check == "any_status":
        return "" if any(s == exp.value for s in got.values()) else desc
    if exp.check == "status_in":
        return "" if rows and all(s in exp.value for s in got.values()) else desc
    if exp.check == "retrievable":
        any_r = any(s in names.retrievable for s in got.values())
        return "" if any_r == exp.value else desc
    if exp.check == "memories":
        return "" if len(rows) == exp.value else desc
    if exp.check == "memories_min":
        return "" if len(rows) >= exp.value else desc
    other = set(of_kind(view.rows_holding(exp.value, at)))
    shared = sorted(set(rows) & other)
    if exp.check == "same_memory_as":
        return "" if shared else f"{desc}; memories holding {exp.value}: {sorted(other)}"
    return "" if not shared else f"memories {shared} hold both"


def _got_rows(view: TraceView, rows: list[int], at: float) -> str:
    if not rows:
        return "the query returned nothing"
    shown = [f"#{r}<-{sorted(view.provenance(r, at))}" for r in rows[:3]]
    return f"returned {', '.join(shown)}{' ...' if len(rows) > 3 else ''}"
