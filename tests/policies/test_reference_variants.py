"""The reference models' second variants as their own ids: actr-spacing
(Pavlik & Anderson 2005), memorybank-code and generative-agents-code (the released code).
Each is its model with one default changed; memorybank-code's random forgetting is seeded
and keyed by memory identity; generative-agents-code breaks recency-rank ties by creation
time, then the seeded tie order; ``memsim drift --kind reference`` pairs them."""

from __future__ import annotations

import dataclasses

import pytest

from memsim.engine import registry, runner
from memsim.engine.events import Claim, Episode, Query
from memsim.engine.mockllm import MockLLM
from memsim.engine.registry import make
from policies.reference_claims import OneVectorLLM
from scenarios import load

VARIANTS = {
    "actr": ("actr-spacing", "spacing"),
    "memorybank": ("memorybank-code", "code"),
    "generative-agents": ("generative-agents-code", "code"),
}
SMALL = "synthetic:churn,episodes=120,queries=40,facts=15,horizon=90"


@pytest.mark.parametrize("base", sorted(VARIANTS))
def test_each_variant_is_its_model_with_only_the_variant_default_changed(base):
    variant, value = VARIANTS[base]
    sp = registry.spec(variant)
    assert sp.variant_of == base and not sp.seed_document and not sp.baseline
    b = {f.name: f.default for f in dataclasses.fields(registry.spec(base).load().Params)}
    v = {f.name: f.default for f in dataclasses.fields(sp.load().Params)}
    assert v.pop("variant") == value and b.pop("variant") != value
    assert v == b


@pytest.mark.parametrize("base", sorted(VARIANTS))
def test_the_registered_variant_runs_as_the_model_with_that_variant(base):
    """Same trace as the base policy given ``variant=...``: the id adds no behaviour."""
    variant, value = VARIANTS[base]
    stream = load(SMALL, seed=0)
    a = runner.run(make(variant, llm=MockLLM(seed=0), seed=0), stream)
    b = runner.run(make(base, {"variant": value}, llm=MockLLM(seed=0), seed=0), stream)
    assert a.status_log == b.status_log
    assert [q.content() for q in a.queries] == [q.content() for q in b.queries]


# ---------------------------------------------------------------- memorybank-code


def _trace(policy_id: str, seed: int):
    return runner.run(make(policy_id, llm=MockLLM(seed=0), seed=seed), load(SMALL, seed=0))


def test_memorybank_code_forgetting_is_seeded():
    """Same seed, same survivors (and the same rankings); another seed, other survivors."""
    a, b, c = (
        _trace("memorybank-code", 0),
        _trace("memorybank-code", 0),
        _trace("memorybank-code", 1),
    )
    assert a.status_log == b.status_log
    assert [q.content() for q in a.queries] == [q.content() for q in b.queries]
    assert a.status_log != c.status_log


def test_memorybank_code_draws_follow_the_memory_not_its_row():
    """Two memories created at the same time: swapping their insertion order swaps their
    rows and their draws with them (the draw is keyed by memory identity)."""

    def draws(order):
        pol = make("memorybank-code", llm=MockLLM(seed=0), seed=3)
        eps = [
            Episode(f"e{i}", 0.0, f"fact {i}", claims=(Claim(f"k.{i}", f"v{i}"),)) for i in order
        ]
        pol.ingest(eps, 0.0)
        rows = {min(pol.store.provenance[r]): r for r in range(pol.store.n)}
        return {ep: float(pol._draws(1.0)[r]) for ep, r in rows.items()}

    assert draws([0, 1]) == draws([1, 0])
    d = draws([0, 1])
    assert all(0.0 <= x < 1.0 for x in d.values()) and d["e0"] != d["e1"]


def test_memorybank_code_idle_until_is_the_first_pass_that_drops_a_memory():
    pol = make("memorybank-code", llm=OneVectorLLM(), seed=0)
    pol.ingest([Episode("e0", 0.0, "x", claims=(Claim("a.b", "1"),))], 0.0)
    u = pol.idle_until(0.0, 100.0)
    assert u == int(u) and 1.0 <= u < 100.0  # a daily pass
    assert all(not len(pol._doomed(float(t))) for t in range(1, int(u)))
    assert len(pol._doomed(u))


# ---------------------------------------------------------------- generative-agents-code


class SameVectorsLLM(OneVectorLLM):
    """Every claim embeds to the same vector: relevance and importance tie, so the ranking
    is recency's alone."""


