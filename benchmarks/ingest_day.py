"""The ingest day of the batched-ingest benchmark (bench_ingest.py), shared with the tool
that times its steps (ingest_steps.py): the ``steady`` year, a day's case (the days before,
the day before, the day), a policy warmed up on the days before, copies of it, and the two
ways of ingesting the day. Sizes shrink under MEMSIM_BENCH_SMOKE=1.
"""

from __future__ import annotations

import contextlib
import copy
import gc
from itertools import groupby

from benchmarks.workloads import size
from memsim.engine import registry
from memsim.engine.events import Episode, Query

EPISODES = size(100_000, 2_000)
QUERIES = size(10_000, 100)
HORIZON = 365.0


def stream():
    """The ``steady`` year the ingest days are taken from."""
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


def day_case(events, first_day):
    """The episodes before the day before ``first_day``, the episodes and queries of the day
    before (in stream order), and the episodes of ``first_day``."""
    episodes = [e for e in events if isinstance(e, Episode)]
    before = [e for e in episodes if e.time < first_day - 1]
    eve = [e for e in events if first_day - 1 <= e.time < first_day and type(e) in (Episode, Query)]
    day = [e for e in episodes if first_day <= e.time < first_day + 1]
    return before, eve, day


def replay(pol, events) -> None:
    """The runner's calls for ``events`` (episodes and queries), one per same-time batch."""
    for (t, kind), batch in groupby(events, key=lambda e: (e.time, type(e))):
        if kind is Episode:
            pol.ingest(list(batch), t)
        else:
            pol.recall(list(batch), t)


@contextlib.contextmanager
def collecting_new():
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


def warm_policy(policy_id, before):
    """A policy through the episodes ``before``, as the runner calls it."""
    from memsim.engine.mockllm import MockLLM

    pol = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    replay(pol, before)
    return pol


def copy_of(warm, pol=None):
    """A deep copy of ``pol`` (default ``warm``) sharing the warmed policy's LLM and so the
    LLM's caches."""
    return copy.deepcopy(warm if pol is None else pol, {id(warm.llm): warm.llm})


def through_eve(warm, eve):
    """A copy of ``warm`` through the day before, as a simulation comes to the day."""
    pol = copy_of(warm)
    replay(pol, eve)
    return pol


def ingest_modes(day, now) -> dict:
    """The two ways the target ingests ``day``: ``batched`` (one call) and ``one_by_one``
    (a call per episode), each a function of the policy giving its outcomes."""
    return {
        "batched": lambda pol: pol.ingest(day, now),
        "one_by_one": lambda pol: [o for e in day for o in pol.ingest([e], now)],
    }
