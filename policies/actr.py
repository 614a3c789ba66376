"""ACT-R declarative memory as an assistant-memory policy.

Sources:
- base-level activation ``B = ln(sum_j (t - t_j) ^ -d)``, d = 0.5 (Anderson & Schooler 1991;
  ACT-R 7 reference manual, ``:bll 0.5``);
- recall probability ``P = 1 / (1 + exp(-(B - tau) / s))`` (Anderson, Bothell, Lebiere &
  Matessa 1998, eq. 3); tau = -0.704 and s = 0.255 as fitted by Pavlik & Anderson (2005,
  Table 2); ACT-R's own defaults are ``:rt 0`` and ``:ans`` unset (no noise) (reference manual);
- spacing variant (Pavlik & Anderson 2005, eq. 2-3): presentation j decays with
  ``d_j = c * exp(m_{j-1}) + a``, m_{j-1} the activation at t_j; a = 0.1768, c = 0.2170 as
  fitted by srs-benchmark (open-spaced-repetition/srs-benchmark, ACT-R model);
- ranking: activation plus spreading activation from the query, ``A = B + W * cos`` (ACT-R
  ``A_i = B_i + sum_j W_j S_ji``: one source, the query, with weight ``W`` (ACT-R ``:mas`` /
  goal activation 1) and strength of association its cosine).

memsim choices (docs/policies/actr.md): time unit (days), the minimum age of a presentation
(ACT-R never evaluates a chunk at its own presentation time), what counts as a presentation
(policies/reference.py), forgetting when P < ``forget_below``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from memsim.engine import ranking
from memsim.engine.params import Params, param
from policies import actr_formulas

from .reference import REVIEW_DOC, ReferencePolicy


@dataclass(frozen=True)
class ACTRParams(Params):
    decay: float = param(
        0.5, lo=0.0, lo_open=True, doc="Anderson & Schooler 1991; ACT-R 7 manual :bll 0.5"
    )
    tau: float = param(-0.704, doc="retrieval threshold; Pavlik & Anderson 2005 Table 2")
    s: float = param(
        0.255, lo=0.0, lo_open=True, doc="activation noise; Pavlik & Anderson 2005 Table 2"
    )
    variant: str = param(
        "standard",
        choices=("standard", "spacing"),
        doc="standard: fixed d; spacing: Pavlik & Anderson 2005 eq. 2-3",
    )
    spacing_a: float = param(
        0.1768, lo=0.0, lo_open=True, doc="Pavlik & Anderson 2005 a; srs-benchmark fit"
    )
    spacing_c: float = param(0.2170, lo=0.0, doc="Pavlik & Anderson 2005 c; srs-benchmark fit")
    time_unit_days: float = param(
        1.0, lo=0.0, lo_open=True, doc="memsim choice: ages are measured in units of this many days"
    )
    min_age: float = param(
        1.0 / 24.0,
        lo=0.0,
        lo_open=True,
        doc="memsim choice: ages (in time units) are floored here (1 hour), t - t_j = 0 is inf",
    )
    spreading_weight: float = param(
        1.0, lo=0.0, doc="ACT-R spreading activation W (source activation 1) x cosine"
    )
    forget_below: float = param(
        0.05, lo=0.0, hi=1.0, doc="memsim choice: decay job forgets when P < this (0: never)"
    )
    reinforce_cosine: float = param(0.85, lo=-1.0, hi=1.0, doc=REVIEW_DOC)
    retrieval_is_review: bool = param(True, doc=REVIEW_DOC)


class ACTR(ReferencePolicy):
    """ACT-R base-level learning. See the module docstring."""

    Params: ClassVar[type[Params]] = ACTRParams
    params: ACTRParams

    def setup(self) -> None:
        # presentation times (days): row r's, in order, are
        # pool[start[r] : start[r] + counts[r]], with room for room[r]; a row whose room is
        # full moves to the end of the pool with twice the room. Memory O(presentations): a
        # NaN-padded rows x widest-row matrix took 134 MB at a quarter of the steady year.
        self.pool = np.empty(64)
        # spacing variant: -d_j of each presentation, at the same places as its time. d_j
        # depends only on the row's earlier presentations (Pavlik & Anderson 2005 eq. 3), so
        # it is computed once, when the presentation is made, not at every evaluation.
        self.neg_decay: np.ndarray | None = (
            np.empty(64) if self.params.variant == "spacing" else None
        )
        self.used = 0
        self.start = np.zeros(0, dtype=np.int64)
        self.room = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)
        # spacing variant: per row, at least its activation at any time from known_at on.
        # Every term max(t - t_j, min_age) ** -d_j only falls as t grows, so an activation
        # computed at known_at bounds every later one until the row is presented again. Set
        # at each presentation and at each recall that evaluates the row (activation_bound:
        # the bound from the newest presentation alone is inf within a time unit of it).
        # The standard variant's bound from the newest presentation prunes well enough that
        # keeping these cost it more time than they saved (docs/performance.md).
        self.known_activation = np.zeros(0)
        self.known_at = np.zeros(0)
        # spacing variant: per row, the sum sum_j (t - t_j) ** -d_j as last computed and the
        # time t it was computed for (NaN: none since the row's last presentation). A review
        # at t reads the sums the query's ranking just computed at t instead of summing the
        # row's whole history again (a steady year's recall 25.5 -> 23.6 s).
        self.summed = np.zeros(0)
        self.summed_at = np.zeros(0)

    def presentations(self, row: int) -> np.ndarray:
        """The presentation times (days) of ``row``, in order."""
        at = int(self.start[row])
        return self.pool[at : at + int(self.counts[row])].copy()

    def decays(self, row: int) -> np.ndarray:
        """The spacing variant's decay d_j of each presentation of ``row``, in order."""
        if self.neg_decay is None:
            raise ValueError(f"decays are kept by the spacing variant, not {self.params.variant}")
        at = int(self.start[row])
        return -self.neg_decay[at : at + int(self.counts[row])]

    def _alloc(self, size: int) -> int:
        if self.used + size > len(self.pool):
            cap = max(2 * len(self.pool), self.used + size)
            grow = np.empty(cap)
            grow[: self.used] = self.pool[: self.used]
            self.pool = grow
            if self.neg_decay is not None:
                grow = np.empty(cap)
                grow[: self.used] = self.neg_decay[: self.used]
                self.neg_decay = grow
        at = self.used
        self.used += size
        return at

    def _after_create(self, row: int, now: float) -> None:
        if row >= len(self.counts):
            cap = max(2 * len(self.counts), row + 1)
            # a row not yet known: no bound (inf), from any time on
            for name, fill in [
                ("start", 0),
                ("room", 0),
                ("counts", 0),
                ("known_activation", np.inf),
                ("known_at", -np.inf),
                ("summed", 0.0),
                ("summed_at", np.nan),
            ]:
                old = getattr(self, name)
                grown = np.full(cap, fill, dtype=old.dtype)
                grown[: len(old)] = old
                setattr(self, name, grown)
        at = self._alloc(1)
        self.pool[at] = now
        if self.neg_decay is not None:  # no earlier presentation: exp(m_0) = 0, d_1 = a
            p = self.params
            self.neg_decay[at] = actr_formulas.actr_spacing_neg_decay(0.0, p.spacing_a, p.spacing_c)
        self.start[row], self.room[row], self.counts[row] = at, 1, 1
        if self.neg_decay is not None:
            self._know(np.array([row]), np.log(self._newest_term(np.array([row]))), now)

    def _review(self, rows: np.ndarray, now: float) -> None:
        new_nd = None
        if self.neg_decay is not None:  # d of the new presentations, from the earlier ones
            p = self.params
            x = self._spacing_sums(now, rows)
            new_nd = actr_formulas.actr_spacing_neg_decay(x, p.spacing_a, p.spacing_c)
            with np.errstate(divide="ignore"):  # the rows' activations now, as computed
                earlier = np.log(x)
        for r in rows[self.counts[rows] >= self.room[rows]].tolist():
            c, room = int(self.counts[r]), 2 * int(self.room[r])
            at = self._alloc(room)
            old = self.start[r]
            self.pool[at : at + c] = self.pool[old : old + c]
            if self.neg_decay is not None:
                self.neg_decay[at : at + c] = self.neg_decay[old : old + c]
            self.start[r], self.room[r] = at, room
        self.pool[self.start[rows] + self.counts[rows]] = now
        if self.neg_decay is not None:
            self.neg_decay[self.start[rows] + self.counts[rows]] = new_nd
        self.counts[rows] += 1
        if self.neg_decay is not None:
            self.summed_at[rows] = np.nan  # a sum without this presentation
            with np.errstate(divide="ignore"):
                self._know(rows, np.logaddexp(earlier, np.log(self._newest_term(rows))), now)

    def _newest_term(self, rows: np.ndarray) -> np.ndarray:
        """The spacing variant: the largest term the newest presentation of each of ``rows``
        can have, its term at the minimum age, computed as the kernels compute a term."""
        assert self.neg_decay is not None
        neg_d = self.neg_decay[self.start[rows] + self.counts[rows] - 1]
        floor = self.params.min_age
        return actr_formulas.actr_spacing_terms(np.full(len(rows), floor), neg_d, floor)

    def _know(self, rows: np.ndarray, activation: np.ndarray, now: float) -> None:
        """Record the activations of ``rows`` at ``now`` (or bounds of them) as bounds of
        every later one; where a later time is known already, its bound is kept (the
        tighter one)."""
        later = now >= self.known_at[rows]
        self.known_activation[rows[later]] = activation[later]
        self.known_at[rows[later]] = now

    def _known_bound(self, rows: np.ndarray, now: float) -> np.ndarray:
        """The known activations of ``rows`` where they bound the one at ``now``, else inf."""
        return np.where(now >= self.known_at[rows], self.known_activation[rows], np.inf)

    def _spacing_sums(self, now: float, rows: np.ndarray) -> np.ndarray:
        """The spacing variant: ``sum_j max(t - t_j, min_age) ** -d_j`` of each of ``rows``
        at ``now`` (``actr_formulas.actr_spacing_sums``), the ones already computed at ``now``
        since the row's last presentation read back (each row's sum is its own, whichever
        rows are summed with it: the same number), the rest computed and kept."""
        assert self.neg_decay is not None
        p = self.params
        known = self.summed_at[rows] == now
        some = bool(known.any())
        if some and known.all():
            return self.summed[rows]
        todo = rows[~known] if some else rows  # (none known: a review at ingest, the usual)
        fresh = actr_formulas.actr_spacing_sums(
            self._pool_in_units(),
            self.neg_decay,
            self.start[todo],
            self.counts[todo],
            now / p.time_unit_days,
            p.min_age,
        )
        self.summed[todo] = fresh
        self.summed_at[todo] = now
        if not some:
            return fresh
        x = np.empty(len(rows))
        x[known] = self.summed[rows[known]]
        x[~known] = fresh
        return x

    def _pool_in_units(self) -> np.ndarray:
        # x / 1.0 == x for every float: skip the copy of every presentation in days; else
        # the used part only (the rest is uninitialized, and dividing it warned)
        u = self.params.time_unit_days
        return self.pool if u == 1.0 else self.pool[: self.used] / u

    def _padded(self, n: int) -> np.ndarray:
        """The presentation times of rows [0, n) as the NaN-padded matrix the padded spacing
        kernel (``actr_formulas.actr_activation_spacing``, the reference of the decays cached in
        ``neg_decay``; no longer on the policy's path) reads, as wide as it used to be kept
        (the smallest power of two at or above the largest count: its width doubled whenever
        a full row was presented again). Since actr-spacing v2 the padding adds exact zeros,
        so the width no longer changes a result (docs/performance.md, actr-spacing)."""
        c = self.counts[:n]
        width = 1 << (max(1, int(c.max(initial=1))) - 1).bit_length()
        t = np.full((n, width), np.nan)
        j = np.arange(width)
        present = j[None, :] < c[:, None]
        t[present] = self.pool[(self.start[:n, None] + j[None, :])[present]]
        return t

    def activation(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """Base-level activation of every row, or of ``rows`` (the same numbers: each row's
        sum is its own)."""
        p = self.params
        # the padded kernels' results bit for bit, over the presentations only
        if self.neg_decay is not None:  # (actr_formulas.actr_activation_spacing_segments' ln)
            x = self._spacing_sums(now, np.arange(self.store.n) if rows is None else rows)
            with np.errstate(divide="ignore"):
                return np.log(x, out=x)
        at = slice(0, self.store.n) if rows is None else rows
        return actr_formulas.actr_activation_segments(
            self._pool_in_units(),
            self.start[at],
            self.counts[at],
            now / p.time_unit_days,
            p.decay,
            p.min_age,
        )

    def activation_bound(self, now: float, rows: np.ndarray) -> np.ndarray:
        """Per row, at least its :meth:`activation` as computed, plus a margin far above the
        rounding of either computation: the lower of ln(n) plus the ln of its newest
        presentation's term, which no older term exceeds (ages only grow, and the spacing
        variant's decays are at least ``spacing_a``, so from an age of one time unit on an
        older term is at most age_newest ** -spacing_a; younger, no bound: inf), and for the
        spacing variant its activation last known (at its last presentation or
        evaluation), which no later one exceeds."""
        p = self.params
        c = self.counts[rows]
        newest = self._pool_in_units()[self.start[rows] + np.maximum(c, 1) - 1]
        age = np.maximum(now / p.time_unit_days - newest, p.min_age)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.neg_decay is None:
                ub = np.log(c) - p.decay * np.log(age)
            else:
                ln_term = np.where(age >= 1.0, -p.spacing_a * np.log(age), np.inf)
                ub = np.minimum(np.log(c) + ln_term, self._known_bound(rows, now))
            return ub + 1e-9 * (1.0 + np.abs(ub))

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        # (its own _scores ranks by activation)
        return actr_formulas.logistic_recall(
            self.activation(now, rows), self.params.tau, self.params.s
        )

    def _scores(self, sims: np.ndarray, live: np.ndarray, now: float, k: int) -> np.ndarray:
        # A = B + W cos of the live rows that can reach the top k, -inf elsewhere: the
        # activation (O(a row's presentations)) only where a row's bound reaches the k-th
        # score's ties (ranking.topk_support), so the ranking is the one over every row
        rows = np.flatnonzero(live)
        w = self.params.spreading_weight
        w_sims = w * sims[rows]

        def exact(at: np.ndarray) -> np.ndarray:
            a = self.activation(now, rows[at])
            if self.neg_decay is not None:
                self._know(rows[at], a, now)  # tighter bounds for the next queries
            return ranked_activation(a, w) + w_sims[at]

        # the bound read as the activation is (an overflowed row's at most `above` + W cos,
        # as its score: else every row within a time unit of a presentation is evaluated)
        bound = ranked_activation(self.activation_bound(now, rows), w) + w_sims
        reach, score = ranking.topk_support(bound, exact, k)
        out = np.full(len(sims), -np.inf)
        out[rows[reach]] = score
        return out


# every finite activation is the ln of a finite float sum: at most ln of the largest float
LARGEST_FINITE_ACTIVATION = float(np.log(np.finfo(np.float64).max))  # 709.78


def ranked_activation(activation: np.ndarray, spreading_weight: float) -> np.ndarray:
    """The activation as ranking reads it: +inf (a sum beyond float range, P = 1: rapid
    repetitions under the spacing decay) as a finite value above every finite activation by
    more than two spreading terms, so that such rows rank above every other and among
    themselves by spreading activation (W cos, cosines within [-1, 1] up to float32
    rounding). A plain +inf now ranks first in topk too, but its overflowed rows would tie
    among themselves and go in tie-key order, not by W cos; until topk ranked +inf, such a
    row was never recalled."""
    above = LARGEST_FINITE_ACTIVATION + 2.0 * spreading_weight + 1.0
    return np.where(np.isposinf(activation), above, activation)


@dataclass(frozen=True)
class ACTRSpacingParams(ACTRParams):
    """actr-spacing: the same model with Pavlik & Anderson's (2005) spacing-dependent decay
    as the default; every other constant is actr's."""

    variant: str = param(
        "spacing",
        choices=("standard", "spacing"),
        doc="actr-spacing: Pavlik & Anderson 2005 eq. 2-3, d_j = c * exp(m_{j-1}) + a",
    )


class ACTRSpacing(ACTR):
    """ACT-R with the spacing-dependent decay of Pavlik & Anderson (2005) (docs/policies/actr.md
    §The spacing variant)."""

    Params: ClassVar[type[Params]] = ACTRSpacingParams
