"""FSRS-6 and ACT-R reference policies (issue 14): kernels equal their scalar twins, FSRS
agrees with the ``fsrs`` package, published worked numbers, bad parameters."""

from __future__ import annotations

import contextlib
import math
from datetime import UTC, datetime, timedelta

import fsrs
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memsim.engine import ranking
from memsim.engine.errors import ParamError
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.registry import make
from policies import actr_formulas, fsrs6
from policies.actr import ACTRParams, ranked_activation
from policies.fsrs6 import DEFAULT_W, FSRS, FSRSParams, initial_difficulty
from policies.reference_claims import OneVectorLLM

T0 = datetime(2024, 1, 1, tzinfo=UTC)
W = fsrs.scheduler.DEFAULT_PARAMETERS


def test_default_w_is_the_package_default():
    assert DEFAULT_W == tuple(W)


# ---------------------------------------------------------------- FSRS-6 published numbers


def test_fsrs_one_good_review_then_ten_days():
    """fsrs 6.3.2 defaults: a new card rated Good has S = w2 = 2.3065; R after 10 days
    (1 + F * 10 / S) ^ -w20 = 0.77437."""
    card, _ = fsrs.Scheduler(enable_fuzzing=False).review_card(fsrs.Card(), fsrs.Rating.Good, T0)
    assert card.stability == pytest.approx(2.3065)
    r = float(fsrs6.fsrs_retrievability(10.0, 2.3065, W[20]))
    assert r == pytest.approx(0.77437, abs=5e-6)
    assert fsrs.Scheduler().get_card_retrievability(card, T0 + timedelta(days=10)) == (
        pytest.approx(r, abs=1e-12)
    )


def test_fsrs_retrievability_is_ninety_percent_at_t_equal_s():
    """FSRS-6 definition of stability: R(S, S) = 0.9 for any w20."""
    for w20 in (0.1, 0.1542, 0.5, 0.8):
        assert float(fsrs6.fsrs_retrievability(7.0, 7.0, w20)) == pytest.approx(0.9, abs=1e-12)


def test_fsrs_initial_difficulty_good():
    """D0(Good) = w4 - e^(w5 * 2) + 1 = 2.1181... (before clamping to [1, 10])."""
    want = W[4] - math.exp(W[5] * 2) + 1
    assert initial_difficulty(DEFAULT_W) == pytest.approx(want, abs=1e-12)
    card, _ = fsrs.Scheduler(enable_fuzzing=False).review_card(fsrs.Card(), fsrs.Rating.Good, T0)
    assert card.difficulty == pytest.approx(initial_difficulty(DEFAULT_W), abs=1e-12)


# how the ACT-R segment kernels group rows (_count_grouping)
GROUPINGS = ("one group", "per count class", "long rows alone")


@given(st.lists(st.integers(0, 60 * 24 * 120), min_size=1, max_size=8))
def test_fsrs_kernel_agrees_with_the_package(gaps_minutes):
    """Random Good-review histories through the vectorized kernel and the package: S, D and
    R agree to 1e-9."""
    sched = fsrs.Scheduler(enable_fuzzing=False)
    card, _ = sched.review_card(fsrs.Card(), fsrs.Rating.Good, T0)
    S = np.array([max(W[2], 0.001)])
    D = np.array([initial_difficulty(DEFAULT_W)])
    t, last = T0, 0.0
    for g in gaps_minutes:
        t = t + timedelta(minutes=g)
        now = (t - T0).total_seconds() / 86400.0
        elapsed = np.floor(np.array([now - last]) + 1e-9)
        S, D = fsrs6.fsrs_review_good(S, D, elapsed, W)
        card, _ = sched.review_card(card, fsrs.Rating.Good, t)
        last = now
        assert abs(S[0] - card.stability) <= 1e-9 * max(1.0, card.stability)
        assert abs(D[0] - card.difficulty) <= 1e-9
    later = t + timedelta(days=5)
    r = fsrs6.fsrs_retrievability(5.0, S, W[20])[0]
    assert abs(r - sched.get_card_retrievability(card, later)) <= 1e-9


