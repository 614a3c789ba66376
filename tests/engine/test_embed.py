"""Embedders: calibrated claim bands (memsim.engine.llm.Bands), hashed text embedder."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.engine.embed import ClaimsEmbedder, TextEmbedder, stable_hash, stable_uniform
from memsim.engine.errors import ParamError
from memsim.engine.events import Claim
from memsim.engine.llm import Bands

# Bounds the seed thresholds assume (memsim.engine.llm.Bands docstring).
PARAPHRASE_MIN = 0.85
CHANGED = (0.70, 0.85)
RELATED = (0.40, 0.70)
UNRELATED_MAX = 0.25


def pair_cosines(emb, n, tag=""):
    """(paraphrase, changed, related, unrelated) cosines for n independent fact keys."""
    out = np.empty((4, n))
    for i in range(n):
        key, sib, other = f"t{tag}{i}.k{i}", f"t{tag}{i}.s{i}", f"u{tag}{i}.z"
        a = emb.vector(key, "v1", f"a{i}")
        out[:, i] = (
            a @ emb.vector(key, "v1", f"b{i}"),
            a @ emb.vector(key, "v2", f"c{i}"),
            a @ emb.vector(sib, "v1", f"d{i}"),
            a @ emb.vector(other, "v1", f"e{i}"),
        )
    return out


def test_bands_over_many_keys():
    """Deterministic sweep: every pair of 2000 fact keys falls in its band."""
    p, c, r, u = pair_cosines(ClaimsEmbedder(), 2000)
    assert p.min() > PARAPHRASE_MIN
    assert CHANGED[0] <= c.min() and c.max() <= CHANGED[1]
    assert RELATED[0] <= r.min() and r.max() <= RELATED[1]
    assert np.abs(u).max() < UNRELATED_MAX
    b = Bands()
    assert p.mean() == pytest.approx(b.paraphrase, abs=0.005)
    assert c.mean() == pytest.approx(b.changed_value, abs=0.005)
    assert r.mean() == pytest.approx(b.related, abs=0.005)
    assert u.mean() == pytest.approx(0.0, abs=0.005)


names = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="."),
    min_size=1,
    max_size=10,
)


@settings(derandomize=True)  # a band edge is a ~4-sigma event: keep the examples fixed
@given(names, names, names, names, names, st.integers(0, 2**32 - 1))
def test_bands_hypothesis(topic, key, other, value, value2, seed):
    if other == key or value2 == value:
        return
    e = ClaimsEmbedder(seed=seed)
    k1, k2 = f"{topic}.{key}", f"{topic}.{other}"
    a = e.vector(k1, value, "i1")
    assert a @ e.vector(k1, value, "i2") > PARAPHRASE_MIN
    assert CHANGED[0] <= a @ e.vector(k1, value2, "i3") <= CHANGED[1]
    assert RELATED[0] <= a @ e.vector(k2, value, "i4") <= RELATED[1]
    assert abs(a @ e.vector(f"other{topic}x.{key}", value, "i5")) < UNRELATED_MAX


def test_unit_norm_and_embed_batch():
    e = ClaimsEmbedder(dim=100)
    claims = [Claim(key=f"a.k{i}", value=str(i)) for i in range(20)]
    v = e.embed(claims, [f"x{i}" for i in range(20)])
    assert v.dtype == np.float32 and v.shape == (20, 100)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)
    assert np.array_equal(v[3], e.embed(claims[3:4], ["x3"])[0])


def test_same_seed_same_vector_and_seed_matters():
    a, b = ClaimsEmbedder(seed=7), ClaimsEmbedder(seed=7)
    b.vector("z.q", "1", "other")  # warm a different cache entry first
    assert np.array_equal(a.vector("o.name", "Ada", "e1#0"), b.vector("o.name", "Ada", "e1#0"))
    c = ClaimsEmbedder(seed=8)
    assert not np.allclose(a.vector("o.name", "Ada", "e1#0"), c.vector("o.name", "Ada", "e1#0"))
    assert not np.array_equal(a.vector("o.name", "Ada", "e1#0"), a.vector("o.name", "Ada", "e2#0"))


def test_query_same_cosine_for_every_value():
    e = ClaimsEmbedder()
    q = e.embed_query(["o.city"])
    cos = [q @ e.vector("o.city", v, f"i{v}") for v in ("Paris", "Rome", "Oslo")]
    np.testing.assert_allclose(cos, np.sqrt(Bands().changed_value), rtol=1e-6)
    assert abs(q @ e.vector("o.job", "x", "j")) < np.sqrt(Bands().changed_value)
    q2 = e.embed_query(["o.city", "p.pet"])
    assert np.linalg.norm(q2) == pytest.approx(1.0, rel=1e-6)
    assert q2 @ e.vector("p.pet", "dog", "k") > 0.5
    with pytest.raises(ValueError):
        e.embed_query([])


def test_custom_bands_move_means():
    b = Bands(paraphrase=0.97, changed_value=0.6, related=0.3)
    p, c, r, u = pair_cosines(ClaimsEmbedder(bands=b), 500)
    assert p.mean() == pytest.approx(0.97, abs=0.01)
    assert c.mean() == pytest.approx(0.6, abs=0.01)
    assert r.mean() == pytest.approx(0.3, abs=0.01)


def test_spread_widens_bands_keeps_means():
    calm = pair_cosines(ClaimsEmbedder(), 800)
    wild = pair_cosines(ClaimsEmbedder(bands=Bands(spread=3.0)), 800)
    means = [Bands().paraphrase, Bands().changed_value, Bands().related, 0.0]
    for row in range(4):
        assert wild[row].std() > 2 * calm[row].std()
        assert wild[row].mean() == pytest.approx(means[row], abs=0.03)
    # spread below 1 cannot beat the dimension's jitter floor: same as calibrated
    low = ClaimsEmbedder(bands=Bands(spread=0.0))
    assert np.array_equal(low.vector("a.b", "c", "d"), ClaimsEmbedder().vector("a.b", "c", "d"))


def test_bad_dim():
    with pytest.raises(ParamError):
        ClaimsEmbedder(dim=2)
    with pytest.raises(ParamError):
        TextEmbedder(dim=0)


def test_stable_hash_is_stable():
    # fixed values: blake2b, not Python's salted hash()
    assert stable_hash(0, "a", "b") == 7692335375239204862
    assert stable_uniform(3, "op", "key") == 0.6649424288947988
    assert stable_hash(0, "a", "b") != stable_hash(0, "ab", "")
    assert stable_hash(0, "x") != stable_hash(1, "x")
    assert 0.0 <= stable_uniform(3, "op", "key") < 1.0


# -- text embedder ----------------------------------------------------------------


def test_text_identical_and_deterministic():
    t = TextEmbedder()
    texts = ["I moved to Lisbon last spring", "Caroline adopted a dog named Rex"]
    v = t.embed(texts)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert float(v[0] @ t.embed_one("I moved to Lisbon last spring")) == pytest.approx(
        1.0, abs=1e-6
    )
    assert np.array_equal(v, TextEmbedder().embed(texts))
    assert np.array_equal(v[1], TextEmbedder().embed([texts[1]])[0])
    assert not np.allclose(v, TextEmbedder(seed=1).embed(texts))


def _text_rows_as_written(t: TextEmbedder, texts: list[str]) -> np.ndarray:
    """TextEmbedder's formula as its docstring states it, feature by feature: each text's
    features with their weights, np.unique over (row, feature) pairs for the counts, the
    signed 1 + ln(count) weights added into their slots in that order, rows normalized."""
    import re

    keys, weights = [], []
    for i, text in enumerate(texts):
        words = re.findall(r"[0-9a-z]+(?:'[0-9a-z]+)*", text.lower())
        for w in words:
            for j, f in enumerate(t._word_features(w)[0].tolist()):
                keys.append((i, f))
                weights.append(t.WORD if j == 0 else t.CHAR)
        for a, b in zip(words, words[1:]):
            keys.append((i, t._bigram(a, b)))
            weights.append(t.BIGRAM)
    out = np.zeros((len(texts), t.dim))
    if keys:
        pairs = np.array(keys, dtype=np.uint64)
        uniq, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
        tf = np.array(weights)[first] * (1.0 + np.log(counts))
        sign = np.where((uniq[:, 1] >> np.uint64(63)) == 1, -1.0, 1.0)
        slot = (uniq[:, 1] % np.uint64(t.dim)).astype(np.int64)
        np.add.at(out, (uniq[:, 0].astype(np.int64), slot), sign * tf)
    norms = np.linalg.norm(out, axis=1)
    empty = norms == 0
    norms[empty] = 1.0
    unit = (out / norms[:, None]).astype(np.float32)
    unit[empty] = t._empty
    return unit


_WORDS = ["the", "user", "moved", "to", "denver", "a", "job", "tea", "ünï", "it's", "42", "x"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_WORDS + ["!", ""]), max_size=30), min_size=1, max_size=5),
    st.sampled_from([3, 7, 384]),
    st.integers(0, 3),
)
def test_text_embedding_is_its_formula_bit_for_bit(words, dim, seed):
    """The embedder's grouping of repeated features (one stable sort of the (row, feature)
    pairs) gives np.unique's pairs, first occurrences and counts: the same bits as the
    formula written feature by feature, for batches with repeated words, repeated bigrams
    and texts without words."""
    texts = [" ".join(ws) for ws in words]
    t = TextEmbedder(dim, seed)
    assert t.embed(texts).tobytes() == _text_rows_as_written(t, texts).tobytes()


def test_text_shared_words_score_higher():
    t = TextEmbedder()
    a, b, c = t.embed(
        [
            "my sister loves hiking in the mountains",
            "my sister went hiking in the mountains again",
            "quarterly tax report deadline tomorrow",
        ]
    )
    assert a @ b > 0.4
    assert a @ b > a @ c + 0.3
    assert abs(a @ c) < 0.2
    # case and punctuation do not matter
    x, y = t.embed(["Hello, World!", "hello world"])
    assert x @ y == pytest.approx(1.0, abs=1e-6)


def test_text_empty_is_fixed_unit_vector():
    t = TextEmbedder(dim=64)
    v = t.embed(["", "   ", "?!", "word"])
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert np.array_equal(v[0], v[1]) and np.array_equal(v[0], v[2])
    assert np.array_equal(v[0], TextEmbedder(dim=64).embed([""])[0])
    assert t.embed([]).shape == (0, 64)


@given(st.lists(st.text(max_size=40), min_size=1, max_size=8))
def test_text_batch_equals_one_by_one(texts):
    t = TextEmbedder(dim=48)
    batch = t.embed(texts)
    assert np.isfinite(batch).all()
    single = np.stack([TextEmbedder(dim=48).embed([s])[0] for s in texts])
    assert np.array_equal(batch, single)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, rtol=1e-5)


def test_text_sublinear_tf():
    t = TextEmbedder()
    once, many, other = t.embed(["dog cat", "dog dog dog dog dog dog dog dog cat", "cat"])
    # repeating a word shifts the vector, but sublinearly: still close to the original
    assert 0.6 < once @ many < 1.0
    assert many @ other > 0.2


def test_stable_hash_is_the_same_in_another_process():
    """A fresh interpreter with another PYTHONHASHSEED gives the same number (salted hash()
    would not)."""
    import os
    import subprocess
    import sys

    code = "from memsim.engine.embed import stable_hash; print(stable_hash(0, 'a', 'b'))"
    for salt in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": salt},
        )
        assert int(out.stdout) == stable_hash(0, "a", "b") == 7692335375239204862


# -- the batched draws (ClaimsEmbedder.vectors from _BATCH_DRAWS claims on) ------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=20))
def test_pcg64_states_are_numpys_seeding(seeds):
    """pcg64_states reproduces SeedSequence + PCG64 seeding: the state default_rng(s)
    starts from, for any 64-bit seed (one or two 32-bit words)."""
    from memsim.engine.embed import pcg64_states

    seeds = seeds + [0, 1, 2**32 - 1, 2**32, 2**64 - 1]
    want = [np.random.default_rng(s).bit_generator.state["state"] for s in seeds]
    got = pcg64_states(seeds).tolist()
    assert [(s_hi << 64 | s_lo, i_hi << 64 | i_lo) for s_lo, s_hi, i_lo, i_hi in got] == [
        (w["state"], w["inc"]) for w in want
    ]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=8), max_size=12), st.integers(0, 2**40))
def test_stable_hashes_are_stable_hash(names, seed):
    from memsim.engine.embed import stable_hashes

    got = stable_hashes(seed, "item", names)
    assert got.dtype == np.uint64
    assert got.tolist() == [stable_hash(seed, "item", name) for name in names]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=8), min_size=1, max_size=12), st.integers(0, 99))
def test_stable_normals_are_stable_rng_draws(names, seed):
    from memsim.engine.embed import stable_normals, stable_rng

    got = stable_normals(seed, "item", names, 33)
    for row, name in zip(got, names):
        assert row.tobytes() == stable_rng(seed, "item", name).standard_normal(33).tobytes()


def test_stable_normals_set_states_through_the_c_layout_or_numpys_setter(monkeypatch):
    """On this numpy the states are written into the generator's C struct (checked against
    numpy's own state reader); where that check fails, numpy's setter gives the same draws."""
    import threading

    from memsim.engine import embed

    names = [f"ep{i}#0" for i in range(40)]
    want = np.array([embed.stable_rng(3, "item", n).standard_normal(96) for n in names])
    bit_gen = np.random.PCG64(0)
    assert embed._state_words(bit_gen) is not None
    assert embed._state_words(object()) is None  # no ctypes interface: numpy's setter
    assert embed.stable_normals(3, "item", names, 96).tobytes() == want.tobytes()
    monkeypatch.setattr(embed, "_state_words", lambda bit_gen: None)
    monkeypatch.setattr(embed, "_drawers", threading.local())
    assert embed.stable_normals(3, "item", names, 96).tobytes() == want.tobytes()
    assert embed._drawers.drawer[2] is None


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a.b", "a.c", "d.e", "f", "g.h.i"]), st.sampled_from("xyz")),
        min_size=0,
        max_size=30,
    ),
    st.sampled_from([1.0, 1.7]),
    st.sampled_from([3, 200_000]),
    st.booleans(),
)
def test_vectors_batch_is_one_by_one_bit_for_bit(claims, spread, cache_limit, warm):
    """The batched path (shared draws, one product per block) gives the bytes of vector()
    claim by claim, below and above _BATCH_DRAWS, cold or warm cache, and when the block
    cache overflows (a limit of 3) in the middle of a batch."""
    keys, values = [k for k, _ in claims], [v for _, v in claims]
    items = [f"e{i}#0" for i in range(len(claims))]
    batched = ClaimsEmbedder(dim=64, bands=Bands(spread=spread), seed=5)
    single = ClaimsEmbedder(dim=64, bands=Bands(spread=spread), seed=5)
    batched.CACHE_LIMIT = cache_limit
    if warm:
        batched.vectors(keys[:3], values[:3], ["warm"] * len(keys[:3]))
    got = batched.vectors(keys, values, items)
    assert got.shape == (len(claims), 64)
    for i in range(len(claims)):
        assert got[i].tobytes() == single.vector(keys[i], values[i], items[i]).tobytes()
    cl = [Claim(key=k, value=v) for k, v in claims]
    assert batched.embed(cl, items).tobytes() == got.astype(np.float32).tobytes()


def test_cached_blocks_handed_out_stay_when_the_cache_grows_and_starts_over():
    """Cached topic/key/value blocks live in one growing array per role: a block handed out
    keeps its bytes when the array grows (past its first 64 rows) and when the cache starts
    over at CACHE_LIMIT, and every block stays the one a fresh embedder draws."""
    e, fresh = ClaimsEmbedder(dim=64, seed=2), ClaimsEmbedder(dim=64, seed=2)
    first = e._block_vector(1, "key", "k0")
    kept = first.tobytes()
    keys = [f"t{i % 7}.k{i}" for i in range(150)]
    got = e.vectors(keys, ["v"] * 150, [f"x{i}" for i in range(150)])
    assert len(e._tables["key"].index) == 151 and len(e._tables["key"].rows) >= 151
    assert first.tobytes() == kept
    second = e._block_vector(1, "key", keys[5])  # a row of the grown array
    kept_second = second.tobytes()
    e.CACHE_LIMIT = 30
    for i, key in enumerate(keys[:40]):  # one at a time: starts over every few claims
        want = fresh.vector(key, "w", f"x{i}").tobytes()
        assert e.vector(key, "w", f"x{i}").tobytes() == want
    assert sum(len(t.index) for t in e._tables.values()) <= 30
    assert first.tobytes() == kept == fresh._block_vector(1, "key", "k0").tobytes()
    assert second.tobytes() == kept_second == fresh._block_vector(1, "key", keys[5]).tobytes()
    again = e.vectors(keys, ["v"] * 150, [f"x{i}" for i in range(150)])  # over the limit
    assert again.tobytes() == got.tobytes()


def test_vectors_batch_refuses_a_text_only_claim():
    e = ClaimsEmbedder()
    with pytest.raises(ValueError, match="text-only claim"):
        e.vectors(["a.b"] * 9 + [""], ["1"] * 10, [str(i) for i in range(10)])
    with pytest.raises(ValueError, match="3 keys, 2 values"):
        e.vectors(["a.b"] * 3, ["1"] * 2, ["x"] * 3)


def test_loading_wordllama_leaves_the_root_logger_as_it_was():
    """wordllama's import configures the root logger at INFO; memsim keeps it as the user had
    it, so library INFO lines (faiss's loader) never reach a terminal. In a fresh process:
    the module may already be imported in this one."""
    import subprocess
    import sys

    code = (
        "import logging\n"
        "from memsim.engine.embed import import_wordllama, make_text_embedder\n"
        "import_wordllama()\n"
        "make_text_embedder('wordllama', 64, 0).embed(['hello'])\n"
        "import faiss\n"
        "root = logging.getLogger()\n"
        "assert root.level == logging.WARNING and not root.handlers, (root.level, root.handlers)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "INFO" not in done.stderr
