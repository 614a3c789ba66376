"""kernle-code follows github.com/Emergent-Instruments/kernle at commit
7345648dbe2ae94324d0240799bcccb904b7aa25: kernle/features/forgetting.py (the forgetting
cycle) and kernle/storage/sqlite.py (the salience it sorts by); its consolidation counts
repeated lessons as kernle/stack/components/consolidation.py@4ef01db does. One test per
rule, each naming its function; lines of forgetting.py@7345648: 93 the salience, 120
``limit=limit * 2``, 125 ``r.score < threshold``, 148 ``candidates[:limit]``, 203-204
``run_forgetting_cycle(threshold=0.3, limit=10)``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.curve import curve
from memsim.engine.events import Claim, Episode
from memsim.engine.registry import make
from policies.kernle import next_strength
from tests.policies.test_izzie import FakeLLM


def ep(i: int, t: float, key: str, value: str = "v", category: str = "event", conf=0.9):
    return Episode(
        f"e{i}", t, f"{key} is {value}", claims=(Claim(key, value, category, confidence=conf),)
    )


def code(**params):
    return make("kernle-code", dict(params) or None, llm=FakeLLM(), seed=0)


def doc(**params):
    return make("kernle", dict(params) or None, llm=FakeLLM(), seed=0)


def statuses(pol) -> list[str]:
    return [pol.store.status_of(r) for r in range(pol.store.n)]


def test_salience_adds_0_1_inside_the_log_term():
    """sqlite.py@7345648 get_forgetting_candidates (and forgetting.py calculate_salience):
    salience = confidence x (ln(times_accessed + 1) + 0.1) / (days_since / 30 + 1)."""
    pol = code()
    pol.ingest([ep(0, 0.0, "a.b", conf=0.8)], 0.0)
    assert pol.strength(15.0)[0] == pytest.approx(0.8 * 0.1 / (15 / 30 + 1), rel=1e-12)
    pol.store["access_count"][0] = 3
    pol.store["last_access"][0] = 15.0
    assert pol.strength(45.0)[0] == pytest.approx(0.8 * (math.log(4) + 0.1) / 2.0, rel=1e-12)
    assert doc().params.log_offset == 0.0


def test_an_unaccessed_memory_at_confidence_0_8_goes_at_the_first_cycle():
    """forgetting.py@7345648 run_forgetting_cycle(threshold=0.3): salience <= 0.08 < 0.3, so
    the first cycle (day 7, memsim's weekly cadence) tombstones it; it was kept all year
    when the floor sat on a separate strength."""
    frame = curve("kernle-code", "never", [0.0, 6.0, 7.0, 365.0], memory={"confidence": "0.8"})
    assert frame["status"].tolist() == ["active", "active", "forgotten", "forgotten"]
    assert frame["strength"].iloc[0] == pytest.approx(0.08)


def test_a_cycle_forgets_at_most_10():
    """forgetting.py@7345648 lines 204, 148 (run_forgetting_cycle(limit=10)): of 15
    memories under the threshold the first cycle tombstones 10, the next the other 5; the
    documented cycle (004 names no limit) all 15 at once."""
    pol = code()
    pol.ingest([ep(i, 0.0, f"k{i}.x") for i in range(15)], 0.0)
    pol.maintain(7.0, ["forget"])
    assert statuses(pol).count("forgotten") == 10
    pol.maintain(14.0, ["forget"])
    assert statuses(pol).count("forgotten") == 15
    d = doc()
    d.ingest([ep(i, 0.0, f"k{i}.x") for i in range(15)], 0.0)
    d.maintain(7.0, ["forget"])
    assert statuses(d).count("forgotten") == 15


def test_the_lowest_salience_goes_first():
    """forgetting.py@7345648: candidates are sorted by salience, lowest first
    (sqlite.py results.sort(key=lambda x: x.score)), then cut at the limit: of 12 memories
    the 10 of lowest confidence go."""
    pol = code()
    pol.ingest([ep(i, 0.0, f"k{i}.x", conf=0.2 + 0.05 * i) for i in range(12)], 0.0)
    pol.maintain(7.0, ["forget"])
    assert statuses(pol) == ["forgotten"] * 10 + ["active"] * 2


def _weak_after(n_kept: int, **params) -> str:
    """``n_kept`` strong episodes, then one weak one (conf 0.1, a day newer): its status
    after the first cycle."""
    pol = code(**params)
    pol.ingest([ep(i, 0.0, f"k{i}.x") for i in range(n_kept)], 0.0)
    pol.store["access_count"][:n_kept] = 1000  # well above the threshold
    pol.ingest([ep(n_kept, 1.0, "weak.x", conf=0.1)], 1.0)
    pol.maintain(7.0, ["forget"])
    return pol.store.status_of(n_kept)


def test_the_storage_scores_only_the_40_oldest_of_a_type():
    """sqlite.py@7345648 get_forgetting_candidates: per type ``ORDER BY created_at ASC LIMIT
    ?`` with limit * 2 = 40 (forgetting.py asks for limit * 2 = 20): a weak memory newer than
    40 kept ones is never scored, however low its salience; as the 40th it is."""
    assert _weak_after(40) == "active"
    assert _weak_after(39) == "forgotten"
    assert _weak_after(40, oldest_per_kind=41) == "forgotten"


def test_the_storage_returns_20_candidates():
    """forgetting.py@7345648 get_forgetting_candidates: the storage returns limit * 2 = 20
    lowest; with a limit above 20 a cycle still forgets 20 at most."""
    pol = code(forget_limit=30)
    pol.ingest([ep(i, 0.0, f"k{i}.x") for i in range(25)], 0.0)
    pol.maintain(7.0, ["forget"])
    assert statuses(pol).count("forgotten") == 20


def test_values_and_drives_are_never_candidates():
    """sqlite.py@7345648: types = episode, belief, goal, note, relationship ("Exclude values
    and drives by default"): an unprotected value is not forgotten by the code, by 004's
    cycle it is."""
    out = {}
    for name, pol in (("code", code()), ("doc", doc())):
        pol.ingest([ep(0, 0.0, "me.value", category="value")], 0.0)
        pol.store["protected"][0] = False
        pol.maintain(7.0, ["forget"])
        out[name] = pol.store.status_of(0)
    assert out == {"code": "active", "doc": "forgotten"}


def test_protected_memories_are_never_candidates_and_forgetting_is_a_tombstone():
    """sqlite.py@7345648: ``COALESCE(is_protected, 0) = 0``; forget_memory sets is_forgotten
    (a tombstone, recoverable), never deletes."""
    pol = code()
    pol.ingest([ep(0, 0.0, "a.x"), ep(1, 0.0, "b.x")], 0.0)
    pol.store["protected"][0] = True
    pol.maintain(7.0, ["forget"])
    assert statuses(pol) == ["active", "forgotten"]
    assert pol.store.n == 2


def test_consolidation_counts_repeated_lessons():
    """stack/components/consolidation.py@4ef01db: ``Counter(all_lessons)``, ``cnt >= 2``: two
    episodes with the same lesson make the pattern; a third about the same thing in other
    words is not in it (004's agent, memsim's cosine, groups all three)."""
    eps = [ep(0, 0.0, "work.testing", "flaky"), ep(1, 0.0, "work.testing", "flaky")]
    eps.append(ep(2, 0.0, "work.testing", "slow"))
    out = {}
    for name, pol in (("code", code()), ("doc", doc())):
        pol.ingest(eps, 0.0)
        made = [o.memory for o in pol.maintain(1.0, ["consolidate"]) if o.action == "create"]
        out[name] = [sorted(pol.store.provenance[b]) for b in made]
    assert out == {"code": [["e0", "e1"]], "doc": [["e0", "e1", "e2"]]}


def _finds_the_old_lesson(others: int, **params) -> bool:
    """Two episodes with one lesson, then ``others`` with lessons of their own: does the
    first consolidation make a belief?"""
    pol = code(**params)
    eps = [ep(0, 0.0, "old.lesson", "same"), ep(1, 0.0, "old.lesson", "same")]
    eps += [ep(i, 0.0, f"k{i}.x", f"v{i}") for i in range(2, 2 + others)]
    pol.ingest(eps, 0.0)
    return any(o.action == "create" for o in pol.maintain(1.0, ["consolidate"]))


def test_consolidation_reads_the_50_most_recent_episodes():
    """stack/components/consolidation.py@4ef01db: ``get_episodes(limit=50)``: a lesson
    repeated only by the two oldest of 52 waiting episodes falls out of the window, and with
    51 waiting the older of the two does; among 50 it is found."""
    assert not _finds_the_old_lesson(50)
    assert not _finds_the_old_lesson(49)
    assert _finds_the_old_lesson(48)
    assert _finds_the_old_lesson(50, consolidation_window=52)


def test_the_stack_revision_strength_starts_at_1():
    """forget_by='strength' names kernle/stack/components/forgetting.py@639c505: a memory's
    stored strength is 1.0 when it is made, before any cycle moves it."""
    pol = code(forget_by="strength")
    pol.ingest([ep(0, 0.0, "a.x"), ep(1, 0.0, "b.x")], 0.0)
    assert pol.store["forget_strength"][: pol.store.n].tolist() == [1.0, 1.0]


def test_the_stack_revision_strength_has_no_unaccessed_floor():
    """forget_by='strength' names kernle/stack/components/forgetting.py@639c505
    ``_compute_decayed_strength``: strength - 0.01 x days / half_life + 0.01 x 0.1 x
    ln(times_accessed + 1), clipped to [0, 1]; no floor for a memory never accessed."""
    p = code().params
    s = next_strength(np.array([1.0, 1.0]), np.array([0, 3]), np.array([3000.0, 3000.0]), p)
    assert s[0] == 0.0
    assert s[1] == pytest.approx(max(0.0, 1.0 - 0.01 * 100 + 0.001 * math.log(4)))
