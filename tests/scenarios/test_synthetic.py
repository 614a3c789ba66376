"""Synthetic generator: determinism, what each profile promises, overrides, bad options."""

from __future__ import annotations

import dataclasses
import math
import pickle
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import scenarios
from memsim.engine.errors import MemsimError, ParamError, ScenarioError, UnknownIdError
from memsim.engine.events import Episode, Query
from memsim.engine.llm import Bands, Faults
from scenarios import synthetic
from scenarios.synthetic import PROFILES, SyntheticParams, generate

SMALL = dict(episodes=600, queries=80, facts=40, topics=6, horizon=90.0)


def _stream(profile="steady", seed=0, **kw):
    p = synthetic.profile_params(profile, **{**SMALL, **kw})
    return generate(p, seed, profile_name=profile)


def test_same_seed_same_bytes_other_seed_differs():
    a, b = _stream(seed=7), _stream(seed=7)
    assert pickle.dumps(a) == pickle.dumps(b)
    c = _stream(seed=8)
    assert pickle.dumps(a) != pickle.dumps(c)


def test_load_by_spec_equals_generate_and_names_the_spec():
    spec = "synthetic:churn,episodes=600,queries=80,facts=40,topics=6,horizon=90"
    s = scenarios.load(spec, seed=3)
    assert s.name == spec
    assert pickle.dumps(s.events) == pickle.dumps(_stream("churn", seed=3).events)
    assert s.description == PROFILES["churn"].description
    assert dict(s.meta)["profile"] == "churn"


@pytest.mark.parametrize("profile", list(PROFILES))
def test_profile_streams_are_valid(profile):
    s = _stream(profile, seed=1)
    p = synthetic.profile_params(profile, **SMALL)
    eps, qs = s.episodes, s.queries
    assert len(eps) == p.episodes and len(qs) == p.queries
    assert s.horizon == p.horizon and all(0 <= e.time <= p.horizon for e in s)
    introduced: dict[str, float] = {}
    for ev in s:
        if isinstance(ev, Episode):
            (c,) = ev.claims
            introduced.setdefault(c.key, ev.time)
        else:
            (key,) = ev.keys
            assert key in introduced and introduced[key] < ev.time, (
                "a query asks about a fact said before"
            )
            assert ev.group in ("popular", "recent", "changed") and ev.k == p.k
    noise = sum(e.claims[0].noise for e in eps)
    assert noise == p.episodes - p.signal_episodes
    assert len({e.claims[0].key for e in eps if not e.claims[0].noise}) == p.facts


def test_churn_changes_more_than_steady_and_asks_about_changes():
    def changes(s):
        last, n = {}, 0
        for e in s.episodes:
            c = e.claims[0]
            if c.noise:
                continue
            n += c.key in last and last[c.key] != c.value
            last[c.key] = c.value
        return n

    steady, churn = _stream("steady", 2), _stream("churn", 2)
    assert changes(churn) > 5 * max(changes(steady), 1)
    assert changes(churn) == dict(churn.meta)["counts"]["value_changes"]
    groups = Counter(q.group for q in churn.queries)
    assert groups["changed"] > 0.3 * len(churn.queries)


def test_changed_queries_ask_about_a_fact_whose_value_changed_before():
    s = _stream("churn", 4)
    values: dict[str, set] = defaultdict(set)
    for ev in s:
        if isinstance(ev, Episode) and not ev.claims[0].noise:
            values[ev.claims[0].key].add(ev.claims[0].value)
        elif isinstance(ev, Query) and ev.group == "changed":
            assert len(values[ev.keys[0]]) >= 2


def test_recent_queries_ask_about_a_recent_mention():
    s = _stream("steady", 5, ask_recent=0.8, ask_changed=0.0)
    last: dict[str, float] = {}
    n = 0
    for ev in s:
        if isinstance(ev, Episode):
            last[ev.claims[0].key] = ev.time
        elif ev.group == "recent":
            n += 1
            assert ev.time - last[ev.keys[0]] <= 7.0
    assert n > 30


def test_noisy_is_mostly_noise():
    s = scenarios.load("synthetic:noisy,episodes=1000,queries=20,facts=40", seed=0)
    share = np.mean([e.claims[0].noise for e in s.episodes])
    assert share == pytest.approx(0.8, abs=0.01)


def test_longgap_mentions_early_asks_late():
    s = _stream("longgap", 6)
    h = s.horizon
    assert max(e.time for e in s.episodes if not e.claims[0].noise) <= 0.3 * h + 1e-9
    assert min(q.time for q in s.queries) >= 0.7 * h


