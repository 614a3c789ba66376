"""Fast paths of the reference models' shared machinery (policies/reference.py) against
the plain computations they replace."""

from __future__ import annotations

import numpy as np
import pytest

import scenarios
from memsim.engine.events import Forget
from memsim.engine.mockllm import MockLLM
from memsim.engine.registry import make
from memsim.engine.runner import run


@pytest.mark.parametrize("policy_id", ["fsrs", "actr", "memorybank"])
def test_the_kept_live_mask_is_the_status_scan_after_every_call(policy_id):
    """_live's mask, kept between calls, is the scan of the status column before and after
    every call of a run that adds rows, reinforces them and decays some (a forgetting
    threshold far above the default), then of user forgets."""
    pol = make(policy_id, {"forget_below": 0.9}, llm=MockLLM(seed=0), seed=0)
    active = pol.statuses.code("active")
    changes = {"decayed": 0, "forgotten": 0}

    def plain() -> np.ndarray:
        return pol.store["status"][: pol.store.n] == active

    def checked(method):
        def call(*args, **kwargs):
            assert np.array_equal(pol._live(), plain())
            out = method(*args, **kwargs)
            assert np.array_equal(pol._live(), plain())
            for name in changes:
                changes[name] = int((pol.store["status"] == pol.statuses.code(name)).sum())
            return out

        return call

    for name in ("ingest", "recall", "maintain", "forget"):
        setattr(pol, name, checked(getattr(pol, name)))
    stream = scenarios.load("synthetic:churn,episodes=600")
    run(pol, stream)
    active_rows = np.flatnonzero(plain()).tolist()
    episodes = sorted({e for r in active_rows for e in pol.store.provenance[r]})
    end = max(pol.store["updated"]) + 1.0
    for i, episode in enumerate(episodes[::3]):
        pol.forget([Forget(id=f"f{i}", time=end, episode_id=episode)], end)
    assert pol.store.n > 50 and changes["decayed"] > 0 and changes["forgotten"] > 0, changes
    assert not pol._live().flags.writeable  # shared: a caller cannot change it
