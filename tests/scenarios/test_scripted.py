"""Scripted scenarios: every shipped file against every registered policy, plus the loader's
schema (bad input names file, path and value) and the expectation checker itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from memsim.engine import registry, runner
from memsim.engine.errors import ScenarioError, UnknownIdError
from memsim.engine.events import Episode, Query
from memsim.engine.mockllm import MockLLM
from scenarios import expect, scripted

NAMES = scripted.names()
POLICIES = [s.id for s in registry.specs()]


@pytest.fixture(scope="module")
def loaded():
    return {n: scripted.load(n) for n in NAMES}


def _trace(policy_id: str, stream):
    policy = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    return runner.run(policy, stream)


# ---------------------------------------------------------------- every scenario x policy


def test_the_seed_situations_are_all_shipped():
    for name in (
        "name-preference",
        "reinforced-decay",
        "contradiction-weak",
        "contradiction-strong",
        "access-patterns",
        "candidates",
        "ttl-policies",
        "protect-forget-recover",
        "engram-consolidation",
        "duplicates",
        "conversation-consolidation",
    ):
        assert name in NAMES


@pytest.mark.parametrize("policy_id", POLICIES)
@pytest.mark.parametrize("name", NAMES)
def test_scenario_expectations(name, policy_id, loaded):
    """Runs without error; every expectation stated for this policy (or "*") holds."""
    sc = loaded[name]
    trace = _trace(policy_id, sc.stream)
    failures = expect.check(trace, sc.expectations, policy_id)
    assert not failures, "\n".join(failures)
    assert len(trace.queries) == len(sc.stream.queries)


def test_expectations_for_unregistered_policies_are_reported(loaded):
    """Every policy an expectation names is registered: an expectation for an unknown id (a
    typo, a removed policy) would otherwise never be checked."""
    unknown = sorted(
        {
            p
            for sc in loaded.values()
            for e in sc.expectations
            for p in e.policies
            if p != "*" and p not in POLICIES
        }
    )
    assert unknown == [], f"expectations name unregistered policies: {', '.join(unknown)}"


def test_except_for_unbinds_only_the_named_policies(loaded):
    """An expectation for "*" with except_for binds every policy but those named, and the
    names are registered ids."""
    exps = [e for sc in loaded.values() for e in sc.expectations if e.except_for]
    assert exps and all(e.policies == ("*",) and e.note for e in exps)
    for e in exps:
        assert set(e.except_for) <= set(POLICIES)
        assert all(not e.applies_to(p) for p in e.except_for)
        assert e.applies_to("keep-all") and e.applies_to("memorybank")


def test_every_seed_policy_has_expectations(loaded):
    named = {p for sc in loaded.values() for e in sc.expectations for p in e.policies}
    for pid in ("pai", "izzie", "kernle", "engram", "cosmo", "keep-all"):
        assert pid in named


# ---------------------------------------------------------------- the checker can fail


def test_wrong_expectations_fail(loaded):
    """The checker is not vacuous: inverting stated expectations makes them fail."""
    sc = loaded["contradiction-weak"]
    trace = _trace("pai", sc.stream)
    ep = {e.id: e for e in sc.stream.episodes}
    q = {e.id: e for e in sc.stream.queries}
    kw = dict(file="x.yaml", episodes=ep, queries=q, horizon=sc.stream.horizon)
    wrong = [
        {"policy": "pai", "after": 10, "memory_of": "e1", "status": "active"},
        {"policy": "pai", "after": 10, "memory_of": "e1", "any_status": "pruned"},
        {"policy": "pai", "after": 10, "memory_of": "e1", "retrievable": True},
        {"policy": "pai", "memory_of": "e2", "same_memory_as": "e1"},
        {"policy": "pai", "memory_of": "e1", "memories": 2},
        {"policy": "pai", "query": "q1", "top1_from": "e1"},
        {"policy": "pai", "query": "q1", "in_top": "e1"},
        {"policy": "pai", "query": "q1", "not_in_top": "e2"},
        {"policy": "pai", "footprint": 2},
        {"policy": "pai", "after": 5, "footprint_max": 0},
    ]
    exps = [expect.parse_one(w, f"expect[{i}]", **kw) for i, w in enumerate(wrong)]
    failures = expect.check(trace, exps, "pai")
    assert len(failures) == len(wrong), failures
    right = [
        {"policy": "pai", "after": 10, "footprint": 1},
        {"policy": "pai", "after": 5, "memory_of": "e1", "status_in": ["active", "pruned"]},
        {"policy": "pai", "query": "q1", "top1_not_from": "e1"},
    ]
    exps = [expect.parse_one(w, f"expect[{i}]", **kw) for i, w in enumerate(right)]
    assert expect.check(trace, exps, "pai") == []
    # not applying to another policy
    assert expect.check(trace, exps, "izzie") == []


def test_failure_message_names_file_check_and_what_happened(loaded):
    sc = loaded["contradiction-weak"]
    trace = _trace("keep-all", sc.stream)
    ep = {e.id: e for e in sc.stream.episodes}
    e = expect.parse_one(
        {"policy": "*", "after": 10, "memory_of": "e1", "status": "invalidated", "note": "000 §1"},
        "expect[0]",
        file="f.yaml",
        episodes=ep,
        queries={},
        horizon=30,
    )
    (msg,) = expect.check(trace, [e], "keep-all")
    assert (
        "f.yaml: expect[0]" in msg and "invalidated" in msg and "active" in msg and "000 §1" in msg
    )


# ---------------------------------------------------------------- the loader


def _write(tmp_path: Path, data) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False) if not isinstance(data, str) else data)
    return p


def _base():
    return {
        "description": "test",
        "episodes": [
            {
                "id": "e1",
                "time": 0,
                "text": "a",
                "claims": [{"key": "a.b", "value": "x", "importance": 0.5}],
            },
            {"id": "e2", "time": 2, "text": "b", "claims": [{"key": "a.b", "value": "y"}]},
        ],
        "queries": [{"id": "q1", "time": 3, "text": "?", "keys": ["a.b"]}],
    }


def test_loads_and_orders_events(tmp_path):
    data = _base()
    data["forgets"] = [{"id": "f1", "time": 2, "episode": "e2"}]
    data["protects"] = [{"id": "p1", "time": 0, "episode": "e1"}]
    data["recovers"] = [{"id": "r1", "time": 3, "episode": "e2"}]
    data["queries"].append(
        {"id": "q0", "time": 2, "text": "?", "answers": ["e2"], "k": 3, "group": "g"}
    )
    sc = scripted.load_file(_write(tmp_path, data))
    kinds = [(type(e).__name__, e.id) for e in sc.stream]
    # same time: episodes, then user actions, then queries
    assert kinds == [
        ("Episode", "e1"),
        ("Protect", "p1"),
        ("Episode", "e2"),
        ("Forget", "f1"),
        ("Query", "q0"),
        ("Recover", "r1"),
        ("Query", "q1"),
    ]
    assert sc.stream.horizon == 3.0
    q0 = [e for e in sc.stream if e.id == "q0"][0]
    assert q0.answers == ("e2",) and q0.k == 3 and q0.group == "g"
    assert dict(sc.stream.meta)["expect"] == []


def test_repeat_expands_items(tmp_path):
    data = _base()
    data["queries"] = [
        {"id": "q{i}", "repeat": 4, "every": 2.5, "time": 3, "text": "n{i}", "keys": ["a.b"]}
    ]
    sc = scripted.load_file(_write(tmp_path, data))
    qs = sc.stream.queries
    assert [q.id for q in qs] == ["q1", "q2", "q3", "q4"]
    assert [q.time for q in qs] == [3.0, 5.5, 8.0, 10.5]
    assert [q.text for q in qs] == ["n1", "n2", "n3", "n4"]


def test_claim_fields_and_attrs(tmp_path):
    data = _base()
    data["episodes"][0]["claims"][0].update(
        category="preference",
        subject="alex",
        confidence=0.4,
        noise=True,
        attrs={"ttl_policy": "keep_forever", "context": "work"},
    )
    sc = scripted.load_file(_write(tmp_path, data))
    c = sc.stream.episodes[0].claims[0]
    assert (c.category, c.subject, c.confidence, c.noise) == ("preference", "alex", 0.4, True)
    assert c.attr("ttl_policy") == "keep_forever" and c.attr("context") == "work"


@pytest.mark.parametrize(
    "mutate, path, value",
    [
        (
            lambda d: d["episodes"][1]["claims"][0].__setitem__("importance", 1.5),
            "episodes[1].claims[0].importance",
            "1.5",
        ),
        (
            lambda d: d["episodes"][1]["claims"][0].__setitem__("importance", "high"),
            "episodes[1].claims[0].importance",
            "'high'",
        ),
        (
            lambda d: d["episodes"][0]["claims"][0].__setitem__("colour", "red"),
            "episodes[0].claims[0].colour",
            "'red'",
        ),
        (lambda d: d["episodes"][0].__setitem__("when", 3), "episodes[0].when", "3"),
        (lambda d: d.__setitem__("episode", []), "episode", "[]"),
        (lambda d: d["episodes"][1].__setitem__("time", -1), "episodes[1].time", "-1"),
        (
            lambda d: d["episodes"][1].__setitem__("time", "tomorrow"),
            "episodes[1].time",
            "'tomorrow'",
        ),
        (lambda d: d["episodes"][1].__setitem__("id", "e1"), "episodes[1].id", "'e1'"),
        (lambda d: d["episodes"][1].pop("text"), "episodes[1]", "missing required field 'text'"),
        (lambda d: d["queries"][0].__setitem__("keys", []), "queries[0]", "keys or answers"),
        (lambda d: d["queries"][0].__setitem__("answers", ["e9"]), "queries[0].answers", "'e9'"),
        (lambda d: d["queries"][0].__setitem__("k", 0), "queries[0].k", "0"),
        (
            lambda d: d.__setitem__("forgets", [{"id": "f", "time": 1, "episode": "e2"}]),
            "forgets[0].episode",
            "'e2'",
        ),
        (
            lambda d: d.__setitem__("protects", [{"id": "p", "time": 1, "episode": "nope"}]),
            "protects[0].episode",
            "'nope'",
        ),
        (lambda d: d.__setitem__("horizon", 2.5), "queries[0].time", "3"),
        (
            lambda d: d["episodes"][0].__setitem__("claims", [{"key": "k", "attrs": {"x": [1]}}]),
            "episodes[0].claims[0].attrs.x",
            "[1]",
        ),
        (
            lambda d: d["episodes"][0].__setitem__("claims", {"key": "k"}),
            "episodes[0].claims",
            "{'key': 'k'}",
        ),
        (
            lambda d: d["queries"].__setitem__(
                0, {"id": "q{i}", "repeat": 0, "time": 1, "text": "x", "keys": ["a"]}
            ),
            "queries[0].repeat",
            "0",
        ),
        (
            lambda d: d["queries"].__setitem__(
                0, {"id": "q", "repeat": 2, "time": 1, "text": "x", "keys": ["a"]}
            ),
            "queries[0].id",
            "'q'",
        ),
        (lambda d: d.__setitem__("description", "two\nlines"), "description", "two"),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "memory_of": "e9", "status": "x"}]
            ),
            "expect[0].memory_of",
            "'e9'",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "memory_of": "e1", "colour": "x"}]
            ),
            "expect[0].colour",
            "'x'",
        ),
        (
            lambda d: d.__setitem__("expect", [{"policy": "pai", "memory_of": "e1"}]),
            "expect[0]",
            "exactly one check",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "memory_of": "e1", "status": "a", "memories": 1}]
            ),
            "expect[0]",
            "exactly one check",
        ),
        (
            lambda d: d.__setitem__(
                "expect",
                [{"policy": "pai", "except_for": ["x"], "memory_of": "e1", "status": "a"}],
            ),
            "expect[0].except_for",
            "['x']",
        ),
        (
            lambda d: d.__setitem__(
                "expect",
                [{"policy": "*", "except_for": ["x"], "memory_of": "e1", "status": "a"}],
            ),
            "expect[0].except_for",
            "a note saying why",
        ),
        (
            lambda d: d.__setitem__("expect", [{"policy": 3, "memory_of": "e1", "status": "a"}]),
            "expect[0].policy",
            "3",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "after": 99, "memory_of": "e1", "status": "a"}]
            ),
            "expect[0].after",
            "99",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "after": 1, "memory_of": "e2", "status": "a"}]
            ),
            "expect[0].after",
            "1",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "query": "q9", "top1_from": "e1"}]
            ),
            "expect[0].query",
            "'q9'",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "memory_of": "e1", "memories": -1}]
            ),
            "expect[0].memories",
            "-1",
        ),
        (
            lambda d: d.__setitem__(
                "expect", [{"policy": "pai", "memory_of": "e1", "retrievable": "yes"}]
            ),
            "expect[0].retrievable",
            "'yes'",
        ),
    ],
)
def test_bad_input_names_file_path_and_value(tmp_path, mutate, path, value):
    data = _base()
    mutate(data)
    p = _write(tmp_path, data)
    with pytest.raises(ScenarioError) as err:
        scripted.load_file(p)
    msg = str(err.value)
    assert str(p) in msg and path in msg and value in msg, msg


def test_reference_to_a_later_episode_is_an_error(tmp_path):
    data = _base()
    data["queries"][0].update(time=1, answers=["e2"])
    with pytest.raises(
        ScenarioError, match=r"queries\[0\]\.answers.*later than this event's time 1"
    ):
        scripted.load_file(_write(tmp_path, data))


def test_not_yaml_not_a_mapping_and_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="not valid YAML"):
        scripted.load_file(_write(tmp_path, "episodes: [ {id: e1"))
    with pytest.raises(ScenarioError, match="must be a mapping"):
        scripted.load_file(_write(tmp_path, "- 1\n- 2\n"))
    with pytest.raises(ScenarioError, match="does not exist"):
        scripted.load_file(tmp_path / "none.yaml")


def test_safe_load_only(tmp_path):
    """A python tag is rejected by yaml.safe_load: no code in a scenario runs."""
    p = _write(tmp_path, "episodes: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        scripted.load_file(p)


def test_unknown_scripted_name_lists_choices():
    with pytest.raises(UnknownIdError, match="name-preference"):
        scripted.load("no-such-scenario")


def test_expectations_travel_in_meta(loaded):
    sc = loaded["duplicates"]
    meta = dict(sc.stream.meta)
    assert len(meta["expect"]) == len(sc.expectations)
    assert meta["expect"][0]["policy"] == ["pai"]


def test_trace_view_reconstructs_status_at_a_time():
    """A hand-built trace: statuses at chosen times, provenance growing, query snapshot."""
    from memsim.engine.runner import QueryRecord, Trace
    from memsim.engine.store import Statuses

    def T():
        rec = QueryRecord(
            "q1", 2.0, np.array([1, 0]), np.array([1.0, 0.5]),
            (frozenset({"e2"}), frozenset({"e1"})), 10, "", 2, 2, 2,
        )  # fmt: skip
        return Trace(
            "x", None, "hand-built", 6.0,
            Statuses(("active", "pruned"), terminal=frozenset({"pruned"})),
            queries=[rec],
            status_log=[(0.0, 0, 0), (1.0, 1, 0), (5.0, 0, 1)],
            provenance_log=[(0.0, 0, "e1"), (1.0, 1, "e2"), (3.0, 0, "e2")],
        )  # fmt: skip

    ep = {"e1": Episode("e1", 0, "a"), "e2": Episode("e2", 1, "b")}
    qs = {"q1": Query("q1", 2, "?", keys=("k",))}
    mk = lambda d: expect.parse_one(d, "x", file="f", episodes=ep, queries=qs, horizon=6)  # noqa: E731
    ok = [
        mk({"policy": "*", "after": 4, "memory_of": "e1", "status": "active"}),
        mk({"policy": "*", "after": 5, "memory_of": "e1", "status": "pruned"}),
        mk({"policy": "*", "after": 2, "memory_of": "e2", "memories": 1}),
        mk({"policy": "*", "after": 3, "memory_of": "e2", "memories": 2}),
        mk({"policy": "*", "after": 3, "memory_of": "e2", "same_memory_as": "e1"}),
        mk({"policy": "*", "after": 2, "memory_of": "e2", "distinct_from": "e1"}),
        mk({"policy": "*", "query": "q1", "top1_from": "e2"}),
        mk({"policy": "*", "after": 5, "footprint": 1}),
        mk({"policy": "*", "after": 4, "footprint": 2}),
    ]
    assert expect.check(T(), ok, "x", horizon=6) == []