@given(
    st.lists(st.floats(0.001, 500.0), min_size=1, max_size=10),
    st.lists(st.floats(1.0, 10.0), min_size=10, max_size=10),
    st.lists(st.integers(0, 400), min_size=10, max_size=10),
)
def test_fsrs_kernels_equal_their_scalar_twins(S, D, t):
    S = np.array(S)
    D = np.array(D[: len(S)])
    t = np.array(t[: len(S)], dtype=np.float64)
    got_s, got_d = fsrs6.fsrs_review_good(S, D, t, W)
    got_r = fsrs6.fsrs_retrievability(t, S, W[20])
    for i in range(len(S)):
        s, d = fsrs6.fsrs_review_good_ref(S[i], D[i], t[i], W)
        assert math.isclose(got_s[i], s, rel_tol=1e-12)
        assert math.isclose(got_d[i], d, rel_tol=1e-12)
        assert math.isclose(
            got_r[i], fsrs6.fsrs_retrievability_ref(t[i], S[i], W[20]), rel_tol=1e-12
        )


def test_fsrs_policy_reviews_match_the_package():
    """Creation, two reinforcements and a retrieval are four Good reviews of one card."""
    pol = FSRS(llm=OneVectorLLM())
    c = Claim(key="user.city", value="Paris")
    sched = fsrs.Scheduler(enable_fuzzing=False)
    card = fsrs.Card()
    for i, day in enumerate((0.0, 3.0, 3.5)):
        pol.ingest([Episode(id=f"e{i}", time=day, text="x", claims=(c,))], day)
        card, _ = sched.review_card(card, fsrs.Rating.Good, T0 + timedelta(days=day))
    pol.recall([Query(id="q", time=20.0, text="city?", keys=("user.city",), k=1)], 20.0)
    card, _ = sched.review_card(card, fsrs.Rating.Good, T0 + timedelta(days=20))
    assert pol.store.n == 1
    assert abs(pol.store["stability"][0] - card.stability) <= 1e-9
    assert abs(pol.store["difficulty"][0] - card.difficulty) <= 1e-9
    want = sched.get_card_retrievability(card, T0 + timedelta(days=47))
    assert abs(pol.strength(47.0)[0] - want) <= 1e-9


def test_fsrs_forgets_under_the_threshold():
    pol = FSRS(FSRSParams(forget_below=0.9), llm=OneVectorLLM())
    pol.ingest([Episode(id="e", time=0.0, text="x", claims=(Claim(key="a.b", value="1"),))], 0.0)
    assert pol.maintain(2.0, ["decay"])[0].action == "skip"  # R(2, 2.3065) > 0.9
    assert [o.action for o in pol.maintain(3.0, ["decay"])] == ["prune"]  # R(3, S) < 0.9
    assert pol.footprint() == 0


def test_fsrs_bad_params():
    with pytest.raises(ParamError, match="21"):
        FSRSParams(w=DEFAULT_W[:20])
    with pytest.raises(ParamError, match=r"w\[20\]"):
        FSRSParams(w=DEFAULT_W[:20] + (0.0,))


# ---------------------------------------------------------------- ACT-R


def test_actr_single_presentation_one_unit_old_has_activation_zero():
    """Anderson & Schooler 1991: B = ln(1^-0.5) = 0; two presentations 1 and 4 units ago:
    ln(1 + 1/2) = 0.405465."""
    assert float(actr_formulas.actr_activation(np.array([[5.0, np.nan]]), 6.0)[0]) == 0.0
    got = float(actr_formulas.actr_activation(np.array([[2.0, 5.0]]), 6.0, 0.5)[0])
    assert got == pytest.approx(math.log(1.5), abs=1e-12)


