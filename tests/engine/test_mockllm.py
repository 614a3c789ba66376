"""MockLLM: protocol conformance, determinism, fault rates, classify truth table."""

import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import (
    CONTRADICTS,
    IRRELEVANT,
    LLM,
    NONE,
    PARTIAL,
    RELATIONS,
    SUPPORTS,
    Bands,
    Faults,
    Modes,
)
from memsim.engine.mockllm import (
    CATEGORIES,
    INVALID_REPLIES,
    MIN_CONTENT_WORDS,
    MockLLM,
    _synthesized,
    truth_relation,
    truth_relations,
)


def ep(i, claims=(), text="some text", speaker="user"):
    return Episode(id=f"ep{i}", time=float(i), text=text, claims=tuple(claims), speaker=speaker)


def claim(key, value="v", **kw):
    return Claim(key=key, value=value, **kw)


EPISODES = [
    ep(
        i,
        [
            claim(f"t{i % 7}.k{i}", f"v{i}", importance=(i % 10) / 10, category=CATEGORIES[i % 7]),
            claim(f"t{i % 5}.j{i}", f"w{i}"),
        ],
    )
    for i in range(400)
]


def test_implements_protocol():
    llm = MockLLM()
    assert isinstance(llm, LLM)
    assert llm.dim == 384 and llm.seed == 0
    assert llm.config() == {
        "llm": "mock",
        "seed": 0,
        "dim": 384,
        "text_embedder": "hashed",
        "bands": Bands().to_dict(),
        "modes": Modes().to_dict(),
        "faults": Faults().to_dict(),
    }


def test_extract_passes_claims_through_without_faults():
    llm = MockLLM()
    for e in EPISODES[:20]:
        assert llm.extract(e) == e.claims


# one value per mode or fault _noisy reads that changes some claim of NOISY_EPISODES
_CHANGING = [
    ("modes", "chatter_confidence", 0.3),
    ("modes", "fact_confidence_spread", 0.2),
    ("modes", "entity_forms", 3),
    ("modes", "resolution_error", 0.5),
    ("faults", "importance_jitter", 0.2),
    ("faults", "wrong_category", 0.5),
]
NOISY_EPISODES = EPISODES[:40] + [
    ep(1000 + i, [claim(f"t.c{i}", "hi", noise=True, importance=0.5)]) for i in range(40)
]


@pytest.mark.parametrize(("group", "name", "value"), _CHANGING)
def test_extract_skips_the_noise_only_when_no_mode_or_fault_can_change_a_claim(group, name, value):
    """extract's shortcut (the claims as given) is taken at the defaults only: with any one
    mode or fault of _noisy set, it is not, and the claims are _noisy's (some changed);
    setting llm.modes or llm.faults after a call is seen."""
    llm = MockLLM()
    assert [llm.extract(e) for e in NOISY_EPISODES] == [e.claims for e in NOISY_EPISODES]
    if group == "modes":
        llm.modes = Modes(**{name: value})
    else:
        llm.faults = Faults(**{name: value})
    got = [llm.extract(e) for e in NOISY_EPISODES]
    want = [
        tuple(llm._noisy(c, f"{e.id}#{i}") for i, c in enumerate(e.claims)) for e in NOISY_EPISODES
    ]
    assert got == want
    assert got != [e.claims for e in NOISY_EPISODES]


def _read_settings(*functions) -> set[str]:
    """The mode and fault names ``functions`` read: ``m.x``/``f.x`` (their locals for
    self.modes and self.faults) and ``self.modes.x``/``self.faults.x``."""
    import ast
    import inspect
    import textwrap

    names = set()
    for fn in functions:
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
            if not isinstance(node, ast.Attribute):
                continue
            v = node.value
            if isinstance(v, ast.Name) and v.id in ("m", "f"):
                names.add(node.attr)
            elif isinstance(v, ast.Attribute) and v.attr in ("modes", "faults"):
                names.add(node.attr)
    return names


def test_the_extract_shortcut_knows_every_mode_and_fault_noisy_reads():
    """_extraction_is_exact lists the modes and faults _noisy (and _surface_key) read: a
    mode added to _noisy but not to it would be skipped at its defaults-only shortcut, and
    this test (and _CHANGING's, one changing value per name) would not see it otherwise."""
    noisy = _read_settings(MockLLM._noisy, MockLLM._surface_key)
    assert noisy == _read_settings(MockLLM._extraction_is_exact)
    assert noisy == {name for _, name, _ in _CHANGING}


