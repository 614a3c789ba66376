"""Skipping idle ticks: a run longer than runner.MAX_TICKS ticks skips the days a
policy's ``idle_until`` says change nothing, and must then do exactly what ticking every
day does: same status changes at the same times, same rankings, same footprint wherever it
was sampled. A policy without the hook is refused with a message naming the horizon."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine import registry, runner
from memsim.engine.errors import StreamError
from memsim.engine.events import Claim, Episode, Query, Stream
from memsim.engine.metrics import footprint_mean
from memsim.engine.mockllm import MockLLM
from memsim.engine.policy import IdleSkipping
from scenarios import load

SPARSE = "synthetic:steady,episodes=60,queries=20,facts=10,horizon=3000"
# actr-spacing's first presentation decays with d_1 = a = 0.1768 (Pavlik & Anderson 2005
# eq. 2-3): P < 0.05 only after exp((0.704 + 0.255 ln 19) / 0.1768) = 3746.9 days, so on SPARSE
# nothing is forgotten and the skip would not be tested against a forgetting job. Its sparse
# stream is four times as long (same episode and query counts).
STREAMS = {"actr-spacing": SPARSE.replace("horizon=3000", "horizon=12000")}
SCHEDULED = [
    s.id for s in registry.specs() if registry.make(s.id, llm=MockLLM(seed=0), seed=0).schedule
]
SKIPPERS = [p for p in SCHEDULED if issubclass(registry.spec(p).load(), IdleSkipping)]


def _run(policy_id: str, stream: Stream):
    policy = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    return runner.run(policy, stream)


def test_the_reference_models_and_engram_can_skip():
    assert {"actr", "fsrs", "ebisu", "memorybank", "engram", "engram-code"} <= set(SKIPPERS)
    assert {"actr-spacing", "memorybank-code"} <= set(SKIPPERS)


def test_actr_spacing_forgets_a_single_presentation_after_3747_days():
    """The closed form behind STREAMS: with P = 0.05 the crossing is at 3746.9 days."""
    policy = registry.make("actr-spacing", llm=MockLLM(seed=0), seed=0)
    policy.ingest(list(_far(5000.0).episodes), 0.0)
    assert not len(policy._doomed(3746.0)) and len(policy._doomed(3748.0))


@pytest.mark.parametrize("policy_id", SKIPPERS)
def test_skipping_idle_days_changes_nothing(policy_id, monkeypatch):
    stream = load(STREAMS.get(policy_id, SPARSE), seed=0)
    every_day = _run(policy_id, stream)
    monkeypatch.setattr(runner, "MAX_TICKS", 1000)  # 3000 daily ticks: now over the budget
    skipping = _run(policy_id, stream)
    assert skipping.status_log == every_day.status_log
    assert skipping.provenance_log == every_day.provenance_log
    assert [q.content() for q in skipping.queries] == [q.content() for q in every_day.queries]
    acted = [o for o in every_day.outcomes if o.action != "skip"]
    assert [o for o in skipping.outcomes if o.action != "skip"] == acted
    if hasattr(registry.spec(policy_id).load(), "retention"):  # the reference models
        assert any(o.action == "prune" for o in acted), "the stream should make the job forget"
    assert len(skipping.footprint) < len(every_day.footprint) / 2  # it did skip
    full = dict((t, r) for t, r, _ in every_day.footprint)
    assert all(full[t] == r for t, r, _ in skipping.footprint)
    assert math.isclose(
        footprint_mean(skipping.footprint, stream.horizon),
        footprint_mean(every_day.footprint, stream.horizon),
        rel_tol=1e-12,
    )


def _far(horizon: float, query_at: float | None = None) -> Stream:
    c = Claim("owner.name", "Masa", importance=0.9)
    events: list = [Episode("e1", 0.0, "Call me Masa", claims=(c,))]
    if query_at is not None:
        events.append(Query("q1", query_at, "my name?", keys=("owner.name",), k=3))
    return Stream(tuple(events), name="far", horizon=horizon)


@pytest.mark.parametrize("policy_id", ["memorybank", "fsrs"])
def test_a_million_days_with_few_events_finishes(policy_id):
    trace = _run(policy_id, _far(1e6, query_at=5e5))
    assert len(trace.queries) == 1 and len(trace.footprint) < 1000
    assert trace.footprint[-1][0] <= 1e6


def test_a_policy_that_cannot_skip_is_refused_with_the_field_and_the_need():
    stream = _far(1e6)
    needs = [p for p in SCHEDULED if p not in SKIPPERS]
    assert needs, "every scheduled policy can skip: test the refusal another way"
    with pytest.raises(StreamError, match=r"far: horizon 1e\+06 days: .*no idle_until.*at most"):
        _run(needs[0], stream)


def test_times_beyond_float_resolution_are_refused():
    with pytest.raises(StreamError, match="floats cannot tell apart"):
        _run("memorybank", _far(1e300))


def test_idle_until_is_conservative():
    """The returned time is never after a tick that would forget something."""
    policy = registry.make("memorybank", llm=MockLLM(seed=0), seed=0)
    stream = _far(400.0)
    policy.ingest(list(stream.episodes), 0.0)
    u = policy.idle_until(1.0, 400.0)
    assert 1.0 < u < 400.0
    assert not len(policy._doomed(math.floor(u)))  # still alive on the last skipped day
    assert len(policy._doomed(math.floor(u) + 2))  # and gone a day or two later
    assert np.all(policy.retention(u)[policy._live()] >= policy.params.forget_below)
