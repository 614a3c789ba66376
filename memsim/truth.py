"""Ground truth, computed from the stream alone (episodes' claims and queries), never
from a policy.

For a key query, each asked key is a unit; its relevant episodes are those before the
query (in stream order) asserting the key's *current* value, i.e. the value of the latest
non-noise assertion before the query. For an answer query (real data) each answering
episode is its own unit. Episodes the user asked to forget before the query are no longer
relevant (a unit left with no relevant episode is dropped). Superseded episodes assert only
older values of asked keys.

Everything is precomputed once per stream (positions per (key, value), per key), so a
100k-episode / 10k-query stream is evaluated in seconds; per-query answers are cached.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from .events import Episode, Forget, Query, Stream
from .errors import UnknownIdError


@dataclass(frozen=True)
class Assertion:
    position: int   # index of the episode in the stream's events
    time: float
    value: str
    episode: str


class GroundTruth:
    """What is true and relevant at each query of ``stream``. See the module docstring."""

    def __init__(self, stream: Stream) -> None:
        self.stream_name = stream.name
        self.timelines: dict[str, list[Assertion]] = {}
        self._by_value: dict[tuple[str, str], list[int]] = {}   # (key, value) -> positions
        self._episode_at: dict[int, Episode] = {}
        self._position: dict[str, int] = {}
        self._forgot_at: dict[str, int] = {}                    # episode -> first Forget position
        self.queries: dict[str, Query] = {}
        self._query_pos: dict[str, int] = {}
        noise: list[str] = []
        for pos, ev in enumerate(stream.events):
            if isinstance(ev, Episode):
                self._episode_at[pos] = ev
                self._position[ev.id] = pos
                claims = ev.claims
                if claims and all(c.noise for c in claims):
                    noise.append(ev.id)
                said: set[tuple[str, str]] = set()
                for c in claims:   # an episode naming a key twice: its last value is current
                    if c.noise or not c.key:
                        continue
                    self.timelines.setdefault(c.key, []).append(Assertion(pos, float(ev.time), c.value, ev.id))
                    if (c.key, c.value) not in said:
                        said.add((c.key, c.value))
                        self._by_value.setdefault((c.key, c.value), []).append(pos)
            elif isinstance(ev, Query):
                self.queries[ev.id] = ev
                self._query_pos[ev.id] = pos
            elif isinstance(ev, Forget):
                self._forgot_at.setdefault(ev.episode_id, pos)
        self.noise_episodes: frozenset[str] = frozenset(noise)
        self._timeline_pos = {k: [a.position for a in tl] for k, tl in self.timelines.items()}
        self._cache: dict[str, tuple[dict[str, frozenset[str]], frozenset[str]]] = {}

    # -- lookups --------------------------------------------------------------
    def query(self, query_id: str) -> Query:
        try:
            return self.queries[query_id]
        except KeyError:
            raise UnknownIdError(f"query {query_id!r} is not in stream {self.stream_name!r}") from None

    def _qid(self, query: Query | str) -> str:
        return query if isinstance(query, str) else query.id

    def current_value(self, key: str, query: Query | str) -> str | None:
        """The value of ``key`` asserted last before the query (None if never asserted)."""
        pos = self._query_pos[self._qid(query)]
        tl_pos = self._timeline_pos.get(key)
        if not tl_pos:
            return None
        i = bisect.bisect_left(tl_pos, pos) - 1
        return self.timelines[key][i].value if i >= 0 else None

    def _forgotten(self, episode: str, qpos: int) -> bool:
        f = self._forgot_at.get(episode)
        return f is not None and f < qpos

    def _compute(self, qid: str) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
        q = self.query(qid)
        qpos = self._query_pos[qid]
        units: dict[str, frozenset[str]] = {}
        superseded: set[str] = set()
        for key in q.keys:
            value = self.current_value(key, qid)
            if value is None:
                continue
            positions = self._by_value[(key, value)]
            n = bisect.bisect_left(positions, qpos)
            rel = frozenset(e for e in (self._episode_at[p].id for p in positions[:n])
                            if not self._forgotten(e, qpos))
            if rel:
                units[key] = rel
            tl = self.timelines[key]
            m = bisect.bisect_left(self._timeline_pos[key], qpos)
            superseded.update(a.episode for a in tl[:m] if a.value != value)
        for a in q.answers:
            if a not in units and not self._forgotten(a, qpos):
                units[a] = frozenset((a,))
        relevant = set().union(*units.values()) if units else set()
        return units, frozenset(superseded - relevant)

    def _get(self, query: Query | str) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
        qid = self._qid(query)
        got = self._cache.get(qid)
        if got is None:
            got = self._cache[qid] = self._compute(qid)
        return got

    # -- public ---------------------------------------------------------------
    def units(self, query: Query | str) -> dict[str, frozenset[str]]:
        """unit -> relevant episode ids (only units with at least one relevant episode)."""
        return dict(self._get(query)[0])

    def relevant(self, query: Query | str) -> frozenset[str]:
        units = self._get(query)[0]
        return frozenset().union(*units.values()) if units else frozenset()

    def superseded(self, query: Query | str) -> frozenset[str]:
        """Episodes before the query asserting only older values of asked keys."""
        return self._get(query)[1]

    def evidence_age(self, query: Query | str) -> float:
        """Query time minus the time of the newest relevant episode (NaN if none)."""
        q = self.query(self._qid(query))
        rel = self.relevant(q)
        if not rel:
            return float("nan")
        newest = max(self._episode_at[self._position[e]].time for e in rel)
        return float(q.time - newest)

    def episode_time(self, episode_id: str) -> float:
        return float(self._episode_at[self._position[episode_id]].time)

    @property
    def episode_ids(self) -> list[str]:
        return [self._episode_at[p].id for p in sorted(self._episode_at)]

    def timeline(self, key: str) -> list[tuple[float, str, str]]:
        """(time, value, episode id) of every non-noise assertion of ``key``, in order."""
        return [(a.time, a.value, a.episode) for a in self.timelines.get(key, [])]