def test_extract_text_only_episode():
    llm = MockLLM()
    assert llm.extract(ep(1, text="hello there")) == (
        Claim(key="", value="hello there", category="fact", subject="owner"),  # importance unset
    )
    got = llm.extract(ep(2, text="I adopted a dog", speaker="Caroline"))
    assert got[0].subject == "caroline" and got[0].key == "" and got[0].value == "I adopted a dog"


def test_deterministic_across_instances_and_orders():
    f = Faults(
        extract_fail=0.3,
        embed_fail=0.3,
        importance_jitter=0.2,
        wrong_category=0.3,
        wrong_class=0.2,
        invalid_answer=0.2,
    )
    a, b = MockLLM(seed=5, faults=f), MockLLM(seed=5, faults=f)
    fwd = [a.extract(e) for e in EPISODES]
    rev = [b.extract(e) for e in reversed(EPISODES)][::-1]
    assert fwd == rev
    items = [c for e in EPISODES for c in e.claims] + ["free text one", "another text", ""]
    keys = [f"it{i}" for i in range(len(items))]
    batch = a.embed(items, keys)
    singles = [b.embed([x], [k]) for x, k in reversed(list(zip(items, keys)))][::-1]
    assert np.array_equal(batch.vectors, np.concatenate([s.vectors for s in singles]))
    assert np.array_equal(batch.ok, np.concatenate([s.ok for s in singles]))
    cands = [claim("a.b", "1"), claim("a.b", "2"), claim("a.c", "1")]
    for i in range(50):
        assert a.classify(claim("a.b", "2"), cands, answer="index", key=f"c{i}") == b.classify(
            claim("a.b", "2"), cands, answer="index", key=f"c{i}"
        )
        assert a.classify(claim("a.b", "2"), cands, answer="relation", key=f"c{i}") == b.classify(
            claim("a.b", "2"), cands, answer="relation", key=f"c{i}"
        )


def test_seed_changes_answers():
    f = Faults(extract_fail=0.5)
    a = [MockLLM(seed=1, faults=f).extract(e) is None for e in EPISODES]
    b = [MockLLM(seed=2, faults=f).extract(e) is None for e in EPISODES]
    assert a != b


def test_embed_unit_rows_and_failures():
    llm = MockLLM(faults=Faults(embed_fail=0.0))
    e = llm.embed([claim("a.b", "x"), claim("", "just text"), "plain string"], ["i0", "i1", "i2"])
    assert e.vectors.dtype == np.float32 and e.vectors.shape == (3, 384)
    assert e.ok.all()
    np.testing.assert_allclose(np.linalg.norm(e.vectors, axis=1), 1.0, rtol=1e-5)
    # a text-only claim is embedded like its text
    assert np.array_equal(e.vectors[1], llm.embed(["just text"], ["zz"]).vectors[0])
    bad = MockLLM(faults=Faults(embed_fail=1.0)).embed([claim("a.b"), "x"], ["i0", "i1"])
    assert not bad.ok.any() and not bad.vectors.any()
    with pytest.raises(ValueError):
        llm.embed(["a"], ["k1", "k2"])


def test_embed_query():
    llm = MockLLM()
    q = Query(id="q1", time=1.0, text="what is my name?", keys=("owner.name",))
    v = llm.embed_query(q)
    mem = llm.embed(
        [claim("owner.name", "Ada"), claim("owner.name", "Bea")], ["e1#0", "e2#0"]
    ).vectors
    cos = mem @ v
    assert cos[0] == pytest.approx(np.sqrt(Bands().changed_value), abs=0.06)
    assert cos[0] == pytest.approx(cos[1], abs=0.06)
    tq = Query(id="q2", time=1.0, text="where did we go hiking", answers=("ep1",))
    tv = llm.embed_query(tq)
    assert tv.shape == (384,) and np.linalg.norm(tv) == pytest.approx(1.0, rel=1e-5)
    assert MockLLM(faults=Faults(embed_fail=1.0)).embed_query(q) is None


