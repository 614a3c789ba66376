"""The comparison study: every policy on every scenario for every seed, tabulated.

summary, per_query = memsim.compare(["keep-all", "pai"], ["synthetic:steady"], seeds=[0, 1])
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..runs.execution import grid, run_grid
from ..stats import tables


def compare(
    policies: Sequence[str],
    scenario_specs: Sequence[str],
    seeds: Sequence[int] = (0,),
    *,
    params: Mapping[str, Any] | None = None,
    llm: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    jobs: int = 1,
    executor: cf.Executor | None = None,
    resume: bool = True,
    progress: bool | str = False,
    calibrate: bool = True,
    index: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every policy on every scenario for every seed: (summary table, per-query table).
    ``calibrate``: the per-query table gains ``bound`` (the clairvoyant's recall at each
    run's own footprint) and the summary gains ``bound`` and ``gap`` rows. ``index``:
    candidate index settings (:func:`grid`); the summary then has each indexed run's
    exactness audit (``index_query_differ_share``, ``index_decision_differ_share``)."""
    defs = grid(policies, scenario_specs, seeds, params, llm, index)
    results = run_grid(
        defs,
        root=root,
        jobs=jobs,
        executor=executor,
        resume=resume,
        progress=progress,
        calibrate=calibrate,
    )
    return tables(results)
