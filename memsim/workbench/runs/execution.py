"""Runs: what is registered, one run's definition made ready and executed, grids of runs
(cached under a results root), and the clairvoyant bound at a run's own footprint.

    q = memsim.run("pai", "scripted/name-preference", seed=0)   # per-query metrics

A comparison is a grid of independent runs (policy x scenario x seed). Runs execute in any
``concurrent.futures.Executor`` (a process pool by default when jobs > 1; pass
``dask.distributed.Client(...).get_executor()`` for a cluster). Results are collected in grid
order, so serial and parallel runs give identical tables.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memsim.engine import metrics, registry, runner, sources, truth
from memsim.engine.candidate_index import check_settings
from memsim.engine.embed import DEFAULT_TEXT_EMBEDDER
from memsim.engine.errors import MemsimError, ParamError
from memsim.engine.llm import Bands, Configurable, Faults, Metered, Modes, TruthBound
from memsim.engine.metering import MeteredMockLLM
from memsim.engine.mockllm import MockLLM
from memsim.engine.openai_llm import ModelLLM, is_model_spec, parse_spec

from .executors import map_in_order
from .results import (
    RunDef,
    RunResult,
    is_complete,
    load,
    manifest_for,
    save,
)

# ---------------------------------------------------------------------------- listing


def list_policies() -> pd.DataFrame:
    rows = [
        {
            "id": s.id,
            "version": s.version,
            "full_id": s.full_id,
            "baseline": s.baseline,
            "capabilities": ",".join(sorted(s.capabilities)),
            "seed_document": s.seed_document,
            "description": s.description,
        }
        for s in registry.specs()
    ]
    return pd.DataFrame(rows)


def list_scenarios() -> pd.DataFrame:
    return pd.DataFrame([{"spec": s, "description": d} for s, d in sources.catalog()])


# ---------------------------------------------------------------------------- one run


def as_overrides(
    pairs: Mapping[str, Any] | Iterable[tuple[str, Any]] | str | None,
) -> tuple[tuple[str, Any], ...]:
    """Sorted (name, value) pairs; a real model's spec (``"openai:..."``, ``"replay:..."``,
    see memsim.engine.openai_llm) stands for ``{"endpoint": spec}``."""
    if isinstance(pairs, str):
        if not is_model_spec(pairs):
            raise ParamError(f"llm={pairs!r}: expected overrides or openai:... / replay:...")
        pairs = {ENDPOINT: pairs}
    items = dict(pairs.items() if isinstance(pairs, Mapping) else (pairs or ()))
    return tuple(sorted(items.items()))


# The LLM override naming a real model (openai:... or replay:...) in place of the mock.
ENDPOINT = "endpoint"


def check_model_overrides(overrides: Mapping[str, Any]) -> None:
    """A real model's spec parses, and comes with no option of the mock (bands.*,
    faults.*, modes.*, text_embedder): those set what only the mock does."""
    if ENDPOINT not in overrides:
        return
    spec = overrides[ENDPOINT]
    if not is_model_spec(spec):
        raise ParamError(f"--llm endpoint={spec!r}: expected openai:BASE_URL,... or replay:PATH")
    parse_spec(str(spec))
    mock_only = sorted(k for k in overrides if k != ENDPOINT)
    if mock_only:
        raise ParamError(
            f"--llm {mock_only[0]}={overrides[mock_only[0]]}: an option of the mock LLM; "
            f"{str(spec).partition(':')[0]}: replaces the mock, so it does not apply"
        )


def load_stream(spec: str, seed: int):
    """The stream ``spec`` names under ``seed``, loaded once per process (:func:`stream_truth`)."""
    return stream_truth(spec, seed)[0]


def stream_truth(spec: str, seed: int) -> tuple[Any, truth.GroundTruth]:
    """(stream, its ground truth), loaded and built once per process for every run of the
    stream (``truth.of``): a stream no seed changes (``sources.seeded``) once for all seeds.
    Both are read-only; the truth's caches are of answers that depend on the stream alone."""
    stream = _stream(spec, int(seed) if sources.seeded(spec) else 0)
    return stream, truth.of(stream)


@functools.lru_cache(maxsize=truth.SHARED_TRUTHS)
def _stream(spec: str, seed: int) -> Any:
    return sources.load(spec, seed=seed)


