"""When the seed models' maintenance runs, at their default cadences: the runner calls
``maintain`` with each job at the times its period gives (001 §How It Works: the 4-hour
cold cycle; the pai and kernle cadences are memsim's choices, in docs/policies/pai.md and
docs/policies/kernle.md).

Each case leaves the cadences at their defaults, so moving one
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

from collections import defaultdict

import pytest

from memsim.engine.events import Claim, Episode, make_stream
from memsim.engine.mockllm import MockLLM
from memsim.engine.registry import make
from memsim.engine.runner import run

HORIZON = 15.0


def _job_times(pid: str) -> dict[str, list[float]]:
    pol = make(pid, llm=MockLLM(seed=0), seed=0)
    seen: dict[str, list[float]] = defaultdict(list)
    maintain = pol.maintain

    def recording(now, jobs):
        for job in jobs:
            seen[job].append(round(float(now), 6))
        return maintain(now, jobs)

    pol.maintain = recording
    stream = make_stream([Episode("e0", 0.0, "x", (Claim("a.b", "1"),))], horizon=HORIZON)
    run(pol, stream)
    return dict(seen)


def _every(days: float) -> list[float]:
    n = int(HORIZON / days + 1e-9)
    return [round(days * i, 6) for i in range(1, n + 1)]


@pytest.mark.parametrize(
    "pid, jobs",
    [
        # 000 gives no cadence: reflect + mergeDuplicates and prune daily, synthesize weekly
        ("pai", {"reflect": 1.0, "synthesize": 7.0, "prune": 1.0}),
        # 004 gives no cadence: consolidation daily, the forgetting cycle weekly
        ("kernle", {"consolidate": 1.0, "forget": 7.0}),
        # 001 §How It Works: the cold consolidation cycle every 4 hours
        ("engram", {"consolidate": 4.0 / 24.0}),
    ],
)
def test_maintenance_runs_at_the_documented_cadence(pid, jobs):
    got = _job_times(pid)
    assert set(got) == set(jobs)
    for job, days in jobs.items():
        assert got[job] == _every(days), job
