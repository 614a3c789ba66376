"""Issue 16: batched ingest of a day gives exactly the outcome of one episode at a time, for
every seed policy, over random days of random steady synthetic streams (hypothesis). The
guard any batching of ingest (one matrix product per day, resolved in order) must keep."""

from __future__ import annotations

import copy
from itertools import groupby

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.ingest_day import store_state
from memsim.engine import registry
from memsim.engine.events import Episode
from memsim.engine.mockllm import MockLLM

SEEDS = ["pai", "izzie", "kernle", "engram", "cosmo"]


STEADY_DAYS = "synthetic:steady,episodes=300,queries=10,horizon=10"


def _day_both_ways(
    policy_id, stream_seed, day, llm, seed, spec=STEADY_DAYS, prepare=None, warmed=None
):
    """The policy warmed on the days before ``day`` of a random stream (``spec``; steady by
    default), then two copies: one ingests the day in one call, the other one episode at a
    time. ``prepare``: called with the new policy before the warm-up; ``warmed``: with the
    policy after it. Returns (batched policy, its outcomes, one-at-a-time policy, its
    outcomes, now)."""
    import scenarios

    stream = scenarios.load(spec, seed=stream_seed)
    eps = [e for e in stream.events if isinstance(e, Episode)]
    pol = registry.make(policy_id, llm=llm, seed=seed)
    if prepare is not None:
        prepare(pol)
    for t, batch in groupby((e for e in eps if e.time < day), key=lambda e: e.time):
        pol.ingest(list(batch), t)
    if warmed is not None:
        warmed(pol)
    todays = [e for e in eps if day <= e.time < day + 1]
    now = day + 1.0
    a, b = pol, copy.deepcopy(pol)
    out_a = a.ingest(todays, now)
    out_b = [o for e in todays for o in b.ingest([e], now)]
    return a, out_a, b, out_b, now


def _summaries(policy):
    """Personal AI's conversation summaries (episodic memory, outside the store) with their
    embeddings; nothing for the other policies."""
    return [
        (
            sm.id,
            sm.time,
            sm.text,
            sm.episode_ids,
            None if sm.embedding is None else sm.embedding.tobytes(),
        )
        for sm in getattr(policy, "summaries", [])
    ]


@pytest.mark.parametrize("policy_id", SEEDS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream_seed=st.integers(0, 2**16), day=st.integers(1, 9), seed=st.integers(0, 3))
def test_batched_day_equals_one_by_one(policy_id, stream_seed, day, seed):
    a, out_a, b, out_b, now = _day_both_ways(policy_id, stream_seed, day, MockLLM(seed=seed), seed)
    assert out_a == out_b
    assert store_state(a.store) == store_state(b.store)
    assert np.array_equal(a.strength(now), b.strength(now), equal_nan=True)
    assert _summaries(a) == _summaries(b)


@pytest.mark.parametrize("policy_id", SEEDS)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream_seed=st.integers(0, 2**16), day=st.integers(1, 9), seed=st.integers(0, 3))
def test_batched_day_equals_one_by_one_with_failures(policy_id, stream_seed, day, seed):
    """The same with the mock's extraction and embedding failures (the fallbacks and drops a
    batch must interleave per episode as one episode at a time does)."""
    from memsim.engine.llm import Faults

    llm = MockLLM(seed=seed, faults=Faults(extract_fail=0.2, embed_fail=0.3))
    a, out_a, b, out_b, _ = _day_both_ways(policy_id, stream_seed, day, llm, seed)
    assert out_a == out_b
    assert store_state(a.store) == store_state(b.store)
    assert _summaries(a) == _summaries(b)


