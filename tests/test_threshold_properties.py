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
CONTRADICTIONS = ("supersede", "weaken", "invalidate")


@functools.lru_cache(maxsize=256)
def _trace(policy: str, field: str, value: float) -> Trace:
    stream = load(STREAM, seed=0)
    spec = registry.spec(policy)
    params = spec.load().Params().replace(**{field: value})
    return runner.run(spec.make(params, llm=MockLLM(seed=0), seed=0), stream)


def footprint(t: Trace) -> float:
    return float(sum(f[1] for f in t.footprint))  # retrievable memories summed over batches


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
]
# Findings: the model itself is not monotone in these thresholds (a pinned counterexample,
# run first by every draw, makes the failure deterministic; the xfail is strict).
NOT_MONOTONE: dict[tuple[str, str], str] = {
    ("cosmo", "min_extraction_confidence"): "not monotone: raising it 0.54 -> 0.55 drops one "
    "more candidate, which removes a reinforcement but lets the nightly job synthesize two more "
    "Storylines/Macros (themselves memories): footprint 14529 -> 14543",
}
COUNTEREXAMPLES: dict[tuple[str, str], tuple[float, float]] = {
    ("cosmo", "min_extraction_confidence"): (0.54, 0.55),
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
    values = st.floats(lo, hi, allow_nan=False).map(lambda v: round(v, 3))

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
