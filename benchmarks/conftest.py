"""Benchmark configuration: collect ``bench_*.py`` here, smoke mode, target bookkeeping.

``python -m pytest benchmarks`` collects every ``bench_*.py`` of this folder (the plain
``pytest`` run only looks in tests/). ``MEMSIM_BENCH_SMOKE=1`` shrinks every size so each
benchmark body runs once in seconds (CI: ``scripts/test.sh`` with ``--benchmark-disable``);
targets are asserted only in full mode, never in smoke mode.

Every speed claim is a ratio against a reference timed in the same run, interleaved with
the subject (these shared 2-core machines are noisy): see :func:`interleaved` and
:func:`record_target`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from benchmarks.workloads import CASES_ENV, SMOKE


def pytest_collect_file(parent, file_path: Path):
    # a file named on the command line is collected by pytest itself
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)
    ):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_collection_finish(session) -> None:
    # benchmarks.report's list of a module's cases, for a module run one case per process
    listing = os.environ.get(CASES_ENV)
    if listing:
        Path(listing).write_text("".join(f"{item.nodeid}\n" for item in session.items))


def interleaved(
    fns: Mapping[str, Callable[[], object]], rounds: int, setup: Callable[[], object] | None = None
) -> dict[str, float]:
    """Best (minimum) wall time of each function over ``rounds`` rounds, the functions
    alternating within each round so machine noise hits them alike. ``setup`` runs
    untimed before every call."""
    best = {name: float("inf") for name in fns}
    for _ in range(max(1, rounds)):
        for name, fn in fns.items():
            if setup is not None:
                setup()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def record_target(
    benchmark, *, target: str, ratio: float, limit: float, better: str, n: int, what: str, **extra
) -> None:
    """Put a target's measured ratio in the benchmark's extra_info (the report reads it).
    ``better`` is "lower" (ratio must be <= limit) or "higher" (>= limit)."""
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    ok = ratio <= limit if better == "lower" else ratio >= limit
    benchmark.extra_info.update(
        dict(
            target=target,
            ratio=float(ratio),
            limit=float(limit),
            better=better,
            n=int(n),
            what=what,
            met=bool(ok),
            smoke=SMOKE,
            **extra,
        )
    )


def record_measured(benchmark, *, ratio: float, n: int, what: str, **extra) -> None:
    """A ratio measured and reported, against no target: a check retired once its bound was
    measured (docs/performance.md, "Known limits", gives the bound and the command)."""
    benchmark.extra_info.update(dict(ratio=float(ratio), n=int(n), what=what, smoke=SMOKE, **extra))


def assert_target_in_full_mode(benchmark) -> None:
    """Fail on a missed target, in full mode only: smoke runs never fail on noise."""
    info = benchmark.extra_info
    if SMOKE:
        return
    op = "<=" if info["better"] == "lower" else ">="
    assert info["met"], (
        f"target {info['target']}: measured ratio {info['ratio']:.3f}, "
        f"need {op} {info['limit']} ({info['what']}, n={info['n']})"
    )
