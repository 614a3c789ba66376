"""memsim robustness: the verdict classifier and one tiny end-to-end run."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.workbench.studies.robustness import (
    FRAGILE,
    NEVER,
    ROBUST,
    Effect,
    conclusions_table,
    default_grid,
    verdict,
)

modes = st.lists(st.text("abcdefgh", min_size=1, max_size=6), min_size=2, max_size=8, unique=True)
sizes = st.floats(0.001, 1.0, allow_nan=False)


@given(modes, st.data(), st.sampled_from([1, -1]))
@settings(max_examples=80, deadline=None)
def test_a_conclusion_holding_everywhere_is_robust(names, data, sign):
    effects = {m: Effect(sign * data.draw(sizes), True) for m in names}
    v, s, broken = verdict(effects)
    assert (v, s, broken) == (ROBUST, sign, [])


@given(modes, st.data())
@settings(max_examples=80, deadline=None)
def test_a_conclusion_built_to_flip_is_fragile_and_names_the_flipping_modes(names, data):
    flip = data.draw(st.sets(st.sampled_from(names), min_size=1, max_size=len(names) - 1))
    effects = {m: Effect((-1 if m in flip else 1) * data.draw(sizes), True) for m in names}
    v, s, broken = verdict(effects)
    assert v == FRAGILE
    # the minority sign is what breaks it (a tie goes to "A better")
    losers = flip if len(flip) * 2 <= len(names) else set(names) - flip
    assert set(broken) == losers


@given(modes, st.data(), st.sampled_from([1, -1]), st.booleans())
@settings(max_examples=80, deadline=None)
def test_the_default_mode_orients_the_conclusion_even_as_a_minority(names, data, sign, sig):
    """The conclusion is the one the standard comparison (the default mode) draws: every
    other mode significant with the other sign flips it, whether or not the default
    effect is itself significant (a sentence never contradicts the default numbers)."""
    others = [m for m in names if m != "default"]
    effects = {"default": Effect(sign * data.draw(sizes), sig)}
    effects |= {m: Effect(-sign * data.draw(sizes), True) for m in others}
    v, s, broken = verdict(effects)
    assert (v, s) == (FRAGILE, sign)
    assert set(broken) == set(others) | ({"default"} if not sig else set())


def test_a_default_effect_against_the_majority_is_stated_as_the_default_has_it():
    """Regression: "cosmo has higher recall@10 than recency on
    churn" was printed with a default effect of -0.033 because 4 query_value modes outvoted
    2 others; the row must read the default's way and list the 4 as flipping it."""
    diffs = {"default": -0.05, "x": -0.1, "y": -0.1, "q1": 0.2, "q2": 0.2, "q3": 0.2, "q4": 0.2}
    t = conclusions_table(_frames(diffs), (("recall", None),))
    row = t.iloc[0]
    assert row["conclusion"] == "b has higher recall@10 than a on churn"
    assert row["default_effect"] > 0 and row["mode:x"] > 0 and row["mode:q1"] < 0
    assert row["verdict"] == FRAGILE and row["flipped_by"] == "q1, q2, q3, q4"


@given(modes, st.data())
@settings(max_examples=40, deadline=None)
def test_insignificant_somewhere_is_fragile_and_nowhere_is_never(names, data):
    weak = data.draw(st.sampled_from(names))
    effects = {m: Effect(data.draw(sizes), m != weak) for m in names}
    assert verdict(effects)[0] == FRAGILE and verdict(effects)[2] == [weak]
    none = {m: Effect(data.draw(sizes), False) for m in names}
    assert verdict(none)[0] == NEVER


def test_default_grid_is_one_factor_at_a_time_plus_a_core():
    grid = default_grid()
    labels = [label for label, _ in grid]
    assert labels[0] == "default" and grid[0][1] == {}
    assert len(set(labels)) == len(labels)
    assert all(len(o) == 1 for label, o in grid[1:] if "+" not in label)
    assert any(len(o) == 2 for _, o in grid)


def _frames(diff_by_mode):
    """Two policies on one scenario, 40 queries: A's recall minus B's is diff_by_mode[m]."""
    out = {}
    rng = np.random.default_rng(0)
    for m, d in diff_by_mode.items():
        base = rng.uniform(0.2, 0.6, size=40)
        pq = pd.DataFrame(
            {
                "policy": ["a"] * 40 + ["b"] * 40,
                "scenario": "synthetic:churn",
                "query_id": [f"q{i}" for i in range(40)] * 2,
                "recall": np.concatenate([base + d, base]),
            }
        )
        runs = pd.DataFrame({"policy": ["a", "b"], "scenario": "synthetic:churn"})
        out[m] = (pq, runs)
    return out


def test_conclusions_table_reads_paired_query_effects():
    t = conclusions_table(_frames({"default": 0.2, "x": 0.1}), (("recall", None),))
    assert t["verdict"].tolist() == [ROBUST]
    assert t["conclusion"].iloc[0] == "a has higher recall@10 than b on churn"
    t = conclusions_table(_frames({"default": 0.2, "x": -0.1, "y": 0.3}), (("recall", None),))
    assert t["verdict"].tolist() == [FRAGILE] and t["broken_by"].iloc[0] == "x"


