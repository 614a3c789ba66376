"""Ground truth, computed from the stream alone (episodes' claims and queries), never
from a policy.

For a key query, each asked key is a unit; its relevant episodes are those before the
query (in stream order) asserting the key's *current* value, i.e. the value of the latest
non-noise assertion before the query. For an answer query (real data) each answering
episode is its own unit. Episodes the user asked to forget before the query are no longer
relevant (a unit left with no relevant episode is dropped). Superseded episodes assert only
older values of asked keys.

Timelines are built once per stream and per-key states cached by prefix length, so a
100k-episode / 10k-query stream is evaluated in seconds; per-query answers are cached.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass

from .errors import UnknownIdError
from .events import Episode, Forget, Query, Stream


@dataclass(frozen=True)
class Assertion:
    position: int  # index of the episode in the stream's events
    time: float
    value: str
    episode: str


@dataclass(frozen=True)
class _Answer:
    units: dict[str, frozenset[str]]
    relevant: frozenset[str]
    current: dict[str, str]  # asked key -> its current value at the query
    position: int  # the query's position in the stream
    evidence_age: float


class SupersededView:
    """Membership test for a query's superseded episodes without building the set: an
    episode is superseded when it comes before the query, is not relevant, and asserts an
    asked key with a value other than the current one."""

    def __init__(self, truth: GroundTruth, answer: _Answer) -> None:
        self._truth, self._answer = truth, answer

    def __contains__(self, episode: object) -> bool:
        a = self._answer
        pos = self._truth._position.get(episode)  # type: ignore[call-overload]  # any object: a miss
        if pos is None or pos >= a.position or episode in a.relevant:
            return False
        return any(k in a.current and v != a.current[k] for k, v in self._truth._asserts[pos])


class GroundTruth:
    """What is true and relevant at each query of ``stream``. See the module docstring."""

    def __init__(self, stream: Stream) -> None:
        self.stream_name = stream.name
        self.timelines: dict[str, list[Assertion]] = {}
        self._episode_at: dict[int, Episode] = {}
        self._position: dict[str, int] = {}
        self._asserts: dict[int, tuple[tuple[str, str], ...]] = {}  # position -> (key, value)s
        self._forgot_at: dict[str, int] = {}  # episode -> first Forget position
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
                said = tuple((c.key, c.value) for c in claims if not c.noise and c.key)
                self._asserts[pos] = said
                for key, value in said:  # an episode naming a key twice: its last value is current
                    self.timelines.setdefault(key, []).append(
                        Assertion(pos, float(ev.time), value, ev.id)
                    )
            elif isinstance(ev, Query):
                self.queries[ev.id] = ev
                self._query_pos[ev.id] = pos
            elif isinstance(ev, Forget):
                self._forgot_at.setdefault(ev.episode_id, pos)
        self.noise_episodes: frozenset[str] = frozenset(noise)
        self._timeline_pos = {k: [a.position for a in tl] for k, tl in self.timelines.items()}
        # (key, value) -> (timeline indices, episodes) of the assertions of that value
        self._by_value: dict[tuple[str, str], tuple[list[int], list[str]]] = {}
        for key, tl in self.timelines.items():
            for i, a in enumerate(tl):
                idx, eps = self._by_value.setdefault((key, a.value), ([], []))
                idx.append(i)
                eps.append(a.episode)
        self._time = {ev.id: float(ev.time) for ev in self._episode_at.values()}
        self._cache: dict[str, _Answer] = {}
        self._key_cache: dict[tuple[str, int], frozenset[str]] = {}

    # -- lookups --------------------------------------------------------------
    def query(self, query_id: str) -> Query:
        try:
            return self.queries[query_id]
        except KeyError:
            raise UnknownIdError(
                f"query {query_id!r} is not in stream {self.stream_name!r}"
            ) from None

    def _qid(self, query: Query | str) -> str:
        return query if isinstance(query, str) else query.id

    def _prefix(self, key: str, qpos: int) -> int:
        """How many assertions of ``key`` come before stream position ``qpos``."""
        tl_pos = self._timeline_pos.get(key)
        return bisect.bisect_left(tl_pos, qpos) if tl_pos else 0

    def _forgotten(self, episode: str, qpos: int) -> bool:
        f = self._forgot_at.get(episode)
        return f is not None and f < qpos

    def _current_episodes(self, key: str, m: int) -> frozenset[str]:
        """Episodes among the first ``m`` assertions of ``key`` asserting its value at m
        (cached: a key is asked again and again between two mentions)."""
        got = self._key_cache.get((key, m))
        if got is None:
            idx, eps = self._by_value[(key, self.timelines[key][m - 1].value)]
            got = self._key_cache[(key, m)] = frozenset(eps[: bisect.bisect_left(idx, m)])
        return got

    def _compute(self, qid: str) -> _Answer:
        q = self.query(qid)
        qpos = self._query_pos[qid]
        units: dict[str, frozenset[str]] = {}
        current: dict[str, str] = {}
        for key in q.keys:
            m = self._prefix(key, qpos)
            if m == 0:
                continue
            current[key] = self.timelines[key][m - 1].value
            rel = self._current_episodes(key, m)
            if self._forgot_at and any(self._forgotten(e, qpos) for e in rel):
                rel = frozenset(e for e in rel if not self._forgotten(e, qpos))
            if rel:
                units[key] = rel
        for a in q.answers:
            if a not in units and not self._forgotten(a, qpos):
                units[a] = frozenset((a,))
        relevant = frozenset().union(*units.values()) if units else frozenset()
        age = float(q.time - max(self._time[e] for e in relevant)) if relevant else float("nan")
        return _Answer(units, relevant, current, qpos, age)

    def _get(self, query: Query | str) -> _Answer:
        qid = self._qid(query)
        got = self._cache.get(qid)
        if got is None:
            got = self._cache[qid] = self._compute(qid)
        return got

    # -- public ---------------------------------------------------------------
    def units(self, query: Query | str) -> dict[str, frozenset[str]]:
        """unit -> relevant episode ids (only units with at least one relevant episode)."""
        return dict(self._get(query).units)

    def relevant(self, query: Query | str) -> frozenset[str]:
        """Union of the query's units."""
        return self._get(query).relevant

    def superseded(self, query: Query | str) -> frozenset[str]:
        """Episodes before the query asserting only older values of asked keys (built by a
        scan of the asked keys' timelines; metrics use :meth:`superseded_view`)."""
        a = self._get(query)
        eps = {
            t.episode
            for key, value in a.current.items()
            for t in self.timelines[key][: self._prefix(key, a.position)]
            if t.value != value
        }
        return frozenset(eps - a.relevant)

    def current_values(self, query: Query | str) -> dict[str, str]:
        """Asked key -> its current value at the query (keys asserted before it only)."""
        return dict(self._get(query).current)

    def revised_keys(self, query: Query | str) -> frozenset[str]:
        """Asked keys with a current value that had another value asserted before the query
        (the keys a stale version can exist for); a bisect per key, no scan."""
        a = self._get(query)
        revised = set()
        for key, value in a.current.items():
            m = self._prefix(key, a.position)
            idx, _ = self._by_value[(key, value)]
            if bisect.bisect_left(idx, m) < m:  # fewer current-value assertions than all
                revised.add(key)
        return frozenset(revised)

    def superseded_view(self, query: Query | str) -> SupersededView:
        """Cheap ``episode in view`` test equal to ``episode in superseded(query)``."""
        return SupersededView(self, self._get(query))

    def evidence_age(self, query: Query | str) -> float:
        """Query time minus the time of the newest relevant episode (NaN if none)."""
        return self._get(query).evidence_age

    def episode_time(self, episode_id: str) -> float:
        return self._time[episode_id]

    @property
    def episode_ids(self) -> list[str]:
        return [self._episode_at[p].id for p in sorted(self._episode_at)]

    def timeline(self, key: str) -> list[tuple[float, str, str]]:
        """(time, value, episode id) of every non-noise assertion of ``key``, in order."""
        return [(a.time, a.value, a.episode) for a in self.timelines.get(key, [])]


# Ground truths kept for the last streams asked for in this process: every run of a stream
# (each policy, its clairvoyant bound) scores against the same truth, a pure function of
# the stream whose caches hold answers; the stream is kept too, so its id stays its own.
SHARED_TRUTHS = 8
_BUILT: OrderedDict[int, tuple[Stream, GroundTruth]] = OrderedDict()


def of(stream: Stream) -> GroundTruth:
    """The ground truth of ``stream``, built once while the stream is among the last
    ``SHARED_TRUTHS`` asked for."""
    hit = _BUILT.get(id(stream))
    if hit is not None and hit[0] is stream:
        _BUILT.move_to_end(id(stream))
        return hit[1]
    gt = GroundTruth(stream)
    _BUILT[id(stream)] = (stream, gt)
    if len(_BUILT) > SHARED_TRUTHS:
        _BUILT.popitem(last=False)
    return gt
