"""The grouping rule of the ACT-R presentation kernels, chosen by measurement.

``policies.actr_formulas._count_groups`` makes each row of ``_ALONE_FROM`` presentations or
more a group of its own (read straight from its segment), and evaluates the other rows as
one group, padded to its widest row, while ``rows x widest <= _ONE_GROUP_FACTOR x
presentations + _ONE_GROUP_CELLS``, and otherwise as one group per power-of-two count class
(fewer cells, more numpy calls). The outcome is the same bit for bit either way
(tests/policies/test_fsrs_actr.py); only the time depends on the rule. This benchmark records
the kernels' calls in runs of ``actr`` and ``actr-spacing`` on the steady year (every
EVERY-th call, with only the presentations the kernel reads), replays them under a grid of
(factor, cells, alone from), each call under every rule in turn (best of ROUNDS), and
compares the chosen rule's total with the grid's best (target: within 10%). Every replayed
call's result must equal, bit for bit, what the kernel returned in the run (with the run's
own arguments), under every rule.

    python -m benchmarks actr-groups      # full mode, prints the grid's table
    MEMSIM_BENCH_SMOKE=1 python -m pytest benchmarks/bench_actr_groups.py --benchmark-disable
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Iterator
from functools import partial

import numpy as np
import pytest

from benchmarks.conftest import assert_target_in_full_mode, interleaved, record_target
from benchmarks.workloads import registered, size
from policies import actr_formulas

POLICIES = ("actr", "actr-spacing")
EPISODES, QUERIES = size(100_000, 400), size(10_000, 40)
EVERY = {"actr": size(50, 1), "actr-spacing": size(200, 1)}
ROUNDS = size(3, 1)
LIMIT = 1.10
ALWAYS, NEVER = 1 << 62, -(1 << 62)
# (factor, cells, alone): the chosen rule, its neighbours, the two pure strategies, and
# the chosen padding rule with other lengths from which a row is alone (ALWAYS: none is)
_F, _C, _A = (
    actr_formulas._ONE_GROUP_FACTOR,
    actr_formulas._ONE_GROUP_CELLS,
    actr_formulas._ALONE_FROM,
)
GRID = (
    [(f, c, _A) for f in (1, 2, 4, 8) for c in (0, 1024, 4096, 16384)]
    + [
        (0, ALWAYS, ALWAYS),  # always one padded group
        (0, NEVER, ALWAYS),  # always one group per count class
    ]
    + [(_F, _C, a) for a in (128, 256, 512, 1024, 2048, ALWAYS) if a != _A]
)
# the kernels that group rows by count: (counts, start, pool) positions of their arguments
# (actr_activation_spacing_segments is actr_spacing_sums and a log: its calls are recorded
# as the sums it calls)
KERNELS = {
    "actr_activation_segments": (2, 1, 0),
    "actr_spacing_sums": (3, 2, 0),
}


def _compact(name: str, args: tuple) -> tuple:
    """``args`` with a pool that holds only the presentations the kernel reads (the rows
    with a count, one after the other; a neg_decay pool alongside is compacted the same
    way): the same work for the kernel, a fraction of the memory to keep."""
    ci, si, pi = KERNELS[name]
    counts = np.array(args[ci], dtype=np.int64)
    start = np.asarray(args[si], dtype=np.int64)
    has = np.flatnonzero(counts > 0)
    lengths = counts[has]
    new_start = np.zeros(len(counts), dtype=np.int64)
    new_start[has] = np.cumsum(lengths) - lengths
    idx = np.repeat(start[has] - new_start[has], lengths) + np.arange(int(lengths.sum()))
    out = list(args)
    out[pi] = np.asarray(args[pi], dtype=np.float64)[idx]
    if pi + 1 != si:  # a neg_decay pool sits between the pool and the starts
        out[pi + 1] = np.asarray(args[pi + 1], dtype=np.float64)[idx]
    out[si], out[ci] = new_start, counts
    return tuple(out)


@contextlib.contextmanager
def _recording(every: int) -> Iterator[list]:
    """Record every ``every``-th call of the grouping kernels (compacted) while inside."""
    calls: list = []
    seen = [0]
    saved = {name: getattr(actr_formulas, name) for name in KERNELS}

    def wrap(name):
        fn = saved[name]

        def recorded(*args, **kwargs):
            seen[0] += 1
            got = fn(*args, **kwargs)
            if seen[0] % every == 0:
                calls.append((name, _compact(name, args), kwargs, got.copy()))
            return got

        return recorded

    for name in KERNELS:
        setattr(actr_formulas, name, wrap(name))
    try:
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(actr_formulas, name, fn)


def capture(policy: str, episodes: int = EPISODES, queries: int = QUERIES) -> list:
    """The recorded kernel calls of one run of ``policy`` on the steady stream (every
    EVERY-th call, scaled down with the stream's size)."""
    from benchmarks import simrun

    every = max(1, round(EVERY[policy] * episodes / EPISODES))
    with _recording(every) as calls, contextlib.redirect_stdout(io.StringIO()):
        simrun.main([policy, str(episodes), str(queries)])
    return calls


@contextlib.contextmanager
def _rule(factor: int, cells: int, alone: int) -> Iterator[None]:
    saved = (
        actr_formulas._ONE_GROUP_FACTOR,
        actr_formulas._ONE_GROUP_CELLS,
        actr_formulas._ALONE_FROM,
    )
    actr_formulas._ONE_GROUP_FACTOR, actr_formulas._ONE_GROUP_CELLS, actr_formulas._ALONE_FROM = (
        factor,
        cells,
        alone,
    )
    try:
        yield
    finally:
        (
            actr_formulas._ONE_GROUP_FACTOR,
            actr_formulas._ONE_GROUP_CELLS,
            actr_formulas._ALONE_FROM,
        ) = saved


Rule = tuple[int, int, int]


def _call_under(rule: Rule, name: str, args: tuple, kwargs: dict) -> np.ndarray:
    with _rule(*rule):
        out: np.ndarray = getattr(actr_formulas, name)(*args, **kwargs)
    return out


def replay(calls: list, grid: list[Rule]) -> dict[Rule, float]:
    """Total seconds of ``calls`` under each rule of ``grid``: per call, the best of ROUNDS
    rounds with the rules alternating (``conftest.interleaved``), so machine noise hits them
    alike; each rule's result checked against the run's."""
    total = dict.fromkeys(grid, 0.0)
    for name, args, kwargs, want in calls:
        for rule in grid:
            if _call_under(rule, name, args, kwargs).tobytes() != want.tobytes():
                raise AssertionError(f"{name} under {rule_name(rule)} differs from the run's")
        fns = {rule_name(rule): partial(_call_under, rule, name, args, kwargs) for rule in grid}
        best = interleaved(fns, ROUNDS)
        for rule in grid:
            total[rule] += best[rule_name(rule)]
    return total


def rule_name(rule: Rule) -> str:
    factor, cells, alone = rule
    if cells == ALWAYS:
        padding = "always one group"
    elif cells == NEVER:
        padding = "always per count class"
    else:
        padding = f"{factor} x presentations + {cells}"
    return padding + (", no row alone" if alone == ALWAYS else f", rows of {alone}+ alone")


def chosen() -> Rule:
    return (
        actr_formulas._ONE_GROUP_FACTOR,
        actr_formulas._ONE_GROUP_CELLS,
        actr_formulas._ALONE_FROM,
    )


def measure(
    policy: str, episodes: int = EPISODES, queries: int = QUERIES
) -> tuple[int, dict[Rule, float]]:
    calls = capture(policy, episodes, queries)
    return len(calls), replay(calls, GRID)


@pytest.mark.parametrize("policy_id", POLICIES)
def test_actr_grouping_rule_against_the_grid(benchmark, policy_id):
    assert chosen() in GRID
    n, total = measure(policy_id)
    assert n > 0, f"{policy_id}: the run made no grouping kernel call"
    best = min(total, key=total.__getitem__)
    record_target(
        benchmark,
        target=f"actr grouping rule {policy_id} (chosen / best of the grid)",
        ratio=total[chosen()] / total[best],
        limit=LIMIT,
        better="lower",
        n=n,
        what=f"{n} recorded kernel calls of a run on {EPISODES:,} episodes, replayed under "
        f"{len(GRID)} rules; best: {rule_name(best)}",
        seconds={rule_name(r): t for r, t in total.items()},
    )
    benchmark.group = "actr-groups"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert_target_in_full_mode(benchmark)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks actr-groups")
    ap.add_argument("policies", nargs="*", default=list(POLICIES))
    ap.add_argument("--episodes", type=int, default=EPISODES, help="the stream's episodes")
    ap.add_argument("--queries", type=int, default=QUERIES, help="the stream's queries")
    a = ap.parse_args(argv)
    from memsim.workbench.present.tables import markdown_table

    measured = {p: measure(p, a.episodes, a.queries) for p in registered(a.policies)}
    rows = []
    for rule in GRID:
        cells = []
        for _, total in measured.values():
            mark = " (chosen)" if rule == chosen() else ""
            cells.append(
                f"{total[rule] * 1e3:.1f} ms, {total[rule] / min(total.values()):.2f}x{mark}"
            )
        rows.append([rule_name(rule), *cells])
    header = [
        "rule: one group while cells <=; rows alone from",
        *(f"{p} ({n} calls)" for p, (n, _) in measured.items()),
    ]
    print("\n".join(markdown_table(header, rows)))
    return 0