def test_actr_recall_probability_pavlik_anderson_2005():
    """P = 1 / (1 + exp(-(B - tau) / s)); with tau = -0.704, s = 0.255 (Pavlik & Anderson
    2005 Table 2) B = tau gives 0.5 and B = 0 gives 0.94052."""
    p = ACTRParams()
    assert float(actr_formulas.logistic_recall(p.tau, p.tau, p.s)) == 0.5
    assert float(actr_formulas.logistic_recall(0.0, p.tau, p.s)) == pytest.approx(
        0.940520, abs=1e-6
    )


def test_actr_spacing_first_decay_is_a():
    """Pavlik & Anderson 2005 eq. 3: m_0 = -inf so d_1 = a; one presentation 4 units old has
    B = -a ln 4. A second presentation at t2 decays with c * exp(m_1) + a, m_1 = -a ln(t2-t1)."""
    a, c = 0.1768, 0.2170
    got = float(actr_formulas.actr_activation_spacing(np.array([[0.0]]), 4.0, a, c)[0])
    assert got == pytest.approx(-a * math.log(4.0), abs=1e-12)
    d2 = c * math.exp(-a * math.log(2.0)) + a
    want = math.log(6.0**-a + 4.0**-d2)
    got = float(actr_formulas.actr_activation_spacing(np.array([[0.0, 2.0]]), 6.0, a, c)[0])
    assert got == pytest.approx(want, abs=1e-12)


times_rows = st.lists(
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=6).map(sorted), min_size=1, max_size=8
)


def _pad(rows):
    m = max(len(r) for r in rows)
    out = np.full((len(rows), m), np.nan)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


@given(times_rows, st.floats(0.05, 1.5), st.floats(0.0, 50.0))
# six presentations at one instant: the spacing model's decays grow until the scalar twin's
# power overflowed (an OverflowError where the kernel's float64 gives inf)
@example([[0.0] * 6], 1.0, 0.0)
def test_actr_kernels_equal_their_scalar_twins(rows, d, extra):
    now = 100.0 + extra
    t = _pad(rows)
    got = actr_formulas.actr_activation(t, now, d, 1 / 24)
    got_sp = actr_formulas.actr_activation_spacing(t, now, 0.1768, 0.2170, 1 / 24)
    for i, r in enumerate(rows):
        assert math.isclose(
            got[i], actr_formulas.actr_activation_ref(r, now, d, 1 / 24), rel_tol=1e-12
        )
        want = actr_formulas.actr_activation_spacing_ref(r, now, 0.1768, 0.2170, 1 / 24)
        assert math.isclose(got_sp[i], want, rel_tol=1e-12, abs_tol=1e-12)
        p = actr_formulas.logistic_recall(got[i], -0.704, 0.255)
        assert math.isclose(
            p, actr_formulas.logistic_recall_ref(got[i], -0.704, 0.255), rel_tol=1e-12
        )


