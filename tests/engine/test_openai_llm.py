"""The OpenAI-compatible model adapter (memsim.engine.openai_llm) against a fake server on
127.0.0.1 (tests/openai_fake.py): valid replies, malformed JSON, schema violations,
timeouts, 429 then success, 500s, slow replies, the replay cache and the API key."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsim.engine.errors import MemsimError, ParamError
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import LLM, NONE, Configurable, Metered
from memsim.engine.llm_cache import CacheMiss, LLMCache
from memsim.engine.openai_llm import (
    PROMPTS,
    Invalid,
    ModelLLM,
    Unreachable,
    parse_spec,
    prompt,
    reply_json,
    valid_embedding,
    valid_extraction,
    valid_index,
    valid_relations,
    valid_summary,
    valid_synthesis,
)
from tests.openai_fake import DIM, FakeOpenAI

SECRET = "sk-test-secret-0123456789"


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        yield srv


def make(server: FakeOpenAI, cache: Path, **opts: str) -> ModelLLM:
    extra = "".join(f",{k}={v}" for k, v in {"backoff": "0", **opts}.items())
    return ModelLLM(f"openai:{server.base_url},model=fake,cache={cache}{extra}", seed=0)


def ep(text: str, eid: str = "e1") -> Episode:
    return Episode(eid, 0.0, text)


def test_it_is_an_llm_of_the_protocol(server, tmp_path):
    llm = make(server, tmp_path)
    assert isinstance(llm, LLM) and isinstance(llm, Configurable) and isinstance(llm, Metered)
    assert llm.dim == DIM  # learnt from one probe embedding
    assert llm.config()["prompts"] == {p: f"{p}@1" for p in PROMPTS}


def test_valid_replies_answer_every_method(server, tmp_path):
    llm = make(server, tmp_path)
    (claim,) = llm.extract(ep("My owner city is Boston."))
    assert (claim.key, claim.value, claim.category, claim.noise) == (
        "owner.city",
        "Boston",
        "fact",
        False,
    )
    (chat,) = llm.extract(ep("chat about rain", "e2"))
    assert chat.noise
    (text_only,) = llm.extract(Episode("e3", 0.0, "hello there", speaker="Bob"))
    assert (text_only.key, text_only.value, text_only.subject) == ("", "hello there", "bob")
    old = [Claim("owner.city", "Denver"), Claim("owner.name", "Dana")]
    assert llm.classify(claim, old, answer="index", key="c1") == "1"
    assert llm.classify(claim, old, answer="relation", key="c2") == ["CONTRADICTS", "IRRELEVANT"]
    assert llm.classify(claim, [], answer="index", key="c3") == NONE
    assert llm.summarize(["hi", "ok"], key="s1") == NONE
    long = ["I moved to Boston last spring for a new job at Acme; it rains a lot"]
    assert llm.summarize(long, key="s2") == "I moved to Boston last spring for a new job at Acme."
    merged = llm.synthesize(
        [
            Claim("owner.city", "Boston", importance=0.3),
            Claim("owner.city", "Boston", importance=0.8),
        ],
        key="y1",
    )
    assert (merged.key, merged.value, merged.importance) == ("owner.city", "Boston", 0.8)
    e = llm.embed([claim, "owner city Boston", claim], ["a", "b", "c"])
    assert e.ok.all() and e.vectors.shape == (3, DIM) and e.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e.vectors, axis=1), 1.0, rtol=1e-6)
    assert np.array_equal(e.vectors[0], e.vectors[2])
    q = llm.embed_query(Query("q1", 1.0, "where does the owner live?", keys=("owner.city",)))
    assert q is not None and q.shape == (DIM,)
    assert sum(llm.faults.values()) == 0


def test_a_query_is_embedded_from_its_text_never_its_keys(server, tmp_path):
    llm = make(server, tmp_path)
    a = llm.embed_query(Query("q1", 1.0, "where?", keys=("owner.city",)))
    b = llm.embed_query(Query("q2", 1.0, "where?", keys=("owner.name",)))
    assert a is not None and b is not None and np.array_equal(a, b)


def test_an_episode_is_extracted_from_its_text_never_its_claims(server, tmp_path):
    llm = make(server, tmp_path)
    stated = (Claim("owner.secret", "ground truth"),)
    (claim,) = llm.extract(Episode("e1", 0.0, "My owner city is Boston.", stated))
    assert claim.key == "owner.city"


@pytest.mark.parametrize(
    "step, reason",
    [
        ({"content": "Sure! The claims are: owner.city"}, "content is not JSON"),
        ({"body": "<html>bad gateway</html>"}, "reply is not JSON"),
        ({"doc": {"claims": [{"key": "owner.city"}]}}, "missing 'value'"),
        ({"doc": {"facts": []}}, "missing 'claims'"),
        (
            {
                "doc": {
                    "claims": [
                        {
                            "key": "owner.city",
                            "value": "Boston",
                            "category": "fact",
                            "importance": 1.5,
                            "confidence": 0.9,
                            "subject": "owner",
                            "noise": False,
                            "attributes": {},
                        }
                    ]
                }
            },
            "outside [0, 1]",
        ),
        ({"status": 500}, "HTTP 500"),
        ({"status": 400}, "HTTP 400"),
    ],
)
def test_an_invalid_extraction_is_a_counted_extract_fail(server, tmp_path, step, reason):
    llm = make(server, tmp_path, retries="0")
    llm.dim  # noqa: B018 - (the probe before the scripted reply)
    server.plan.append({"task": "extract", **step})
    assert llm.extract(ep("My owner city is Boston.")) is None
    assert llm.faults["extract_fail"] == 1
    (message,) = llm.fault_messages
    assert message.startswith("extract episode 'e1': extract_fail: ") and reason in message


def test_invalid_classifications_pass_on_as_invalid_answers(server, tmp_path):
    llm = make(server, tmp_path)
    new, old = Claim("owner.city", "Boston"), [Claim("owner.city", "Denver")]
    server.plan += [
        {"task": "classify", "doc": {"answer": "²"}},
        {"task": "classify", "content": "CONTRADICTS?"},
        {"task": "classify", "doc": {"relations": ["SUPPORTS", "CONTRADICTS"]}},
        {"task": "classify", "doc": {"relations": ["maybe"]}},
    ]
    other = Claim("owner.city", "Paris")  # (another request: the same one is a cache hit)
    assert llm.classify(new, old, answer="index", key="a") == ""
    assert llm.classify(other, old, answer="index", key="b") == ""
    assert llm.classify(new, old, answer="relation", key="c") == [""]
    assert llm.classify(other, old, answer="relation", key="d") == ["MAYBE"]
    assert llm.faults == {"extract_fail": 0, "embed_fail": 0, "invalid_answer": 4}
    assert "'²' is neither NONE nor a candidate in 1..1" in llm.fault_messages[0]
    assert "2 given for 1 candidates" in llm.fault_messages[2]


def test_invalid_summary_and_synthesis_fall_back_and_count(server, tmp_path):
    llm = make(server, tmp_path)
    server.plan += [{"task": "summarize", "doc": {"summary": ""}}]
    server.plan += [{"task": "synthesize", "doc": {"claim": {"key": "Owner City!"}}}]
    assert llm.summarize(["a long enough text with many words in it to summarize"], key="s") == NONE
    claims = [Claim("owner.city", "Boston", importance=0.2), Claim("owner.city", "Denver")]
    kept = llm.synthesize(claims, key="y")
    assert (kept.value, kept.importance) == ("Denver", 0.2)
    assert llm.faults["invalid_answer"] == 2
    assert "kept the last claim" in llm.fault_messages[1]


def test_invalid_embeddings_are_counted_embed_fails(server, tmp_path):
    llm = make(server, tmp_path, retries="0", concurrency="1")  # (replies in item order)
    llm.dim  # noqa: B018
    server.plan += [
        {"task": "embeddings", "body": json.dumps({"data": [{"embedding": [0.0] * DIM}]})},
        {"task": "embeddings", "body": json.dumps({"data": [{"embedding": [1.0] * 3}]})},
    ]
    e = llm.embed(["one text", "another text", "a third"], ["k1", "k2", "k3"])
    assert e.ok.tolist() == [False, False, True]
    assert not e.vectors[:2].any()
    assert llm.faults["embed_fail"] == 2
    assert "zero or not finite" in llm.fault_messages[0]
    assert f"3 numbers, expected {DIM}" in llm.fault_messages[1]
    server.plan.append({"task": "embeddings", "status": 503})
    assert llm.embed_query(Query("q9", 0.0, "never asked before", answers=("e1",))) is None
    assert llm.faults["embed_fail"] == 3


def test_429_then_success_honours_retry_after(server, tmp_path):
    llm = make(server, tmp_path, retries="2")
    llm.dim  # noqa: B018
    server.plan.append({"task": "extract", "status": 429, "headers": {"Retry-After": "0.3"}})
    start = time.monotonic()
    (claim,) = llm.extract(ep("My owner city is Boston."))
    assert time.monotonic() - start >= 0.3
    assert claim.value == "Boston" and sum(llm.faults.values()) == 0
    assert server.requests["extract"] == 2


def test_500s_are_retried_with_backoff_then_counted(server, tmp_path):
    llm = make(server, tmp_path, retries="2", backoff="0.05")
    llm.dim  # noqa: B018
    server.plan += [{"task": "extract", "status": 500}] * 3
    start = time.monotonic()
    assert llm.extract(ep("My owner city is Boston.")) is None
    assert time.monotonic() - start >= 0.05 + 0.1  # backoff 0.05, then 0.1
    assert server.requests["extract"] == 3
    assert "HTTP 500" in llm.fault_messages[0]
    # a recorded failure is asked again by the next live run, and now succeeds
    again = make(server, tmp_path)
    (claim,) = again.extract(ep("My owner city is Boston."))
    assert claim.value == "Boston"


def test_a_timeout_is_counted_and_a_slow_reply_within_it_is_not(server, tmp_path):
    llm = make(server, tmp_path, retries="0", timeout="1")  # (a margin for a busy machine)
    llm.dim  # noqa: B018
    server.plan.append({"task": "extract", "delay": 3.0})
    assert llm.extract(ep("My owner city is Boston.")) is None
    assert "no reply within 1 s" in llm.fault_messages[0]
    server.plan.append({"task": "extract", "delay": 0.2})
    (claim,) = llm.extract(ep("My owner name is Dana.", "e2"))
    assert claim.value == "Dana"


def test_a_server_that_refuses_the_request_stops_the_run(server, tmp_path):
    llm = make(server, tmp_path)
    server.plan.append({"task": "embeddings", "status": 404})
    with pytest.raises(Unreachable, match="HTTP 404"):
        llm.dim  # noqa: B018


def test_an_unreachable_server_is_a_one_line_error(tmp_path):
    with FakeOpenAI() as srv:
        url = srv.base_url
    llm = ModelLLM(f"openai:{url},model=fake,cache={tmp_path},retries=1,backoff=0", seed=0)
    with pytest.raises(Unreachable, match=r"cannot connect") as e:
        llm.dim  # noqa: B018
    assert "\n" not in str(e.value)


def test_costs_come_from_the_servers_usage_fields(server, tmp_path):
    llm = make(server, tmp_path)
    llm.extract(ep("My owner city is Boston."))
    llm.embed(["a b c"], ["k"])
    u = llm.usage()
    assert u["methods"]["extract"]["calls"] == 1
    assert u["methods"]["extract"]["tokens_in"] > 0 and u["methods"]["extract"]["tokens_out"] > 0
    assert u["methods"]["embed"] == {
        "calls": 1,
        "tokens_in": 4,
        "tokens_out": 0,
        "latency_ms": u["methods"]["embed"]["latency_ms"],
    }
    assert u["total"]["calls"] == 2  # (the width probe is no protocol call)


def test_the_api_key_is_sent_and_never_written(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSIM_OPENAI_API_KEY", SECRET)
    llm = make(server, tmp_path)
    llm.extract(ep("My owner city is Boston."))
    assert f"Bearer {SECRET}" in server.authorization
    blob = pickle.dumps(llm)
    assert SECRET.encode() not in blob
    assert SECRET not in json.dumps(llm.config()) + json.dumps(llm.usage())
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert SECRET not in f.read_text()


def test_replay_answers_from_the_cache_and_names_a_missing_request(server, tmp_path):
    live = make(server, tmp_path)
    claims = live.extract(ep("My owner city is Boston."))
    vectors = live.embed(list(claims), ["k"]).vectors
    replay = ModelLLM(f"replay:{tmp_path}", seed=0)
    assert replay.extract(ep("My owner city is Boston.")) == claims
    assert np.array_equal(replay.embed(list(claims), ["k"]).vectors, vectors)
    assert replay.usage()["total"] == live.usage()["total"]  # recorded costs replay too
    with pytest.raises(
        CacheMiss, match=r"no recorded reply for chat extract@1 request [0-9a-f]{16}"
    ):
        replay.extract(ep("My owner name is Dana."))


def test_recording_twice_writes_each_entry_once(server, tmp_path):
    for _ in range(2):
        llm = make(server, tmp_path)
        llm.extract(ep("My owner city is Boston."))
        llm.embed(["x y"], ["k"])
    entries = sorted((tmp_path / "entries").rglob("*.json"))
    assert len(entries) == 3  # the width probe, the extraction, the embedding
    assert not list(tmp_path.rglob("*.tmp"))
    doc = json.loads(entries[0].read_text())
    assert doc["format"] == 1 and set(doc) >= {"key", "latency_ms", "usage"}
    assert json.loads((tmp_path / "profiles.json").read_text()) == [
        {
            "embed_model": "fake",
            "known_keys": 100,
            "model": "fake",
            "response_format": "json_schema",
        }
    ]


def test_a_damaged_cache_entry_is_a_one_line_error(server, tmp_path):
    make(server, tmp_path).dim  # noqa: B018
    (entry,) = (tmp_path / "entries").rglob("*.json")
    entry.write_text("{not json")
    with pytest.raises(MemsimError, match=rf"LLM cache {entry}: not JSON"):
        ModelLLM(f"replay:{tmp_path}", seed=0).dim  # noqa: B018


def test_a_pickled_adapter_answers_as_the_original(server, tmp_path):
    llm = make(server, tmp_path)
    clone = pickle.loads(pickle.dumps(llm))
    assert clone.extract(ep("My owner city is Boston.")) == llm.extract(
        ep("My owner city is Boston.")
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("openai:", "expected openai:BASE_URL"),
        ("openai:ftp://x/v1,model=m", "BASE_URL must be http"),
        ("openai:http://u:p@host/v1,model=m", "must not carry credentials"),
        ("openai:http://host/v1", "model=NAME is required"),
        ("openai:http://host/v1,model=m,colour=red", "unknown option 'colour'"),
        ("openai:http://host/v1,model=m,timeout=-1", "timeout='-1' is out of range"),
        ("openai:http://host/v1,model=m,retries=x", "retries='x' is not a number"),
        ("openai:http://host/v1,model=m,response_format=xml", "response_format='xml'"),
        ("replay:/nonexistent/cache", "no such cache folder"),
    ],
)
def test_a_wrong_spec_is_a_one_line_error(spec, message):
    with pytest.raises(ParamError, match=message):
        parse_spec(spec)


def test_replay_of_an_empty_cache_names_the_missing_settings(tmp_path):
    with pytest.raises(ParamError, match="0 recorded settings match"):
        parse_spec(f"replay:{tmp_path}")


def test_every_prompt_names_its_version_and_a_json_schema():
    for name in PROMPTS:
        p = prompt(name)
        assert p.name == name and p.version >= 1
        assert p.schema["type"] == "object" and p.schema["required"]
        assert "JSON" in p.system and "INPUT" in p.instructions


def test_cache_entries_are_content_addressed(tmp_path):
    cache = LLMCache(tmp_path)
    key = {"kind": "chat", "model": "m", "prompt": "extract@1", "request": {"b": 1, "a": [2]}}
    cache.put(key, {"reply": {"x": 1}})
    same = {"request": {"a": [2], "b": 1}, "prompt": "extract@1", "model": "m", "kind": "chat"}
    got = LLMCache(tmp_path).get(same)
    assert got is not None and got["reply"] == {"x": 1}


def test_the_first_reply_recorded_wins_across_processes(tmp_path):
    """Two runs that asked the same request at once (two processes, each its own cache
    object) both use the reply recorded first, the one a replay gives."""
    key = {"kind": "embeddings", "model": "m", "prompt": "", "request": {"input": "x"}}
    first, second = LLMCache(tmp_path), LLMCache(tmp_path)
    assert first.get(key) is None and second.get(key) is None
    a = first.put(key, {"reply": {"v": 1}, "latency_ms": 5})
    b = second.put(key, {"reply": {"v": 1}, "latency_ms": 9})
    assert a == b and b["latency_ms"] == 5
    assert LLMCache(tmp_path).get(key) == a
    failed = {"kind": "chat", "model": "m", "prompt": "p@1", "request": {}}
    first.put(failed, {"error": "HTTP 500: down", "latency_ms": 1})
    assert second.put(failed, {"reply": {"ok": True}, "latency_ms": 2})["reply"] == {"ok": True}
    assert not list(tmp_path.rglob("*.tmp"))


def test_extraction_is_shown_the_keys_it_returned_before(server, tmp_path):
    """Entity resolution: the extract prompt lists the latest ``known_keys`` keys the model
    returned (sorted), so it can name a fact as it did before."""

    def inputs():
        chats = [b for b in server.bodies if "messages" in b]
        return [json.loads(b["messages"][-1]["content"].partition("INPUT:\n")[2]) for b in chats]

    llm = make(server, tmp_path, known_keys="2")
    for i, text in enumerate(
        ["My owner city is Boston.", "My owner name is Dana.", "hi", "My pets dog is Rex."]
    ):
        llm.extract(ep(text, f"e{i}"))
    seen = [x.get("known_keys") for x in inputs()]
    assert seen == [
        None,
        ["owner.city"],
        ["owner.city", "owner.name"],
        ["owner.city", "owner.name"],
    ]
    llm.extract(ep("My owner city is Denver.", "e9"))
    assert inputs()[-1]["known_keys"] == ["owner.name", "pets.dog"]
    off = make(server, tmp_path / "off", known_keys="0")
    off.extract(ep("My owner city is Boston."))
    off.extract(ep("My owner name is Dana.", "e2"))
    assert "known_keys" not in inputs()[-1]


def test_an_interrupted_write_leaves_no_entry_and_no_temporary_file(tmp_path, monkeypatch):
    """A run killed while recording leaves whole entries only: the next run asks again."""
    import os

    key = {"kind": "embeddings", "model": "m", "prompt": "", "request": {"input": "x"}}

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "link", killed)
    with pytest.raises(KeyboardInterrupt):
        LLMCache(tmp_path).put(key, {"reply": {"v": 1}})
    monkeypatch.undo()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert LLMCache(tmp_path).get(key) is None
    assert LLMCache(tmp_path).put(key, {"reply": {"v": 1}})["reply"] == {"v": 1}


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from([10**400, -(10**400)]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_FIELDS = ("claims", "key", "value", "category", "importance", "confidence", "subject", "noise")
_SHAPED = st.dictionaries(
    st.sampled_from((*_FIELDS, "attributes", "answer", "relations", "summary", "claim", "data")),
    _JSON | st.lists(st.dictionaries(st.sampled_from((*_FIELDS, "attributes")), _JSON), max_size=3),
    max_size=6,
)


@given(doc=_JSON | _SHAPED, n=st.integers(0, 4))
def test_no_reply_crashes_a_validator(doc, n):
    """Whatever JSON a model writes, each validator answers or raises Invalid (a counted
    fault), never another exception."""
    body = {"choices": [{"message": {"content": json.dumps(doc)}}]}
    for check in (
        valid_extraction,
        lambda d: valid_index(d, n),
        lambda d: valid_relations(d, n),
        valid_summary,
        valid_synthesis,
    ):
        try:
            fields = check(reply_json(body))
        except Invalid:
            continue
        if check is valid_extraction:
            for f in fields:
                Claim(**f)  # (a valid reply makes valid claims)
    try:
        valid_embedding(doc, 3)
    except Invalid:
        pass


@pytest.mark.parametrize(
    "row", [[10**400, 1.0, 2.0], [float("nan"), 1.0, 0.0], [0, 0, 0], [True, 1, 2]]
)
def test_an_embedding_out_of_range_is_invalid(row):
    with pytest.raises(Invalid):
        valid_embedding({"data": [{"embedding": row}]}, 3)
