"""Metamorphic properties of every policy's thresholds (docs/properties.md), drawn by
hypothesis over each field's declared range: moving a threshold one way must never move a
count or the footprint the other way. Where the model itself is not monotone, the property is
an expected failure with the finding as its reason."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memsim.engine import registry, runner
from memsim.engine.mockllm import MockLLM
from memsim.engine.runner import Trace
from memsim.engine.sources import load

STREAM = "synthetic:churn,episodes=150,queries=12,facts=16,horizon=30"
# izzie-code searches by keyword, and a synthetic question never shares a word with the
# memory it asks for (scenarios/synthetic.py): on STREAM it returns nothing at any value and
# its property could not fail. The scripted access patterns ask by the memories' own words.
STREAMS = {"izzie-code": "scripted/access-patterns"}
CONTRADICTIONS = ("supersede", "weaken", "invalidate")


@functools.lru_cache(maxsize=512)
def _trace(policy: str, field: str, value: float) -> Trace:
    stream = load(STREAMS.get(policy, STREAM), seed=0)
    spec = registry.spec(policy)
    params = spec.load().Params().replace(**{field: value})
    return runner.run(spec.make(params, llm=MockLLM(seed=0), seed=0), stream)


def footprint(t: Trace) -> float:
    return float(sum(f[1] for f in t.footprint))  # retrievable memories summed over batches


def returned(t: Trace) -> float:
    return float(sum(len(q.ids) for q in t.queries))  # memories returned over every query


def count(*actions: str) -> Callable[[Trace], float]:
    def f(t: Trace) -> float:
        return float(sum(o.action in actions for o in t.outcomes))

    f.__name__ = "count(" + ",".join(actions) + ")"
    return f


# (policy, field, lo, hi, measure, direction): raising `field` from a to b (a < b) never
# moves `measure` in the opposite of `direction` ("down": never rises; "up": never falls)
PROPERTIES = [
    ("pai", "prune_threshold", 0.0, 0.5, footprint, "down"),
    ("pai", "reinforce_above", 0.86, 1.0, count("reinforce"), "down"),
    ("pai", "grey_lo", 0.5, 0.84, count(*CONTRADICTIONS), "down"),
    ("kernle", "forgetting_threshold", 0.0, 1.0, footprint, "down"),
    ("cosmo", "archive_salience", 0.0, 0.5, footprint, "down"),
    ("cosmo", "min_extraction_confidence", 0.0, 1.0, footprint, "down"),
    ("engram", "archive_confidence", 0.0, 0.6, footprint, "down"),
    ("engram", "reinforce_threshold", 0.71, 1.0, count("reinforce"), "down"),
    ("pai", "duplicate_threshold", 0.5, 1.0, count("merge"), "down"),
    ("pai", "synthesis_threshold", 0.3, 1.0, count("synthesize"), "down"),
    ("pai", "cosine_floor", 0.0, 1.0, returned, "down"),
    ("pai", "link_lo", 0.0, 0.84, count("link"), "down"),
    ("cosmo", "confident_candidate", 0.0, 1.0, footprint, "down"),
    ("cosmo", "consolidate_salience", 0.0, 0.5, footprint, "down"),
    ("cosmo", "consolidate_min_sources", 1, 12, footprint, "up"),
    ("cosmo", "storyline_min_sources", 1, 12, count("synthesize"), "down"),
    ("cosmo-code", "archive_salience", 0.0, 0.5, footprint, "down"),
    ("izzie-code", "min_strength", 0.0, 1.0, returned, "down"),
    ("kernle-code", "forgetting_threshold", 0.8, 1.3, footprint, "down"),
    ("actr", "forget_below", 0.0, 1.0, footprint, "down"),
    ("actr", "tau", -2.0, 1.0, footprint, "down"),
    ("fsrs", "forget_below", 0.0, 1.0, footprint, "down"),
    ("ebisu", "forget_below", 0.0, 1.0, footprint, "down"),
    ("memorybank", "forget_below", 0.0, 1.0, footprint, "down"),
    ("actr-spacing", "forget_below", 0.0, 1.0, footprint, "down"),
    ("actr-spacing", "tau", -2.0, 1.0, footprint, "down"),
    ("actr", "reinforce_cosine", 0.5, 1.0, count("reinforce"), "down"),
    ("fsrs", "reinforce_cosine", 0.5, 1.0, count("reinforce"), "down"),
    ("ebisu", "reinforce_cosine", 0.5, 1.0, count("reinforce"), "down"),
    ("memorybank", "reinforce_cosine", 0.5, 1.0, count("reinforce"), "down"),
    ("generative-agents", "reinforce_cosine", 0.0, 1.1, count("reinforce"), "down"),
    ("recency", "budget", 1, 200, footprint, "up"),
]
# Findings: the model itself is not monotone in these thresholds (a pinned counterexample,
# run first by every draw, makes the failure deterministic; the xfail is strict).
NOT_MONOTONE: dict[tuple[str, str], str] = {
    ("cosmo", "min_extraction_confidence"): "not monotone: raising it 0.54 -> 0.55 drops one "
    "more candidate, which removes a reinforcement but lets the nightly job synthesize two more "
    "Storylines/Macros (themselves memories): footprint 12130 -> 12164 (cosmo v2)",
    ("pai", "duplicate_threshold"): "not monotone: raising it 0.6 -> 0.625 gives 23 merges, "
    "not 22 (a merge changes which beliefs later duplicate checks see; the path not traced)",
    ("pai", "synthesis_threshold"): "not monotone: raising it 0.72 -> 0.755 synthesizes 6 "
    "meta-beliefs, not 5 (clusters are formed greedily; the path not traced)",
}
COUNTEREXAMPLES: dict[tuple[str, str], tuple[float, float]] = {
    ("cosmo", "min_extraction_confidence"): (0.54, 0.55),
    ("pai", "duplicate_threshold"): (0.6, 0.625),
    ("pai", "synthesis_threshold"): (0.72, 0.755),
}


@pytest.mark.parametrize(
    "policy, field, lo, hi, measure, direction",
    [
        pytest.param(
            *p,
            id=f"{p[0]}:{p[1]}",
            marks=[pytest.mark.xfail(reason=NOT_MONOTONE[p[:2]], strict=True)]
            if p[:2] in NOT_MONOTONE
            else [],
        )
        for p in PROPERTIES
    ],
)
def test_threshold_is_monotone(policy, field, lo, hi, measure, direction):
    values = (
        st.integers(lo, hi)
        if isinstance(lo, int)
        else st.floats(lo, hi, allow_nan=False).map(lambda v: round(v, 3))
    )

    @settings(
        max_examples=5, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(values, values)
    def check(a: float, b: float) -> None:
        a, b = min(a, b), max(a, b)
        try:
            ma = measure(_trace(policy, field, a))
            mb = measure(_trace(policy, field, b))
        except Exception as e:  # a combination the Params refuse is outside the property
            if type(e).__name__ == "ParamError":
                return
            raise
        if direction == "down":
            assert mb <= ma, f"{field} {a} -> {b}: {measure.__name__} rose {ma} -> {mb}"
        else:
            assert mb >= ma, f"{field} {a} -> {b}: {measure.__name__} fell {ma} -> {mb}"

    if (policy, field) in COUNTEREXAMPLES:
        check = example(*COUNTEREXAMPLES[policy, field])(check)
    check()


@pytest.mark.parametrize("policy", ["generative-agents", "generative-agents-code"])
def test_generative_agents_has_no_forget_threshold(policy):
    """Park et al. 2023 §4.1 forgets nothing: forget_below is pinned to 0 (its declared range
    is the single point [0, 0]), so there is no forgetting threshold to move; any other value
    is refused."""
    from memsim.engine.errors import ParamError

    params = registry.spec(policy).load().Params
    assert params().forget_below == 0.0
    with pytest.raises(ParamError):
        params().replace(forget_below=0.01)