def _modes_and_faults():
    """The mock's documented modes that act on ingest (docs/mock-llm.md) and its injected
    faults, each at its default or at a setting that changes what extraction, embedding or
    classification return."""
    from memsim.engine.llm import SUMMARY_MODES, Faults, Modes

    modes = st.builds(
        Modes,
        entity_forms=st.sampled_from([1, 3]),
        resolution_error=st.sampled_from([0.0, 0.1]),
        chatter_confidence=st.sampled_from([-1.0, 0.3]),
        fact_confidence_spread=st.sampled_from([0.0, 0.1]),
        summary=st.sampled_from(SUMMARY_MODES),  # Personal AI's conversation summaries
    )
    faults = st.builds(
        Faults,
        extract_fail=st.sampled_from([0.0, 0.2]),
        embed_fail=st.sampled_from([0.0, 0.3]),
        wrong_class=st.sampled_from([0.0, 0.1]),
        invalid_answer=st.sampled_from([0.0, 0.1]),
        importance_jitter=st.sampled_from([0.0, 0.2]),
        wrong_category=st.sampled_from([0.0, 0.1]),
    )
    return modes, faults


@pytest.mark.parametrize("policy_id", SEEDS + [f"{p}-code" for p in SEEDS])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    profile=st.sampled_from(["steady", "churn", "noisy", "longgap"]),
    stream_seed=st.integers(0, 2**16),
    day=st.integers(1, 9),
    seed=st.integers(0, 3),
    mock=st.tuples(*_modes_and_faults()),
)
def test_batched_day_equals_one_by_one_on_every_profile_under_the_mocks_modes(
    policy_id, profile, stream_seed, day, seed, mock
):
    """The same on the four synthetic profiles, for the seed policies and their code
    variants, with the mock's modes and faults drawn (other surface forms of a key, keys
    resolved to none, chatter's and facts' confidence, summaries, failures, wrong and invalid
    classifications): what a batch decides in order never depends on the batch."""
    modes, faults = mock
    llm = MockLLM(seed=seed, modes=modes, faults=faults)
    spec = f"synthetic:{profile},episodes=1000,queries=10,horizon=10"
    a, out_a, b, out_b, _ = _day_both_ways(policy_id, stream_seed, day, llm, seed, spec)
    assert out_a == out_b
    assert store_state(a.store) == store_state(b.store)
    assert _summaries(a) == _summaries(b)


def _index_audits(policy):
    """The audit figures of every candidate index a policy keeps (Personal AI: two)."""
    return [
        idx.summary()
        for idx in (policy.candidates, getattr(policy, "reinforcing", None))
        if idx is not None
    ]