def test_classify_truth_table():
    base = claim("owner.city", "Paris")
    assert truth_relation(base, claim("owner.city", "Paris")) == SUPPORTS
    assert truth_relation(base, claim("owner.city", " paris ")) == SUPPORTS
    assert truth_relation(base, claim("owner.city", "Rome")) == CONTRADICTS
    assert truth_relation(base, claim("owner.job", "Paris")) == IRRELEVANT
    ctx_a = claim("owner.city", "Paris", attrs=(("context", "work"),))
    ctx_b = claim("owner.city", "Rome", attrs=(("context", "holiday"),))
    ctx_c = claim("owner.city", "Rome", attrs=(("context", "work"),))
    assert truth_relation(ctx_a, ctx_b) == PARTIAL
    assert truth_relation(ctx_a, ctx_c) == CONTRADICTS  # same context: a real contradiction
    assert truth_relation(ctx_a, claim("owner.city", "Rome")) == CONTRADICTS  # one context only
    assert truth_relation(claim("", "Hello  World"), claim("", "hello world")) == SUPPORTS
    assert truth_relation(claim("", "hello"), claim("", "bye")) == IRRELEVANT
    assert truth_relation(claim("", "Paris"), base) == IRRELEVANT
    llm = MockLLM()
    cands = [
        claim("owner.job", "x"),
        claim("owner.city", "Paris"),
        claim("owner.city", "Rome"),
        ctx_b,
    ]
    assert llm.classify(base, cands, answer="relation", key="k") == [
        IRRELEVANT,
        SUPPORTS,
        CONTRADICTS,
        CONTRADICTS,
    ]
    assert llm.classify(base, cands, answer="index", key="k") == "3"
    assert llm.classify(base, cands[:2], answer="index", key="k") == NONE
    assert llm.classify(base, [], answer="index", key="k") == NONE
    assert llm.classify(base, [], answer="relation", key="k") == []
    with pytest.raises(ValueError):
        llm.classify(base, cands, answer="both", key="k")


def test_truth_relations_is_truth_relation_of_each():
    """The one loop over a belief's older claims (which reads the new claim's context once,
    at the first contradicting pair) answers each as truth_relation does, in order."""
    with_ctx = claim("owner.city", "Paris", attrs=(("context", "work"),))
    olds = [
        claim("owner.city", "Rome", attrs=(("context", "holiday"),)),  # PARTIAL
        claim("owner.city", " paris "),  # SUPPORTS
        claim("owner.job", "Rome"),  # IRRELEVANT
        claim("owner.city", "Rome"),  # CONTRADICTS: one context only
        claim("owner.city", "Oslo", attrs=(("context", "work"),)),  # CONTRADICTS
        claim("owner.city", "Oslo", attrs=(("context", "home"),)),  # PARTIAL
    ]
    for new in (with_ctx, claim("owner.city", "Paris"), claim("", "paris")):
        assert truth_relations(new, olds) == [truth_relation(new, o) for o in olds]
    assert truth_relations(with_ctx, olds) == [
        PARTIAL,
        SUPPORTS,
        IRRELEVANT,
        CONTRADICTS,
        CONTRADICTS,
        PARTIAL,
    ]
    assert truth_relations(with_ctx, []) == []


def _valid_index(reply, n):
    return reply == NONE or (reply.isdigit() and 1 <= int(reply) <= n)


def test_classify_faults_rate_zero_and_one():
    base = claim("owner.city", "Paris")
    cands = [claim("owner.city", "Rome"), claim("owner.job", "x"), claim("owner.city", "Paris")]
    truth_rel = [CONTRADICTS, IRRELEVANT, SUPPORTS]
    never = MockLLM(faults=Faults(wrong_class=0.0, invalid_answer=0.0))
    wrong = MockLLM(faults=Faults(wrong_class=1.0))
    invalid = MockLLM(faults=Faults(invalid_answer=1.0))
    for i in range(200):
        k = f"call{i}"
        assert never.classify(base, cands, answer="index", key=k) == "1"
        assert never.classify(base, cands, answer="relation", key=k) == truth_rel
        w = wrong.classify(base, cands, answer="index", key=k)
        assert w != "1" and _valid_index(w, 3)
        wr = wrong.classify(base, cands, answer="relation", key=k)
        assert all(r in RELATIONS and r != t for r, t in zip(wr, truth_rel))
        assert not _valid_index(invalid.classify(base, cands, answer="index", key=k), 3)
        assert all(
            r not in RELATIONS for r in invalid.classify(base, cands, answer="relation", key=k)
        )


