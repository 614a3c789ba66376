"""One simulation run of a policy through the ``steady`` synthetic year, timed; prints JSON.

    python -m benchmarks simrun POLICY EPISODES QUERIES [--horizon DAYS] [--profile N]
        [--index mode=ivf,min_rows=N]

Used by bench_sim.py in a subprocess (so a run too slow for the time budget can be stopped);
``--profile N`` adds the N top cProfile entries (by cumulative time) of the run; ``--index``
sets the policy's candidate index (Policy.use_index; ``mode=exact`` for the full scans); the
exactness audit is added whenever the index answered a search (a policy's default index too).
Memory: the process's peak resident set (``peak_rss_mib``, getrusage), its resident set after
the stream was generated and before the run (``stream_rss_mib``), and the raw bytes of the
final store's embeddings (``raw_embedding_mib``: rows x dim x 4).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import re
import resource
import time
from pathlib import Path

from benchmarks.workloads import REPO

HORIZON = 365.0
# a package's file, wherever the environment lies: its path from site-packages on
_SITE_PACKAGES = re.compile(r"\S*/site-packages/")


def _rss_mib() -> float:
    """The resident set of this process now (Linux /proc; NaN elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")
    return pages * resource.getpagesize() / 2**20


def portable(profile: str, root: Path = REPO) -> str:
    """pstats' text with the checkout's files relative to its root and installed packages'
    from site-packages on: the same lines from any clone, worktree or virtual environment
    (a report made in a worktree printed /tmp/rep/main/... on every line)."""
    return _SITE_PACKAGES.sub("site-packages/", profile.replace(f"{root}/", ""))


def spec(episodes: int, queries: int, horizon: float = HORIZON) -> str:
    return f"synthetic:steady,episodes={episodes},queries={queries},horizon={horizon:g}"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks simrun")
    ap.add_argument("policy")
    ap.add_argument("episodes", type=int)
    ap.add_argument("queries", type=int)
    ap.add_argument("--horizon", type=float, default=HORIZON, help="days (default: a year)")
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--index", default="", help="mode=ivf,min_rows=N,nprobe=N,audit_every=N")
    a = ap.parse_args(argv)
    import scenarios
    from memsim.engine import registry
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run
    from memsim.workbench.cli.args import index_settings
    from memsim.workbench.runs.execution import check_index

    # user mistakes before the stream is built: an unknown policy, a bad index setting
    registry.spec(a.policy)
    index = index_settings(a.index.split(",")) if a.index else {}
    check_index(a.policy, index)

    t0 = time.perf_counter()
    stream = scenarios.load(spec(a.episodes, a.queries, a.horizon))
    generate = time.perf_counter() - t0
    stream_rss = _rss_mib()
    policy = registry.make(a.policy, llm=MockLLM(seed=0), seed=0)
    if index:
        policy.use_index(**index)
    prof = cProfile.Profile() if a.profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    trace = run(policy, stream)
    if prof:
        prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {
        "policy": a.policy,
        "episodes": a.episodes,
        "queries": a.queries,
        "spec": spec(a.episodes, a.queries, a.horizon),
        "generate_seconds": generate,
        "run_seconds": wall,
        "run_cpu_seconds": cpu,
        "timings": dict(trace.timings),
        "store_rows": int(policy.store.n),
        "footprint": int(policy.footprint()),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "stream_rss_mib": stream_rss,
        "raw_embedding_mib": policy.store.n * policy.store.embedding.shape[1] * 4 / 2**20,
    }
    if a.index or policy.candidates.answered:
        out["index_audit"] = policy.index_audit()
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(a.profile)
        out["profile"] = portable(buf.getvalue())
    print(json.dumps(out))
    return out
