"""Defaults of ``kernle`` (seed document 004) that only a behaviour at the default reveals.

Each test leaves the field it pins at its default, so moving that default
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

from policies.kernle import Kernle
from tests.policies.test_izzie import FakeLLM
from tests.policies.test_kernle import ep


def test_two_alike_episodes_make_a_pattern():
    """memsim's choice for 004 §Consolidation Process (a pattern needs a repeat): of three
    unreflected episodes, the two about one thing give a belief; the third, alone, none."""
    llm = FakeLLM({"work.testing": [1.0, 0.0, 0.0, 0.0], "pet.walk": [0.0, 1.0, 0.0, 0.0]})
    pol = Kernle(llm=llm)
    pol.ingest([ep(f"e{i}", 0.0, "work.testing", "flaky", "event", 0.5) for i in range(2)], 0.0)
    pol.ingest([ep("e2", 0.0, "pet.walk", "daily", "event", 0.5)], 0.0)
    outs = pol.maintain(1.0, ["consolidate"])
    assert [o.action for o in outs] == ["create"]
    assert pol.store.provenance[outs[0].memory] == {"e0", "e1"}


def test_verifying_a_memory_raises_its_confidence_by_01():
    """004 §Meta-Memory: verify_memory raises confidence (by 0.1, memsim's choice)."""
    pol = Kernle(llm=FakeLLM())
    pol.ingest([ep("e1", 0.0, "a.b", confidence=0.4)], 0.0)
    assert pol.verify_memory(0, 3.0) == 0.5
