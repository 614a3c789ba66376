"""The metered mock (memsim.engine.metering): it answers as the mock, bit for bit, and counts
what a real model would be sent and would reply for its calls, in the tokens of the
tokenizer the wordllama wheel ships."""

from __future__ import annotations

import pytest

from memsim.engine import registry, runner, sources, truth
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import Metered
from memsim.engine.llm_cache import canonical_json
from memsim.engine.metering import (
    KNOWN_KEYS,
    MeteredMockLLM,
    chat_request_text,
    count_tokens,
    prompt_head,
)
from memsim.engine.mockllm import MockLLM
from memsim.engine.openai_llm import ModelOptions, claim_view, embed_text

TINY = "synthetic:churn,episodes=300,queries=20,facts=20,horizon=30"


def _run(policy: str, llm: MockLLM) -> runner.Trace:
    stream = sources.load(TINY, seed=0)
    llm.bind_truth(truth.GroundTruth(stream))
    spec = registry.spec(policy)
    return runner.run(spec.make(spec.load().Params(), llm=llm, seed=0), stream)


@pytest.mark.parametrize("policy", ["keep-all", "pai", "cosmo", "kernle"])
def test_metering_changes_no_answer(policy):
    metered = MeteredMockLLM(seed=0)
    assert _run(policy, metered).content() == _run(policy, MockLLM(seed=0)).content()
    assert isinstance(metered, Metered) and metered.usage()["total"]["calls"] > 0


