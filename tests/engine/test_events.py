"""Event and Stream validation: every mistake raises StreamError naming the event and value."""

import math

import pytest

from memsim.engine.errors import MemsimError, StreamError
from memsim.engine.events import (
    Claim,
    Episode,
    Forget,
    Protect,
    Query,
    Recover,
    Stream,
    make_stream,
    sorted_events,
)


def ep(eid, t, *claims):
    return Episode(eid, t, "text", tuple(claims))


def test_a_valid_stream_and_its_batches():
    s = Stream(
        (
            ep("e1", 0.0),
            ep("e2", 0.0),
            Query("q1", 0.0, "?", keys=("a.b",)),
            ep("e3", 1.0),
            Forget("f1", 2.0, "e1"),
        ),
        name="ok",
        horizon=5.0,
    )
    assert len(s) == 5 and s.horizon == 5.0
    assert [e.id for e in s.episodes] == ["e1", "e2", "e3"] and [q.id for q in s.queries] == ["q1"]
    assert [(t, kind.__name__, [e.id for e in evs]) for t, kind, evs in s.batches()] == [
        (0.0, "Episode", ["e1", "e2"]),
        (0.0, "Query", ["q1"]),
        (1.0, "Episode", ["e3"]),
        (2.0, "Forget", ["f1"]),
    ]


def test_horizon_is_raised_to_the_last_event():
    assert Stream((ep("e1", 3.5),)).horizon == 3.5


def test_out_of_order_names_the_event_and_times():
    with pytest.raises(
        StreamError, match=r"event #1 \(Episode 'e2'\) at time 1.0 comes after an event at time 2.0"
    ):
        Stream((ep("e1", 2.0), ep("e2", 1.0)), name="s")


def test_duplicate_ids():
    with pytest.raises(StreamError, match="id 'x' is used twice"):
        Stream((ep("x", 0.0), Query("x", 1.0, "?", keys=("a",))))


@pytest.mark.parametrize(
    "event, words",
    [
        (Forget("f1", 1.0, "nope"), "forget 'f1' names episode 'nope'"),
        (Protect("p1", 1.0, "nope"), "protect 'p1' names episode 'nope'"),
        (Recover("r1", 1.0, "nope"), "recover 'r1' names episode 'nope'"),
        (Query("q1", 1.0, "?", answers=("nope",)), "query 'q1' names answering episode 'nope'"),
    ],
)
def test_bad_references(event, words):
    with pytest.raises(StreamError, match=words):
        Stream((ep("e1", 0.0), event))


def test_reference_to_a_later_episode_is_bad():
    with pytest.raises(StreamError, match="not an earlier episode"):
        Stream((Forget("f1", 0.0, "e1"), ep("e1", 0.0)))


@pytest.mark.parametrize("t", [math.nan, -1.0, math.inf, "3", True, None])
def test_bad_times(t):
    with pytest.raises(StreamError, match=r"episode 'e1': time must be"):
        Episode("e1", t, "text")
    with pytest.raises(StreamError, match=r"query 'q1': time must be"):
        Query("q1", t, "?", keys=("a",))
    with pytest.raises(StreamError, match=r"forget 'f1': time must be"):
        Forget("f1", t, "e1")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"key": 3}, "key must be a string, got 3"),
        ({"key": "a", "value": 5}, "value must be a string, got 5"),
        ({"key": "a", "category": ""}, "category must be a non-empty string"),
        ({"key": "a", "importance": 1.5}, r"importance must be a number in \[0, 1\], got 1.5"),
        ({"key": "a", "confidence": -0.1}, r"confidence must be a number in \[0, 1\], got -0.1"),
        ({"key": "a", "importance": math.nan}, "importance must be a number"),
        ({"key": "a", "attrs": (("x",),)}, "attrs must be a tuple of"),
        ({"key": "a", "attrs": [("x", 1)]}, "attrs must be a tuple of"),
    ],
)
def test_bad_claim_fields(kwargs, words):
    with pytest.raises(StreamError, match=words):
        Claim(**kwargs)


def test_bad_episode_and_query_fields():
    with pytest.raises(StreamError, match="episode id must be a non-empty string"):
        Episode("", 0.0, "x")
    with pytest.raises(StreamError, match="claims must be a tuple of Claim"):
        Episode("e1", 0.0, "x", [Claim("a")])
    with pytest.raises(StreamError, match=r"k must be an integer in \[1, 1000000\], got 0"):
        Query("q1", 0.0, "?", keys=("a",), k=0)
    with pytest.raises(
        StreamError, match=r"k must be an integer in \[1, 1000000\], got 1" + "0" * 30
    ):
        Query("q1", 0.0, "?", keys=("a",), k=10**30)
    with pytest.raises(StreamError, match="names neither fact keys nor answering episodes"):
        Query("q1", 0.0, "?")
    with pytest.raises(StreamError, match="event #0 is not an event"):
        Stream(("hello",))


def test_stream_errors_are_memsim_errors():
    assert issubclass(StreamError, MemsimError)


def test_claim_topic_and_attrs():
    c = Claim("owner.home.city", "Boston", attrs=(("ttl_policy", "keep_forever"),))
    assert c.topic == "owner.home" and Claim("name").topic == "name"
    assert c.attr("ttl_policy") == "keep_forever" and c.attr("missing", 7) == 7


def test_events_are_frozen():
    e = ep("e1", 0.0)
    with pytest.raises(AttributeError):
        e.text = "changed"


def test_helpers_sort_and_build():
    evs = sorted_events([ep("b", 2.0), ep("a", 1.0), ep("c", 1.0)])
    assert [e.id for e in evs] == ["a", "c", "b"]  # stable
    s = make_stream(evs, name="m", horizon=9.0)
    assert s.name == "m" and s.horizon == 9.0
