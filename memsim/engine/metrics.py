"""Metrics: the per-query functions (their names, meanings and directions are in
``metric_registry``), and ``evaluate`` / ``summarize_run`` over a Trace and GroundTruth.

A memory *covers* a unit when its provenance (snapshotted at recall time) holds one of the
unit's relevant episodes. No metric asks a policy what it thinks is relevant. A memory that
*states* a superseded value of an asked key (a belief reinforced by an episode that changed
the value, say) covers nothing of that key and counts as stale, whatever its provenance.

Per query: recall@k, hit@k, MRR, nDCG@k, stale@k, rank_inversion, needed_forgotten, and
where the rest of recall went (``loss_shares``: ranked_out, forgotten, never_kept; with
recall they sum to 1). Per run: footprint_mean, footprint_final, noise_retention. A query
with no relevant unit (nothing asserted yet, or all of it forgotten on request) has NaN
recall/hit/mrr/ndcg; rank_inversion is NaN unless a current value was retrievable and an
asked key had an older value.
"""

from __future__ import annotations

import math
from collections.abc import Container, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import pandas as pd

from .runner import QueryRecord, Trace
from .truth import GroundTruth

Units = Mapping[str, frozenset[str]]
Prov = Sequence[AbstractSet[str]]  # frozensets, or the store's ProvenanceSnapshots


# -- per-query metric functions (pure; unit-tested on hand-computed cases) ---------------


def _covers(p: AbstractSet[str], units: Units) -> set[str]:
    return {u for u, eps in units.items() if not p.isdisjoint(eps)}


def recall_at_k(prov: Prov, units: Units, k: int) -> float:
    if not units:
        return math.nan
    return len(covered_units(prov, units, k)) / len(units)


def hit_at_k(prov: Prov, units: Units, k: int) -> float:
    if not units:
        return math.nan
    return float(any(_covers(p, units) for p in prov[:k]))


def mrr(prov: Prov, units: Units, k: int) -> float:
    if not units:
        return math.nan
    for rank, p in enumerate(prov[:k], start=1):
        if _covers(p, units):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(prov: Prov, units: Units, k: int) -> float:
    """Gain at a rank = the number of asked units that memory covers first. The ideal puts
    one unit per rank; a memory covering several units at once can only beat that, so the
    ratio is capped at 1 (a single memory answering every asked key at rank 1 scores 1)."""
    if not units:
        return math.nan
    covered: set[str] = set()
    dcg = 0.0
    for rank, p in enumerate(prov[:k], start=1):
        new = _covers(p, units) - covered
        if new:
            dcg += len(new) / math.log2(rank + 1)
            covered |= new
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(units)) + 1))
    return min(1.0, dcg / ideal)


def stale_flags(
    prov: Prov,
    relevant: frozenset[str],
    superseded: Container[str],
    misstated: Sequence[bool] = (),
) -> list[bool]:
    """Which memories of ``prov`` are stale: memory i states a superseded value of an asked
    key (``misstated[i]``), or holds no relevant episode and some superseded one.
    ``superseded`` needs only ``in`` (a set, or GroundTruth.superseded_view)."""
    wrong = list(misstated[: len(prov)]) + [False] * (len(prov) - len(misstated[: len(prov)]))
    return [
        bool(w) or (p.isdisjoint(relevant) and any(e in superseded for e in p))
        for p, w in zip(prov, wrong)
    ]


def stale_at_k(
    prov: Prov,
    relevant: frozenset[str],
    superseded: Container[str],
    k: int,
    misstated: Sequence[bool] = (),
) -> float:
    """Share of the top k that is stale (:func:`stale_flags`); 0 when nothing is returned."""
    top = prov[:k]
    if not top:
        return 0.0
    return sum(stale_flags(top, relevant, superseded, misstated)) / len(top)


def rank_inversion(
    prov: Prov,
    units: Units,
    relevant: frozenset[str],
    superseded: Container[str],
    k: int,
    misstated: Sequence[bool] = (),
    *,
    counted: bool,
) -> float:
    """1 if a stale memory (:func:`stale_flags`) ranks in the top k above the first memory
    covering a unit (a current value); a current value not in the top k ranks below every
    returned memory. 0 otherwise, also when nothing is returned. NaN when not ``counted``:
    the caller's test that a current value was retrievable at the query and that an asked
    key had an older value (:func:`inversion_counted`)."""
    if not counted:
        return math.nan
    top = prov[:k]
    flags = stale_flags(top, relevant, superseded, misstated)
    first_stale = next((i for i, f in enumerate(flags) if f), None)
    if first_stale is None:
        return 0.0
    first_current = next((i for i, p in enumerate(top) if _covers(p, units)), len(top))
    return float(first_stale < first_current)