def build_llm(
    seed: int, stream_meta: Mapping[str, Any], overrides: Mapping[str, Any], metered: bool = True
):
    """The mock LLM for a run, metered (memsim.engine.metering) unless ``metered`` is
    False (a run whose costs nobody reads, such as a clairvoyant bound): the stream's own
    bands/faults (synthetic profiles carry them), then ``bands.X`` / ``faults.X`` overrides
    from the run definition; with an ``endpoint`` override, the real model it names instead
    (memsim.engine.openai_llm)."""
    if ENDPOINT in overrides:
        check_model_overrides(overrides)
        return ModelLLM(str(overrides[ENDPOINT]), seed=seed)
    bands = dict(stream_meta.get("bands", {}) or {})
    faults = dict(stream_meta.get("faults", {}) or {})
    modes: dict[str, Any] = {}
    text_embedder = str(stream_meta.get("text_embedder", DEFAULT_TEXT_EMBEDDER))

    known = {"bands": Bands, "faults": Faults}
    for name, value in overrides.items():
        group, _, field = name.partition(".")
        if group in known and field not in {f.name for f in dataclasses.fields(known[group])}:
            names = ", ".join(f"{group}.{f.name}" for f in dataclasses.fields(known[group]))
            raise ParamError(f"--llm: unknown override {name!r}; known: {names}")
        if name == "text_embedder":
            text_embedder = str(value)
        elif group == "bands":
            bands[field] = value
        elif group == "faults":
            faults[field] = value
        elif group == "modes":
            if field not in {f.name for f in dataclasses.fields(Modes)}:
                raise ParamError(f"unknown mock LLM mode {name}={value!r}")
            modes[field] = value
        else:
            raise ParamError(
                f"unknown LLM override {name!r}: use bands.NAME, faults.NAME, modes.NAME "
                "or text_embedder"
            )
    text_mode: dict[str, Any] = {}
    if stream_meta.get("claim_text"):  # claims and questions said in sentences
        text_mode = {"claim_text": True, "followups": stream_meta.get("followups") or {}}
    mock = MeteredMockLLM if metered else MockLLM  # metered: as a real model bills its calls
    return mock(
        seed=seed,
        bands=Bands(**bands),
        faults=Faults(**faults),
        text_embedder=text_embedder,
        modes=Modes(**modes),
        **text_mode,
    )


def index_applies(policy: str, index: Mapping[str, Any]) -> bool:
    """Whether candidate index settings (``mode`` and knobs, as ``Policy.use_index`` takes
    them) change a run of ``policy``: mode exact where the policy's default index is another
    (it turns that off), another mode where some search of the policy goes through it
    (``Policy.index_modes``). Settings the index refuses raise its error."""
    check_settings(**index)
    cls = registry.spec(policy).load()
    if index["mode"] == "exact":
        return bool(cls.default_index["mode"] != "exact")
    return index["mode"] in cls.index_modes


def check_index(policy: str, index: Mapping[str, Any]) -> None:
    """Refuse a mode other than exact that would change nothing for ``policy``
    (:func:`index_applies`), naming the policies whose searches it would reach (mode exact
    is every policy's full scan, its default or not)."""
    if index and index["mode"] != "exact" and not index_applies(policy, index):
        mode = index["mode"]
        users = [s.id for s in registry.specs() if mode in s.load().index_modes]
        raise ParamError(
            f"--index mode={mode}: no search of {registry.spec(policy).id} goes through a "
            "candidate index in that mode, so it would change nothing; policies whose "
            f"searches do: {', '.join(users)}"
        )


