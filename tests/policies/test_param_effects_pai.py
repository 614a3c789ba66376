"""Defaults of ``pai`` (seed document 000) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default and shows the behaviour the seed section
names, so moving that default (``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

from memsim.engine.events import Claim, Episode
from memsim.engine.llm import Faults
from memsim.engine.mockllm import MockLLM
from policies.pai import PaiParams, PersonalAI


def ep(eid: str, t: float, claim: Claim) -> Episode:
    return Episode(eid, t, f"text of {eid}", (claim,))


def mock() -> MockLLM:
    return MockLLM(seed=0, faults=Faults())


def test_s3_synthesize_makes_at_most_5_meta_beliefs_a_run():
    """000 §3 synthesize: "up to 5" clusters a run; seven themes give five meta-beliefs."""
    pol = PersonalAI(PaiParams(synthesis_threshold=0.5), llm=mock())
    for t in "abcdefg":
        pol.ingest([ep(f"{t}1", 0, Claim(f"{t}.x", "1"))], 0.0)
        pol.ingest([ep(f"{t}2", 0, Claim(f"{t}.y", "2"))], 0.0)
    out = pol.maintain(1.0, ["synthesize"])
    assert [o.action for o in out] == ["synthesize"] * 5
