"""The ten-year steady stream: a ten-year steady stream (1,000,000 episodes, 100,000 queries over
3,650 days) runs to the end, with the peak memory against the raw bytes of the embeddings.

Each policy runs once through ``benchmarks.simrun`` in a subprocess (one BLAS thread), which
reports the process's peak resident set (``peak_rss_mib``), its resident set once the stream
is generated (``stream_rss_mib``) and the raw bytes of the final store's embeddings
(``raw_embedding_mib``: rows x dim x 4). The table's memory ratio is
(peak - stream) / raw: what the run added over the raw embeddings it ends with.

    nice -n 5 python -m benchmarks ten-year [POLICY ...]      # full mode; writes its table
    python -m benchmarks ten-year --from-json R1.json R2.json    # rows from simrun's JSON
    MEMSIM_BENCH_SMOKE=1 python -m pytest benchmarks/bench_tenyear.py --benchmark-disable

Full mode writes the table between ``TENYEAR_BEGIN`` / ``TENYEAR_END`` of
results/benchmarks.md: a row per policy with the date and code of its run, the rows of the
policies not run this time kept (a decade is an hour or more per policy). Smoke mode runs
keep-all in-process on a 2,000-episode "decade".
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import pytest

from benchmarks import blocks
from benchmarks.conftest import record_target
from benchmarks.workloads import REPO, SMOKE, registered, size
from memsim.workbench.runs.results import read_json

OUT_MD = REPO / "results" / "benchmarks.md"
BEGIN, END = "<!-- TENYEAR_BEGIN -->", "<!-- TENYEAR_END -->"
EPISODES, QUERIES = size(1_000_000, 2_000), size(100_000, 100)
HORIZON = 3650.0
TIMEOUT = 6 * 3600.0


def spec_args() -> list[str]:
    return [str(EPISODES), str(QUERIES), "--horizon", f"{HORIZON:g}"]


def measure(policy: str) -> dict | None:
    """simrun's JSON of one ten-year run of ``policy`` (None: over the time limit)."""
    if SMOKE:
        import contextlib
        import io

        from benchmarks import simrun as simrun_mod

        with contextlib.redirect_stdout(io.StringIO()):
            return simrun_mod.main([policy, *spec_args()])
    from benchmarks.bench_sim import simrun

    return simrun(policy, EPISODES, QUERIES, timeout=TIMEOUT, extra=["--horizon", f"{HORIZON:g}"])


def memory_ratio(r: dict) -> float:
    """(peak resident set - resident set after the stream) / raw embedding bytes."""
    return (r["peak_rss_mib"] - r["stream_rss_mib"]) / max(r["raw_embedding_mib"], 1e-9)


HEADER = (
    "| policy | episodes | queries | run s | CPU s | ingest / recall / maintain | store rows | "
    "peak MiB | after the stream MiB | raw embeddings MiB | ratio | measured (UTC), code |"
)


def row(r: dict, when: str, code: str) -> str:
    """One policy's table row from simrun's JSON."""
    return (
        f"| {r['policy']} | {r['episodes']:,} | {r['queries']:,} | {r['run_seconds']:.0f} | "
        f"{r['run_cpu_seconds']:.0f} | {blocks.shares(r['timings'])} | {r['store_rows']:,} | "
        f"{r['peak_rss_mib']:,.0f} | {r['stream_rss_mib']:,.0f} | "
        f"{r['raw_embedding_mib']:,.0f} | {memory_ratio(r):.2f} | {when}, {code or 'unknown'} |"
    )


def kept_rows(md: str) -> dict[str, str]:
    """The rows of the ten-year table already in ``md`` (policy -> row), each with its own
    date and code: a run of some policies keeps the others' rows (a decade is an hour or
    more per policy, so the table is filled a few policies at a time)."""
    n_cells = HEADER.count("|")
    out = {}
    for line in kept_block(md).splitlines():
        if line.startswith("| ") and line.count("|") == n_cells and not line.startswith("| policy"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] != "---":
                out[cells[0]] = line
    return out


def table(rows: dict[str, str], command: str) -> str:
    """The block: ``rows`` (policy -> row) in table order, keep-all first."""
    order = sorted(rows, key=lambda pid: (pid != "keep-all", pid))
    lines = [
        BEGIN,
        "## The ten-year steady stream",
        "",
        f"`{command}` (the last run of the command: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} "
        "UTC); each run one subprocess with one BLAS thread, on a 2-core machine with other "
        "work on the other core; a row per policy with the date and code of its run. Memory: "
        "peak resident set of the process, its resident set once the stream was generated, "
        "the raw bytes of the final store's embeddings (rows x dim x 4); ratio = (peak - after "
        "the stream) / raw. Policies without a row were not run to the end of a decade yet.",
        "",
        HEADER,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[rows[pid] for pid in order],
        "",
        END,
        "",
    ]
    return "\n".join(lines)


def kept_block(md: str) -> str:
    """The ten-year block of ``md`` ('' when none), for benchmarks.report to keep."""
    return blocks.kept(md, BEGIN, END)


@pytest.mark.parametrize("policy_id", ["keep-all"])
def test_ten_year_stream_runs_to_the_end(benchmark, policy_id):
    r = measure(policy_id)
    assert r is not None, f"{policy_id}: the ten-year stream took over {TIMEOUT:.0f} s"
    assert r["episodes"] == EPISODES and r["store_rows"] > 0
    assert r["peak_rss_mib"] >= r["stream_rss_mib"] > 0 and r["raw_embedding_mib"] > 0
    record_target(
        benchmark,
        target=f"ten-year stream {policy_id} (peak memory over the stream / raw embeddings)",
        ratio=memory_ratio(r),
        limit=float("inf"),
        better="lower",
        n=r["episodes"],
        what="runs to the end; (peak RSS - RSS after the stream) / raw embedding bytes",
        run_seconds=r["run_seconds"],
        store_rows=r["store_rows"],
    )
    benchmark.group = "tenyear"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks ten-year")
    ap.add_argument("policies", nargs="*", default=["keep-all"])
    ap.add_argument("--from-json", type=Path, nargs="+", default=None)
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    ap.add_argument("--code", default="", help="the commit measured, for the table (default: git)")
    a = ap.parse_args(argv)
    command = "nice -n 5 python -m benchmarks ten-year POLICY ..."
    when = f"{dt.datetime.now(dt.UTC):%Y-%m-%d}"
    code = a.code or blocks.commit()
    results: list[dict] = []
    if a.from_json:
        for path in a.from_json:
            results.append(read_json(path, part="last"))  # (simrun's JSON line)
    else:
        for pid in registered(a.policies):
            r = measure(pid)
            if r is None:
                print(f"bench_tenyear: {pid} took over {TIMEOUT:.0f} s", flush=True)
                continue
            results.append(r)
            print(f"{pid}: {r['run_seconds']:.0f} s", flush=True)
    rows = kept_rows(OUT_MD.read_text()) if OUT_MD.exists() and not a.no_write else {}
    rows.update({r["policy"]: row(r, when, code) for r in results})
    block = table(rows, command)
    print(block)
    if not a.no_write:
        blocks.write(OUT_MD, block, BEGIN, END)
        print(f"wrote the table into {OUT_MD}")
    return 0
