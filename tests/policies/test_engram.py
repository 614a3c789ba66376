"""Engram (seed 001) unit tests; each names the document section it checks.

``StubLLM`` is a small deterministic stand-in for the LLM protocol (also used by the Cosmo
tests): claims embed as ``sqrt(a) T(topic) + sqrt(b) K(key) + sqrt(c) V(key, value)`` with
random parts from blake2b seeds (same fact and value: cosine 1; changed value ~0.77; same
topic ~0.55). A claim with a ``vec`` attr embeds as exactly that vector (threshold tests).
``classify`` answers SUPPORTS for the same value, CONTRADICTS for another, IRRELEVANT for
another key; ``relations`` overrides the answer by candidate key.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from memsim.engine.errors import MemsimError
from memsim.engine.events import Claim, Episode, Forget, Query
from memsim.engine.llm import CONTRADICTS, IRRELEVANT, PARTIAL, SUPPORTS, Embedded
from policies.engram import (
    Engram,
    EngramParams,
    belief_score,
    retrieval_strength,
    updated_stability,
)


def _vec(dim: int, *parts: str) -> np.ndarray:
    h = hashlib.blake2b("|".join(parts).encode(), digest_size=8).digest()
    v = np.random.default_rng(int.from_bytes(h, "little")).standard_normal(dim)
    return v / np.linalg.norm(v)


class StubLLM:
    def __init__(
        self, dim: int = 64, seed: int = 0, relations: dict[str, str] | None = None
    ) -> None:
        self.dim = dim
        self.seed = seed
        self.relations = relations or {}
        self.calls: Counter[str] = Counter()

    def claim_vector(self, c: Claim) -> np.ndarray:
        vec = c.attr("vec")
        if vec is not None:
            v = np.asarray(vec, dtype=np.float64)
            return v / np.linalg.norm(v)
        if not c.key:
            return _vec(self.dim, "text", c.value)
        v = (
            np.sqrt(0.55) * _vec(self.dim, "topic", c.topic)
            + np.sqrt(0.22) * _vec(self.dim, "key", c.key)
            + np.sqrt(0.23) * _vec(self.dim, "value", c.key, c.value)
        )
        return v / np.linalg.norm(v)

    def extract(self, episode: Episode):
        self.calls["extract"] += 1
        return episode.claims or (Claim(key="", value=episode.text),)

    def embed(self, items: Sequence, keys: Sequence[str]) -> Embedded:
        self.calls["embed"] += 1
        vecs = np.array(
            [
                self.claim_vector(i) if isinstance(i, Claim) else _vec(self.dim, "text", i)
                for i in items
            ],
            dtype=np.float32,
        ).reshape(len(items), self.dim)
        return Embedded(vecs, np.ones(len(items), dtype=bool))

    def embed_query(self, query: Query):
        if query.keys:
            v = sum(
                np.sqrt(0.55) * _vec(self.dim, "topic", k.rsplit(".", 1)[0] if "." in k else k)
                + np.sqrt(0.45) * _vec(self.dim, "key", k)
                for k in query.keys
            )
            return v / np.linalg.norm(v)
        return _vec(self.dim, "text", query.text)

    def classify(self, new: Claim, candidates: Sequence[Claim], *, answer: str, key: str):
        self.calls["classify"] += 1
        out = []
        for c in candidates:
            if c.key in self.relations:
                out.append(self.relations[c.key])
            elif c.key != new.key:
                out.append(IRRELEVANT)
            else:
                out.append(SUPPORTS if c.value == new.value else CONTRADICTS)
        return out

    def summarize(self, texts: Sequence[str], *, key: str) -> str:
        self.calls["summarize"] += 1
        return " ".join(texts)[:200] or "NONE"

    def synthesize(self, claims: Sequence[Claim], *, key: str) -> Claim:
        self.calls["synthesize"] += 1
        pairs = Counter((c.key, c.value) for c in claims)
        (k, v), _ = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        first = next(c for c in claims if (c.key, c.value) == (k, v))
        return Claim(
            key=k, value=v, category=first.category, subject=first.subject, attrs=first.attrs
        )


# ------------------------------------------------------------------------------- tests

DIM = 64


def unit(c: float, axis: int = 0, other: int = 1) -> tuple[float, ...]:
    """A unit vector with cosine ``c`` to basis vector ``axis``."""
    v = np.zeros(DIM)
    v[axis] = c
    v[other] = math.sqrt(max(0.0, 1 - c * c))
    return tuple(v.tolist())


def ep(i, t, key="topic.fact", value="v", **attrs) -> Episode:
    return Episode(
        f"e{i}", float(t), f"{key} {value}", (Claim(key, value, attrs=tuple(attrs.items())),)
    )


def singletons(n: int, start: int = 100, t: float = 0.0) -> list[Episode]:
    """Episodes on n unrelated topics (never cluster)."""
    return [ep(start + i, t, f"alone{start + i}.fact", "x") for i in range(n)]


def make(llm=None, **params) -> Engram:
    return Engram(EngramParams(**params), llm=llm or StubLLM(DIM))


def registry_default(field: str):
    """The documented default of an EngramParams field."""
    return getattr(EngramParams(), field)


def beliefs(pol: Engram, status: str = "active") -> list[int]:
    return np.flatnonzero(pol.store.mask([status], kinds=["belief"])).tolist()


def plant(pol: Engram, i=0, t=0.0, key="topic.fact", value="v", **attrs) -> int:
    attrs = {k: (str(v) if not isinstance(v, tuple) else v) for k, v in attrs.items()}
    return pol.plant(ep(i, t, key, value, **attrs), t)


# -- §How It Works 1: the 20-episode trigger ---------------------------------------------------
@pytest.mark.parametrize("n, runs", [(19, False), (20, True), (21, True)])
def test_trigger_needs_20_new_episodes(n, runs):
    pol = make()
    pol.ingest(singletons(n), 0.0)
    out = pol.consolidate(1.0)
    skipped = [o for o in out if o.action == "skip"]
    assert bool(skipped) is not runs
    assert pol.checkpoint == (n if runs else 0)


def test_trigger_counts_episodes_not_claims():
    """An episode with two claims is one new episode (001 §How It Works 1)."""
    pol = make()
    two = [
        Episode(f"d{i}", 0.0, "two", (Claim(f"a{i}.x", "1"), Claim(f"b{i}.y", "2")))
        for i in range(19)
    ]
    pol.ingest(two, 0.0)
    assert pol.consolidate(1.0)[0].action == "skip"


# -- §How It Works 2: clusters of 3 or more ----------------------------------------------------
@pytest.mark.parametrize("size, created", [(2, 0), (3, 1)])
def test_cluster_of_three_makes_a_belief_two_does_not(size, created):
    pol = make()
    pol.ingest(
        [ep(i, 0.0, "owner.city", "Paris") for i in range(size)] + singletons(20 - size), 0.0
    )
    pol.consolidate(1.0)
    assert len(beliefs(pol)) == created
    if created:
        b = beliefs(pol)[0]
        assert pol.store.provenance[b] == {f"e{i}" for i in range(size)}
        assert pol.store["alpha"][b] == 1.0 and pol.store["beta"][b] == 1.0  # §Belief Lifecycle 1
        assert pol.fields[b][:2] == ("owner", "owner.city")


def test_cluster_threshold_070_is_inclusive():
    """Greedy leader clustering joins at cosine >= the threshold (001 §How It Works 2; choice),
    measured on the stored vectors."""

    def rows_of(pol):
        out = pol.ingest(
            [
                ep(0, 0, "a.x", "1", vec=unit(1.0)),
                ep(1, 0, "b.x", "1", vec=unit(0.7)),
                ep(2, 0, "c.x", "1", vec=unit(0.0, other=2)),
            ],
            0.0,
        )
        return [o.memory for o in out]

    probe = make()
    ids = rows_of(probe)
    sim = float(
        probe.store.embedding[ids[0]].astype(np.float64)
        @ probe.store.embedding[ids[1]].astype(np.float64)
    )
    at = make(min_cluster_size=2, cluster_similarity=sim)
    ids = rows_of(at)
    assert at.cluster(ids) == [(ids[0], ids[1])]
    above = make(min_cluster_size=2, cluster_similarity=float(np.nextafter(sim, 1.0)))
    assert above.cluster(rows_of(above)) == []
    assert make().params.cluster_similarity == 0.70


def test_at_most_10_clusters_per_cycle_rest_carried():
    """001 §How It Works: max 10 clusters; unfinished work carries to the next cycle."""
    pol = make()
    eps = [ep(10 * k + j, 0.0, f"t{k}.fact", "v") for k in range(12) for j in range(3)]
    pol.ingest(eps, 0.0)
    pol.consolidate(1.0)
    assert len(beliefs(pol)) == 10 and len(pol.queue) == 2
    out = pol.consolidate(1.0 + 1 / 6)  # no new episodes: the carried work still runs
    assert len(beliefs(pol)) == 12 and pol.queue == []
    assert not any(o.action == "skip" for o in out)
    assert pol.consolidate(1.0 + 2 / 6)[0].action == "skip"


def test_call_budget_limits_clusters_and_carries():
    """120 s budget at 60 s per call: 2 LLM calls per cycle -> 2 syntheses per cycle."""
    pol = make(call_seconds=60.0)
    assert pol.call_budget == 2
    assert make().call_budget == 12
    pol.ingest([ep(10 * k + j, 0.0, f"t{k}.fact", "v") for k in range(5) for j in range(4)], 0.0)
    pol.consolidate(1.0)
    assert len(beliefs(pol)) == 2 and len(pol.queue) == 3
    pol.consolidate(2.0)
    assert len(beliefs(pol)) == 4
    pol.consolidate(3.0)
    assert len(beliefs(pol)) == 5 and not pol.queue


# -- §How It Works 4: match bands ----------------------------------------------------------------
def test_match_band_boundaries():
    pol = make()
    assert pol.match_band(0.9201) == "reinforce"
    assert pol.match_band(0.92) == "classify"  # "exceeds 0.92" is strict
    assert pol.match_band(0.70) == "classify"  # "below 0.70 ... novel": 0.70 is not below
    assert pol.match_band(0.6999) == "novel"


def _cluster_against(pol: Engram, c: float, value="v", key="topic.fact", start=0, t=1.0):
    """Ingest a 3-episode cluster whose vector has cosine ``c`` with unit(1.0) and consolidate."""
    eps = [ep(start + j, t - 0.5, key, value, vec=unit(c)) for j in range(3)] + singletons(
        17, 1000 + start, t - 0.5
    )
    pol.ingest(eps, t - 0.5)
    return pol.consolidate(t)


def test_reinforce_above_092():
    pol = make()
    b = plant(pol, vec=unit(1.0))
    _cluster_against(pol, 0.95)
    s = pol.store
    assert s["alpha"][b] == 2.0 and s["beta"][b] == 1.0 and s["evidence"][b] == 4
    assert s["last_reinforced"][b] == 1.0 and {"e0", "e1", "e2"} <= s.provenance[b]
    assert len(beliefs(pol)) == 1


@pytest.mark.parametrize(
    "reply, col, delta",
    [
        (SUPPORTS, "alpha", 1.0),
        (CONTRADICTS, "beta", 1.0),
        (PARTIAL, "n_partial", 1),
        (IRRELEVANT, None, 0),
        ("maybe?", None, 0),
    ],
)
def test_classification_band_four_way(reply, col, delta):
    """0.70-0.92: SUPPORTS alpha+1, CONTRADICTS beta+1, PARTIAL partial+1, IRRELEVANT (and an
    invalid reply) nothing."""
    pol = make(StubLLM(DIM, relations={"topic.fact": reply}))
    b = plant(pol, vec=unit(1.0))
    before = {c: pol.store[c][b] for c in ("alpha", "beta", "n_partial", "evidence")}
    _cluster_against(pol, 0.85)
    s = pol.store
    for c, v in before.items():
        expect = v + (delta if c == col else 0)
        if c == "evidence" and col is not None:
            expect = v + 3
        assert s[c][b] == expect, c
    assert len(beliefs(pol)) == 1  # no new belief in the classification band


def test_novel_below_070_creates_belief():
    pol = make()
    plant(pol, vec=unit(1.0))
    out = _cluster_against(pol, 0.5)
    assert len(beliefs(pol)) == 2 and any(
        o.action == "create" and o.detail == "novel belief" for o in out
    )


def test_classification_against_at_most_5_beliefs():
    llm = StubLLM(DIM, relations={f"k{i}.x": SUPPORTS for i in range(7)})
    pol = make(llm)
    rows = [
        plant(pol, i, key=f"k{i}.x", vec=unit(0.85 - 0.01 * i, axis=0, other=2 + i))
        for i in range(7)
    ]
    _cluster_against(pol, 1.0, key="new.x", start=50)
    alphas = pol.store["alpha"][rows]
    assert (alphas == 2.0).sum() == 5 and list(alphas[:5]) == [2.0] * 5  # the 5 most similar


# -- §Belief Lifecycle 4-8: gates at their boundaries ----------------------------------------------
def _set(pol, b, **cols):
    for k, v in cols.items():
        pol.store[k][b] = v


def test_revision_gate_boundaries():
    pol = make()
    b = plant(pol)
    base = dict(
        alpha=1.0, beta=1.6, peak_confidence=0.6, n_contra=3, evidence=5
    )  # confidence 0.3846
    _set(pol, b, **base)
    assert pol.should_revise(b)
    _set(pol, b, beta=1.5)  # confidence exactly 0.4: not below
    assert not pol.should_revise(b)
    for col, v in (("peak_confidence", 0.5), ("n_contra", 2), ("evidence", 4)):
        _set(pol, b, **base)
        _set(pol, b, **{col: v})
        assert not pol.should_revise(b), col


def test_revision_creates_child_with_parent_link():
    pol = make()
    b = plant(pol, alpha=2, beta=4, evidence_count=6)
    pol.store["peak_confidence"][b] = 0.6
    pol.store["n_contra"][b] = 3
    pol.evidence_rows[b] = {"support": [], "contra": []}
    out = pol._gates([b], 5.0)
    assert pol.store.status_of(b) == "revised"
    child = [o.memory for o in out if o.action == "synthesize"][0]
    assert pol.store["parent"][child] == b and pol.store.status_of(child) == "active"
    assert pol.store["alpha"][child] == 1.0 and pol.store["beta"][child] == 1.0


def test_split_gate_boundaries():
    pol = make()
    b = plant(pol)
    base = dict(n_contra=3, n_support=3, n_partial=2, evidence=5)
    _set(pol, b, **base)
    assert pol.should_split(b)
    for col in base:
        _set(pol, b, **base)
        _set(pol, b, **{col: base[col] - 1})
        assert not pol.should_split(b), col


def test_split_children_per_context():
    pol = make()
    b = plant(pol, alpha=4, beta=4)
    rows = []
    for i, ctx in enumerate(["work", "work", "home", "home", "home"]):
        rows += pol.ingest([ep(i, 0.0, "topic.fact", "v", context=ctx)], 0.0)
    pol.evidence_rows[b] = {"support": [o.memory for o in rows]}
    _set(pol, b, n_contra=3, n_support=3, n_partial=2, evidence=5)
    out = pol._gates([b], 2.0)
    assert pol.store.status_of(b) == "split"
    kids = [o.memory for o in out if o.action == "synthesize"]
    assert len(kids) == 2 and all(pol.store["parent"][k] == b for k in kids)


def test_archival_gate_boundaries():
    pol = make()
    b = plant(pol, alpha=3, beta=7)  # confidence 0.3: not below
    pol.store["evidence"][b] = 9
    assert not pol.archive_mask(1.0)[b]
    pol.store["beta"][b] = 7.01
    assert pol.archive_mask(1.0)[b]
    pol.store["beta"][b] = 1.0
    pol.store["evidence"][b] = 4
    assert not pol.archive_mask(89.99)[b]
    assert pol.archive_mask(90.0)[b]  # not reinforced for 90 days, evidence < 5
    pol.store["evidence"][b] = 5
    assert not pol.archive_mask(200.0)[b]  # evidence 5 is enough
    pol.store["evidence"][b] = 4
    assert not pol.archive_mask(90.0, exempt=[b])[b]  # reinforced in this cycle


def test_merge_gate_and_one_pair_per_cycle():
    """Under the §Configuration reading ("days since last update") a pair updated < 7 days
    ago waits; the documented default reading is tested below."""
    pol = make(merge_cooldown_from="update")
    rows = [
        plant(pol, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i)) for i in range(4)
    ]
    assert pol.merge_pair(6.99) is None  # updated < 7 days ago
    keep, gone = pol.merge_pair(7.0)
    assert {keep, gone} <= set(rows)
    pol._absorb(keep, gone, 7.0)
    assert (
        pol.store.status_of(gone) == "merged"
        and pol.store.provenance[gone] <= pol.store.provenance[keep]
    )
    assert pol.store["alpha"][keep] == 7.0
    out = pol._gates(rows, 14.0)
    assert sum(o.action == "merge" for o in out) == 1


def test_merge_needs_confidence_above_06_and_same_scope():
    pol = make()
    a = plant(pol, 0, key="m0.x", alpha=3, beta=2, vec=unit(1.0))  # confidence 0.6 exactly
    plant(pol, 1, key="m1.x", alpha=4, beta=1, vec=unit(0.999))
    assert pol.merge_pair(10.0) is None
    pol.store["alpha"][a] = 3.01
    assert pol.merge_pair(10.0) is not None
    pol.fields[a] = ("someone-else",) + pol.fields[a][1:]
    assert pol.merge_pair(10.0) is None


# -- §Belief Lifecycle 7: retrieval strength and stability -----------------------------------------
def test_retrieval_strength_and_stability_update():
    pol = make(initial_stability=10.0)
    b = plant(pol)
    assert pol.strength(5.0)[b] == pytest.approx(math.exp(-0.5))
    pol.recall([Query("q", 2.0, "topic fact", keys=("topic.fact",), k=1)], 2.0)
    s1 = 10.0 * (1 + 0.1 * math.log(1 + 48 / 24))
    assert pol.store["stability"][b] == pytest.approx(s1)
    assert pol.strength(2.0)[b] == 1.0 and pol.strength(3.0)[b] == pytest.approx(math.exp(-1 / s1))
    pol.store["stability"][b] = 364.0
    pol.recall([Query("q2", 400.0, "topic fact", keys=("topic.fact",), k=1)], 400.0)
    assert pol.store["stability"][b] == 365.0


def test_storage_strength_never_decreases_through_cycles():
    pol = make()
    pol.ingest([ep(i, 0, "owner.city", "Paris") for i in range(5)] + singletons(15), 0.0)
    pol.consolidate(1.0)
    b = beliefs(pol)[0]
    ev = pol.store["evidence"][b]
    pol.ingest(
        [ep(50 + i, 1.5, "owner.city", "Rome") for i in range(4)] + singletons(16, 500, 1.5), 1.5
    )
    pol.consolidate(2.0)
    assert pol.store["evidence"][b] >= ev


# -- recall ----------------------------------------------------------------------------------------
def test_recall_at_most_2_beliefs_and_k_rows_confidence_filter():
    pol = make()
    rows = [plant(pol, i, key="topic.fact", value=f"v{i}") for i in range(4)]
    pol.ingest([ep(10 + i, 0.0, "topic.fact", "v0") for i in range(5)], 0.0)
    low = plant(pol, 9, key="topic.fact", value="v0", alpha=0.39, beta=0.61)
    r = pol.recall([Query("q", 1.0, "topic fact", keys=("topic.fact",), k=6)], 1.0)[0]
    assert len(r.ids) == 6
    kinds = pol.store["kind"][r.ids]
    assert (kinds == pol.store.kind_code("belief")).sum() <= 2
    assert low not in r.ids.tolist()
    assert list(r.scores) == sorted(r.scores, reverse=True)
    assert set(r.ids.tolist()) & set(rows)


def test_recall_score_matches_scalar_formula():
    pol = make()
    b = plant(pol, alpha=3, beta=1)
    q = Query("q", 4.0, "topic fact", keys=("topic.fact",), k=1)
    bs, _ = pol.score_query(q, 4.0)
    cos = float(pol.store.embedding[b].astype(np.float64) @ pol.llm.embed_query(q))
    r = math.exp(-4.0 / 7.0)
    assert bs[b] == pytest.approx(
        0.5 * (0.75 * cos) + 0.3 * r + 0.2 * 0.0
    )  # one belief: BM25 idf <= 0


def test_bm25_normalized_per_query():
    pol = make()
    for i, k in enumerate(["owner.city", "owner.job", "pet.name"]):
        plant(pol, i, key=k, value=f"val{i}")
    rows = np.array(beliefs(pol))
    sc = pol._bm25_scores(rows, ["city"])
    assert sc.max() == 1.0 and sc.min() >= 0.0 and sc[0] == 1.0


# -- batching, forgetting, planting ----------------------------------------------------------------
def _state(pol: Engram):
    s = pol.store
    return (
        s.n,
        [s.status_of(i) for i in range(s.n)],
        [sorted(p) for p in s.provenance],
        {c: s[c].tolist() for c in ("alpha", "beta", "evidence", "stability")},
        s.embedding.tobytes(),
    )


def test_batched_ingest_equals_one_by_one():
    eps = [ep(i, 0.0, f"t{i % 4}.fact", f"v{i % 3}") for i in range(24)]
    a, b = make(), make()
    out_a = a.ingest(eps, 0.0)
    out_b = [o for e in eps for o in b.ingest([e], 0.0)]
    assert out_a == out_b
    assert a.consolidate(1.0) == b.consolidate(1.0)
    assert _state(a) == _state(b)


def test_forget_deletes_episode_and_beliefs_built_on_it():
    pol = make()
    pol.ingest([ep(i, 0, "owner.city", "Paris") for i in range(3)] + singletons(17), 0.0)
    pol.consolidate(1.0)
    b = beliefs(pol)[0]
    out = pol.forget([Forget("f", 2.0, "e1")], 2.0)
    assert pol.store.status_of(b) == "deleted"
    assert {o.memory for o in out if o.action == "forget"} == {b, pol.episode_row_of["e1"][0]}
    keep = make(forget_deletes_beliefs=False)
    keep.ingest([ep(i, 0, "owner.city", "Paris") for i in range(3)] + singletons(17), 0.0)
    keep.consolidate(1.0)
    keep.forget([Forget("f", 2.0, "e1")], 2.0)
    assert keep.store.status_of(beliefs(keep)[0]) == "active"


def test_plant_reads_attrs_and_validates():
    pol = make()
    b = plant(pol, alpha=3, beta=1, stability=20)
    assert pol.confidence([b])[0] == 0.75 and pol.store["stability"][b] == 20.0
    c = plant(pol, 1, belief_confidence=0.8)
    assert pol.confidence([c])[0] == pytest.approx(0.8)
    with pytest.raises(MemsimError, match="stability"):
        plant(pol, 2, stability=-1)
    with pytest.raises(MemsimError, match="alpha"):
        plant(pol, 3, alpha="lots")


def test_pure_formulas():
    assert retrieval_strength(np.array([0.0, 10.0]), np.array([10.0, 10.0])).tolist() == [
        1.0,
        math.exp(-1),
    ]
    assert updated_stability(np.array([10.0]), np.array([24.0]), 0.1, 365.0)[0] == pytest.approx(
        10 * (1 + 0.1 * math.log(2))
    )
    assert belief_score(
        np.array([0.5]), np.array([0.8]), np.array([1.0]), np.array([0.5]), 0.5, 0.3, 0.2
    )[0] == pytest.approx(0.2 + 0.3 + 0.1)


def test_merge_similarity_is_strictly_above_threshold():
    """001 §Belief Lifecycle 6: cosine > 0.92, measured on the stored vectors."""
    probe = make()
    a = plant(probe, 0, key="m0.x", alpha=4, beta=1, vec=unit(1.0))
    b = plant(probe, 1, key="m1.x", alpha=4, beta=1, vec=unit(0.95))
    sim = float(
        probe.store.embedding[a].astype(np.float64) @ probe.store.embedding[b].astype(np.float64)
    )
    for threshold, merges in ((sim, False), (np.nextafter(sim, 0.0), True)):
        pol = make(merge_min_similarity=float(threshold))
        plant(pol, 0, key="m0.x", alpha=4, beta=1, vec=unit(1.0))
        plant(pol, 1, key="m1.x", alpha=4, beta=1, vec=unit(0.95))
        assert (pol.merge_pair(10.0) is not None) is merges


def test_recall_confidence_filter_is_inclusive_at_04():
    """001 §Configuration MIN_CONFIDENCE_FOR_RECALL: confidence >= 0.4 is surfaced."""
    pol = make()
    at = plant(pol, 0, alpha=0.4, beta=0.6)
    below = plant(pol, 1, alpha=0.39, beta=0.61)
    ids = pol.recall([Query("q", 1.0, "topic fact", keys=("topic.fact",), k=5)], 1.0)[
        0
    ].ids.tolist()
    assert at in ids and below not in ids


# -- §How It Works 5: gates run on the affected beliefs -----------------------------------------
def test_merge_runs_on_affected_beliefs_and_archival_on_every_unreinforced_one():
    """001 §How It Works 5: "the pipeline runs rule-based gates for revision, split, merge,
    and archival on affected beliefs"; §How It Works 6: "Beliefs not reinforced in this
    cycle are evaluated for archival". Under the documented scope ("unreinforced") a cycle
    that touched no belief merges nothing but archives the weak belief; "affected" archives
    only affected beliefs; "all" (the code's checkAndMerge and archiveDecayed) scans every
    active belief for both."""
    for scope, merges, archived in (("affected", 0, 0), ("unreinforced", 0, 1), ("all", 1, 1)):
        pol = make(gate_scope=scope)
        for i in range(2):
            plant(pol, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i))
        weak = plant(pol, 5, key="w.x", alpha=1, beta=9, vec=unit(0.0, axis=3, other=4))
        out = pol._gates([], 14.0)
        assert sum(o.action == "merge" for o in out) == merges
        assert sum(o.action == "archive" for o in out) == archived
    assert registry_default("gate_scope") == "unreinforced"
    pol = make()
    weak = plant(pol, 5, key="w.x", alpha=1, beta=9)
    assert [o.memory for o in pol._gates([weak], 14.0) if o.action == "archive"] == [weak]


def test_merge_pair_needs_an_affected_belief():
    pol = make()
    a, b, c = (
        plant(pol, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i)) for i in range(3)
    )
    assert pol.merge_pair(10.0, among=[]) is None
    assert set(pol.merge_pair(10.0)) == {b, c}  # the most similar pair
    assert set(pol.merge_pair(10.0, among=[a])) == {a, b}  # the best pair holding a


# -- project scoping ------------------------------------------------------------------------------
def test_project_scopes_merge_recall_and_clustering():
    """001 §Belief Lifecycle 6 ("same scope and project"), §Testing ("project-scoped beliefs
    only surface when querying within their project, and global beliefs surface
    everywhere"), and §Testing "accumulate 20+ episodes in a project": episodes of different
    projects do not cluster together."""
    pol = make(gate_scope="all")
    a = plant(pol, 0, key="m0.x", alpha=4, beta=1, vec=unit(1.0))
    b = plant(pol, 1, key="m1.x", alpha=4, beta=1, vec=unit(0.999))
    pol.episode_project.update({"e0": "alpha", "e1": "beta"})
    assert pol.project_of(a) == "alpha" and pol.merge_pair(10.0) is None
    pol.episode_project["e1"] = "alpha"
    assert pol.merge_pair(10.0) is not None
    pol.episode_project.update({"e0": "alpha", "e1": ""})
    q = Query("q", 10.0, "m x", keys=("m0.x",), k=5)
    b_score, _ = pol.score_query(q, 10.0)
    assert np.isneginf(b_score[a]) and np.isfinite(b_score[b])  # global b surfaces everywhere
    b_score, _ = pol.score_query(Query("q2", 10.0, "m x", keys=("m0.x",), project="alpha"), 10.0)
    assert np.isfinite(b_score[a]) and np.isfinite(b_score[b])
    pol = make()
    eps = [
        Episode(f"p{i}", 0.0, "t", (Claim("topic.fact", "v"),), project="xy"[i % 2])
        for i in range(6)
    ]
    pol.ingest(eps, 0.0)
    clusters = pol.cluster(pol.arrivals)
    assert sorted(len(c) for c in clusters) == [3, 3]
    assert all(len({pol.project_of(r) for r in c}) == 1 for c in clusters)


@pytest.mark.parametrize("pid", ["engram", "engram-code"])
def test_recall_ranks_as_the_full_score_vectors(pid):
    """recall scores the eligible beliefs only and the episode bites through their bound
    (R <= 1): the rows and scores it ranks are rank() of score_query's full vectors, bit for
    bit, on a store with ties (every memory of one fact has the same cosine), accessed rows
    and never-accessed ones."""
    import scenarios
    from memsim.engine import registry
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run

    stream = scenarios.load("synthetic:steady,episodes=1500,queries=150,horizon=60")
    pol = registry.make(pid, llm=MockLLM(seed=0), seed=0)
    run(pol, stream)
    now = 61.0
    queries = [e for e in stream.events if isinstance(e, Query)][-40:]
    for q in queries:
        b_score, e_score = pol.score_query(q, now)
        kb = min(pol.params.max_belief_bites, q.k)
        want_b, want_e = pol.rank(b_score, kb, q.id), pol.rank(e_score, q.k, q.id)
        cos = pol._query_cosines(q)
        b_rows = pol._belief_rows(q)
        b_all = pol._belief_scores(q, b_rows, cos, now)
        at = pol.rank_among(b_rows, b_all, kb, q.id)
        got_e, got_e_scores = pol._top_episodes(q, cos, now)
        assert b_rows[at].tolist() == want_b.tolist()
        assert b_all[at].tobytes() == b_score[want_b].tobytes()
        assert got_e.tolist() == want_e.tolist() and len(want_e) == q.k
        assert got_e_scores.tobytes() == e_score[want_e].tobytes()


@pytest.mark.parametrize("pid", ["engram", "engram-code"])
def test_strength_caps_keep_recall_exact_as_time_passes_and_rows_are_recalled(pid):
    """The episode bites' bound holds each row's R at its cap (ranking.DecayCaps,
    kept between queries, refreshed after a day, back at the top for a recalled row). At
    times within a refresh and past it, with recalls (which raise S and reset R) and new
    episodes between them, _top_episodes is rank() of score_query's full vector, bit for
    bit."""
    import scenarios
    from memsim.engine import registry
    from memsim.engine.events import Episode
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run

    stream = scenarios.load("synthetic:steady,episodes=1500,queries=150,horizon=60")
    pol = registry.make(pid, llm=MockLLM(seed=0), seed=0)
    run(pol, stream)
    queries = [e for e in stream.events if isinstance(e, Query)][-30:]
    late = [e for e in stream.events if isinstance(e, Episode)][-20:]
    checked = 0
    for step, now in enumerate((60.2, 60.5, 61.1, 61.15, 63.0, 63.9, 70.0)):
        asked = queries[step::7]
        pol.recall(asked[:2], now)  # recalled rows: S raised, R back at 1
        if step == 3:  # rows added within a refresh's day: capped at the top
            pol.ingest([Episode(f"{e.id}-again", now, e.text, e.claims) for e in late], now)
        for q in asked:  # the recalled queries too: their rows now at the top of R
            _, e_score = pol.score_query(q, now)
            want = pol.rank(e_score, q.k, q.id)
            got, got_scores = pol._top_episodes(q, pol._query_cosines(q), now)
            assert got.tolist() == want.tolist() and len(want) == q.k
            assert got_scores.tobytes() == e_score[want].tobytes()
            checked += 1
    assert checked >= 25


def test_kept_episode_masks_and_belief_gates_follow_the_store():
    """The episode masks recall keeps between queries (brought up to date from the
    status log) are the store's own at every observed time of a run with merges, archives
    and, at each observed time, a query and a user's forget; the archive's rows are
    archive_mask's and the old scan's over every row."""
    import scenarios
    from memsim.engine import registry
    from memsim.engine.events import Forget
    from memsim.engine.mockllm import MockLLM
    from memsim.engine.runner import run

    stream = scenarios.load("synthetic:churn,episodes=1200,queries=120,horizon=90")
    asked = [e for e in stream.events if isinstance(e, Query)]
    pol = registry.make("engram", llm=MockLLM(seed=0), seed=0)
    seen = []

    def check(p, t):
        s = p.store
        ok, not_ok = p._episode_masks()
        want = s.mask(["active"]) & (s["kind"] != s.kind_code("belief"))
        assert ok.tolist() == want.tolist() and not_ok.tolist() == (~want).tolist()
        assert not ok.flags.writeable and not not_ok.flags.writeable
        active_beliefs = s.mask(["active"], kinds=["belief"])
        conf = p.confidence()
        stale = ((t - s["last_reinforced"]) >= p.params.archive_stale_days) & (
            s["evidence"] < p.params.archive_min_evidence
        )
        scan = np.flatnonzero(active_beliefs & ((conf < p.params.archive_confidence) | stale))
        assert p.archive_rows(t).tolist() == scan.tolist()
        assert np.flatnonzero(p.archive_mask(t)).tolist() == scan.tolist()
        seen.append(len(s.status_log))
        p.recall(asked[len(seen) % len(asked) :][:1], t)  # the masks kept at this state
        # a user forgets an episode seen so far: its rows leave the masks by the next time
        p.forget([Forget(f"f{len(seen)}", t, p.arrival_episodes[7 * len(seen)])], t)

    run(pol, stream, observe=np.arange(5.0, 90.0, 5.0), observer=check)
    assert len(seen) == 17 and seen[-1] > seen[0]
    statuses = {pol.store.status_of(r) for r in range(pol.store.n)}
    assert {"active", "archived"} <= statuses or {"active", "merged"} <= statuses


# -- §Belief Lifecycle 6: the merge cooldown's reading --------------------------------------------
def test_merge_cooldown_counts_from_the_last_revision_by_default():
    """001 §Belief Lifecycle 6: merge needs "neither revised in the last 7 days": a belief
    never revised passes whatever its last update, so a pair updated in this very cycle can
    merge (the rule can act on affected beliefs). A belief made by a revision waits 7 days
    from it. merge_cooldown_from="update" keeps the §Configuration reading ("days since
    last update"), under which an affected belief, updated this cycle, never merges."""
    assert registry_default("merge_cooldown_from") == "revision"
    pol = make()
    a, b = (
        plant(pol, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i)) for i in range(2)
    )
    pol.store["updated"][[a, b]] = 14.0  # both touched in this cycle
    assert set(pol.merge_pair(14.0, among=[a])) == {a, b}
    pol.store["revised_at"][b] = 8.0  # b was made by a revision 6 days ago
    assert pol.merge_pair(14.0, among=[a]) is None
    assert set(pol.merge_pair(15.0, among=[a])) == {a, b}  # 7 days after it
    by_update = make(merge_cooldown_from="update")
    c, d = (
        plant(by_update, i, key=f"m{i}.x", alpha=4, beta=1, vec=unit(1.0 - 0.001 * i))
        for i in range(2)
    )
    by_update.store["updated"][[c, d]] = 14.0
    assert by_update.merge_pair(14.0, among=[c]) is None


def test_a_revision_starts_the_merge_cooldown_of_its_child():
    pol = make()
    b = plant(pol, alpha=1, beta=4)
    pol.evidence_rows[b] = {}
    out = pol._revise(b, 30.0)
    child = next(o.memory for o in out if o.action == "synthesize")
    assert pol.store["revised_at"][child] == 30.0 and pol.store["revised_at"][b] == -np.inf