def test_subjects_and_popularity():
    s = _stream("steady", 8, other_subject_share=0.5, people=3)
    subjects = Counter(e.claims[0].subject for e in s.episodes if not e.claims[0].noise)
    assert set(subjects) <= {"owner", "alex", "sam", "maria"} and len(subjects) >= 3
    for q in s.queries:
        assert q.subject in ("", "alex", "sam", "maria")
    mentions = Counter(e.claims[0].key for e in s.episodes if not e.claims[0].noise)
    counts = sorted(mentions.values(), reverse=True)
    assert counts[0] > 5 * counts[len(counts) // 2], "Zipf: a few facts are mentioned far more"


def test_spaced_facts_have_growing_gaps():
    s = _stream("steady", 9, spaced_share=1.0, burst_share=0.0, mention_skew=0.0, change_share=0.0)
    times: dict[str, list[float]] = defaultdict(list)
    for e in s.episodes:
        if not e.claims[0].noise:
            times[e.claims[0].key].append(e.time)
    grew = [np.all(np.diff(np.diff(t)) >= -1e-6) for t in times.values() if len(t) >= 4]
    assert grew and all(grew)


def test_bursty_facts_cluster_in_time():
    def gaps(share):
        s = _stream("steady", 10, burst_share=share, spaced_share=0.0, mention_skew=0.0, bursts=2)
        t: dict[str, list[float]] = defaultdict(list)
        for e in s.episodes:
            if not e.claims[0].noise:
                t[e.claims[0].key].append(e.time)
        return np.median([np.median(np.diff(v)) for v in t.values() if len(v) > 3])

    assert gaps(1.0) < 0.5 * gaps(0.0)


def test_bands_and_faults_in_meta_build_a_mock():
    s = scenarios.load(
        "synthetic:steady,episodes=300,queries=10,facts=20,faults.wrong_class=0.1,bands.spread=2"
    )
    meta = dict(s.meta)
    assert meta["faults"]["wrong_class"] == 0.1 and meta["bands"]["spread"] == 2.0
    assert Bands(**meta["bands"]).spread == 2.0 and Faults(**meta["faults"]).wrong_class == 0.1
    assert meta["params"]["episodes"] == 300


@pytest.mark.parametrize(
    "spec, match",
    [
        (
            "synthetic:nope",
            "unknown synthetic profile 'nope'; known: steady, churn, noisy, longgap",
        ),
        ("synthetic:steady,colour=red", "unknown option 'colour'"),
        ("synthetic:steady,episodes=many", "cannot read 'many'"),
        ("synthetic:steady,noise_share=1.5", r"noise_share=1.5 is outside"),
        ("synthetic:steady,faults.nope=1", "unknown option 'faults.nope'"),
        ("synthetic:steady,faults.wrong_class=2", "wrong_class=2.0 is outside"),
        ("synthetic:steady,episodes", "is not key=value"),
        ("synthetic:steady,episodes=100,facts=200", "fewer than facts=200"),
        ("synthetic:steady,burst_share=0.7,spaced_share=0.7", "exceeds 1"),
    ],
)
def test_bad_options_name_the_value(spec, match):
    with pytest.raises((ScenarioError, ParamError, UnknownIdError), match=match):
        scenarios.load(spec)


def test_bad_seed():
    with pytest.raises(ScenarioError, match="seed"):
        generate("steady", -1)


def test_params_are_frozen_and_ranged():
    p = SyntheticParams()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.episodes = 3  # type: ignore[misc]
    with pytest.raises(ParamError):
        SyntheticParams(horizon=0.5)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_every_event_passes_the_validating_constructors(profile):
    """The generator builds events without per-object validation (speed); rebuilding each
    through its validating constructor must give an equal object of plain Python types."""
    import dataclasses

    from memsim.engine.events import Claim, Stream

    s = _stream(profile, seed=11)
    for ev in s:
        fields = {f.name: getattr(ev, f.name) for f in dataclasses.fields(ev)}
        if isinstance(ev, Episode):
            fields["claims"] = tuple(
                Claim(**{f.name: getattr(c, f.name) for f in dataclasses.fields(c)})
                for c in ev.claims
            )
            for c in ev.claims:
                assert type(c.importance) is float and type(c.confidence) is float
        rebuilt = type(ev)(**fields)
        assert rebuilt == ev and type(ev.time) is float
    assert Stream(tuple(s.events), name=s.name).events == s.events


@given(
    seed=st.integers(0, 2**31),
    episodes=st.integers(30, 300),
    queries=st.integers(0, 40),
    facts=st.integers(1, 25),
    noise=st.floats(0.0, 0.9),
    change=st.floats(0.0, 1.0),
    span=st.floats(0.05, 1.0),
    start=st.floats(0.0, 0.95),
    recent=st.floats(0.0, 0.5),
    changed=st.floats(0.0, 0.5),
    burst=st.floats(0.0, 0.5),
    spaced=st.floats(0.0, 0.5),
)
def test_any_valid_params_give_a_valid_deterministic_stream(
    seed, episodes, queries, facts, noise, change, span, start, recent, changed, burst, spaced
):
    if round(episodes * (1 - noise)) < facts:
        facts = max(1, round(episodes * (1 - noise)))
        if round(episodes * (1 - noise)) < 1:
            return
    p = SyntheticParams(
        horizon=30.0,
        episodes=episodes,
        queries=queries,
        facts=facts,
        topics=3,
        noise_share=noise,
        change_share=change,
        mention_span=span,
        query_start=start,
        ask_recent=recent,
        ask_changed=changed,
        burst_share=burst,
        spaced_share=spaced,
    )
    a = generate(p, seed)
    assert len(a.episodes) == episodes and len(a.queries) == queries
    assert pickle.dumps(a) == pickle.dumps(generate(p, seed))
    seen = set()
    for ev in a:
        if isinstance(ev, Episode):
            seen.add(ev.claims[0].key)
        else:
            assert ev.keys[0] in seen


@pytest.mark.parametrize("value", ["1e300", "5e-324", "1e15", "1000000"])
@pytest.mark.parametrize(
    "option", ["mention_skew", "query_skew", "spacing_growth", "burst_days", "recent_days"]
)
def test_extreme_shape_options_generate_or_are_refused_in_one_line(option, value):
    """A skew or growth far beyond any use either generates a stream (its limit: one fact
    takes every mention, gaps as steep as floats allow) or is refused; never a NaN time."""
    import warnings

    spec = f"synthetic:churn,episodes=300,queries=30,facts=30,{option}={value}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning reaches the user either
        try:
            stream = scenarios.load(spec)
        except MemsimError as e:
            assert "\n" not in str(e)
            return
    assert all(math.isfinite(ev.time) for ev in stream.events)
