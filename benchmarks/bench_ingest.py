"""Target 5: batched ingest of one day's episodes is >= 5x faster than one-by-one ingest of
the same episodes, with identical outcomes and identical store state.

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
batched day 30 costs what it costs warm (docs/performance.md, stop 58). Every timed call
runs with the objects that exist before it frozen for the garbage collector
(``_collecting_new``).
For a policy in SHARED_STEPS (Personal AI) the case also reports its ceiling: the ratio's
own day one at a time over the time the batched day spends in the steps both modes take per
belief (``benchmarks.ingest_steps``, its wrapped rounds only), the ratio a batch that cost
nothing else would reach.
Mock LLM: memsim.engine.mockllm.MockLLM(seed=0). The copies share the warmed policy's LLM, whose
embedder has seen the day once before the timed rounds (a deep copy would drop its cache of
topic, key and value blocks, and both modes would pay for drawing them again, which a running
simulation does not).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import time
from itertools import groupby

import numpy as np
import pytest

from benchmarks.conftest import assert_target_in_full_mode, record_target
from benchmarks.workloads import size
from memsim.engine import registry
from memsim.engine.events import Episode, Query

# benchmarks.report runs each case in a pytest process of its own: in one process, a
# policy's batched day ran up to ~20% slower after another policy's cases than alone (the
# one-by-one mode ~1% either way; docs/performance.md, stop 59)
ONE_PROCESS_PER_CASE = True
SEEDS = ["pai", "izzie", "kernle", "engram", "cosmo"]
EPISODES = size(100_000, 2_000)
QUERIES = size(10_000, 100)
HORIZON = 365.0
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


def _stream():
    import scenarios

    return scenarios.load(
        f"synthetic:steady,episodes={EPISODES},queries={QUERIES},horizon={HORIZON:g}"
    )


def store_state(store) -> tuple:
    """Everything a MemoryStore holds, comparable with ==."""
    cols = tuple((name, store[name].tobytes()) for name in store.columns)
    return (
        store.n,
        cols,
        store.embedding.tobytes(),
        tuple(store.text),
        tuple(map(repr, store.claim)),
        tuple(tuple(sorted(p)) for p in store.provenance),
        tuple(store.status_log),
        tuple(store.provenance_log),
    )


@pytest.fixture(scope="module")
def events():
    return _stream().events


def day_case(events, first_day):
    """The episodes before the day before ``first_day``, the episodes and queries of the day
    before (in stream order), and the episodes of ``first_day``."""
    episodes = [e for e in events if isinstance(e, Episode)]
    before = [e for e in episodes if e.time < first_day - 1]
    eve = [e for e in events if first_day - 1 <= e.time < first_day and type(e) in (Episode, Query)]
    day = [e for e in episodes if first_day <= e.time < first_day + 1]
    return before, eve, day


def _replay(pol, events) -> None:
    """The runner's calls for ``events`` (episodes and queries), one per same-time batch."""
    for (t, kind), batch in groupby(events, key=lambda e: (e.time, type(e))):
        if kind is Episode:
            pol.ingest(list(batch), t)
        else:
            pol.recall(list(batch), t)


@contextlib.contextmanager
def _collecting_new():
    """While timed, the garbage collector looks only at objects made inside (the ingest's
    own): a deep copy leaves its last few hundred objects, containers of the store's size
    among them, in the young generation, whose first collection then fell inside whichever
    mode was timed next (0.7-0.9 ms of a 4-8 ms batched day 240, in either mode). Freezing
    moves the objects to the permanent generation without traversing them: ``gc.collect()``
    instead cost the batched day 30 ~0.25 ms, cache lines the traversal took."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()  # a dropped copy's cycles are the collector's again


def _warm(policy_id, before):
    from memsim.engine.mockllm import MockLLM

    pol = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    _replay(pol, before)
    return pol


def copy_of(warm, pol=None):
    """A deep copy of ``pol`` (default ``warm``) sharing the warmed policy's LLM and so the
    LLM's caches."""
    return copy.deepcopy(warm if pol is None else pol, {id(warm.llm): warm.llm})


def through_eve(warm, eve):
    """A copy of ``warm`` through the day before, as a simulation comes to the day."""
    pol = copy_of(warm)
    _replay(pol, eve)
    return pol


def ingest_modes(day, now) -> dict:
    """The two ways the target ingests ``day``: ``batched`` (one call) and ``one_by_one``
    (a call per episode), each a function of the policy giving its outcomes."""
    return {
        "batched": lambda pol: pol.ingest(day, now),
        "one_by_one": lambda pol: [o for e in day for o in pol.ingest([e], now)],
    }


@pytest.mark.parametrize("first_day", DAYS, ids=lambda d: f"day{d}")
@pytest.mark.parametrize("policy_id", SEEDS)
def test_target5_batched_vs_one_by_one_ingest(benchmark, events, policy_id, first_day):
    try:
        registry.spec(policy_id).load()
    except Exception as exc:  # a policy still being written by its author
        pytest.skip(f"{policy_id} not available: {exc}")
    before, eve, day = day_case(events, first_day)
    warm = _warm(policy_id, before)
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
                with _collecting_new():
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
        from benchmarks import ingest_steps

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
    record_target(
        benchmark,
        target=f"5 ingest {policy_id} day {first_day} (one-by-one / batched)",
        ratio=best["one_by_one"] / best["batched"],
        limit=5.0,
        better="higher",
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
    benchmark.group = "ingest"
    benchmark.pedantic(
        lambda w: w.ingest(day, now),
        setup=lambda: ((fresh(on_the_day),), {}),
        rounds=ROUNDS,
        iterations=1,
    )
    assert_target_in_full_mode(benchmark)
