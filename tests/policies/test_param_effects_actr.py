"""Defaults of ``actr`` (ACT-R base-level learning, policies/actr.py) that only a behaviour
at the default reveals: each test leaves the field it pins at its default."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.events import Query
from memsim.engine.registry import make
from tests.policies.test_param_effects_reference import CosineLLM, episode


@pytest.mark.parametrize("pid", ["actr", "actr-spacing"])
def test_an_age_is_floored_at_one_hour(pid):
    """memsim's choice (min_age, 1 hour): a presentation just made counts as an hour old, so
    the activation of one presentation at once is ln((1/24) ** -d) = d ln 24 for its decay
    d (0.5 for actr; a + c e^-inf = a for the spacing variant's first presentation)."""
    pol = make(pid, llm=CosineLLM(), seed=0)
    pol.ingest([episode(0, 0.0)], 0.0)
    d = 0.5 if pid == "actr" else pol.params.spacing_a
    assert pol.activation(0.0)[0] == pytest.approx(d * math.log(24.0), rel=1e-12)


def test_spreading_activation_adds_the_cosine_at_weight_one():
    """ACT-R's spreading activation, source activation W = 1: the recall score is the
    base-level activation plus 1 x the query's cosine to the memory."""
    pol = make("actr", llm=CosineLLM(), seed=0)
    pol.ingest([episode(0, 0.0, cos=0.6)], 0.0)
    activation = float(pol.activation(2.0)[0])
    r = pol.recall([Query("q", 2.0, "a?", keys=("a.b",), k=1)], 2.0)[0]
    assert r.ids.tolist() == [0]
    assert r.scores[0] - activation == pytest.approx(np.float32(0.6), abs=1e-6)