def inversion_counted(retrievable: AbstractSet[str], revised: AbstractSet[str]) -> bool:
    """Whether a query counts for :func:`rank_inversion`: some asked key both had an older
    value before the query (``revised``, GroundTruth.revised_keys) and has its current value
    covered by a retrievable memory at the query (``retrievable``, the units of
    LogIndex.unit_states, the same test as ``ranked_out``)."""
    return not revised.isdisjoint(retrievable)


def loss_shares(
    units: Units, covered: set[str], retrievable: set[str], existed: set[str]
) -> tuple[float, float, float]:
    """Where the units recall@k missed went, as shares of all the query's units: (ranked
    out, forgotten, never kept). A unit not ``covered`` by the top k is ranked out when some
    ``retrievable`` memory covers it, else forgotten when a covering memory ``existed``, else
    never kept. With recall (the covered share) the four sum to 1; NaN without units."""
    if not units:
        return (math.nan, math.nan, math.nan)
    ranked = forgotten = never = 0
    for u in units:
        if u in covered:
            continue
        if u in retrievable:
            ranked += 1
        elif u in existed:
            forgotten += 1
        else:
            never += 1
    n = len(units)
    return (ranked / n, forgotten / n, never / n)


def covered_units(prov: Prov, units: Units, k: int) -> set[str]:
    covered: set[str] = set()
    for p in prov[:k]:
        covered |= _covers(p, units)
    return covered


def judge_statements(
    prov: Prov, stated: Sequence[tuple[str, str] | None], units: Units, current: Mapping[str, str]
) -> tuple[list[AbstractSet[str]], list[bool]]:
    """Provenance as the metrics should see it, and which memories misstate an asked key:
    a memory stating key K with a value other than K's current one loses K's relevant
    episodes from its provenance (it does not answer K) and is flagged."""
    out, flags = [], []
    for i, p in enumerate(prov):
        s = stated[i] if i < len(stated) else None
        if s is not None and s[0] in current and s[1] != current[s[0]]:
            out.append(p - units.get(s[0], frozenset()))
            flags.append(True)
        else:
            out.append(p)
            flags.append(False)
    return out, flags


class LogIndex:
    """The store's change logs indexed for 'what was true after log entry n' questions."""

    def __init__(self, trace: Trace) -> None:
        self.retrievable = frozenset(
            int(trace.statuses.code(s)) for s in trace.statuses.retrievable
        )
        self.rows_of: dict[str, list[tuple[int, int]]] = {}  # episode -> [(log pos, row)]
        for pos, (_, row, ep) in enumerate(trace.provenance_log):
            self.rows_of.setdefault(ep, []).append((pos, row))
        # status log grouped by row (stable, so each row's entries stay in log order)
        log = np.asarray(trace.status_log, dtype=np.float64).reshape(-1, 3)
        rows = log[:, 1].astype(np.int64)
        self._codes = log[:, 2].astype(np.int64)
        self._order = np.argsort(rows, kind="stable")
        sorted_rows = rows[self._order]
        n_rows = int(rows.max()) + 1 if len(rows) else 0
        self._lo = np.searchsorted(sorted_rows, np.arange(n_rows), side="left")
        self._hi = np.searchsorted(sorted_rows, np.arange(n_rows), side="right")

    def status_at(self, row: int, status_log_len: int) -> int | None:
        """A row's status code after the first ``status_log_len`` log entries (None: not yet)."""
        if row >= len(self._lo):
            return None
        positions = self._order[self._lo[row] : self._hi[row]]
        i = int(np.searchsorted(positions, status_log_len)) - 1
        return int(self._codes[positions[i]]) if i >= 0 else None

    def final_statuses(self) -> np.ndarray:
        """Each row's last logged status code (-1 for a row never logged)."""
        out = np.full(len(self._lo), -1, dtype=np.int64)
        has = self._hi > self._lo
        out[has] = self._codes[self._order[self._hi[has] - 1]]
        return out

    def needed_forgotten(self, relevant: frozenset[str], rec: QueryRecord) -> float:
        """1.0 if some row held a relevant episode by the query but none of them is
        retrievable then (stops at the first retrievable one)."""
        existed = False
        for e in relevant:
            for pos, row in self.rows_of.get(e, ()):
                if pos >= rec.provenance_log_len:
                    break
                existed = True
                if self.status_at(row, rec.status_log_len) in self.retrievable:
                    return 0.0
        return 1.0 if existed else 0.0

    def unit_states(self, units: Units, rec: QueryRecord) -> tuple[set[str], set[str]]:
        """(units a retrievable memory covers at the query, units some memory covered by
        then): the provenance and status logs cut where the query's recall batch ended."""
        retrievable: set[str] = set()
        existed: set[str] = set()
        for u, eps in units.items():
            for e in eps:
                for pos, row in self.rows_of.get(e, ()):
                    if pos >= rec.provenance_log_len:
                        break
                    existed.add(u)
                    if self.status_at(row, rec.status_log_len) in self.retrievable:
                        retrievable.add(u)
                        break
                if u in retrievable:
                    break
        return retrievable, existed

    def final_retrievable_episodes(self) -> set[str]:
        """Episodes held by a memory that is retrievable at the end of the log."""
        final = self.final_statuses()
        alive = np.isin(final, list(self.retrievable))
        return {
            e
            for e, hits in self.rows_of.items()
            if any(r < len(alive) and alive[r] for _, r in hits)
        }


