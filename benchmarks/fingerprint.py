"""Trace fingerprints: the check that a speed change leaves a policy's runs identical.

    python -m benchmarks fingerprint [--save FILE | --check FILE] POLICY ...

For each policy, each of the four synthetic profiles (steady at 3,000 episodes; churn, noisy
and longgap at 2,000; seed 0, the mock LLM with seed 0; ``--profiles steady-30k`` for a store
past the large-store paths' sizes) is run and hashed (sha256) over
everything the trace holds but its timings (every query's returned ids and scores, the
provenance and stated facts, every outcome, the footprint, status and provenance logs, the
kind of every row; the status vocabulary with its sets sorted, since a frozenset's repr
depends on the string hash seed) and over every column of the final store and its embeddings, bytes
included. ``--save`` writes ``{policy: {profile: digest}}`` as JSON; ``--check`` compares
with such a file and exits 1 on any difference. Run the saved file from the code before a
change (e.g. a ``git archive`` of it on PYTHONPATH) and ``--check`` on the code after it
(docs/performance.md, "Same traces").
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from benchmarks.workloads import registered
from memsim.workbench.runs.results import read_json

PROFILES = {
    "steady": "synthetic:steady,episodes=3000",
    "churn": "synthetic:churn,episodes=2000",
    "noisy": "synthetic:noisy,episodes=2000",
    "longgap": "synthetic:longgap,episodes=2000",
}
# on request only (--profiles steady-30k): a store past similarity.PackedRows.MIN_ROWS and the
# candidate index's min_rows, where the large-store paths are taken
LARGE = {"steady-30k": "synthetic:steady,episodes=30000"}


def fingerprint(policy_id: str, spec: str) -> str:
    import scenarios
    from memsim.engine import registry
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run

    policy = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)
    return digest(policy, run(policy, scenarios.load(spec)))


def digest(policy, trace) -> str:
    """sha256 of a run: its trace without timings, every store column and the embeddings."""
    content = list(trace.content())
    st = trace.statuses  # its frozensets' repr follows the process's string hash seed
    content[content.index(st)] = (st.names, sorted(st.terminal), sorted(st.retrievable))
    h = hashlib.sha256(repr(content).encode())
    s = policy.store
    for name in sorted(s.columns):
        h.update(name.encode())
        h.update(s[name].tobytes())
    h.update(s.embedding.tobytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks fingerprint")
    ap.add_argument("policies", nargs="+")
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("--check", type=Path, default=None)
    ap.add_argument(
        "--profiles", nargs="+", default=list(PROFILES), choices=list(PROFILES) + list(LARGE)
    )
    a = ap.parse_args(argv)
    want = read_json(a.check) if a.check is not None else None  # (read before the runs)
    got: dict[str, dict[str, str]] = {}
    for pid in registered(a.policies):
        got[pid] = {}
        for name in a.profiles:
            got[pid][name] = fingerprint(pid, {**PROFILES, **LARGE}[name])
            print(f"{pid} {name} {got[pid][name]}", flush=True)
    if a.save is not None:
        a.save.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    if want is not None:
        bad = [f"{p} {n}" for p in got for n in got[p] if want.get(p, {}).get(n) != got[p][n]]
        print("identical" if not bad else "DIFFER: " + ", ".join(bad))
        return 1 if bad else 0
    return 0
