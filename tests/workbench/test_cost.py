"""What a run costs in its results: the metered mock's calls and tokens and the stored bytes
in summary.csv (deterministic), recall latency and maintenance time in timings.json and the
timing table (machine noise, kept out of summary.csv)."""

from __future__ import annotations

import json

import numpy as np

from memsim.engine.metric_registry import METRICS, metric_names
from memsim.workbench.runs.execution import grid, run_grid, usage_columns
from memsim.workbench.runs.results import TIMING_COLUMNS, timing_table
from memsim.workbench.stats import tables

TINY = "synthetic:churn,episodes=300,queries=20,facts=20,horizon=30"


def _compare(root):
    results = run_grid(grid(["keep-all", "pai"], [TINY], [0]), root=root)
    summary, _ = tables(results)
    return results, summary.to_csv(index=False, float_format="%.6g").encode()


def test_identical_runs_give_identical_summaries_whatever_their_timings(tmp_path):
    a, csv_a = _compare(tmp_path / "a")
    b, csv_b = _compare(tmp_path / "b")
    assert csv_a == csv_b
    ta, tb = timing_table(a), timing_table(b)
    assert list(ta.columns) == ["policy", "scenario", "seed", *TIMING_COLUMNS]
    assert len(ta) == 2 and (ta[list(TIMING_COLUMNS)].to_numpy() > 0).all()
    assert not ta.equals(tb)  # (two runs never take the same nanoseconds)
    for name in ("queries.parquet", "footprint.parquet", "summary.json", "manifest.json"):
        for ra, rb in zip(a, b):
            pa = ra.definition.path(tmp_path / "a") / name
            pb = rb.definition.path(tmp_path / "b") / name
            assert pa.read_bytes() == pb.read_bytes(), name
    timings = json.loads((a[0].definition.path(tmp_path / "a") / "timings.json").read_text())
    assert {"recall_ms_mean", "recall_ms_p95", "maintenance"} <= set(timings)


def test_the_summary_has_the_cost_columns_with_registered_units(tmp_path):
    results, csv = _compare(tmp_path)
    text = csv.decode()
    cost = [*metric_names("cost"), *metric_names("llm_usage")]
    mock = [c for c in cost if c not in ("llm_latency_ms", "llm_faults")]
    for name in mock:
        assert f",{name}," in text, name
        assert METRICS[name].unit in ("bytes", "calls", "tokens", "texts")
    for name in ("llm_latency_ms", "llm_faults", "recall_ms_mean", "maintenance"):
        assert f",{name}," not in text, name
    pai = next(r for r in results if r.summary["policy"].startswith("pai"))
    usage = pai.manifest["llm_usage"]
    assert usage_columns(usage) == {c: pai.summary[c] for c in usage_columns(usage)}
    assert set(usage["methods"]) >= {"extract", "embed", "embed_query", "classify"}
    assert pai.summary["llm_embed_tokens"] < pai.summary["llm_tokens_in"]


def test_stored_bytes_are_the_retrievable_vectors_and_texts(tmp_path):
    from memsim.engine import registry, runner, sources, truth
    from memsim.engine.mockllm import MockLLM

    stream = sources.load(TINY, seed=0)
    llm = MockLLM(seed=0)
    llm.bind_truth(truth.GroundTruth(stream))
    spec = registry.spec("keep-all")
    policy = spec.make(spec.load().Params(), llm=llm, seed=0)
    trace = runner.run(policy, stream)
    store = policy.store
    mask = store.mask()
    text = sum(len(store.text[i].encode()) for i in np.flatnonzero(mask))
    vectors = int(mask.sum()) * store.dim * 4  # float32 rows
    assert trace.stored_bytes[-1][1:] == (vectors, text)
    got = trace.stored_bytes_summary()
    assert got["stored_bytes_final"] == vectors + text
    assert got["stored_text_bytes_final"] == text
    n_batches = len({q.time for q in trace.queries})
    assert len(trace.stored_bytes) == n_batches + 1
    expected = np.mean([v + t for _, v, t in trace.stored_bytes[:-1]])
    assert got["stored_bytes_mean"] == expected
    assert len(trace.recall_seconds) == len(trace.queries)
    ms = np.asarray(trace.recall_seconds) * 1000.0
    assert trace.timings["recall_ms_mean"] == ms.mean() > 0
    assert ms.min() <= trace.timings["recall_ms_p95"] <= ms.max()
    assert trace.timings["maintenance"] == trace.timings["ingest"] + trace.timings["maintain"]