def test_queries_pair_within_a_seed_when_seeds_are_pooled():
    """Query ids repeat across seeds: the paired difference must match (seed, query)."""
    rows = []
    for seed, d in ((0, 0.3), (1, 0.3)):
        for i in range(30):
            base = 0.1 + 0.02 * i
            rows += [
                {"policy": "a", "seed": seed, "query_id": f"q{i}", "recall": base + d},
                {"policy": "b", "seed": seed, "query_id": f"q{i}", "recall": base},
            ]
    pq = pd.DataFrame(rows).assign(scenario="synthetic:churn")
    runs = pd.DataFrame({"policy": ["a", "b"] * 2, "scenario": "synthetic:churn"})
    t = conclusions_table({"default": (pq, runs)}, (("recall", None),))
    assert t["verdict"].tolist() == [ROBUST]
    assert abs(t["default_effect"].iloc[0] - 0.3) < 1e-12


def test_run_metrics_use_their_margins():
    """Noise retention: an absolute margin of 0.05; footprint: 5% of the larger one."""
    from memsim.workbench.studies.robustness import _run_effect

    runs = pd.DataFrame(
        {
            "policy": ["a", "b", "a", "b"],
            "seed": [0, 0, 1, 1],
            "noise_retention": [0.20, 0.30, 0.20, 0.22],  # means 0.20 vs 0.26
            "footprint_mean": [960.0, 1000.0, 960.0, 1000.0],  # 4% smaller
        }
    )
    e = _run_effect(runs, "a", "b", "noise_retention")
    assert e.significant and abs(e.diff - 0.06) < 1e-12
    e = _run_effect(runs, "a", "b", "footprint_mean")
    assert not e.significant and e.diff == 40.0
    runs.loc[runs["policy"] == "a", "footprint_mean"] = 900.0
    assert _run_effect(runs, "a", "b", "footprint_mean").significant


def test_end_to_end_on_a_tiny_stream(tmp_path):
    """Two baselines, two seeds, two modes: every conclusion gets a verdict, the report and
    figure are written."""
    from memsim.workbench.present.robustness import plot, write_report
    from memsim.workbench.studies.robustness import robustness

    scen = "synthetic:churn,episodes=200,queries=30,facts=20,horizon=30"
    grid = [("default", {}), ("query_value=0.5", {"modes.query_value": 0.5})]
    t = robustness(["keep-all", "recency"], [scen], grid, seeds=[0, 1])
    assert set(t["verdict"]) <= {ROBUST, FRAGILE, NEVER} and len(t) == 4
    assert t.attrs["seeds"] == [0, 1]
    rec = t[t["metric"] == "recall"].iloc[0]
    assert np.isfinite(rec["mode:default"]) and np.isfinite(rec["mode:query_value=0.5"])
    write_report(t, tmp_path / "r.md", tmp_path / "r.png", command="memsim robustness ...")
    plot(t, tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0
    text = (tmp_path / "r.md").read_text()
    assert "seeds: [0, 1]" in text and "| all |" in text
    # the report names the code it came from (memsim.workbench.studies.provenance)
    from memsim.workbench.runs.results import code_fingerprint
    from memsim.workbench.studies.provenance import read_provenance

    assert (read_provenance(text) or ("", ""))[1] == code_fingerprint()


def test_through_a_candidate_index_the_report_gives_its_audit(tmp_path):
    """--index reaches the policies whose searches go through it (Personal AI's
    ingest here), in every mode, and the report says which and what its audit found."""
    from memsim.workbench.present.robustness import index_sentence, write_report
    from memsim.workbench.studies.robustness import robustness

    scen = "synthetic:churn,episodes=300,queries=30,facts=20,horizon=30"
    grid = [("default", {}), ("query_value=0.5", {"modes.query_value": 0.5})]
    index = {"mode": "ivf", "min_rows": 50, "audit_every": 1}
    t = robustness(["pai", "recency"], [scen], grid, index=index)
    audit = t.attrs["index_audit"]
    assert audit["policies"] == ["pai-v3"] and audit["runs"] == 2  # one per mode
    decisions = audit["index_decision_differ_share"]
    assert decisions["audited_runs"] == 2 and 0.0 <= decisions["max"] <= 1.0
    sentence = index_sentence(t)
    assert sentence.startswith("Candidate index `--index mode=ivf --index min_rows=50")
    assert "for pai-v3 in every mode (2 runs)" in sentence
    write_report(t, tmp_path / "r.md")
    assert sentence in (tmp_path / "r.md").read_text()
    plain = robustness(["pai", "recency"], [scen], grid[:1])
    assert index_sentence(plain) == "" and plain.attrs["index_audit"]["runs"] == 0


def test_index_audit_takes_the_largest_share_and_counts_runs_over_the_bound():
    from types import SimpleNamespace

    from memsim.engine.candidate_index import AUDIT_BOUND
    from memsim.workbench.studies.robustness import index_audit

    def run(policy, queries, decisions):
        return SimpleNamespace(
            definition=SimpleNamespace(policy=policy),
            summary={
                "index_query_differ_share": queries,
                "index_decision_differ_share": decisions,
            },
        )

    audit = index_audit([run("b", 0.0, np.nan), run("a", 0.25, np.nan), run("b", 0.005, np.nan)])
    assert audit["policies"] == ["a", "b"] and audit["runs"] == 3
    assert audit["bound"] == AUDIT_BOUND
    assert audit["index_query_differ_share"] == {"max": 0.25, "over_bound": 1, "audited_runs": 3}
    nothing = audit["index_decision_differ_share"]  # NaN everywhere: nothing audited
    assert np.isnan(nothing["max"]) and nothing["audited_runs"] == nothing["over_bound"] == 0