# -- per run ------------------------------------------------------------------------------

COLUMNS = (
    "query_id",
    "time",
    "group",
    "k",
    "n_units",
    "returned",
    "recall",
    "hit",
    "mrr",
    "ndcg",
    "stale",
    "rank_inversion",
    "needed_forgotten",
    "ranked_out",
    "forgotten",
    "never_kept",
    "evidence_age",
    "footprint",
)


def evaluate(trace: Trace, truth: GroundTruth) -> pd.DataFrame:
    """One row per query of the trace (see COLUMNS)."""
    logs = LogIndex(trace)
    rows = []
    for rec in trace.queries:
        units = truth.units(rec.query_id)
        relevant = truth.relevant(rec.query_id)
        superseded = truth.superseded_view(rec.query_id)
        prov, misstated = judge_statements(
            rec.provenance[: rec.k], rec.stated, units, truth.current_values(rec.query_id)
        )
        retrievable, existed = logs.unit_states(units, rec)
        losses = loss_shares(units, covered_units(prov, units, rec.k), retrievable, existed)
        counted = inversion_counted(retrievable, truth.revised_keys(rec.query_id))
        rows.append(
            (
                rec.query_id,
                rec.time,
                rec.group,
                rec.k,
                len(units),
                len(rec.ids),
                recall_at_k(prov, units, rec.k),
                hit_at_k(prov, units, rec.k),
                mrr(prov, units, rec.k),
                ndcg_at_k(prov, units, rec.k),
                stale_at_k(prov, relevant, superseded, rec.k, misstated),
                rank_inversion(
                    prov, units, relevant, superseded, rec.k, misstated, counted=counted
                ),
                logs.needed_forgotten(relevant, rec),
                *losses,
                truth.evidence_age(rec.query_id),
                rec.footprint,
            )
        )
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    return df.astype(
        {
            "time": np.float64,
            "k": np.int64,
            "n_units": np.int64,
            "returned": np.int64,
            "recall": np.float64,
            "hit": np.float64,
            "mrr": np.float64,
            "ndcg": np.float64,
            "stale": np.float64,
            "rank_inversion": np.float64,
            "needed_forgotten": np.float64,
            "ranked_out": np.float64,
            "forgotten": np.float64,
            "never_kept": np.float64,
            "evidence_age": np.float64,
            "footprint": np.int64,
        }
    )


def footprint_mean(samples: Sequence[tuple[float, int, int]], horizon: float) -> float:
    """Time-weighted mean of the retrievable count over [0, horizon]: each sample holds until
    the next (the last sample at a time wins); before the first sample there is nothing."""
    if not samples:
        return 0.0
    if horizon <= 0:
        return float(samples[-1][1])
    total, t_prev, value = 0.0, 0.0, 0.0
    for t, retrievable, _ in samples:
        t = min(float(t), horizon)
        total += value * (t - t_prev)
        t_prev, value = t, float(retrievable)
    total += value * (horizon - t_prev)
    return total / horizon


def summarize_run(trace: Trace, truth: GroundTruth) -> dict[str, float]:
    """The run-level metrics of the "scored" group."""
    final = float(trace.footprint[-1][1]) if trace.footprint else 0.0
    noise = truth.noise_episodes
    if noise:
        kept = LogIndex(trace).final_retrievable_episodes()
        retention = len(noise & kept) / len(noise)
    else:
        retention = math.nan
    return {
        "footprint_mean": footprint_mean(trace.footprint, trace.horizon),
        "footprint_final": final,
        "noise_retention": float(retention),
    }