def test_fault_rates_near_requested():
    n = 4000
    for rate in (0.1, 0.35):
        f = Faults(
            extract_fail=rate,
            embed_fail=rate,
            wrong_class=rate,
            invalid_answer=rate,
            wrong_category=rate,
        )
        llm = MockLLM(seed=3, faults=f)
        eps = [ep(i, [claim("a.b", category="fact")]) for i in range(n)]
        extracted = [llm.extract(e) for e in eps]
        tol = 4 * np.sqrt(rate * (1 - rate) / n)
        assert abs(np.mean([x is None for x in extracted]) - rate) < tol
        cats = [x[0].category != "fact" for x in extracted if x is not None]
        assert abs(np.mean(cats) - rate) < 2 * tol
        ok = llm.embed(["t"] * n, [f"k{i}" for i in range(n)]).ok
        assert abs(1 - ok.mean() - rate) < tol
        base, cands = claim("a.b", "1"), [claim("a.b", "2")]
        replies = [llm.classify(base, cands, answer="relation", key=f"c{i}")[0] for i in range(n)]
        invalid = np.mean([r not in RELATIONS for r in replies])
        wrong = np.mean([r in RELATIONS and r != CONTRADICTS for r in replies])
        assert abs(invalid - rate) < tol
        assert abs(wrong - (1 - rate) * rate) < tol  # wrong only where not already invalid


def test_importance_jitter():
    eps = [ep(i, [claim("a.b", importance=0.5)]) for i in range(3000)]
    assert all(
        MockLLM(faults=Faults(importance_jitter=0.0)).extract(e)[0].importance == 0.5 for e in eps
    )
    imp = np.array(
        [MockLLM(faults=Faults(importance_jitter=0.1)).extract(e)[0].importance for e in eps]
    )
    assert ((imp >= 0) & (imp <= 1)).all()
    assert abs(imp.mean() - 0.5) < 0.01 and abs(imp.std() - 0.1) < 0.01
    wide = np.array(
        [MockLLM(faults=Faults(importance_jitter=1.0)).extract(e)[0].importance for e in eps]
    )
    assert wide.min() == 0.0 and wide.max() == 1.0  # clipped
    assert MockLLM(faults=Faults(wrong_category=1.0)).extract(eps[0])[0].category in set(
        CATEGORIES
    ) - {"fact"}


def test_extract_fail_zero_and_one():
    assert all(MockLLM(faults=Faults(extract_fail=0.0)).extract(e) is not None for e in EPISODES)
    assert all(MockLLM(faults=Faults(extract_fail=1.0)).extract(e) is None for e in EPISODES)


def test_summarize():
    llm = MockLLM()
    assert llm.summarize(["hi", "ok thanks!", "lol same"], key="s") == NONE
    assert llm.summarize([], key="s") == NONE
    texts = [
        "We adopted a puppy named Rex last week, he is lovely.",
        "ok",
        "My sister moved to Lisbon for a new design job. She loves it.",
        "Planning a hiking trip to the Alps in July; need boots.",
        "Also bought a bike.",
    ]
    s = llm.summarize(texts, key="s")
    assert s == (
        "We adopted a puppy named Rex last week, he is lovely. "
        "My sister moved to Lisbon for a new design job. Planning a hiking trip to the Alps in "
        "July."
    )
    assert s == MockLLM(seed=9).summarize(texts, key="other")
    # the threshold is the documented constant
    words = [
        "apple",
        "river",
        "mountain",
        "guitar",
        "lemon",
        "castle",
        "rocket",
        "pencil",
        "violin",
    ]
    assert llm.summarize([" ".join(words[: MIN_CONTENT_WORDS - 1])], key="s") == NONE
    assert llm.summarize([" ".join(words[:MIN_CONTENT_WORDS])], key="s") != NONE


