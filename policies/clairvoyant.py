"""The clairvoyant reference: the best retention of raw memories at a footprint budget.

It is the one policy allowed to read the stream's future queries and ground truth (its
spec declares ``clairvoyant=True``; the runner calls ``foresee`` only for such a spec).
Every episode that some later query needs becomes one raw memory (provenance: that
episode); an episode no query ever needs is never kept. While more than the budget are
retrievable it evicts by Belady's rule: first what is never needed again, then what is
needed furthest ahead (ties: the older episode). At a query it returns the relevant
retrievable memories first, one per unit before a second of the same unit, newest first.

What it bounds: recall of a policy that keeps at most that many raw episode memories at
each moment. It is Belady's rule, optimal for single-use needs; a policy that merges
several episodes into one memory (a consolidation covering many units per row) can exceed
it at the same footprint.

``budget`` is a fixed number of memories; ``foresee(..., footprint=series)`` instead gives
a budget per time (another run's retrievable footprint: the ``matched`` mode), the series'
latest value at or before each moment.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from memsim.engine.errors import ParamError, StreamError
from memsim.engine.events import Episode, Forget, Query, Stream
from memsim.engine.params import Params, param
from memsim.engine.policy import Outcome, Policy, Ranking
from memsim.engine.store import Statuses

NEVER = math.inf


@dataclass(frozen=True)
class ClairvoyantParams(Params):
    budget: float = param(
        1e9, lo=0.0, doc="reference: most retrievable raw memories (matched mode: per time)"
    )


class Clairvoyant(Policy):
    """Belady retention of raw episode memories with foreknowledge of every query."""

    Params = ClairvoyantParams
    # the frontier's "clairvoyant at budget B" reference: budget=B, nothing else changed
    at_budget: ClassVar[dict[str, Any]] = {}
    statuses = Statuses(
        ("active", "evicted", "forgotten"),
        terminal=frozenset({"evicted", "forgotten"}),
        retrievable=frozenset({"active"}),
    )

    def setup(self) -> None:
        if not (isinstance(self.params.budget, (int, float)) and self.params.budget > 0):
            raise ParamError(
                f"clairvoyant: budget must be a positive number, got {self.params.budget!r}"
            )
        self._needs: dict[str, list[int]] = {}  # episode -> positions of the queries needing it
        self._units: dict[str, dict[str, frozenset[str]]] = {}
        self._qpos: dict[str, int] = {}
        self._row: dict[str, int] = {}
        self._pos = -1  # position of the latest event seen
        self._episode_pos: dict[str, int] = {}
        self._series: tuple[np.ndarray, np.ndarray] | None = None
        self._foreseen = False

    # -- foreknowledge (only for a spec declaring clairvoyant=True) -------------------------
    def foresee(self, stream: Stream, footprint: Sequence[tuple[float, int]] | None = None) -> None:
        from memsim.engine import truth

        gt = truth.of(stream)
        if not gt.queries:
            raise StreamError(f"clairvoyant: stream {stream.name!r} has no queries to foresee")
        for pos, ev in enumerate(stream.events):
            if isinstance(ev, Episode):
                self._episode_pos[ev.id] = pos
            elif isinstance(ev, Query):
                units = gt.units(ev)
                self._units[ev.id] = units
                self._qpos[ev.id] = pos
                for eps in units.values():
                    for e in eps:
                        self._needs.setdefault(e, []).append(pos)
        for lst in self._needs.values():
            lst.sort()
        if footprint is not None:
            times = np.array([float(t) for t, _ in footprint], dtype=np.float64)
            sizes = np.array([float(n) for _, n in footprint], dtype=np.float64)
            bad = ~np.isfinite(times) | ~np.isfinite(sizes) | (sizes < 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise ParamError(
                    f"clairvoyant: footprint series entry {i} ({times[i]}, {sizes[i]}) is not "
                    "a finite time with a number of memories >= 0"
                )
            first = min((float(e.time) for e in stream.events), default=0.0)
            last = max((float(e.time) for e in stream.events), default=0.0)
            if not len(times) or times[0] > first or times[-1] < last:
                span = f"[{times[0]}, {times[-1]}]" if len(times) else "empty"
                raise ParamError(
                    f"clairvoyant: footprint series {span} does not cover the run "
                    f"[{first}, {last}] of {stream.name!r}"
                )
            if np.any(np.diff(times) < 0):
                raise ParamError("clairvoyant: footprint series times must not decrease")
            self._series = (times, sizes)
        self._foreseen = True

    def _budget(self, now: float) -> float:
        if self._series is None:
            return float(self.params.budget)
        times, sizes = self._series
        i = int(np.searchsorted(times, now, side="right")) - 1
        # the series' value at the latest sample at or before now (same-time: the last one)
        return float(sizes[max(i, 0)])

    def _next_need(self, episode: str, after: int) -> float:
        lst = self._needs.get(episode, ())
        i = bisect.bisect_right(lst, after)
        return float(lst[i]) if i < len(lst) else NEVER

    def _live(self) -> np.ndarray:
        return self.store["status"] == self.statuses.code("active")

    def _enforce(self, now: float, cause: str) -> list[Outcome]:
        live = np.flatnonzero(self._live())
        excess = len(live) - int(math.floor(self._budget(now)))
        if excess <= 0:
            return []
        order = sorted(
            live.tolist(),
            key=lambda r: (
                -self._next_need(next(iter(self.store.provenance[r])), self._pos),
                self._episode_pos[next(iter(self.store.provenance[r]))],
            ),
        )
        victims = order[:excess]
        self.store.set_status(victims, "evicted", now)
        return [Outcome(cause, "evict", int(r), "Belady: needed furthest ahead") for r in victims]

    # -- the Policy interface ------------------------------------------------------------
    def ingest(self, episodes: Sequence[Episode], now: float) -> list[Outcome]:
        if not self._foreseen:
            raise StreamError("clairvoyant: run it through the runner, which calls foresee()")
        out: list[Outcome] = []
        keep: list[Episode] = []
        for ep in episodes:
            self._pos = max(self._pos, self._episode_pos[ep.id])
            if self._next_need(ep.id, self._pos) == NEVER:
                out.append(Outcome(ep.id, "drop", -1, "no later query needs it"))
            else:
                keep.append(ep)
        if keep:
            unit = np.zeros((len(keep), self.store.dim), dtype=np.float32)
            unit[:, 0] = 1.0  # it ranks by foreknowledge, not by cosine: any unit vector
            rows = self.store.add(
                now,
                unit,
                texts=[ep.text for ep in keep],
                claims=[None] * len(keep),
                provenance=[(ep.id,) for ep in keep],
            )
            for ep, r in zip(keep, rows.tolist()):
                self._row[ep.id] = int(r)
                out.append(Outcome(ep.id, "create", int(r)))
        out.extend(self._enforce(now, episodes[-1].id))
        return out

    def recall(self, queries: Sequence[Query], now: float) -> list[Ranking]:
        if queries:  # a budget that shrank since the last ingest applies before answering
            self._pos = max(self._pos, min(self._qpos[q.id] for q in queries) - 1)
            self._enforce(now, queries[0].id)
        live = self._live()
        out = []
        for q in queries:
            self._pos = max(self._pos, self._qpos[q.id])
            per_unit = []
            for unit in sorted(self._units.get(q.id, {})):
                eps = self._units[q.id][unit]
                rows = sorted(
                    (self._row[e] for e in eps if e in self._row and live[self._row[e]]),
                    reverse=True,
                )
                per_unit.append(rows)
            ids: list[int] = []
            seen: set[int] = set()
            depth = 0
            while len(ids) < q.k and any(depth < len(r) for r in per_unit):
                for rows in per_unit:
                    if depth < len(rows) and rows[depth] not in seen and len(ids) < q.k:
                        ids.append(rows[depth])
                        seen.add(rows[depth])
                depth += 1
            arr = np.asarray(ids, dtype=np.int64)
            out.append(Ranking(arr, np.linspace(1.0, 0.5, len(arr)) if len(arr) else np.zeros(0)))
        return out

    def strength(self, now: float) -> np.ndarray:
        return self._live().astype(np.float64)

    def forget(self, events: Sequence[Forget], now: float) -> list[Outcome]:
        return self.mark_memories_of(
            events, now, status="forgotten", action="forget", among=self.statuses.retrievable
        )
