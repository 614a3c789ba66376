"""Protocols: named, composable choices of the simulator, applied to the streams they
concern, and named in every row of a comparison."""

from __future__ import annotations

import pytest

from memsim.engine.errors import ParamError
from memsim.workbench.runs.protocols import (
    AXES,
    DEFAULT,
    apply,
    merged_overrides,
    protocol,
    protocol_set,
    spec_family,
)
from memsim.workbench.studies.compare import compare, protocol_runs

SMALL = "synthetic:steady,episodes=200,queries=20,facts=20,horizon=30"


def test_standard_is_the_default_and_each_axis_choice_alone():
    names = [p.name for p in protocol_set("standard")]
    assert names[0] == DEFAULT
    assert set(names[1:]) == {p.name for ps in AXES.values() for p in ps}
    assert not any("+" in n for n in names)


def test_cross_composes_one_choice_per_axis_where_some_stream_is_concerned():
    names = {p.name for p in protocol_set("cross")}
    assert "value-aware+text" in names and "value-aware+measured-bands" in names
    # LoCoMo question time and a synthetic-only choice concern no stream together
    assert not any("evidence" in n and "value-aware" in n for n in names)
    assert {p.name for p in protocol_set("standard")} <= names


def test_apply_sets_options_only_on_concerned_streams():
    assert apply(protocol(DEFAULT), "scripted/duplicates") == "scripted/duplicates"
    assert apply(protocol("text"), "scripted/duplicates") is None
    assert apply(protocol("text"), "synthetic:churn,episodes=300") == (
        "synthetic:churn,episodes=300,text=1"
    )
    assert apply(protocol("evidence-7d"), "locomo:x.json,sample=conv-26") == (
        "locomo:x.json,sample=conv-26,query_time=evidence+7"
    )
    assert apply(protocol("value-aware"), "locomo:x.json") is None
    with pytest.raises(ParamError, match="query_time=after"):
        apply(protocol("evidence-1d"), "locomo:x.json,query_time=after")
    assert spec_family("scripted/x") == "scripted" and spec_family("my.yaml") == "scripted"


def test_names_errors_and_overrides():
    with pytest.raises(ParamError, match="unknown protocol 'evidence'"):
        protocol("evidence")
    with pytest.raises(ParamError, match="two choices of one axis"):
        protocol("measured-bands+text")
    with pytest.raises(ParamError, match="concern no stream together"):
        protocol("value-aware+evidence-7d")  # synthetic and LoCoMo: no stream is both
    with pytest.raises(ParamError, match="unknown protocol 'default'"):
        protocol("default+text")  # the default is no choice to compose
    va = protocol("value-aware")
    assert merged_overrides(va, {"faults.embed_fail": 0.1}) == {
        "faults.embed_fail": 0.1,
        "modes.query_value": 0.3,
    }
    with pytest.raises(ParamError, match="protocol value-aware sets modes.query_value"):
        merged_overrides(va, {"modes.query_value": 0.5})


def test_a_protocol_named_alone_must_concern_some_stream_a_set_skips_it():
    with pytest.raises(ParamError, match="evidence-7d: no locomo stream"):
        protocol_runs(["keep-all"], [SMALL], [0], "evidence-7d")
    runs, skipped = protocol_runs(["keep-all"], [SMALL], [0], "standard")
    assert [r.protocol.name for r in runs] == [
        DEFAULT,
        "value-aware",
        "measured-bands",
        "text",
    ]
    assert len(skipped) == 3 and all("no locomo stream" in line for line in skipped)


def test_compare_names_the_protocol_of_every_row_and_keeps_the_stream_name(tmp_path):
    summary, per_query = compare(
        ["keep-all", "recency"],
        [SMALL],
        seeds=[0],
        protocols="default,value-aware",
        root=tmp_path,
        calibrate=False,
    )
    for frame in (summary, per_query):
        assert frame.columns[0] == "protocol"
        assert set(frame["protocol"]) == {DEFAULT, "value-aware"}
        assert set(frame["scenario"]) == {SMALL}
    recall = per_query.groupby(["protocol", "policy"])["recall"].mean()
    # value-aware questions find the current version: keep-all's ties are no longer random
    assert recall[("value-aware", "keep-all")] >= recall[(DEFAULT, "keep-all")]