def test_synthesize_same_key():
    llm = MockLLM()
    cs = [
        claim("o.city", "Rome", category="fact", importance=0.2, confidence=0.5),
        claim("o.city", "Paris", category="event", importance=0.9, confidence=0.7),
        claim("o.city", "Rome", category="preference", importance=0.1, confidence=0.9),
        claim("o.city", "Paris", category="preference", importance=0.3, confidence=0.8),
    ]
    s = llm.synthesize(cs, key="x")
    assert s.key == "o.city" and s.value == "Paris"  # tie 2-2: Paris is seen last
    assert s.category == "preference"  # tie among Paris claims: last wins
    assert s.importance == 0.9 and s.confidence == pytest.approx(0.725)
    s2 = llm.synthesize(cs + [claim("o.city", "Rome", category="fact")], key="x")
    assert s2.value == "Rome" and s2.category == "fact"


def test_synthesize_mixed_keys():
    llm = MockLLM()
    cs = [claim("o.pets.dog", "Rex"), claim("o.pets.cat", "Tom"), claim("o.pets.dog", "Rex")]
    s = llm.synthesize(cs, key="x")
    assert (s.key, s.value, s.category) == ("o.pets", "Rex; Tom", "meta")
    s = llm.synthesize([claim("a.b", "1"), claim("c.d", "2")], key="x")
    assert (s.key, s.value) == ("misc", "1; 2")
    with pytest.raises(ValueError):
        llm.synthesize([], key="x")


_UNITS = st.floats(0.0, 1.0, allow_subnormal=True)
_NOTE = st.builds(
    claim,
    st.just("o.city"),
    st.sampled_from(["Rome", "Paris", "Oslo"]),
    category=st.sampled_from(CATEGORIES[:3]),
    importance=st.none() | _UNITS,
    confidence=_UNITS,
    subject=st.sampled_from(["", "ann", "bob"]),  # (the answer's other fields: the last's)
)


@given(
    st.lists(_NOTE, min_size=32, max_size=120),
    st.lists(st.integers(20, 120), min_size=1, max_size=6),
    st.sampled_from(["majority", "latest", "first", "all"]),
    st.none() | st.integers(0, 119),
    st.booleans(),
)
def test_synthesize_carried_on_equals_counted_again(notes, lengths, mode, other_key, reorder):
    """synthesize() of a node's growing notes (Cosmo's nightly call), carried on from the
    last call's tally (from 32 claims), is the claim counted again from the first, for every
    prefix asked in any order (a shorter one, one differing past its first claim), every
    mode, one key or several, confidences summed exactly (math.fsum's rounding)."""
    from memsim.engine.llm import Modes

    if other_key is not None and other_key < len(notes):  # a note of another key
        notes[other_key] = dataclasses.replace(notes[other_key], key="o.pet")
    llm = MockLLM(modes=Modes(synthesis=mode))
    for n in lengths:
        asked = list(notes[:n])
        if reorder and n > 2:  # the same first claim, the others in another order
            asked[1:] = asked[:0:-1]
            reorder = False
        assert llm.synthesize(asked, key="node") == _synthesized(asked, mode)
        counted = len(asked) >= 32 and mode != "all" and len({c.key for c in asked}) == 1
        if counted:
            assert llm._tallies[id(asked[0])].seen == asked


def test_synthesize_tally_is_dropped_from_copies_and_pickles():
    import copy

    llm = MockLLM()
    notes = [claim("o.city", f"v{i % 3}", confidence=i / 50) for i in range(40)]
    first = llm.synthesize(notes, key="n")
    assert len(llm._tallies) == 1
    for clone in (pickle.loads(pickle.dumps(llm)), copy.deepcopy(llm)):
        assert not clone._tallies and clone.synthesize(notes, key="n") == first


def test_pickle_round_trip():
    llm = MockLLM(seed=4, dim=64, faults=Faults(embed_fail=0.2))
    items = [claim("a.b", "1"), "hello world"]
    before = llm.embed(items, ["k1", "k2"])
    clone = pickle.loads(pickle.dumps(llm))
    assert clone.config() == llm.config()
    after = clone.embed(items, ["k1", "k2"])
    assert np.array_equal(before.vectors, after.vectors) and np.array_equal(before.ok, after.ok)
    assert [clone.extract(e) for e in EPISODES[:30]] == [llm.extract(e) for e in EPISODES[:30]]