def index_of(policy: str, index: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """A run definition's index settings for a study of one ``policy`` (a sweep, a tuning, a
    sensitivity analysis): refused where a mode other than exact would change nothing
    (:func:`check_index`), () where they are its default (mode exact of a policy whose
    searches are exact anyway: the plain runs, cached once), else the settings."""
    if not index:
        return ()
    check_index(policy, index)
    return as_overrides(index) if index_applies(policy, index) else ()


def prepare(d: RunDef, metered: bool = True) -> tuple[Any, Any, Any, Any]:
    """(stream, LLM, ground truth, policy) of one definition, ready for ``runner.run``
    (``metered``: see :func:`build_llm`)."""
    check_index(d.policy, dict(d.index))
    stream, gt = stream_truth(d.scenario, d.seed)
    llm = build_llm(d.seed, dict(stream.meta), dict(d.llm), metered)
    if isinstance(llm, TruthBound):
        llm.bind_truth(gt)  # the mock plays the asking user (modes.query_value)
    spec = registry.spec(d.policy)
    params = spec.load().Params()
    if d.params:
        params = params.replace(**dict(d.params))
    policy = spec.make(params, llm=llm, seed=d.seed)
    if d.index:
        policy.use_index(**dict(d.index))
    return stream, llm, gt, policy


def execute(
    d: RunDef, footprint: Any = None, progress: bool | str = False, metered: bool = True
) -> RunResult:
    """Run one definition in this process and score it (no files written). ``footprint``
    (a clairvoyant policy only): its budget per time, (time, memories) pairs or a frame
    with columns time and retrievable (another run's ``RunResult.footprint``). ``progress``:
    a bar over the stream's batches (see :func:`show_progress`). ``metered`` False: the
    LLM's costs are not counted (no ``llm_*`` columns; :func:`build_llm`)."""
    stream, llm, gt, policy = prepare(d, metered)
    spec = registry.spec(d.policy)
    if isinstance(footprint, pd.DataFrame):
        footprint = list(zip(footprint["time"].tolist(), footprint["retrievable"].tolist()))
    trace = runner.run(policy, stream, footprint=footprint, progress=show_progress(progress))
    queries = metrics.evaluate(trace, gt)
    queries.insert(0, "seed", d.seed)
    queries.insert(0, "scenario", d.scenario)
    queries.insert(0, "policy", spec.id)
    summary = {
        "policy": spec.id,
        "scenario": d.scenario,
        "seed": d.seed,
        **metrics.summarize_run(trace, gt),
        **trace.stored_bytes_summary(),
    }
    verdicts = [dataclasses.asdict(v) for v in sources.verdicts(d.scenario, stream, trace, spec.id)]
    if d.index or policy.candidates.answered:  # the index's exactness audit
        audit = policy.index_audit()
        summary["index_query_differ_share"] = audit["query_differ_share"]
        summary["index_decision_differ_share"] = audit["decision_differ_share"]
    footprint = trace.footprint_frame()
    llm_config = llm.config() if isinstance(llm, Configurable) else {"seed": d.seed}
    manifest = manifest_for(d, policy=policy, llm_config=llm_config, stream=stream)
    if isinstance(llm, Metered):  # what its calls cost: a real model's usage, the mock's meter
        usage = llm.usage()
        manifest["llm_usage"] = usage
        summary.update(usage_columns(usage))
    return RunResult(
        d,
        queries,
        footprint,
        summary,
        manifest=manifest,
        timings=dict(trace.timings),
        expectations=verdicts,
    )


def usage_columns(usage: Mapping[str, Any]) -> dict[str, int]:
    """An LLM's costs as summary columns: ``llm_calls``, ``llm_tokens_in``,
    ``llm_tokens_out`` (summed over the run's calls), then what the usage holds of
    ``llm_latency_ms`` and ``llm_faults`` (a real model's: invalid or failed replies) and of
    ``llm_embed_calls``, ``llm_embed_items``, ``llm_embed_tokens`` (the metered mock's
    embedding calls, texts embedded and their tokens). The manifest's ``llm_usage`` breaks
    them down per protocol method (and fault kind)."""
    total = usage["total"]
    columns = {
        "llm_calls": int(total["calls"]),
        "llm_tokens_in": int(total["tokens_in"]),
        "llm_tokens_out": int(total["tokens_out"]),
    }
    if "latency_ms" in total:
        columns["llm_latency_ms"] = int(total["latency_ms"])
    if "faults" in usage:
        columns["llm_faults"] = int(sum(usage["faults"].values()))
    if "embedding" in usage:
        embedding = usage["embedding"]
        columns["llm_embed_calls"] = int(embedding["calls"])
        columns["llm_embed_items"] = int(embedding["items"])
        columns["llm_embed_tokens"] = int(embedding["tokens"])
    return columns  # (the metric registry's "llm_usage" group names these, in this order)


def matched_clairvoyant(result: RunResult, reference: str = "clairvoyant") -> RunResult:
    """The clairvoyant reference run at ``result``'s own footprint over time (matched mode):
    same scenario, seed and LLM, budget = the policy's retrievable memories at each moment.
    Its recall bounds what retention of raw episode memories could reach at that footprint
    (a consolidating policy can exceed it; see policies/clairvoyant.py)."""
    d = result.definition
    ref = RunDef(reference, d.scenario, d.seed, (), d.llm)
    return execute(ref, footprint=result.footprint, metered=False)  # (its recall is read)


def _execute_and_save(d: RunDef, root: str | None, calibrate: bool = False) -> RunResult:
    r = execute(d)
    if calibrate:
        r = with_bound(r)
    if root is not None:
        save(root, r)
    return r


def _load_calibrated(root: str, d: RunDef, calibrate: bool) -> RunResult:
    """A cached run; one cached before it had its bound gains it now (and keeps it)."""
    r = load(root, d)
    if calibrate:
        if BOUND not in r.queries.columns:
            r = with_bound(r)
            save(root, r)
    return r


def resolve_policy(policy_id: str) -> str:
    return registry.spec(policy_id).full_id


def run(
    policy: str,
    scenario: str,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    llm: Mapping[str, Any] | None = None,
    index: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Run one policy on one scenario; the per-query metrics as a DataFrame. ``index``:
    candidate index settings, e.g. ``{"mode": "ivf", "min_rows": 20000}``
    (:func:`check_index`)."""
    d = RunDef(
        resolve_policy(policy),
        scenario,
        int(seed),
        as_overrides(params),
        as_overrides(llm),
        as_overrides(index),
    )
    return execute(d).queries


# ---------------------------------------------------------------------------- grids


def grid(
    policies: Sequence[str],
    scenario_specs: Sequence[str],
    seeds: Sequence[int],
    params: Mapping[str, Any] | None = None,
    llm: Mapping[str, Any] | None = None,
    index: Mapping[str, Any] | None = None,
) -> list[RunDef]:
    """The Cartesian product, in a fixed order (scenario, policy, seed). ``params`` keys are
    ``FIELD`` (every policy) or ``POLICY.FIELD`` (that policy only). ``index``: candidate
    index settings for every policy they change (:func:`index_applies`; the others run with
    their own default, and share its cached runs), a ParamError when a mode other than
    exact reaches none."""
    if not policies:
        raise MemsimError("no policies to compare")
    if not scenario_specs:
        raise MemsimError("no scenarios to compare on")
    full = [resolve_policy(p) for p in policies]
    for what, items in (("policies", full), ("scenarios", list(scenario_specs)), ("seeds", seeds)):
        dup = sorted({str(x) for x in items if list(items).count(x) > 1})
        if dup:
            raise MemsimError(f"--{what}: {', '.join(dup)} given twice (each would count twice)")
    per_policy: dict[str, dict[str, Any]] = {p: {} for p in policies}
    for key, value in (params or {}).items():
        policy, dot, field = key.rpartition(".")
        if not dot:
            for p in policies:
                per_policy[p][key] = value
        elif policy in per_policy:
            per_policy[policy][field] = value
        else:
            raise ParamError(f"parameter {key!r}: policy {policy!r} is not being compared")
    indexed = {f: as_overrides(index) for f in full if index and index_applies(f, index)}
    if index and not indexed:
        check_index(full[0], index)  # (raises, naming the policies it would reach)
    return [
        RunDef(f, s, int(seed), as_overrides(per_policy[p]), as_overrides(llm), indexed.get(f, ()))
        for s in scenario_specs
        for p, f in zip(policies, full)
        for seed in seeds
    ]


def run_grid(
    defs: Sequence[RunDef],
    *,
    root: str | Path | None = None,
    jobs: int = 1,
    executor: cf.Executor | None = None,
    resume: bool = True,
    progress: bool | str = False,
    calibrate: bool = False,
    what: str = "runs",
) -> list[RunResult]:
    """Execute definitions (skipping complete ones under ``root`` when ``resume``); results
    come back in the order of ``defs`` whatever the executor. ``calibrate``: each run's
    queries gain ``bound``, the clairvoyant's recall at its footprint (:func:`with_bound`);
    ``what`` names the phase in progress lines."""
    root_s = None if root is None else str(root)
    results: dict[int, RunResult] = {}
    todo: list[int] = []
    for i, d in enumerate(defs):
        if root_s is not None and resume and is_complete(root_s, d):
            results[i] = _load_calibrated(root_s, d, calibrate)
        else:
            todo.append(i)
    bar = progress_bar(len(defs), progress, initial=len(results), what=what)
    done = map_in_order(
        _execute_and_save,
        [(defs[i], root_s, calibrate) for i in todo],
        jobs=jobs,
        executor=executor,
        bar=bar,
    )
    results.update(zip(todo, done))
    return [results[i] for i in range(len(defs))]


class _NoBar:
    def update(self, n: int) -> None: ...
    def close(self) -> None: ...


def show_progress(flag: bool | str) -> bool:
    """Whether to draw a progress bar: ``"always"`` draws one; True draws one only when stderr
    is a terminal (in a log file or a pipe a bar is noise); False never. Bars go to stderr
    and never touch result files."""
    if flag == "always":
        return True
    return bool(flag) and sys.stderr.isatty()


PROGRESS_LINE_EVERY_S = 10.0  # plain progress lines: at most one per this many seconds


class ProgressLines:
    """Progress on a stderr that is no terminal (a log file, a pipe): plain lines, the phase
    and the count, ``runs: 40/420, 2 min``, at most one per ``every`` seconds and only once
    the phase has lasted that long (a short phase stays silent), then one when a phase that
    printed ends. Nothing of it reaches a result file."""

    def __init__(
        self,
        total: int,
        initial: int = 0,
        what: str = "runs",
        every: float | None = None,
        clock: Any = time.monotonic,
        stream: Any = None,
    ) -> None:
        self.total, self.n, self.what, self.initial = total, initial, what, initial
        self.every = PROGRESS_LINE_EVERY_S if every is None else every
        self.clock, self.stream = clock, stream if stream is not None else sys.stderr
        self.start = self.last = clock()
        self.printed, self.shown = False, initial

    def _line(self) -> None:
        elapsed = self.clock() - self.start
        line = f"{self.what}: {self.n}/{self.total}, {_duration(elapsed)}"
        done, left = self.n - self.initial, self.total - self.n
        if done > 0 and left > 0:  # at the pace of this phase so far
            line += f", about {_duration(elapsed / done * left)} left"
        print(line, file=self.stream, flush=True)
        self.last, self.printed, self.shown = self.clock(), True, self.n

    def update(self, n: int) -> None:
        self.n += n
        if self.clock() - self.last >= self.every:
            self._line()

    def close(self) -> None:
        if self.printed and self.shown != self.n:
            self._line()
        self.printed = False


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def progress_bar(total: int, enabled: bool | str, initial: int = 0, what: str = "runs"):
    """A bar on a terminal (or with ``"always"``), plain lines on any other stderr, nothing
    when ``enabled`` is False (``--quiet``); ``what`` names the phase and its unit."""
    if not enabled:
        return _NoBar()
    if not show_progress(enabled):
        return ProgressLines(total, initial, what)
    from tqdm.auto import tqdm

    return tqdm(
        total=total, initial=initial, desc=what, unit=what.rstrip("s"), file=sys.stderr, delay=1.0
    )


# ---------------------------------------------------------------------------- the matched bound

BOUND = "bound"  # per-query recall@k of the clairvoyant at the run's footprint


def clairvoyant_id() -> str | None:
    """The id of the registered clairvoyant reference (its spec says ``clairvoyant``)."""
    refs = [s.id for s in registry.specs(references=True) if s.clairvoyant]
    return refs[0] if refs else None


def needs_bound(d: RunDef) -> bool:
    return clairvoyant_id() is not None and not registry.spec(d.policy).clairvoyant


def with_bound(result: RunResult) -> RunResult:
    """``result`` with its queries gaining ``bound`` (NaN for a clairvoyant run itself)."""
    if BOUND in result.queries.columns:
        return result
    q = result.queries.copy()
    ref = clairvoyant_id()
    if ref is None or q.empty or not needs_bound(result.definition):
        q[BOUND] = np.nan
    else:
        c = matched_clairvoyant(result, ref).queries
        if list(c["query_id"]) != list(q["query_id"]):
            raise MemsimError(
                f"matched clairvoyant of {result.definition.policy} on "
                f"{result.definition.scenario}: queries differ from the policy's run"
            )
        q[BOUND] = c["recall"].to_numpy(dtype=np.float64)
    return dataclasses.replace(result, queries=q)
