"""The comparison study: every policy on every scenario for every seed under every protocol,
tabulated.

summary, per_query = memsim.compare(["keep-all", "pai"], ["synthetic:steady"], seeds=[0, 1])
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from memsim.engine.errors import ParamError

from ..runs.execution import grid, run_grid
from ..runs.protocols import (
    DEFAULT,
    PROTOCOL,
    Protocol,
    apply,
    merged_overrides,
    protocol_set,
)
from ..runs.results import RunDef, RunResult, timing_table
from ..stats import tables


@dataclass(frozen=True)
class ProtocolRuns:
    """The runs of one protocol: ``specs`` maps each spec it runs to the spec as given
    (the tables report the latter, so one stream keeps one name across protocols)."""

    protocol: Protocol
    specs: dict[str, str]
    llm: dict[str, Any]
    defs: list[RunDef]


def protocol_runs(
    policies: Sequence[str],
    scenario_specs: Sequence[str],
    seeds: Sequence[int],
    protocols: str | None = None,
    *,
    params: Mapping[str, Any] | None = None,
    llm: Mapping[str, Any] | None = None,
    index: Mapping[str, Any] | None = None,
) -> tuple[list[ProtocolRuns], list[str]]:
    """The run definitions of every protocol ``protocols`` names (``runs.protocols``), and
    one line for each protocol of a set left out because no given stream is one it
    concerns. A protocol named on its own that concerns no stream is an error."""
    out: list[ProtocolRuns] = []
    skipped: list[str] = []
    named = {n.strip() for n in (protocols or DEFAULT).split(",")}
    for p in protocol_set(protocols):
        applied = {a: s for s in scenario_specs if (a := apply(p, s)) is not None}
        if not applied:
            line = f"protocol {p.name}: no {' or '.join(p.concerns)} stream among the scenarios"
            if p.name in named:
                raise ParamError(f"--protocols {p.name}: {line.split(': ', 1)[1]}")
            skipped.append(line + ", left out")
            continue
        overrides = merged_overrides(p, llm or {})
        defs = grid(policies, list(applied), seeds, params, overrides, index)
        out.append(ProtocolRuns(p, applied, overrides, defs))
    return out, skipped


def protocol_tables(
    runs: Sequence[ProtocolRuns], results: Sequence[RunResult]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, per-query) of every protocol's results (``results`` in the order of the
    protocols' definitions), each row naming its protocol and the scenario as given."""
    summaries, per_queries = [], []
    start = 0
    for r in runs:
        mine = results[start : start + len(r.defs)]
        start += len(r.defs)
        summary, per_query = tables(mine)
        for frame in (summary, per_query):
            frame["scenario"] = frame["scenario"].map(r.specs).fillna(frame["scenario"])
            frame.insert(0, PROTOCOL, r.protocol.name)
        summaries.append(summary)
        per_queries.append(per_query)
    return (
        pd.concat(summaries, ignore_index=True),
        pd.concat(per_queries, ignore_index=True),
    )


def protocol_timings(runs: Sequence[ProtocolRuns], results: Sequence[RunResult]) -> pd.DataFrame:
    """``timing_table`` of every protocol's results, each row naming its protocol and the
    scenario as given (``protocol_tables``' order)."""
    frames = []
    start = 0
    for r in runs:
        frame = timing_table(results[start : start + len(r.defs)])
        start += len(r.defs)
        frame["scenario"] = frame["scenario"].map(r.specs).fillna(frame["scenario"])
        frame.insert(0, PROTOCOL, r.protocol.name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def compare(
    policies: Sequence[str],
    scenario_specs: Sequence[str],
    seeds: Sequence[int] = (0,),
    *,
    protocols: str | None = None,
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
    """Every policy on every scenario for every seed under each protocol (default: the
    ``default`` protocol; ``"standard"``, ``"cross"`` or a comma list, see
    ``memsim.workbench.runs.protocols``): (summary table, per-query table), each with a
    ``protocol`` column. ``calibrate``: the per-query table gains ``bound`` (the
    clairvoyant's recall at each run's own footprint) and the summary gains ``bound`` and
    ``gap`` rows. ``index``: candidate index settings (:func:`grid`); the summary then has
    each indexed run's exactness audit (``index_query_differ_share``,
    ``index_decision_differ_share``)."""
    runs, _ = protocol_runs(
        policies, scenario_specs, seeds, protocols, params=params, llm=llm, index=index
    )
    results = run_grid(
        [d for r in runs for d in r.defs],
        root=root,
        jobs=jobs,
        executor=executor,
        resume=resume,
        progress=progress,
        calibrate=calibrate,
    )
    return protocol_tables(runs, results)
