"""Ground truth from the stream alone: current values, relevant and superseded episodes,
forget requests, answer queries, noise, evidence age, and speed on a large stream."""

import math

import numpy as np

from memsim.engine.events import Claim, Episode, Forget, Query, Stream
from memsim.engine.truth import GroundTruth


def ep(eid, t, *claims, text="..."):
    return Episode(eid, t, text, tuple(claims))


def c(key, value, noise=False):
    return Claim(key, value, noise=noise)


def stream():
    return Stream(
        (
            ep("e1", 0.0, c("owner.city", "Boston"), c("owner.name", "Dana")),
            ep("e2", 1.0, c("owner.city", "Boston")),
            ep("n1", 1.0, c("chat.weather", "rain", noise=True)),
            Query("q1", 2.0, "city?", keys=("owner.city",)),
            ep("e3", 3.0, c("owner.city", "Denver")),
            Query("q2", 3.0, "city and name?", keys=("owner.city", "owner.name")),
            ep("e4", 4.0, c("owner.city", "Boston")),  # moved back: Boston is current again
            Query("q3", 5.0, "city?", keys=("owner.city",)),
            Forget("f1", 6.0, "e4"),
            Query("q4", 6.0, "city?", keys=("owner.city",)),
            Query("q5", 7.0, "pet?", keys=("pets.dog",)),
            Query("q6", 7.0, "what happened?", answers=("e2", "e3")),
            ep("e5", 8.0, c("owner.name", "Dee")),
        ),
        name="t",
    )


def test_timeline_skips_noise():
    gt = GroundTruth(stream())
    assert gt.timeline("owner.city") == [
        (0.0, "Boston", "e1"),
        (1.0, "Boston", "e2"),
        (3.0, "Denver", "e3"),
        (4.0, "Boston", "e4"),
    ]
    assert gt.timeline("chat.weather") == []
    assert gt.noise_episodes == frozenset({"n1"})


def test_units_hold_episodes_asserting_the_current_value():
    gt = GroundTruth(stream())
    assert gt.units("q1") == {"owner.city": frozenset({"e1", "e2"})}
    assert gt.superseded("q1") == frozenset()
    # an episode at the query's own time that comes first in the stream counts
    assert gt.units("q2") == {"owner.city": frozenset({"e3"}), "owner.name": frozenset({"e1"})}
    # e1 asserts the old city but also the current name: relevant, hence not superseded
    assert gt.superseded("q2") == frozenset({"e2"})
    assert gt.units("q3") == {"owner.city": frozenset({"e1", "e2", "e4"})}
    assert gt.superseded("q3") == frozenset({"e3"})


def test_revised_keys_had_another_value_before_the_query():
    gt = GroundTruth(stream())
    assert gt.revised_keys("q1") == frozenset()  # Boston twice: no older value
    assert gt.revised_keys("q2") == frozenset({"owner.city"})  # Denver after Boston
    assert gt.revised_keys("q3") == frozenset({"owner.city"})  # back to Boston after Denver
    assert gt.revised_keys("q5") == frozenset()  # never asserted
    assert gt.revised_keys("q6") == frozenset()  # an answer query asks no key


def test_forgotten_episodes_are_no_longer_relevant():
    gt = GroundTruth(stream())
    # e4 forgotten before q4: Boston is still the current value, e1 and e2 remain relevant
    assert gt.units("q4") == {"owner.city": frozenset({"e1", "e2"})}
    # but q3 (before the forget) still counts e4
    assert "e4" in gt.relevant("q3")


def test_unasked_or_unknown_keys_give_no_unit():
    gt = GroundTruth(stream())
    assert gt.units("q5") == {}
    assert math.isnan(gt.evidence_age("q5"))


def test_answer_queries_one_unit_per_episode():
    gt = GroundTruth(stream())
    assert gt.units("q6") == {"e2": frozenset({"e2"}), "e3": frozenset({"e3"})}
    assert gt.evidence_age("q6") == 7.0 - 3.0


def test_evidence_age():
    gt = GroundTruth(stream())
    assert gt.evidence_age("q1") == 1.0
    assert gt.evidence_age("q3") == 1.0
    assert gt.evidence_age("q4") == 5.0


def brute_units(events, qid):
    """Straight from the definition, by scanning the stream (slow, obviously right)."""
    qpos = next(i for i, e in enumerate(events) if e.id == qid)
    q = events[qpos]
    forgotten = {e.episode_id for e in events[:qpos] if isinstance(e, Forget)}
    units, superseded = {}, set()
    for key in q.keys:
        history = [
            (e.id, cl.value)
            for e in events[:qpos]
            if isinstance(e, Episode)
            for cl in e.claims
            if cl.key == key and not cl.noise
        ]
        if not history:
            continue
        current = history[-1][1]
        rel = {e for e, v in history if v == current and e not in forgotten}
        if rel:
            units[key] = frozenset(rel)
        superseded |= {e for e, v in history if v != current}
    relevant = set().union(*units.values()) if units else set()
    return units, frozenset(superseded - relevant)


def brute_revised_keys(events, qid):
    """Asked keys whose history before the query holds a value other than the last one."""
    qpos = next(i for i, e in enumerate(events) if e.id == qid)
    revised = set()
    for key in events[qpos].keys:
        values = [
            cl.value
            for e in events[:qpos]
            if isinstance(e, Episode)
            for cl in e.claims
            if cl.key == key and not cl.noise
        ]
        if values and any(v != values[-1] for v in values):
            revised.add(key)
    return frozenset(revised)


def test_matches_brute_force_on_a_random_stream():
    rng = np.random.default_rng(7)
    events, t = [], 0.0
    episodes = []
    for i in range(400):
        t += float(rng.choice([0.0, 0.5, 1.0]))
        r = rng.random()
        if r < 0.7 or not episodes:
            claims = tuple(
                Claim(
                    f"t{rng.integers(3)}.k{rng.integers(4)}",
                    f"v{rng.integers(3)}",
                    noise=bool(rng.random() < 0.1),
                )
                for _ in range(rng.integers(1, 3))
            )
            events.append(Episode(f"e{i}", t, "x", claims))
            episodes.append(f"e{i}")
        elif r < 0.8:
            events.append(Forget(f"f{i}", t, episodes[rng.integers(len(episodes))]))
        else:
            keys = tuple(sorted({f"t{rng.integers(3)}.k{rng.integers(4)}" for _ in range(2)}))
            events.append(Query(f"q{i}", t, "?", keys=keys))
    s = Stream(tuple(events))
    gt = GroundTruth(s)
    assert len(s.queries) > 40
    for q in s.queries:
        units, superseded = brute_units(s.events, q.id)
        assert gt.units(q.id) == units, q.id
        assert gt.superseded(q.id) == superseded, q.id
        assert gt.revised_keys(q.id) == brute_revised_keys(s.events, q.id), q.id
        view = gt.superseded_view(q.id)
        assert {e for e in episodes if e in view} == superseded, q.id
        rel = set().union(*units.values()) if units else set()
        newest = max((e.time for e in s.episodes if e.id in rel), default=math.nan)
        assert gt.evidence_age(q.id) == q.time - newest or (
            math.isnan(newest) and math.isnan(gt.evidence_age(q.id))
        )