@pytest.mark.parametrize("policy_id", ["pai", "pai-code"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream_seed=st.integers(0, 2**16),
    day=st.integers(6, 9),
    seed=st.integers(0, 3),
    nprobe=st.sampled_from([1, 4]),
    audit_every=st.sampled_from([1, 3]),
    cones_from=st.sampled_from([60, 120]),
)
def test_batched_day_through_the_candidate_index_equals_one_by_one(
    policy_id, stream_seed, day, seed, nprobe, audit_every, cones_from
):
    """The same with Personal AI's searches through its candidate indexes from 120 rows
    (faiss IVF probing 1 or 4 lists, so that its answers do miss rows; the reinforcement
    check through the cones, from 60 or 120 rows: below the IVF's threshold a batch decides
    by its screen, and keeps the cones trained as the searches one at a time do): a batch
    searches the indexes as one episode at a time does and counts the same audit. The other
    tests' stores stay under every index's threshold; Personal AI turns its index on from
    5,000 rows (between days 120 and 240 of the steady year) and the cones from 2,000. The
    other seed policies' ingest does not search through ``candidates`` (their recall
    may)."""

    def on_early(pol):
        pol.reinforce_index = {"mode": "cones", "min_rows": cones_from}  # (read by use_index)
        pol.use_index("ivf", min_rows=120, nprobe=nprobe, audit_every=audit_every)

    spec = "synthetic:steady,episodes=1500,queries=10,horizon=10"
    a, out_a, b, out_b, _ = _day_both_ways(
        policy_id, stream_seed, day, MockLLM(seed=seed), seed, spec, prepare=on_early
    )
    assert a.candidates.approximate and a.candidates.audit["searches"]  # (it was searched)
    assert out_a == out_b
    assert store_state(a.store) == store_state(b.store)
    assert _summaries(a) == _summaries(b)
    assert _index_audits(a) == _index_audits(b)


@pytest.mark.parametrize("policy_id", ["pai", "pai-code"])
@pytest.mark.parametrize(("stream_seed", "day"), [(0, 3), (1, 6)])
def test_batched_day_by_the_screen_keeps_the_cones_trained_as_one_by_one(
    policy_id, stream_seed, day
):
    """Where Personal AI's findSimilarBeliefs scans the store (no IVF) while its
    reinforcement check's cones answer (from 60 rows here; by default the cones from 2,000
    rows, the IVF from 5,000), a batch decides by its screen and searches no cones, but
    brings them up to date at each belief as a search would: trained at the same beliefs
    as one at a time (the same partition, and the same count of trainings in its audit).
    One at a time trains them on these days."""
    from memsim.engine.candidate_index import CandidateIndex

    def cones_only(pol):
        pol.use_index("exact")
        pol.reinforcing = CandidateIndex(pol.store, "cones", min_rows=60, seed=pol.seed)

    trained: list[int] = []
    spec = "synthetic:steady,episodes=1500,queries=10,horizon=10"
    a, out_a, b, out_b, _ = _day_both_ways(
        policy_id,
        stream_seed,
        day,
        MockLLM(seed=0),
        0,
        spec,
        prepare=cones_only,
        warmed=lambda pol: trained.append(pol.reinforcing.audit["trainings"]),
    )
    assert b.reinforcing.audit["trainings"] > trained[0]  # (the day trains them)
    assert out_a == out_b and not a.candidates.approximate
    assert _index_audits(a) == _index_audits(b)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream_seed=st.integers(0, 2**16),
    day=st.integers(1, 9),
    seed=st.integers(0, 3),
    faults=st.booleans(),
)
def test_personal_ai_batched_day_through_the_screen_equals_one_by_one(
    stream_seed, day, seed, faults
):
    """Personal AI compares a batch's beliefs with the store in one matrix product
    (batch_screen.BatchScreen; its bounds over every row from BATCH_SCREEN_MIN_ROWS rows: here from
    1, so these small stores use them), then decides them in order: the same outcomes and
    store as one at a time."""
    from unittest import mock

    from memsim.engine import batch_screen
    from memsim.engine.llm import Faults

    answered = []
    top_rows, best_row = batch_screen.BatchScreen.top_rows, batch_screen.BatchScreen.best_row

    def counted(self, *args, **kwargs):
        rows = top_rows(self, *args, **kwargs)
        answered.append(rows is not None)
        return rows

    def counted_best(self, *args):
        row = best_row(self, *args)
        answered.append(row is not None)
        return row

    failing = Faults(extract_fail=0.2, embed_fail=0.3) if faults else Faults()
    llm = MockLLM(seed=seed, faults=failing)
    with (
        mock.patch.object(batch_screen, "BATCH_SCREEN_MIN_ROWS", 1),
        mock.patch.object(batch_screen.BatchScreen, "top_rows", counted),
        mock.patch.object(batch_screen.BatchScreen, "best_row", counted_best),
    ):
        a, out_a, b, out_b, now = _day_both_ways("pai", stream_seed, day, llm, seed)
    assert out_a == out_b
    assert store_state(a.store) == store_state(b.store)
    assert any(answered)  # the day's searches went through the screen


def test_personal_ai_batched_days_read_off_shortlists_equal_one_by_one():
    """Most of a batch's searches are settled by their shortlists (the best screens of the
    batch's product: no product computed): a reinforcement by its first row alone
    (BatchScreen.best_row), a whole top-k when its rows are apart; the others by the exact
    products of their listed rows (batch_screen.BatchScreen). Over these days all three happen,
    at stores of 80 to 180 rows, and every day's outcomes and store equal one episode at a
    time."""
    from unittest import mock

    from memsim.engine.batch_screen import BatchScreen as Screen

    used = {"best": 0, "shortlist": 0, "listed": 0}
    best, shortlisted = Screen.best_row, Screen._shortlisted
    listed = Screen._listed_support

    def counted(method, name):
        def call(self, *args):
            rows = method(self, *args)
            # (best_row settles a top-1 through _shortlisted: counted as "best" only)
            used[name] += rows is not None and (name != "shortlist" or args[1] > 1)
            return rows

        return call

    with (
        mock.patch.object(Screen, "best_row", counted(best, "best")),
        mock.patch.object(Screen, "_shortlisted", counted(shortlisted, "shortlist")),
        mock.patch.object(Screen, "_listed_support", counted(listed, "listed")),
    ):
        for stream_seed in range(3):
            for day in (3, 6, 9):
                a, out_a, b, out_b, _ = _day_both_ways("pai", stream_seed, day, MockLLM(seed=0), 0)
                assert out_a == out_b
                assert store_state(a.store) == store_state(b.store)
                assert _summaries(a) == _summaries(b)
    assert used["best"] > used["shortlist"] > 0 and used["listed"] > 0, used


