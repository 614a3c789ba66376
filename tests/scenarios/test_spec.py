"""Uniform addressing: spec parsing, load(), catalog(), suite(), and their errors."""

from __future__ import annotations

import pytest

import scenarios
from memsim.engine import sources as spec
from memsim.engine.errors import ScenarioError, UnknownIdError
from memsim.engine.events import Stream
from scenarios import scripted


def test_parse_specs():
    assert spec.parse("scripted/name-preference") == spec.Spec(
        "scripted", "scripted/name-preference"
    )
    assert spec.parse("x/y.yaml") == spec.Spec("scripted", "x/y.yaml")
    assert spec.parse("synthetic:churn,episodes=10, horizon=5") == spec.Spec(
        "synthetic", "churn", (("episodes", "10"), ("horizon", "5"))
    )
    assert spec.parse("locomo:/d/l.json,sample=conv-26").options == (("sample", "conv-26"),)


@pytest.mark.parametrize(
    "bad, match",
    [
        ("", "non-empty"),
        ("nonsense", "unknown scenario spec 'nonsense'"),
        ("synthetic:steady,=3", "not key=value"),
        ("synthetic:steady,a=1,a=2", "given twice"),
    ],
)
def test_bad_specs(bad, match):
    with pytest.raises(ScenarioError, match=match):
        spec.parse(bad)


def test_load_every_catalog_entry_names_the_stream_by_its_spec():
    for s, desc in scenarios.catalog():
        assert desc and "\n" not in desc
        if s.startswith("locomo:"):
            continue
        st = scenarios.load(
            s + (",episodes=300,queries=10,facts=20" if s.startswith("synthetic:") else "")
        )
        assert isinstance(st, Stream) and len(st) > 0 and st.description
    assert scenarios.load("scripted/duplicates").name == "scripted/duplicates"


def test_scripted_by_path_and_seed_ignored():
    path = str(scripted.SCRIPTED_DIR / "duplicates.yaml")
    a = scenarios.load(path)
    assert a.name == path
    assert scenarios.load("scripted/duplicates", seed=5).events == a.events


def test_unknown_names_list_the_choices():
    with pytest.raises(
        UnknownIdError, match="unknown scripted scenario 'nope'; known: access-patterns"
    ):
        scenarios.load("scripted/nope")
    with pytest.raises(UnknownIdError, match="known: steady, churn, noisy, longgap"):
        scenarios.load("synthetic:nope")
    with pytest.raises(
        UnknownIdError, match="unknown suite 'nope'; known: quick, scripted, standard"
    ):
        scenarios.suite("nope")
    with pytest.raises(ScenarioError, match="take no options"):
        scenarios.load("scripted/duplicates", episodes=3)


def test_keyword_options_override_spec_options():
    s = scenarios.load("synthetic:steady,episodes=300,queries=10,facts=20", queries=12)
    assert len(s.queries) == 12


def test_standard_suite():
    specs = scenarios.suite("standard")
    assert [s for s in specs if s.startswith("scripted/")] == [
        f"scripted/{n}" for n in scripted.names()
    ]
    assert [s for s in specs if s.startswith("synthetic:")] == [
        "synthetic:steady",
        "synthetic:churn",
        "synthetic:noisy",
        "synthetic:longgap",
    ]
    assert not any(s.startswith("locomo:") for s in specs)
    for s in specs:  # every entry loads, at a size the suite promises
        st = scenarios.load(s)
        assert len(st.episodes) <= 5000
    assert scenarios.suite("quick")[-1].startswith("synthetic:steady,")
