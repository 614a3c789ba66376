"""Defaults of ``ebisu`` (Ebisu 2, policies/ebisu_model.py) that only a behaviour at the
default reveals: each test leaves the field it pins at its default."""

from __future__ import annotations

import ebisu
import pytest

from memsim.engine.registry import make
from tests.policies.test_param_effects_reference import CosineLLM, episode


def test_a_review_at_the_moment_of_the_last_counts_as_one_minute_later():
    """memsim's choice (min_elapsed): Ebisu's update needs a positive elapsed time, so a
    repetition at the very time of the last review is a quiz one minute (1/1440 day) after
    it, on the default model (alpha = beta = 3, half-life 1 day)."""
    pol = make("ebisu", llm=CosineLLM(), seed=0)
    pol.ingest([episode(0, 2.0)], 2.0)
    assert [o.action for o in pol.ingest([episode(1, 2.0)], 2.0)] == ["reinforce"]
    want = ebisu.updateRecall((3.0, 3.0, 1.0), 1, 1, 1.0 / 1440.0)
    s = pol.store
    got = (s["alpha"][0], s["beta"][0], s["t"][0])
    assert got == pytest.approx(tuple(float(x) for x in want), rel=1e-12)