def _ga_ranking(
    order: list[int], times: list[float], accessed: float | None = None, **params: object
) -> list[str]:
    pol = make("generative-agents-code", dict(params) or None, llm=SameVectorsLLM(), seed=5)
    for i in order:
        ep = Episode(f"e{i}", times[i], "x", claims=(Claim(f"k.{i}", "v", importance=0.5),))
        pol.ingest([ep], times[i])
    if accessed is not None:  # every memory last accessed at the same instant
        pol.store["last_access"][:] = accessed
    r = pol.recall([Query("q", 10.0, "k?", keys=("k.0",), k=len(order))], 10.0)[0]
    return [min(pol.store.provenance[int(x)]) for x in r.ids]


def test_generative_agents_code_ranks_the_least_recently_accessed_first_as_released():
    """retrieve.py's new_retrieve sorts the nodes by last access ascending and
    extract_recency gives 0.99^1 to the first: the oldest access gets the most recency
    (never accessed: last access is creation). newest_first is the paper's direction."""
    assert _ga_ranking([0, 1, 2], [1.0, 2.0, 3.0]) == ["e0", "e1", "e2"]
    assert _ga_ranking([0, 1, 2], [1.0, 2.0, 3.0], code_rank_order="newest_first") == [
        "e2",
        "e1",
        "e0",
    ]


@pytest.mark.parametrize("order", ["oldest_first", "newest_first"])
def test_generative_agents_code_puts_the_newer_memory_first_on_equal_access(order):
    """A stable sort of the stream, kept newest node first: on equal last access the newer
    memory keeps the lower rank, in either direction."""
    got = _ga_ranking([0, 1, 2], [1.0, 2.0, 3.0], accessed=5.0, code_rank_order=order)
    assert got == ["e2", "e1", "e0"]


def test_generative_agents_code_same_time_memories_go_in_the_seeded_order_not_row_order():
    times = [1.0, 1.0, 1.0, 1.0]
    a = _ga_ranking([0, 1, 2, 3], times)
    assert _ga_ranking([3, 2, 1, 0], times) == a == _ga_ranking([2, 0, 3, 1], times)


# ---------------------------------------------------------------- memsim drift --kind reference


def test_drift_reference_pairs_each_reference_model_with_its_variant():
    from memsim.workbench.studies.drift import reference_ids, variant_pairs

    got = [(a.id, b.id) for a, b in variant_pairs("reference")]
    assert got == sorted((k, v[0]) for k, v in VARIANTS.items())
    assert {a.id for a, _ in variant_pairs("code")} == {"pai", "izzie", "kernle", "engram", "cosmo"}
    assert len(variant_pairs("all")) == len(got) + 5
    ids = reference_ids()
    assert {"fsrs", "ebisu", "keep-all", "recency", "actr-spacing"} <= set(ids)
    assert not {"pai", "clairvoyant"} & set(ids)
    with pytest.raises(ValueError, match="kind 'x'"):
        variant_pairs("x")


def test_drift_pairs_run_level_metrics_per_seed():
    import pandas as pd

    from memsim.workbench.studies.drift import paired_rows

    q = pd.DataFrame(
        {"policy": ["a", "b"], "scenario": "s", "seed": 0, "query_id": "q", "recall": 1.0}
    ).assign(stale=0.0, footprint=1.0)
    runs = pd.DataFrame(
        {
            "policy": ["a", "b"] * 3,
            "scenario": "s",
            "seed": [0, 0, 1, 1, 2, 2],
            "footprint_mean": [10.0, 4.0, 12.0, 5.0, 11.0, 6.0],
            "noise_retention": [1.0, 0.5, 1.0, 0.25, 1.0, 0.0],
        }
    )
    rows = paired_rows(q, "a", "b", runs).set_index("metric")
    assert rows.loc["mean footprint", "diff"] == pytest.approx(-6.0)
    assert rows.loc["noise kept", "diff"] == pytest.approx(-0.75)
    assert rows.loc["noise kept", "n"] == 3 and rows.loc["recall@10", "n"] == 1


def test_drift_kind_all_refuses_one_out_path(tmp_path, capsys):
    from memsim.workbench.cli.main import main

    assert main(["drift", "--kind", "all", "--out", str(tmp_path / "x.md")]) == 2
    assert "--out" in capsys.readouterr().err


def test_drift_kind_reference_writes_the_report(tmp_path):
    from memsim.workbench.cli.main import main

    out = tmp_path / "references.md"
    spec = "scripted/conversation-consolidation"
    args = ["--kind", "reference", "--scenarios", spec, "--seeds", "0:2", "--out", str(out)]
    assert main(["drift", *args, "--cache", str(tmp_path / "runs")]) == 0
    text = out.read_text()
    assert "python -m memsim drift --kind reference" in text
    assert "## Every reference model beside the baselines" in text
    for base, (variant, _) in VARIANTS.items():
        assert f"## {base} vs {variant}" in text and f"**{base} -> {variant}.**" in text
    assert "| noise kept |" in text and "| mean footprint |" in text
    assert "| fsrs |" in text and "| keep-all |" in text