class _Spy(MockLLM):
    """Counts the protocol calls the policy makes (what the meter must count)."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.calls: dict[str, int] = {}
        self.items = 0

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def extract(self, episode):
        self._count("extract")
        return super().extract(episode)

    def embed(self, items, keys):
        self._count("embed")
        self.items += len(items)
        return super().embed(items, keys)

    def embed_query(self, query):
        self._count("embed_query")
        self.items += 1
        return super().embed_query(query)

    def classify(self, new, candidates, *, answer, key):
        if len(candidates):  # (a real model is asked nothing about no candidates)
            self._count("classify")
        return super().classify(new, candidates, answer=answer, key=key)

    def summarize(self, texts, *, key):
        self._count("summarize")
        return super().summarize(texts, key=key)

    def synthesize(self, claims, *, key):
        self._count("synthesize")
        return super().synthesize(claims, key=key)


def test_calls_by_kind_are_the_policys_protocol_calls():
    spy, metered = _Spy(), MeteredMockLLM(seed=0)
    _run("pai", spy)
    _run("pai", metered)
    usage = metered.usage()
    calls = {m: v["calls"] for m, v in usage["methods"].items()}
    assert calls == spy.calls
    assert {"extract", "embed", "embed_query", "classify", "summarize"} <= set(calls)
    assert usage["total"]["calls"] == sum(spy.calls.values())
    emb = usage["embedding"]
    assert emb["calls"] == spy.calls["embed"] + spy.calls["embed_query"]
    assert emb["items"] == spy.items
    assert emb["tokens"] == sum(usage["methods"][m]["tokens_in"] for m in ("embed", "embed_query"))
    for m, v in usage["methods"].items():
        assert v["tokens_in"] > 0, m
        assert (v["tokens_out"] > 0) == (m not in ("embed", "embed_query")), m


def test_the_tokenizer_is_the_wordllama_wheels_and_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("the tokenizer must not reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert count_tokens(["Hello world", "", "Hello world"]) == [2, 0, 2]
    assert count_tokens(["owner.work.employer"]) == [7]  # ▁owner . work . emp loy er


def _one_call(method: str, *args, **kwargs) -> dict[str, int]:
    llm = MeteredMockLLM(seed=0)
    getattr(llm, method)(*args, **kwargs)
    return llm.usage()["methods"][method]


FACT = Claim(key="owner.city", value="Denver", category="fact", subject="owner")
OLD = [
    Claim(key="owner.city", value="Boulder", category="fact", subject="owner"),
    Claim(key="owner.pet", value="a cat named Miso", category="preference", subject="owner"),
    Claim(key="sam.job", value="nurse at St. Mary's", category="fact", subject="sam"),
]


def _near(parts: int, whole: int) -> bool:
    """Parts tokenized apart against the whole text: within 3% (a boundary may split a
    token the whole text merges, or add the leading space each part starts with)."""
    return abs(parts - whole) <= 0.03 * whole


@pytest.mark.parametrize("answer", ["index", "relation"])
def test_a_classify_prompt_counts_as_the_adapters_request(answer):
    got = _one_call("classify", FACT, OLD, answer=answer, key="c1")
    name = "classify_index" if answer == "index" else "classify_relation"
    payload = {"new": claim_view(FACT), "candidates": [claim_view(c) for c in OLD]}
    (whole,) = count_tokens([chat_request_text(name, payload)])
    assert _near(got["tokens_in"], whole)
    reply = {"answer": "1"} if answer == "index" else {"relations": [
        "CONTRADICTS", "IRRELEVANT", "IRRELEVANT"]}  # fmt: skip
    (out,) = count_tokens([canonical_json(reply)])
    assert abs(got["tokens_out"] - out) <= 2


def test_an_extract_prompt_lists_the_known_keys_as_the_adapter_does():
    llm = MeteredMockLLM(seed=0)
    episodes = [
        Episode(id=f"e{i}", time=float(i), text=f"my {k} is {v}", claims=(c,), speaker="user")
        for i, (k, v, c) in enumerate((c.key, c.value, c) for c in [*OLD, FACT])
    ]
    for e in episodes:
        llm.extract(e)
    got = llm.usage()["methods"]["extract"]
    assert got["calls"] == len(episodes)
    wholes = []
    keys: list[str] = []
    for e in episodes:
        payload = {"speaker": e.speaker, "text": e.text}
        if keys:
            payload["known_keys"] = sorted(keys[-KNOWN_KEYS:])
        wholes.append(chat_request_text("extract", payload))
        for c in e.claims:
            keys = [k for k in keys if k != c.key] + [c.key]
    assert _near(got["tokens_in"], sum(count_tokens(wholes)))
    assert KNOWN_KEYS == ModelOptions(mode="replay").known_keys > 0


def test_summaries_synthesis_and_embeddings_count_their_texts():
    texts = ["I moved to Denver last spring, near the park.", "ok thanks"]
    got = _one_call("summarize", texts, key="s1")
    (whole,) = count_tokens([chat_request_text("summarize", {"texts": texts})])
    assert _near(got["tokens_in"], whole)
    got = _one_call("synthesize", OLD[:1] + [FACT], key="y1")
    payload = {"claims": [claim_view(c) for c in OLD[:1] + [FACT]]}
    (whole,) = count_tokens([chat_request_text("synthesize", payload)])
    assert _near(got["tokens_in"], whole)
    items = [FACT, "a plain text"]
    got = _one_call("embed", items, ["k1", "k2"])
    assert got["tokens_in"] == sum(count_tokens([embed_text(i) for i in items]))
    assert got["items"] == 2 and got["tokens_out"] == 0
    q = Query(id="q1", time=1.0, text="where do I live?", keys=("owner.city",))
    got = _one_call("embed_query", q)
    assert got["tokens_in"] == count_tokens([q.text])[0] and got["items"] == 1


def test_a_prompt_head_is_the_prompt_files_text():
    head = prompt_head("extract")
    assert head.endswith("\n\nINPUT:\n") and "Answer with JSON only." in head
    assert count_tokens([head])[0] > 100


def test_a_call_without_candidates_is_not_billed():
    llm = MeteredMockLLM(seed=0)
    llm.classify(FACT, [], answer="index", key="c0")
    assert "classify" not in llm.usage()["methods"]


def test_counting_by_pieces_gives_the_whole_texts_counts():
    from memsim.engine.metering import part_tokens, pieces, prompt_head, tokenizer

    stream = sources.load(TINY, seed=0)
    episodes = [e for _, kind, events in stream.batches() if kind is Episode for e in events]
    claims = [c for e in episodes for c in e.claims]
    texts = [prompt_head(p) for p in ("extract", "classify_index", "summarize")]
    texts += [canonical_json({"speaker": e.speaker, "text": e.text}) for e in episodes]
    texts += [canonical_json(claim_view(c)) + "," for c in claims]
    texts += [canonical_json({"claims": [claim_view(c) for c in claims[:40]]})]
    texts += [embed_text(c) for c in claims]
    texts += ["two  spaces, caf\u00e9 and 3.5 \u20ac", '{"answer":"NONE"}', ""]
    whole = [len(e.ids) for e in tokenizer().encode_batch(texts, add_special_tokens=False)]
    assert part_tokens(texts) == whole
    assert max(len(pieces(t)) for t in texts) > 10  # (texts were cut)
