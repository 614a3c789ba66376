"""The synthetic generator's text mode (``text=1``): the same stream in sentences, embedded
by the real text embedder, with the default streams untouched."""

import pickle

import numpy as np
import pytest

from memsim.engine import sources
from memsim.engine.embed import WordLlamaEmbedder
from memsim.engine.errors import ScenarioError
from memsim.engine.events import Episode, Query
from memsim.engine.llm import Modes
from memsim.engine.mockllm import MockLLM
from memsim.engine.truth import GroundTruth
from scenarios import synthetic, text_templates
from scenarios.synthetic import CATEGORIES

SPEC = "synthetic:churn,episodes=400,queries=60,facts=40"


def _pair(seed=0):
    return sources.load(SPEC, seed=seed), sources.load(SPEC + ",text=1", seed=seed)


def test_text_mode_keeps_keys_values_times_and_queries():
    plain, text = _pair()
    assert len(plain.events) == len(text.events)
    for a, b in zip(plain.events, text.events):
        assert type(a) is type(b) and a.id == b.id and a.time == b.time
        if isinstance(a, Episode):
            ca, cb = a.claims[0], b.claims[0]
            assert (ca.key, ca.value, ca.noise, ca.confidence) == (
                cb.key,
                cb.value,
                cb.noise,
                cb.confidence,
            )
            assert ca.attrs == () and cb.attr("text") == b.text and b.text != a.text
        else:
            assert (a.keys, a.group, a.subject) == (b.keys, b.group, b.subject)
            assert b.text.endswith("?") and b.text != a.text
    meta = dict(text.meta)
    assert meta["claim_text"] is True and meta["text_embedder"] == "wordllama"
    assert "claim_text" not in dict(plain.meta) and "followups" not in dict(plain.meta)


def test_text_mode_is_deterministic_and_seeded():
    a, b = (sources.load(SPEC + ",text=1", seed=3) for _ in range(2))
    assert pickle.dumps(a) == pickle.dumps(b)
    c = sources.load(SPEC + ",text=1", seed=4)
    assert [e.text for e in a.events] != [e.text for e in c.events]


def test_paraphrase_templates_vary_the_wording_of_one_value():
    _, text = _pair()
    said: dict[tuple[str, str], set[str]] = {}
    for e in text.events:
        if isinstance(e, Episode) and not e.claims[0].noise:
            said.setdefault((e.claims[0].key, e.claims[0].value), set()).add(e.text)
    assert max(len(s) for s in said.values()) >= 3


def test_followups_name_the_current_value_of_the_truth():
    _, text = _pair()
    truth = GroundTruth(text)
    first = {}
    for e in text.events:
        if isinstance(e, Episode) and not e.claims[0].noise:
            first.setdefault(e.claims[0].key, e.claims[0])
    followups = dict(text.meta)["followups"]
    queries = [e for e in text.events if isinstance(e, Query)]
    assert set(followups) == {q.id for q in queries}
    for q in queries:
        (key,) = q.keys
        version = int(truth.current_values(q)[key].removeprefix("value"))
        claim = first[key]
        topic, index = (int(part[1:]) for part in key.split("."))
        fact = text_templates.Fact(topic, index, claim.category, claim.subject)
        assert fact.value_word(version) in followups[q.id]
        assert fact.thing in q.text and fact.thing in followups[q.id]


def test_every_category_has_a_relation_with_distinct_consecutive_values():
    assert set(text_templates.RELATIONS) == set(CATEGORIES)
    for cat in CATEGORIES:
        fact = text_templates.Fact(3, 7, cat, "sam")
        words = [fact.value_word(v) for v in range(5)]
        assert all(a != b for a, b in zip(words, words[1:]))
        for t in range(4):
            s = text_templates.statement(fact, 0, t)
            assert "{" not in s and "Sam" in s and fact.thing in s


def test_the_mock_embeds_sentences_and_asks_the_followup_when_value_aware():
    _, text = _pair()
    meta = dict(text.meta)
    episode = next(e for e in text.events if isinstance(e, Episode) and not e.claims[0].noise)
    query = next(e for e in text.events if isinstance(e, Query))
    wl = WordLlamaEmbedder(384, 0)
    blind = MockLLM(0, text_embedder="wordllama", claim_text=True, followups=meta["followups"])
    got = blind.embed([episode.claims[0]], ["k"]).vectors[0]
    assert np.array_equal(got, wl.embed([episode.text])[0])
    assert np.array_equal(blind.embed_query(query), wl.embed([query.text])[0])
    aware = MockLLM(
        0,
        text_embedder="wordllama",
        claim_text=True,
        followups=meta["followups"],
        modes=Modes(query_value=0.3),
    )
    assert np.array_equal(aware.embed_query(query), wl.embed([meta["followups"][query.id]])[0])
    assert aware.config()["claim_text"] is True and "claim_text" not in MockLLM(0).config()


@pytest.mark.parametrize("value", ["2", "yes", ""])
def test_a_bad_text_option_is_refused(value):
    with pytest.raises(ScenarioError, match="text="):
        sources.load(f"synthetic:steady,text={value}", seed=0)


def test_unknown_option_lists_text():
    with pytest.raises(ScenarioError, match="text"):
        synthetic.from_options("steady", {"nope": "1"})


def test_a_text_mode_run_is_reproducible_and_value_aware_helps(tmp_path):
    import pandas as pd

    from memsim.workbench.cli.main import main

    def recall(out, *llm):
        args = ["run", "--policy", "keep-all", "--scenario", SPEC + ",text=1", "--quiet"]
        assert main([*args, "--out", str(out), *llm]) == 0
        (path,) = out.rglob("queries.parquet")
        return pd.read_parquet(path)

    a, b = recall(tmp_path / "a"), recall(tmp_path / "b")
    pd.testing.assert_frame_equal(a, b)
    aware = recall(tmp_path / "c", "--llm", "modes.query_value=0.3")
    assert aware["mrr"].mean() > a["mrr"].mean()