@given(
    st.lists(
        st.lists(st.floats(0.0, 100.0), min_size=0, max_size=40).map(sorted),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([0.5, 0.3, 1.1]),
    st.floats(0.0, 50.0),
    st.integers(0, 5),
    st.sampled_from(GROUPINGS),
)
def test_actr_counted_and_segments_kernels_are_the_padded_kernel_bit_for_bit(
    rows, d, extra, pad, grouping
):
    """Rows up to 40 presentations (wider than the 8 terms under which a reduction stops
    summing in order), rows with none, extra NaN columns beyond the widest row; the rows
    evaluated as one group (few rows), a group per count class, or the longer rows alone."""
    now = 100.0 + extra
    m = max(len(r) for r in rows) + pad
    t = np.full((len(rows), m), np.nan)
    for i, r in enumerate(rows):
        t[i, : len(r)] = r
    counts = np.array([len(r) for r in rows])
    want = actr_formulas.actr_activation(t, now, d, 1 / 24)
    with _count_grouping(grouping):
        got = actr_formulas.actr_activation_counted(t, counts, now, d, 1 / 24)
    assert got.tobytes() == want.tobytes()
    # the same rows as segments of one pool, in reverse order with a gap after each
    pool, start, at = np.full(sum(counts) + 3 * len(rows), -7.0), np.zeros(len(rows), int), 0
    for i in reversed(range(len(rows))):
        start[i] = at
        pool[at : at + counts[i]] = rows[i]
        at += counts[i] + 3
    with _count_grouping(grouping):
        got = actr_formulas.actr_activation_segments(pool, start, counts, now, d, 1 / 24)
    assert got.tobytes() == want.tobytes()


@contextlib.contextmanager
def _count_grouping(grouping: str):
    """The kernels' rows as one group where padding is cheap (the default), always one
    group per count class (the path of a store's many rows), or with every row of 4
    presentations or more a group of its own, read from its segment (the path of a year's
    most retrieved rows, whose counts pass ``_ALONE_FROM``)."""
    saved = actr_formulas._ONE_GROUP_CELLS, actr_formulas._ALONE_FROM
    if grouping == "per count class":
        actr_formulas._ONE_GROUP_CELLS = -(1 << 62)
    elif grouping == "long rows alone":
        actr_formulas._ALONE_FROM = 4
    try:
        yield
    finally:
        actr_formulas._ONE_GROUP_CELLS, actr_formulas._ALONE_FROM = saved


def test_actr_policy_keeps_every_rows_presentations_in_order():
    """ACTR's presentation store (segments of one pool, a full row moved with twice the
    room): after creations and random reviews every row's presentations are the ones made,
    in order; the padded matrix for the spacing kernel is as wide as the matrix it replaces
    (the smallest power of two at or above the largest count); the segments kernel equals
    the padded kernel on it bit for bit."""
    pol = make("actr", llm=OneVectorLLM())
    rng = np.random.default_rng(0)
    made: list[list[float]] = []
    now = 0.0
    for step in range(300):
        now += float(rng.exponential(0.5))
        if step % 7 == 0 or not made:
            pol._after_create(len(made), now)
            made.append([now])
        else:
            rows = np.unique(rng.integers(0, len(made), size=int(rng.integers(1, 4))))
            rows = rows[rng.permutation(len(rows))]
            pol._review(rows, now)
            for r in rows.tolist():
                made[r].append(now)
    n = len(made)
    assert [pol.presentations(r).tolist() for r in range(n)] == made
    padded = pol._padded(n)
    widest = max(len(m) for m in made)
    assert padded.shape == (n, 1 << (widest - 1).bit_length()) and padded.shape[1] >= widest
    for r, m in enumerate(made):
        assert padded[r, : len(m)].tolist() == m and np.isnan(padded[r, len(m) :]).all()
    want = actr_formulas.actr_activation(padded, now + 1.0, 0.5, 1 / 24)
    got = actr_formulas.actr_activation_segments(
        pol.pool, pol.start[:n], pol.counts[:n], now + 1.0, 0.5, 1 / 24
    )
    assert got.tobytes() == want.tobytes()


def test_actr_policy_presentations_and_variant():
    """Creation at 0, reinforcement at 2 and a retrieval at 10 are three presentations."""
    for variant in ("standard", "spacing"):
        pol = make("actr", {"variant": variant}, llm=OneVectorLLM())
        c = Claim(key="a.b", value="1")
        pol.ingest([Episode(id="e0", time=0.0, text="x", claims=(c,))], 0.0)
        pol.ingest([Episode(id="e1", time=2.0, text="x", claims=(c,))], 2.0)
        pol.recall([Query(id="q", time=10.0, text="a?", keys=("a.b",), k=1)], 10.0)
        assert pol.presentations(0).tolist() == [0.0, 2.0, 10.0]
        if variant == "standard":
            want = math.log(20.0**-0.5 + 18.0**-0.5 + 10.0**-0.5)
        else:
            want = actr_formulas.actr_activation_spacing_ref([0.0, 2.0, 10.0], 20.0)
        assert float(pol.activation(20.0)[0]) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize(
    "field, value", [("decay", 0.0), ("decay", -0.5), ("s", 0.0), ("time_unit_days", 0.0)]
)
def test_actr_bad_params(field, value):
    with pytest.raises(ParamError, match=f"ACTRParams.{field}={value}"):
        ACTRParams(**{field: value})


def test_actr_spacing_activation_does_not_depend_on_padding_after_rapid_repetitions():
    """Five presentations an hour apart (in days) overflow Pavlik & Anderson's decay
    d = c exp(m) + a; the row's activation must not turn NaN because a wider matrix pads it
    (an overflowed term times the 0 of a missing presentation was NaN: 173 of 500 rows at
    the end of a 3,000-episode steady run of actr-spacing)."""

    row = [0.0, 1 / 24, 2 / 24, 3 / 24, 4 / 24]
    alone = actr_formulas.actr_activation_spacing(np.array([row]), 1.0, 0.1768, 0.2170, 1 / 24)
    padded = actr_formulas.actr_activation_spacing(
        np.array([row + [np.nan] * 3, [0.0] + [np.nan] * 7]), 1.0, 0.1768, 0.2170, 1 / 24
    )
    assert not np.isnan(padded).any()
    assert padded[0] == alone[0]
    assert (
        padded[1]
        == actr_formulas.actr_activation_spacing(np.array([[0.0]]), 1.0, 0.1768, 0.2170, 1 / 24)[0]
    )


def test_actr_spacing_ranks_an_overflowed_activation_first():
    """docs/policies/actr.md §The spacing variant: rapid repetitions overflow the activation
    to +inf (P = 1). Such a row ranks above every finite one, and such rows among
    themselves by spreading activation (a plain +inf would tie them, in tie-key order).
    Before version 3 they were never recalled: topk then dropped +inf scores (46% of the
    queries of the four profiles had one live)."""
    pol = make("actr-spacing", llm=OneVectorLLM())
    for _ in range(4):
        _create_row(pol, 0.0)
    for j in range(1, 5):  # rows 1 and 2: five presentations an hour apart
        pol._review(np.array([1, 2]), j / 24)
    t = 5 / 24
    act = pol.activation(t)
    assert np.isposinf(act[[1, 2]]).all() and np.isfinite(act[[0, 3]]).all()
    assert pol.retention(t)[1] == 1.0
    sims = np.array([0.9, 0.1, 0.5, 0.0])
    scores = pol._scores(sims, np.ones(4, dtype=bool), t, 3)
    assert pol.rank(scores, 3, "q").tolist() == [2, 1, 0]


def test_actr_spacing_ranking_evaluates_overflowed_rows_only_where_w_cos_can_reach():
    """An overflowed row's score is ``ranked_activation``'s finite stand-in plus W cos, so
    its bound is read the same way: with 12 overflowed rows live (their activation bound is
    +inf within a time unit of a presentation) and k = 2, the ranking evaluates the 2k rows
    of the highest bounds and stops, not all 12 (before, every such row was evaluated: 73
    rows per query late in the steady year, 20 after). The ranking is the full one."""
    pol = make("actr-spacing", llm=OneVectorLLM())
    for _ in range(16):
        _create_row(pol, 0.0)
    hot = np.arange(12)
    for j in range(1, 6):  # six presentations an hour apart: the sixth decay overflows
        pol._review(hot, j / 24)
    t = 5 / 24
    full = pol.activation(t)
    assert np.isposinf(full[hot]).all() and np.isfinite(full[12:]).all()
    sims = np.linspace(0.05, 0.95, 16)[::-1].copy()
    w = pol.params.spreading_weight
    got = pol._scores(sims, np.ones(16, dtype=bool), t, 2)
    assert np.isfinite(got).sum() == 4  # the first round's 2k rows
    want = ranked_activation(full, w) + w * sims
    keys = pol.store.tie_keys("q")
    assert ranking.topk(got, 2, keys).tolist() == ranking.topk(want, 2, keys).tolist() == [0, 1]


def _create_row(pol, now: float) -> None:
    """A row in ``pol``'s store and its first presentation, as ``ReferencePolicy.ingest``
    makes one."""
    row = int(
        pol.store.add(
            now,
            np.ones((1, pol.store.dim), np.float32),
            texts=[""],
            claims=[None],
            provenance=[()],
        )[0]
    )
    pol._after_create(row, now)


def _create_and_review(pol, steps) -> tuple[float, int]:
    """Apply (gap, pick) steps: after each gap, a new row (pick 0, or the first step) or a
    review of rows pick, 2 pick and pick + 3 (mod the rows so far); the time and row count."""
    now, n = 0.0, 0
    for gap, pick in steps:
        now += gap
        if pick == 0 or n == 0:
            _create_row(pol, now)
            n += 1
        else:
            pol._review(np.unique(np.array([pick, 2 * pick, pick + 3]) % n), now)
    return now, n


# gaps between presentations (days): rapid repetitions within min_age (an hour), which
# overflow d = c exp(m) + a to inf after a few, and ordinary gaps
spacing_gaps = st.one_of(st.sampled_from([0.0, 1 / 96, 1 / 48, 1 / 24]), st.floats(0.0, 30.0))


@given(
    st.lists(st.lists(spacing_gaps, min_size=0, max_size=24), min_size=1, max_size=8),
    st.sampled_from([0.0, 1 / 24, 0.5]),
    st.sampled_from([0.0, 1 / 24, 1.0, 20.0]),
    st.integers(0, 3),
    st.sampled_from(GROUPINGS),
)
def test_actr_spacing_segments_kernel_is_the_padded_kernel_bit_for_bit(
    rows, min_age, extra, pad, grouping
):
    """Rows up to 24 presentations (rapid repetitions whose activation overflows to +inf,
    rows with none, extra NaN columns), stored as segments of two pools in reverse order
    with gaps, with the decays of ``actr_spacing_neg_decays``: the segments kernel equals
    the padded kernel bit for bit, and the decays are the padded kernel's (d_1 = a)."""
    a, c = 0.1768, 0.2170
    times = [np.cumsum(g).tolist() for g in rows]
    last = max((t[-1] for t in times if t), default=0.0)
    now = last + extra
    m = max(len(t) for t in times) + pad
    padded = np.full((len(times), m), np.nan)
    for i, t in enumerate(times):
        padded[i, : len(t)] = t
    nd = actr_formulas.actr_spacing_neg_decays(padded, a, c, min_age)
    assert np.array_equal(np.isnan(nd), np.isnan(padded))
    assert all(nd[i, 0] == -a for i, t in enumerate(times) if t)
    counts = np.array([len(t) for t in times])
    pool, dpool = (
        np.full(sum(counts) + 3 * len(times), -7.0),
        np.full(sum(counts) + 3 * len(times), 5.0),
    )
    start, at = np.zeros(len(times), int), 0
    for i in reversed(range(len(times))):
        start[i] = at
        pool[at : at + counts[i]] = times[i]
        dpool[at : at + counts[i]] = nd[i, : counts[i]]
        at += counts[i] + 3
    want = actr_formulas.actr_activation_spacing(padded, now, a, c, min_age)
    with _count_grouping(grouping):
        got = actr_formulas.actr_activation_spacing_segments(
            pool, dpool, start, counts, now, min_age
        )
    assert got.tobytes() == want.tobytes()


@given(
    st.lists(st.tuples(spacing_gaps, st.integers(0, 7)), min_size=1, max_size=120),
    st.sampled_from([1.0, 1 / 24]),
    st.sampled_from([0.0, 1 / 24, 1.0, 20.0]),
)
def test_actr_spacing_policy_caches_the_padded_kernels_decays(steps, unit, extra):
    """The spacing variant computes each presentation's decay once, when it is made
    (creations and reviews of random rows, rapid repetitions included, time units of a day
    and an hour): its cached decays are the ones the padded kernel recomputes from the
    presentation times, and its activation is the padded kernel's on ``_padded`` bit for
    bit (+inf rows included)."""
    pol = make(
        "actr-spacing", {"time_unit_days": unit, "min_age": 1 / 24 / unit}, llm=OneVectorLLM()
    )
    p = pol.params
    now, n = _create_and_review(pol, steps)
    padded = pol._padded(n) / unit
    want_nd = actr_formulas.actr_spacing_neg_decays(padded, p.spacing_a, p.spacing_c, p.min_age)
    for r in range(n):
        assert (-pol.decays(r)).tobytes() == want_nd[r, : pol.counts[r]].tobytes()
    t = now + extra * unit
    want = actr_formulas.actr_activation_spacing(
        padded, t / unit, p.spacing_a, p.spacing_c, p.min_age
    )
    assert pol.activation(t).tobytes() == want.tobytes()


@given(
    st.lists(
        st.tuples(spacing_gaps, st.integers(0, 7), st.sampled_from(["", "all", "some"])),
        min_size=1,
        max_size=120,
    ),
    st.sampled_from([1.0, 1 / 24]),
    st.integers(0, 2**32),
)
def test_actr_spacing_review_reads_sums_computed_at_its_time_only(steps, unit, seed):
    """A review at t reads a row's spacing sum where the activation computed it at t since
    the row's last presentation (a query's ranking, then its review), never an older one:
    with activations of every row or of random rows evaluated at random steps before the
    creation or review of that step (reviews at the same instant as the last one, rapid
    repetitions), every cached decay is still the padded kernel's from the presentation
    times, and the activation the padded kernel's, bit for bit. Fails when a review leaves
    its rows' sums as read at that instant."""
    pol = make(
        "actr-spacing", {"time_unit_days": unit, "min_age": 1 / 24 / unit}, llm=OneVectorLLM()
    )
    p = pol.params
    rng = np.random.default_rng(seed)
    now, n = 0.0, 0
    for gap, pick, evaluate in steps:
        now += gap * unit
        if evaluate and n:
            rows = np.arange(n) if evaluate == "all" else rng.choice(n, rng.integers(1, n + 1))
            pol.activation(now, None if evaluate == "all" else rows)
        if pick == 0 or n == 0:
            _create_row(pol, now)
            n += 1
        else:
            pol._review(np.unique(np.array([pick, 2 * pick, pick + 3]) % n), now)
    padded = pol._padded(n) / unit
    want_nd = actr_formulas.actr_spacing_neg_decays(padded, p.spacing_a, p.spacing_c, p.min_age)
    for r in range(n):
        assert (-pol.decays(r)).tobytes() == want_nd[r, : pol.counts[r]].tobytes()
    want = actr_formulas.actr_activation_spacing(
        padded, now / unit, p.spacing_a, p.spacing_c, p.min_age
    )
    assert pol.activation(now).tobytes() == want.tobytes()


def _rapidly_repeated(per_day: int):
    """actr-spacing with two memories created at 0, the first presented again at 1 / per_day,
    2 / per_day, ..., 5 / per_day (six presentations)."""
    pol = make("actr-spacing", llm=OneVectorLLM())
    _create_row(pol, 0.0)
    _create_row(pol, 0.0)
    for k in range(1, 6):
        pol._review(np.array([0]), k / per_day)
    return pol


def test_actr_spacing_policy_rapid_repetitions_reach_inf_as_the_padded_kernel():
    """Six presentations an hour apart: the sixth decay overflows to inf and the activation
    at the last presentation is +inf, in the policy and in the padded kernel alike."""
    pol = _rapidly_repeated(24)
    p = pol.params
    assert math.isinf(pol.decays(0)[-1])
    got = pol.activation(5 / 24)
    want = actr_formulas.actr_activation_spacing(
        pol._padded(2), 5 / 24, p.spacing_a, p.spacing_c, p.min_age
    )
    assert got[0] == math.inf and got.tobytes() == want.tobytes()


def test_actr_spacing_overflowed_decay_one_time_unit_later_is_not_nan():
    """After six presentations 45 minutes apart (binary fractions of a day, so that the age
    below is exactly 1; the sixth decay overflows to inf), one time unit after the last
    presentation that term is 1 ** -inf = 1 (IEEE pow), not 0 x -inf = NaN: the activation
    is finite and the same in the policy and the padded kernel."""
    pol = _rapidly_repeated(32)
    p = pol.params
    assert math.isinf(pol.decays(0)[-1])
    at = 5 / 32 + 1.0
    assert at - 5 / 32 == 1.0
    got = pol.activation(at)
    want = actr_formulas.actr_activation_spacing(
        pol._padded(2), at, p.spacing_a, p.spacing_c, p.min_age
    )
    assert np.isfinite(got).all() and got.tobytes() == want.tobytes()
    assert got[0] > got[1]  # the repeated memory stays the stronger


@given(
    st.lists(st.tuples(spacing_gaps, st.integers(0, 7)), min_size=1, max_size=120),
    st.sampled_from(["actr", "actr-spacing"]),
    st.sampled_from([1.0, 1 / 24]),
    st.sampled_from([0.0, 1 / 24, 1.0, 20.0]),
    st.sampled_from([0.0, 1 / 48, 2.0]),
    st.integers(0, 2**32),
)
def test_actr_ranks_on_bounded_rows_as_on_every_row(steps, policy_id, unit, extra, later, seed):
    """ACT-R's recall evaluates the activation of the rows whose bound reaches the top k
    only (ranking.topk_support). Over random creations and reviews (rapid repetitions whose
    spacing decays overflow included, time units of a day and an hour), and three queries
    (at a time, later, and back at the last presentation's, so that the activations known
    from one query bound the next or are not used): the bound is at least the activation of
    every row; the activation of a subset is the full one's bit for bit; and the scores
    ``_scores`` gives, -inf off the evaluated rows, rank as the full scores ``A = B + W cos``
    of the live rows do, with tied cosines and seeded tie keys."""
    pol = make(policy_id, {"time_unit_days": unit, "min_age": 1 / 24 / unit}, llm=OneVectorLLM())
    now, n = _create_and_review(pol, steps)
    rng = np.random.default_rng(seed)
    rows = np.arange(n)
    for t in (now + extra * unit, now + (extra + later) * unit, now):
        full = pol.activation(t)
        bound = pol.activation_bound(t, rows)
        assert np.all((bound >= full) | np.isnan(bound)), (bound, full)
        subset = np.sort(rng.choice(n, size=rng.integers(1, n + 1), replace=False))
        assert pol.activation(t, subset).tobytes() == full[subset].tobytes()
        sims = rng.choice([0.0, 0.25, 0.5, 0.5 + 1e-7, 0.9], size=n)
        live = rng.random(n) < 0.8
        w = pol.params.spreading_weight
        want = np.where(live, ranked_activation(full, w) + w * sims, -np.inf)
        got = pol._scores(sims, live, t, k := int(rng.integers(1, 6)))
        keys = pol.store.tie_keys(f"q{seed}")
        assert ranking.topk(got, k, keys).tolist() == ranking.topk(want, k, keys).tolist()
        kept = np.isfinite(got)
        assert got[kept].tobytes() == want[kept].tobytes()