@given(st.text(min_size=1, max_size=12), st.integers(0, 2**32))
def test_fault_free_is_truthful(key, seed):
    llm = MockLLM(seed=seed)
    new = claim("x.y", "1")
    cands = [claim("x.y", "1"), claim("x.z", "1"), claim("x.y", "2")]
    assert llm.classify(new, cands, answer="relation", key=key) == [
        SUPPORTS,
        IRRELEVANT,
        CONTRADICTS,
    ]
    assert llm.classify(new, cands, answer="index", key=key) == "3"


def test_invalid_replies_are_not_relations():
    assert not set(INVALID_REPLIES) & set(RELATIONS) and NONE not in INVALID_REPLIES


# -- explicit modes (docs/mock-llm.md) ----------------------------------------


def _mock(**modes):
    from memsim.engine.llm import Modes

    return MockLLM(seed=0, modes=Modes(**modes))


SYN = [claim("a.k", "v1"), claim("a.k", "v2"), claim("a.k", "v1"), claim("a.k", "v3")]


@pytest.mark.parametrize(
    "mode, value",
    [
        ("majority", "v1"),
        ("latest", "v3"),
        ("first", "v1"),
        ("all", "v1 @1,3; v2 @2; v3 @4"),
    ],
)
def test_synthesis_modes(mode, value):
    out = _mock(synthesis=mode).synthesize(SYN, key="s")
    assert (out.key, out.value) == ("a.k", value)


def test_synthesis_all_with_one_value_is_that_value():
    out = _mock(synthesis="all").synthesize([claim("a.k", "v1")] * 2, key="s")
    assert out.value == "v1"


def test_default_modes_are_todays_behaviour():
    from memsim.engine.llm import Modes

    assert Modes().to_dict() == {
        "synthesis": "majority",
        "summary": "given",
        "entity_forms": 1,
        "resolution_error": 0.0,
        "chatter_confidence": -1.0,
        "fact_confidence_spread": 0.0,
        "query_value": 0.0,
    }
    assert MockLLM(seed=0).config()["modes"] == Modes().to_dict()


TEXTS = [
    "We moved the standup to Tuesday morning for the whole team.",
    "The budget review slipped to next quarter after the audit.",
    "Priya is taking over the onboarding docs starting Monday.",
    "Remember the dentist appointment on Friday afternoon please.",
]


@pytest.mark.parametrize(
    "mode, firsts",
    [
        ("given", ["We", "The", "Priya"]),
        ("latest", ["Remember"]),
        ("first", ["We"]),
        ("all", ["We", "The", "Priya", "Remember"]),
    ],
)
def test_summary_modes(mode, firsts):
    out = _mock(summary=mode).summarize(TEXTS, key="s")
    sentences = [x for x in out.split(". ") if x]
    assert [x.split()[0] for x in sentences] == firsts


def test_summary_mode_keeps_none_for_chat():
    assert _mock(summary="latest").summarize(["hi", "ok thanks!"], key="s") == "NONE"


def test_entity_forms_spread_one_key_over_k_surface_forms():
    m = _mock(entity_forms=3)
    keys = {m.extract(ep(i, (claim("t01.f0001"),)))[0].key for i in range(60)}
    assert keys == {"t01.f0001", "t01.f0001~1", "t01.f0001~2"}
    exact = _mock()
    assert {exact.extract(ep(i, (claim("t01.f0001"),)))[0].key for i in range(20)} == {"t01.f0001"}


def test_resolution_error_rate():
    m = _mock(resolution_error=0.3)
    keys = [m.extract(ep(i, (claim("t01.f0001"),)))[0].key for i in range(400)]
    wrong = sum(k != "t01.f0001" for k in keys) / len(keys)
    assert 0.22 < wrong < 0.38
    assert all(k.startswith("t01.f0001~?") for k in keys if k != "t01.f0001")
    assert _mock(resolution_error=1.0).extract(ep(1, (claim("t01.f0001"),)))[0].key != "t01.f0001"


