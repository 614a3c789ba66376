"""Params: declared ranges, choices, from_strings, replace, docs."""

import dataclasses
import math

import pytest

from memsim.engine.errors import ParamError
from memsim.engine.llm import Bands, Faults
from memsim.engine.params import Params, param, param_docs


@dataclasses.dataclass(frozen=True)
class P(Params):
    half_life: float = param(30.0, lo=0.0, lo_open=True, doc="seed §2")
    prob: float = param(0.5, lo=0.0, hi=1.0)
    budget: int = param(10, lo=1)
    mode: str = param("fast", choices=("fast", "slow"))
    enabled: bool = param(True)
    weights: tuple = param((0.5, 0.5), lo=0.0, hi=1.0)
    label: str = param("x")


def test_defaults_are_valid():
    p = P()
    assert p.half_life == 30.0 and p.weights == (0.5, 0.5)


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"half_life": 0.0}, r"P.half_life=0.0 is outside \(0.0, inf\]"),
        ({"half_life": -1.0}, "P.half_life=-1.0 is outside"),
        ({"prob": 1.5}, r"P.prob=1.5 is outside \[0.0, 1.0\]"),
        ({"prob": math.nan}, "P.prob=nan is NaN"),
        ({"budget": 0}, r"P.budget=0 is outside \[1, inf\]"),
        ({"budget": "3"}, "P.budget='3' must be a number"),
        ({"prob": True}, "must be a number"),
        ({"mode": "medium"}, r"P.mode='medium' is not one of \['fast', 'slow'\]"),
        ({"weights": (0.5, 2.0)}, r"P.weights=\(0.5, 2.0\) is outside"),
    ],
)
def test_out_of_range_values_name_field_and_value(changes, words):
    with pytest.raises(ParamError, match=words):
        P(**changes)


def test_replace_validates_and_rejects_unknown_names():
    p = P().replace(prob=0.25)
    assert p.prob == 0.25 and P().prob == 0.5
    with pytest.raises(
        ParamError, match=r"P has no parameter 'probability'; known: budget, enabled"
    ):
        P().replace(probability=0.2)
    with pytest.raises(ParamError, match="prob=2"):
        P().replace(prob=2)


def test_from_strings_converts_to_the_field_type():
    p = P.from_strings(
        {
            "half_life": "12.5",
            "budget": "7",
            "enabled": "no",
            "mode": "slow",
            "weights": "0.1,0.9",
            "label": "y",
        }
    )
    assert p == P(
        half_life=12.5, budget=7, enabled=False, mode="slow", weights=(0.1, 0.9), label="y"
    )
    assert P.from_strings({"enabled": "TRUE"}).enabled is True


@pytest.mark.parametrize(
    "values, words",
    [
        ({"budget": "seven"}, "P.budget: cannot read 'seven' as int"),
        ({"enabled": "maybe"}, "P.enabled: cannot read 'maybe' as bool"),
        ({"half_life": "abc"}, "P.half_life: cannot read 'abc' as float"),
        ({"nope": "1"}, "P has no parameter 'nope'"),
        ({"prob": "1.5"}, "P.prob=1.5 is outside"),
    ],
)
def test_from_strings_errors(values, words):
    with pytest.raises(ParamError, match=words):
        P.from_strings(values)


def test_params_are_frozen_and_comparable():
    p = P()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.prob = 0.1
    assert P() == P() and P(prob=0.1) != P()
    assert P().to_dict()["weights"] == [0.5, 0.5]


def test_mutable_defaults_are_refused():
    with pytest.raises(TypeError, match="mutable defaults"):
        param([1, 2])


def test_param_docs_name_the_section():
    assert ("half_life", 30.0, "seed §2") in param_docs(P)


def test_llm_config_params():
    with pytest.raises(ParamError, match="need related < changed_value < paraphrase"):
        Bands(related=0.8)
    with pytest.raises(ParamError, match="Faults.embed_fail=1.5"):
        Faults(embed_fail=1.5)
    with pytest.raises(ParamError, match="Bands.paraphrase=1.0 is outside"):
        Bands(paraphrase=1.0)
