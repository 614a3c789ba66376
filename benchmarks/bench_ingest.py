"""Batched ingest: one call with a day's episodes is >= 5x faster than one call per
episode, with identical outcomes and identical store state.

Two days of the ``steady`` synthetic year are measured: day 30 (stores of ~900-2,700 rows,
every policy's searches exact, Personal AI's through the batch's one matrix product) and day
240 (~7,300-36,000 rows, Personal AI's searches through its candidate index, which it turns
on from INGEST_INDEX_MIN_ROWS rows; the batch's product is then not used). Each seed policy is
warmed up on the days before the day before the measured one (batched, per same-time batch,
as the runner does), then copied. Each round times each mode twice: first on a copy of the
policy as it stands on the day (its first call after the copy: the "after a copy" ratio,
reported beside the target), then on a copy that has just run the stream's events of the day
before (its episodes and queries, as the runner calls them): the state a simulation is in
when the day comes, which gives the target's ratio. A deep copy of the policy evicts the
CPU caches (on the Intel Xeon, a 3-element ``np.add`` takes ~30 us right after one against
~1 us warm), and a batched day pays that refill once in its one call (~0.4 ms of a ~1.2 ms
day 30), where one at a time pays it on its first episode of 86; after the day before, the
batched day 30 costs what it costs warm (docs/performance.md, batched ingest). Every timed call
runs with the objects that exist before it frozen for the garbage collector
(``ingest_day.collecting_new``).
For a policy in SHARED_STEPS (Personal AI) the case also reports its ceiling: the ratio's
own day one at a time over the time the batched day spends in the steps both modes take per
belief (``benchmarks.ingest_steps``, its wrapped rounds only), the ratio a batch that cost
nothing else would reach. Its 5x was retired once that bound was measured near 4x
(docs/performance.md, "Known limits"): its ratio is reported, not checked.
Mock LLM: memsim.engine.mockllm.MockLLM(seed=0). The copies share the warmed policy's LLM, whose
embedder has seen the day once before the timed rounds (a deep copy would drop its cache of
topic, key and value blocks, and both modes would pay for drawing them again, which a running
simulation does not).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from benchmarks import ingest_steps
from benchmarks.conftest import assert_target_in_full_mode, record_measured, record_target
from benchmarks.ingest_day import (
    collecting_new,
    copy_of,
    day_case,
    ingest_modes,
    store_state,
    stream,
    through_eve,
    warm_policy,
)
from benchmarks.workloads import size
from memsim.engine import registry

# benchmarks.report runs each case in a pytest process of its own: in one process, a
# policy's batched day ran up to ~20% slower after another policy's cases than alone (the
# one-by-one mode ~1% either way; docs/performance.md, batched ingest)
ONE_PROCESS_PER_CASE = True
SEEDS = ["pai", "izzie", "kernle", "engram", "cosmo"]
# the measured days: exact searches for every policy, then Personal AI through its index
DAYS = (size(30, 5), size(240, 200))
ROUNDS = size(3, 1)  # pytest-benchmark's rounds of the batched day
# interleaved rounds of the ratio, best of each mode: a day takes milliseconds, so on a shared
# machine a best of 3 is often a round another job slowed (the same code measured 3.26 at 3
# rounds and 3.99 at 30 for Izzie); a round pays four copies and two replays of the day before
RATIO_ROUNDS = size(15, 1)
# the steps a policy takes per belief in the document's order in either mode, batched or not:
# one-by-one over their time in the batched day is the ratio a batch that cost nothing else
# would reach, a ceiling of what batching alone can gain (benchmarks.ingest_steps; the
# claim-storing seeds, which meet the target, have none named)
SHARED_STEPS = {
    "pai": (
        "_similar",  # the IVF top-5 search of a belief that does not reinforce
        "_create",
        "_reinforced",
        "_beliefs_of",
        "llm.summarize",
        "reinforcing.current_cones",  # the cones' update after each new row
    ),
}
CEILING_ROUNDS = size(7, 1)


@pytest.fixture(scope="module")
def events():
    return stream().events


@pytest.mark.parametrize("first_day", DAYS, ids=lambda d: f"day{d}")
@pytest.mark.parametrize("policy_id", SEEDS)
def test_batched_vs_one_by_one_ingest(benchmark, events, policy_id, first_day):
    try:
        registry.spec(policy_id).load()
    except Exception as exc:  # a policy still being written by its author
        pytest.skip(f"{policy_id} not available: {exc}")
    before, eve, day = day_case(events, first_day)
    warm = warm_policy(policy_id, before)
    now = first_day + 1.0

    def fresh(pol):  # a copy, sharing the warmed policy's LLM (and the LLM's caches)
        return copy_of(warm, pol)

    def simulated():  # a copy through the day before, as a simulation comes to the day
        return through_eve(warm, eve)

    on_the_day = simulated()  # copied for the first calls after a copy
    rows = on_the_day.store.n
    searches = "through the index" if on_the_day.candidates.approximate else "exact"
    simulated().ingest(day, now)  # the LLM's embedder sees the day once
    modes = ingest_modes(day, now)
    best = dict.fromkeys(modes, np.inf)  # after the day before
    after_copy = dict.fromkeys(modes, np.inf)  # each mode's first call after a copy
    runs = {}
    for _ in range(RATIO_ROUNDS):
        for mode, run in modes.items():
            outs = []
            for make, into in ((lambda: fresh(on_the_day), after_copy), (simulated, best)):
                pol = make()
                with collecting_new():
                    t0 = time.perf_counter()
                    outs.append(run(pol))
                    into[mode] = min(into[mode], time.perf_counter() - t0)
            assert outs[0] == outs[1], f"{policy_id}: {mode} differs after a copy"
            runs[mode] = (pol, outs[1])
    (a, out_a), (b, out_b) = runs["batched"], runs["one_by_one"]
    assert out_a == out_b, f"{policy_id}: batched and one-by-one outcomes differ"
    assert store_state(a.store) == store_state(b.store), f"{policy_id}: store states differ"
    copy_ratio = after_copy["one_by_one"] / after_copy["batched"]
    ceiling: dict[str, float] = {}
    shared = ""
    if policy_id in SHARED_STEPS:
        steps = SHARED_STEPS[policy_id]
        # the steps' times only: the day one at a time is the ratio's own (``best``)
        m = ingest_steps.measure_case(
            warm, eve, day, now, steps, CEILING_ROUNDS, policy_id, bare=False
        )
        ceiling["ceiling"] = ingest_steps.ceiling(m, best["one_by_one"])
        shared = (
            f"; a batch costing only the steps both modes take per belief: "
            f"{ceiling['ceiling']:.2f}x"
        )
    measured = dict(
        ratio=best["one_by_one"] / best["batched"],
        n=len(day),
        what=(
            f"day {first_day} ({len(day)} episodes, store of {rows} rows, searches {searches}; "
            f"each mode's first call after a copy: {copy_ratio:.2f}x{shared})"
        ),
        seconds=best,
        after_copy_ratio=copy_ratio,
        **ceiling,
        after_copy_seconds=after_copy,
        store_rows=int(rows),
    )
    label = f"ingest {policy_id} day {first_day} (one-by-one / batched)"
    retired = policy_id in SHARED_STEPS  # its bound, not 5x (docs/performance.md)
    if retired:
        record_measured(benchmark, label=label, **measured)  # type: ignore[arg-type]
    else:
        record_target(benchmark, target=label, limit=5.0, better="higher", **measured)  # type: ignore[arg-type]
    benchmark.group = "ingest"
    benchmark.pedantic(
        lambda w: w.ingest(day, now),
        setup=lambda: ((fresh(on_the_day),), {}),
        rounds=ROUNDS,
        iterations=1,
    )
    if not retired:
        assert_target_in_full_mode(benchmark)