def test_in_episode_order_puts_each_episodes_drops_before_its_creates():
    """The order one episode at a time gives: episode by episode, its drops (found anywhere
    in the batch) first, then what it created; an episode with neither adds nothing."""
    from memsim.engine.policy import Outcome, in_episode_order

    made = [Outcome("e0", "create", 0), Outcome("e0", "create", 1), Outcome("e3", "create", 2)]
    drops = {3: [Outcome("e3", "drop")], 0: [Outcome("e0", "drop", detail="claim 2")]}
    got = in_episode_order(4, drops, [0, 0, 3], made)
    assert got == [drops[0][0], made[0], made[1], drops[3][0], made[2]]
    assert in_episode_order(4, {}, [0, 0, 3], made) == made
    assert in_episode_order(2, {1: [Outcome("e1", "drop")]}, [], []) == [Outcome("e1", "drop")]


@pytest.mark.parametrize("stream_seed", [1, 2, 3])
@pytest.mark.parametrize("faults", [False, True])
def test_cosmo_batched_day_with_storylines_owners_and_many_claims_equals_one_by_one(
    stream_seed, faults
):
    """Cosmo plans a batch in order and writes it at once (its rows in one add per run of
    one status, the provenance entries in episode order). The random days above have one
    claim per episode, one speaker and no storyline; here the day comes after a run with
    recalls and nightly jobs (promoted storylines, which a day's Sources attach to), and its
    episodes are regrouped into ones of several claims, by new speakers (an owner node, a
    row of another status, mid-batch), with kept-forever, filtered and text-only claims."""
    import dataclasses

    import scenarios
    from memsim.engine.events import Claim, Stream
    from memsim.engine.llm import Faults
    from memsim.engine.runner import run

    stream = scenarios.load(
        "synthetic:steady,episodes=1200,queries=240,horizon=30", seed=stream_seed
    )
    day = 25
    before = Stream(
        tuple(e for e in stream.events if e.time < day), name="before", horizon=float(day)
    )
    llm = MockLLM(seed=0, faults=Faults(embed_fail=0.2) if faults else Faults())
    pol = registry.make("cosmo", llm=llm, seed=0)
    run(pol, before)
    assert pol.store["has_meso"].any()  # storylines to attach to
    todays = [e for e in stream.events if isinstance(e, Episode) and day <= e.time < day + 1]
    regrouped = []
    for i in range(0, len(todays) - 2, 3):
        first, second, third = todays[i : i + 3]
        claims = first.claims + second.claims
        if i % 4 == 0:  # kept forever, below the extraction filter, text only
            claims += (
                dataclasses.replace(third.claims[0], attrs=(("ttl_policy", "keep_forever"),)),
                dataclasses.replace(third.claims[0], key=third.claims[0].key + "x", confidence=0.1),
                Claim(key="", value=third.text),
            )
        speaker = f"guest{i % 5}" if i % 2 else first.speaker
        regrouped.append(dataclasses.replace(first, claims=claims, speaker=speaker))
        regrouped.append(third)
    now = day + 1.0
    a, b = pol, copy.deepcopy(pol)
    out_a = a.ingest(regrouped, now)
    out_b = [o for e in regrouped for o in b.ingest([e], now)]
    assert out_a == out_b
    assert store_state(a.store) == store_state(b.store)
    assert np.array_equal(a.strength(now), b.strength(now), equal_nan=True)
    actions = {(o.event, o.action) for o in out_a}
    assert ("attach", "link") in actions and ("owner", "create") in actions
    assert a.store.provenance_log == b.store.provenance_log and not a.store._unlogged
