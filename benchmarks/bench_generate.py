"""Synthetic stream generation: a 365-day stream of 100,000 episodes and 10,000
queries is generated in a few seconds, and the same seed gives a byte-identical stream.

Reference measured in the same run: the straightforward construction of the very same events
through the validating constructors (every Claim, Episode and Query re-validated, then the
Stream checks order, ids and references), which is what the generator's bulk path avoids.
"""

from __future__ import annotations

import dataclasses
import pickle

from benchmarks.conftest import assert_target_in_full_mode, interleaved, record_target
from benchmarks.workloads import size
from memsim.engine.events import Claim, Episode, Stream

EPISODES = size(100_000, 2_000)
QUERIES = size(10_000, 200)
SPEC = f"synthetic:steady,episodes={EPISODES},queries={QUERIES},horizon=365"


def _generate():
    import scenarios

    return scenarios.load(SPEC, seed=0)


def _rebuild_validated(stream: Stream) -> Stream:
    events = []
    for ev in stream.events:
        fields = {f.name: getattr(ev, f.name) for f in dataclasses.fields(ev)}
        if isinstance(ev, Episode):
            fields["claims"] = tuple(
                Claim(**{f.name: getattr(c, f.name) for f in dataclasses.fields(c)})
                for c in ev.claims
            )
        events.append(type(ev)(**fields))
    return Stream(
        tuple(events),
        name=stream.name,
        horizon=stream.horizon,
        description=stream.description,
        meta=stream.meta,
    )


def test_generation_speed(benchmark):
    stream = _generate()
    assert len(stream.episodes) == EPISODES and len(stream.queries) == QUERIES
    # same seed, byte-identical stream
    assert pickle.dumps(_generate().events) == pickle.dumps(stream.events)
    best = interleaved(
        {"generate": _generate, "validated": lambda: _rebuild_validated(stream)}, rounds=size(3, 1)
    )
    benchmark.pedantic(_generate, rounds=1, iterations=1)
    record_target(
        benchmark,
        target="synthetic generation (generate / validated construction)",
        ratio=best["generate"] / best["validated"],
        limit=1.0,
        better="lower",
        n=EPISODES + QUERIES,
        what=f"{SPEC} vs rebuilding its events through the validating constructors",
        generate_s=best["generate"],
        validated_s=best["validated"],
    )
    assert_target_in_full_mode(benchmark)
