"""The review choices every reference model shares (policies/reference.py's module
docstring, each a field of the model's Params), shown at their defaults: a claim at cosine
>= 0.85 to a live memory is a repetition of it, and a retrieval is a successful review.

Each test leaves the field it pins at its default, so moving that default
(``scripts/mutation.py --behavioural``) fails it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.llm import Embedded
from memsim.engine.registry import make

# the models whose repetitions and retrievals are reviews (Generative Agents never merges,
# and its retrieval refreshes last access whatever retrieval_is_review says: see
# scripts/mutation.py's EQUIVALENT)
REVIEWING = ["actr", "actr-spacing", "fsrs", "ebisu", "memorybank", "memorybank-code"]


class CosineLLM:
    """A claim with attr ``cos`` = c embeds at cosine c to the first axis (the query's)."""

    dim, seed = 4, 0

    def extract(self, episode):
        return episode.claims

    def embed(self, items, keys):
        v = np.zeros((len(items), self.dim), dtype=np.float32)
        for i, c in enumerate(items):
            cos = float(c.attr("cos", 1.0))
            v[i, 0], v[i, 1] = cos, math.sqrt(1.0 - cos * cos)
        return Embedded(v, np.ones(len(items), dtype=bool))

    def embed_query(self, query):
        return np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def episode(i: int, t: float, cos: float = 1.0) -> Episode:
    return Episode(f"e{i}", t, "x", (Claim("a.b", "1", attrs=(("cos", cos),)),))


@pytest.mark.parametrize("pid", [p for p in REVIEWING if p != "memorybank-code"])
@pytest.mark.parametrize("cos, memories", [(0.86, 1), (0.84, 2)])
def test_a_claim_at_cosine_085_or_more_is_a_repetition(pid, cos, memories):
    """reference.py: a later claim at cosine >= reinforce_cosine (0.85) with a live memory
    reinforces it; one just under it is a new memory (memorybank-code follows the released
    files, where each dialog turn is its own memory)."""
    pol = make(pid, llm=CosineLLM(), seed=0)
    pol.ingest([episode(0, 0.0)], 0.0)
    out = pol.ingest([episode(1, 0.5, cos)], 0.5)
    assert [o.action for o in out] == (["reinforce"] if memories == 1 else ["create"])
    assert pol.store.n == memories


@pytest.mark.parametrize("pid", REVIEWING)
def test_a_retrieval_is_a_review(pid):
    """reference.py: each memory a recall returns is reviewed (retrieval_is_review): a week
    later its strength differs from a twin's that was never retrieved."""
    queried, twin = (make(pid, llm=CosineLLM(), seed=0) for _ in range(2))
    for pol in (queried, twin):
        pol.ingest([episode(0, 0.0)], 0.0)
    r = queried.recall([Query("q", 1.0, "a?", keys=("a.b",), k=1)], 1.0)[0]
    assert r.ids.tolist() == [0]
    assert queried.strength(8.0)[0] != pytest.approx(twin.strength(8.0)[0], rel=1e-9)


# each model's forgetting threshold on its recall probability: memsim's choice (0.05), FSRS's
# desired retention (0.5)
FORGET_BELOW = {"actr": 0.05, "actr-spacing": 0.05, "fsrs": 0.5, "ebisu": 0.05, "memorybank": 0.05}


@pytest.mark.parametrize("pid", sorted(FORGET_BELOW))
def test_the_decay_job_forgets_a_memory_once_its_retention_falls_under_the_threshold(pid):
    """reference.py: the daily decay job marks ``decayed`` every memory whose retention fell
    under ``forget_below``: kept while it is still a hair above the threshold, forgotten a
    moment after it falls under it."""
    threshold = FORGET_BELOW[pid]
    probe = make(pid, llm=CosineLLM(), seed=0)
    probe.ingest([episode(0, 0.0)], 0.0)
    lo, hi = 0.0, 1.0
    while probe.retention(hi)[0] >= threshold:
        hi *= 2.0
    for _ in range(60):  # bisection: retention(lo) >= threshold > retention(hi)
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if probe.retention(mid)[0] >= threshold else (lo, mid)
    assert threshold <= probe.retention(lo)[0] < threshold * 1.01
    for t, action in ((lo, "skip"), (hi, "prune")):
        pol = make(pid, llm=CosineLLM(), seed=0)
        pol.ingest([episode(0, 0.0)], 0.0)
        assert [o.action for o in pol.maintain(t, ["decay"])] == [action], t