def test_chatter_and_fact_confidence_modes():
    chat = claim("chatter01.c1", "", noise=True, confidence=0.5)
    fact = claim("t01.f0001", "v", confidence=0.9)
    assert _mock().extract(ep(1, (chat,)))[0].confidence == 0.5  # as the stream states
    assert _mock(chatter_confidence=0.9).extract(ep(1, (chat,)))[0].confidence == 0.9
    assert _mock(chatter_confidence=0.9).extract(ep(1, (fact,)))[0].confidence == 0.9
    spread = _mock(fact_confidence_spread=0.2)
    confs = [spread.extract(ep(i, (fact,)))[0].confidence for i in range(200)]
    assert 0.0 <= min(confs) and max(confs) <= 1.0
    assert 0.05 < float(np.std(confs)) < 0.25
    assert spread.extract(ep(1, (chat,)))[0].confidence == 0.5  # chatter untouched


def test_classification_mode_is_truth_plus_wrong_class_rate():
    from memsim.engine.llm import Faults

    m = MockLLM(seed=0, faults=Faults(wrong_class=0.25))
    new, old = claim("a.k", "v2"), claim("a.k", "v1")
    replies = [m.classify(new, [old], answer="relation", key=f"c{i}")[0] for i in range(400)]
    wrong = sum(r != "CONTRADICTS" for r in replies) / len(replies)
    assert 0.18 < wrong < 0.32


@pytest.mark.parametrize(
    "field, value",
    [
        ("synthesis", "median"),
        ("summary", "best"),
        ("resolution_error", 1.5),
        ("resolution_error", -0.1),
        ("chatter_confidence", 2.0),
        ("entity_forms", 0),
        ("query_value", 1.5),
        ("query_value", -0.2),
    ],
)
def test_bad_modes_are_one_line_errors_naming_key_and_value(field, value):
    from memsim.engine.errors import ParamError
    from memsim.engine.llm import Modes

    with pytest.raises(ParamError) as exc:
        Modes(**{field: value})
    msg = str(exc.value)
    assert "\n" not in msg and field in msg and str(value) in msg


def _value_stream():
    from memsim.engine.events import Stream

    evs = (
        Episode("e1", 1.0, "city", (claim("owner.city", "Boston"),)),
        Episode("e2", 2.0, "city", (claim("owner.city", "Denver"),)),
        Query("q1", 3.0, "where do I live?", keys=("owner.city",)),
        Query("q0", 0.5, "where do I live?", keys=("owner.city",)),
    )
    return Stream(tuple(sorted(evs, key=lambda e: e.time)), name="v", horizon=4.0)


@pytest.mark.parametrize("qv", [0.0, 0.3, 1.0])
def test_query_value_mode_moves_the_query_towards_the_current_value(qv):
    """0: a question has the same cosine with every value of its fact (the key only); a
    larger share of the current value's block puts the current value above a stale one,
    by a margin growing with the share; a query asked before the fact was stated, or
    one the stream does not hold, carries no value."""
    from memsim.engine.truth import GroundTruth

    stream = _value_stream()
    m = _mock(query_value=qv)
    m.bind_truth(GroundTruth(stream))
    mem = m.embed([claim("owner.city", "Boston"), claim("owner.city", "Denver")], ["x1", "x2"])
    q1 = next(e for e in stream.events if getattr(e, "id", "") == "q1")
    v = m.embed_query(q1)
    stale, current = (mem.vectors @ v).tolist()
    plain = _mock().embed_query(q1)
    gap0 = float((mem.vectors @ plain)[1] - (mem.vectors @ plain)[0])
    if qv == 0.0:
        np.testing.assert_array_equal(v, plain)
    else:
        assert current - stale > gap0 + 0.1 * qv
    if qv == 1.0:  # as specific as a statement of the fact: about the paraphrase band
        assert current > 0.85 > stale
    q0 = next(e for e in stream.events if getattr(e, "id", "") == "q0")
    np.testing.assert_array_equal(m.embed_query(q0), plain)  # nothing stated yet
    probe = Query("probe", 3.0, "?", keys=("owner.city",))
    np.testing.assert_array_equal(m.embed_query(probe), plain)


def test_query_value_mode_needs_the_truth_bound():
    q = Query("q1", 3.0, "where?", keys=("owner.city",))
    with pytest.raises(RuntimeError, match="modes.query_value=0.5 needs the stream's truth"):
        _mock(query_value=0.5).embed_query(q)
