"""Calibrated comparisons: the matched clairvoyant bound in every table, the
frontier's references, cluster-bootstrap intervals, the superiority test, and the same bytes
serial, parallel and cached."""

import subprocess
import sys
import zlib

import numpy as np
import pandas as pd
import pytest

import memsim
from memsim.workbench import stats
from memsim.workbench.present import calibration
from memsim.workbench.runs import execution
from memsim.workbench.studies import calibrate as C

TINY = "synthetic:churn,episodes=300,queries=20,facts=30,horizon=30"


def test_cluster_bootstrap_resamples_clusters_not_queries():
    # two clusters of 50 identical queries each: 0s and 1s. Over queries the interval of the
    # mean would be narrow around 0.5; over two clusters it spans both cluster means
    v = np.r_[np.zeros(50), np.ones(50)]
    c = np.r_[np.zeros(50), np.ones(50)]
    lo, hi, n = stats.cluster_bootstrap_ci(v, c)
    assert n == 2 and lo == 0.0 and hi == 1.0
    qlo, qhi = stats.bootstrap_ci(v)
    assert qhi - qlo < 0.3
    # one cluster: no interval (nothing independent to resample)
    lo, hi, n = stats.cluster_bootstrap_ci(v, np.zeros(100))
    assert n == 1 and np.isnan(lo) and np.isnan(hi)
    # the pooled mean lies inside; NaN queries are left out
    rng = np.random.default_rng(1)
    v = rng.random(60)
    v[3] = np.nan
    lo, hi, n = stats.cluster_bootstrap_ci(v, np.repeat(np.arange(6), 10))
    assert n == 6 and lo <= np.nanmean(v) <= hi


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    assert stats.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]).tolist() == [1.0, 1.0]
    out = stats.holm([np.nan, 0.02])
    assert np.isnan(out[0]) and out[1] == pytest.approx(0.02)


def _clustered(n_clusters: int) -> pd.DataFrame:
    rows = []
    for c in range(n_clusters):
        for q in range(3):
            rows += [
                {"scenario": f"s{c}", "seed": 0, "query_id": q, "policy": "a", "recall": 0.9},
                {"scenario": f"s{c}", "seed": 0, "query_id": q, "policy": "b", "recall": 0.5},
                # c ties a on even clusters, loses on odd ones
                {
                    "scenario": f"s{c}",
                    "seed": 0,
                    "query_id": q,
                    "policy": "c",
                    "recall": 0.9 if c % 2 == 0 else 0.1,
                },
            ]
    return pd.DataFrame(rows)


def test_superiority_shares_and_holm_corrected_wilcoxon():
    sup = memsim.superiority(_clustered(8))
    cell = sup.set_index(["row", "column"])
    assert cell.loc[("a", "b"), "share"] == 1.0 and cell.loc[("b", "a"), "share"] == 0.0
    assert cell.loc[("a", "c"), "share"] == 0.5 and cell.loc[("c", "a"), "share"] == 0.0
    assert (sup["n"] == 8).all()
    # a beats b on all 8 clusters: exact two-sided Wilcoxon p = 2 / 2^8; Holm over 3 pairs
    assert cell.loc[("a", "b"), "p"] == pytest.approx(2 / 256)
    assert cell.loc[("a", "b"), "p_holm"] <= 3 * 2 / 256 + 1e-12
    assert bool(cell.loc[("a", "b"), "significant"])
    # a lower-is-better metric flips the direction
    flipped = memsim.superiority(_clustered(8).rename(columns={"recall": "stale"}), "stale")
    assert flipped.set_index(["row", "column"]).loc[("b", "a"), "share"] == 1.0
    # with 3 clusters nothing can be significant (smallest two-sided p is 0.25)
    assert not memsim.superiority(_clustered(3))["significant"].any()


def test_budget_grid_is_logarithmic_and_reaches_every_episode():
    assert C.budget_grid(300) == [4, 16, 64, 256, 1024]
    assert C.budget_grid(256) == [4, 16, 64, 256]
    assert C.budget_grid(2) == [4]


def test_family_and_panels():
    assert stats.family("synthetic:churn,episodes=3") == "synthetic"
    assert stats.family("locomo:/a/b.json,sample=conv-1") == "locomo"
    assert stats.family("scripted/name-preference") == "scripted"
    views = calibration.panels(
        ["scripted/x", "synthetic:steady", "locomo:f.json,sample=a", "locomo:f.json,sample=b"]
    )
    assert [v[0] for v in views] == ["synthetic:steady", "LoCoMo (2 conversations pooled)"]


def test_the_bound_holds_for_raw_memory_policies_and_is_nan_for_the_clairvoyant():
    summary, q = memsim.compare(["keep-all", "recency", "clairvoyant"], [TINY], seeds=[0])
    for p in ("keep-all", "recency"):
        g = q[(q.policy == p) & (q.n_units > 0)]
        assert g["bound"].notna().all()
        assert (g["bound"] >= g["recall"] - 1e-12).all()  # raw memories: at or below Belady
    assert q.loc[q.policy == "clairvoyant", "bound"].isna().all()
    gap = summary[(summary.metric == "gap") & (summary.policy == "keep-all")]["mean"].iloc[0]
    rec = summary[(summary.metric == "recall") & (summary.policy == "keep-all")]["mean"].iloc[0]
    bound = summary[(summary.metric == "bound") & (summary.policy == "keep-all")]["mean"].iloc[0]
    assert gap == pytest.approx(bound - rec)
    # the reference rows carry no verdict against the baselines
    assert summary[summary.metric.isin(["bound", "gap"])]["beats_baselines"].isna().all()


def test_a_rerun_with_provenance_is_the_run_and_counts_each_memorys_episodes():
    """scripts/calibration.py explains runs above the bound by the episodes their memories
    cover: the rerun must be the same run, and only a consolidating policy merges."""
    for policy, merges in (("keep-all", False), ("pai", True)):
        d = execution.grid([policy], [TINY], [0])[0]
        queries, episodes = C.rerun_with_provenance(d)
        pd.testing.assert_frame_equal(
            queries, execution.execute(d).queries.drop(columns=["policy", "scenario", "seed"])
        )
        assert len(episodes) and (episodes >= 1).all()
        assert bool((episodes > 1).any()) is merges, policy


def test_a_cached_run_without_its_bound_gains_the_same_one(tmp_path):
    defs = execution.grid(["recency"], [TINY], [0])
    execution.run_grid(defs, root=tmp_path)  # cached without the bound
    assert "bound" not in execution.run_grid(defs, root=tmp_path)[0].queries
    _, later = memsim.compare(["recency"], [TINY], seeds=[0], root=tmp_path)
    _, fresh = memsim.compare(["recency"], [TINY], seeds=[0], root=tmp_path / "fresh")
    pd.testing.assert_frame_equal(later, fresh)


def test_frontier_runs_each_reference_on_the_grid():
    f = memsim.frontier([TINY, "scripted/name-preference"], seeds=[0])
    assert set(f["scenario"]) == {TINY}  # scripted worked examples get no frontier
    assert len(f["reference"].unique()) == 2
    assert sorted(f["budget"].unique()) == [4, 16, 64, 256, 1024]
    for _, g in f.groupby("reference"):
        assert (g["footprint_mean"] <= g["budget"] + 1e-9).all()
    clair = f[f.reference == "clairvoyant"].set_index("budget")["recall"].sort_index()
    # more room never hurts Belady (recency at a larger budget can: more stale distractors)
    assert np.all(np.diff(clair.to_numpy()) >= 0)
    other = f[f.reference != "clairvoyant"].set_index("budget")["recall"]
    assert (clair >= other - 1e-12).all()


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memsim", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
        timeout=600,
    )


def test_compare_tables_are_the_same_bytes_serial_parallel_and_cached(tmp_path):
    common = [
        "compare",
        "--policies",
        "keep-all,kernle",
        "--scenarios",
        TINY,
        "--seeds",
        "0,1",
        "--quiet",
    ]
    outs = []
    for name, extra in (("serial", ["--jobs", "1"]), ("parallel", ["--jobs", "2"])):
        out = tmp_path / name / "out"
        r = _cli(*common, *extra, "--out", str(out), "--cache", str(out.parent), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outs.append(out)
    r = _cli(*common, "--out", str(outs[0]), "--cache", str(outs[0].parent), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cached = outs[0]
    files = ("summary.md", "summary.csv", "per_query.parquet", "frontier.csv")
    first = {f: (tmp_path / "serial" / "out" / f).read_bytes() for f in files}
    for f in files:
        assert (outs[1] / f).read_bytes() == first[f], f
        assert (cached / f).read_bytes() == first[f], f
    md = first["summary.md"].decode()
    for section in ("## The clairvoyant bound", "## References at a budget", "## Superiority"):
        assert section in md
    assert "| keep-all |" in md and "clairvoyant at footprint" in md
    # the loss and frontier figures come from the same folder, by the path `memsim figures` takes
    from memsim.workbench.present import figures as F

    notes: list[str] = []
    figs = F.build_figures(
        results=cached,
        benchmarks=None,
        claims=None,
        curves=False,
        only=["loss", "frontier"],
        notice=notes.append,
    )
    assert sorted(figs) == ["frontier", "loss"], notes


def _brute_signed_rank_p(d: np.ndarray) -> float:
    """Every sign flip of the nonzero differences enumerated (Pratt's mid-ranks)."""
    import itertools

    from scipy import stats as scipy_stats

    r = scipy_stats.rankdata(np.abs(d))
    nz = d != 0
    r, pos = r[nz], d[nz] > 0
    t, mu = r[pos].sum(), r.sum() / 2
    flips = [sum(x * y for x, y in zip(r, s)) for s in itertools.product((0, 1), repeat=len(r))]
    return float(np.mean([abs(f - mu) >= abs(t - mu) - 1e-9 for f in flips]))


def test_signed_rank_p_is_exact_with_ties_and_zeros():
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(3)
    for n in (4, 7, 11):  # no ties, no zeros: scipy's exact distribution
        d = rng.normal(0.2, 1.0, n)
        assert stats.signed_rank_p(d) == pytest.approx(
            scipy_stats.wilcoxon(d, method="exact").pvalue
        )
    for _ in range(6):  # ties and zeros: the enumeration of every sign flip
        d = rng.integers(-3, 5, 11) / 10
        assert stats.signed_rank_p(d) == pytest.approx(_brute_signed_rank_p(d))
    # 15 of 15 in favour with tied differences: exactly 2 / 2^15 (scipy's default falls back
    # to a normal approximation here and gives 6e-4, ten times too large: the old bug)
    tied = np.repeat([0.30, 0.35, 0.25, 0.40, 0.33], 3)
    assert stats.signed_rank_p(tied) == pytest.approx(2 / 2**15)
    assert scipy_stats.wilcoxon(tied, zero_method="zsplit").pvalue > 5 * 2 / 2**15
    assert stats.signed_rank_p(np.zeros(5)) == 1.0 and np.isnan(stats.signed_rank_p(np.array([])))


PROFILES = ("steady", "churn", "noisy", "longgap")


def _standard_like(winner_margin: float, seeds: int = 5, n_policies: int = 17) -> pd.DataFrame:
    """A per-query frame shaped like the standard suite: 17 policies, the four synthetic
    profiles x ``seeds`` seeds (independent streams) and five LoCoMo conversations (the same
    stream under every seed), 20 queries each, recalls on a coarse grid (ties in the cluster
    means). Policy p0 is ``winner_margin`` better than everyone in every cluster; the other
    policies are draws of one distribution (a coin flip between any two of them)."""
    streams = [(f"synthetic:{p}", s) for p in PROFILES for s in range(seeds)]
    loco = [f"locomo:dev.json,sample=conv-{i}" for i in range(5)]
    rows = []
    for sc, seed in streams + [(c, s) for c in loco for s in range(seeds)]:
        # LoCoMo: every seed sees the same values (a deterministic policy on a fixed stream)
        g = np.random.default_rng([11, zlib.crc32(sc.encode()), 0 if "locomo" in sc else seed])
        for i in range(n_policies):
            base = np.round(g.uniform(0.2, 0.7, 20) * 10) / 10
            if i == 0:
                base = np.minimum(1.0, base + winner_margin)
            rows += [
                {"scenario": sc, "seed": seed, "query_id": q, "policy": f"p{i}", "recall": v}
                for q, v in enumerate(base)
            ]
    return pd.DataFrame(rows)


def test_superiority_finds_a_policy_better_in_every_cluster_and_not_a_coin_flip():
    pq = _standard_like(0.3)
    syn = pq[pq.scenario.str.startswith("synthetic")]
    sup = memsim.superiority(syn).set_index(["row", "column"])
    assert (sup["n"] == 20).all()
    wins = sup.loc["p0"]
    assert (wins["share"] == 1.0).all() and wins["significant"].all()
    # every other pair is a coin flip: nothing significant after Holm over 136 pairs
    others = sup.drop(index="p0", level="row").drop(index="p0", level="column")
    assert not others["significant"].any()
    # LoCoMo: five conversations, however many seeds (they repeat the same stream); with
    # five clusters nothing can be significant, and the matrix says so
    loco = pq[pq.scenario.str.startswith("locomo")]
    sup = memsim.superiority(loco)
    assert (sup["n"] == 5).all() and not sup["significant"].any()
    text = "\n".join(calibration.superiority_markdown(pq))
    assert "20 clusters = seed x profile" in text
    assert "5 clusters = conversation (its seeds pooled" in text
    assert "no difference can be significant here" in text


def test_seeds_of_a_seedless_stream_do_not_narrow_its_intervals():
    pq = _standard_like(0.3)
    loco = pq[pq.scenario.str.startswith("locomo") & (pq.policy == "p1")]
    one = loco[loco.seed == 0]
    t5 = stats.pooled_table(loco, ["policy"], ["recall"])
    t1 = stats.pooled_table(one, ["policy"], ["recall"])
    assert int(t5["clusters"].iloc[0]) == 5
    assert t5[["mean", "ci_low", "ci_high"]].to_numpy() == pytest.approx(
        t1[["mean", "ci_low", "ci_high"]].to_numpy()
    )
    # per stream (summary): a question counts once, not once per seed
    runs = pd.DataFrame({"policy": ["p1"], "scenario": [loco.scenario.iloc[0]], "seed": [0]})
    sc = loco.scenario.iloc[0]
    s5 = stats.summarize(loco[loco.scenario == sc], runs)
    s1 = stats.summarize(one[one.scenario == sc], runs)
    r5, r1 = (s[s.metric == "recall"].iloc[0] for s in (s5, s1))
    assert r5["cluster_unit"] == "query" and r5["clusters"] == 20
    assert (r5["ci_low"], r5["ci_high"]) == pytest.approx((r1["ci_low"], r1["ci_high"]))


def test_cluster_bootstrap_covers_the_true_mean_when_clusters_differ():
    # streams differ (a random effect per cluster, sd 0.15) and queries within one share it:
    # the cluster interval covers the true mean about 95% of the time; an interval over
    # queries, blind to the clusters, much less often
    rng = np.random.default_rng(5)
    cover_c = cover_q = 0
    trials = 60
    for _ in range(trials):
        effects = rng.normal(0.0, 0.15, 20)
        v = np.concatenate([0.5 + e + rng.normal(0, 0.2, 40) for e in effects])
        c = np.repeat(np.arange(20), 40)
        lo, hi, _ = stats.cluster_bootstrap_ci(v, c, n_resamples=500)
        qlo, qhi = stats.bootstrap_ci(v, n_resamples=500)
        cover_c += lo <= 0.5 <= hi
        cover_q += qlo <= 0.5 <= qhi
    assert cover_c / trials >= 0.85
    assert cover_q / trials <= 0.6


def test_each_source_says_truly_whether_its_stream_depends_on_the_seed(tmp_path):
    from memsim.engine import sources

    loco = tmp_path / "l.json"
    loco.write_text(
        '[{"sample_id": "c1", "conversation": {"speaker_a": "A", "speaker_b": "B", '
        '"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": '
        '[{"speaker": "A", "dia_id": "D1:1", "text": "I moved to Oslo."}]}, '
        '"qa": [{"question": "Where?", "answer": "Oslo", "evidence": ["D1:1"], "category": 4}]}]'
    )
    for spec, expected in (
        (TINY, True),
        ("scripted/duplicates", False),
        (f"locomo:{loco},sample=c1", False),
    ):
        assert sources.seeded(spec) is expected
        a, b = (sources.load(spec, seed=s) for s in (0, 1))
        assert (a.events != b.events) is expected, spec


def test_calibration_document_says_what_the_runs_say(tmp_path):
    """scripts/calibration.py on a tiny compare and its hashed-embedder LoCoMo twin: the
    embedder table, the bound, the runs above it explained, and the committed
    results/calibration.md agrees with results/standard where no rerun is needed."""
    from pathlib import Path

    from scripts import calibration as doc

    mini = Path(__file__).resolve().parents[1] / "data" / "locomo-mini.json"
    loco = f"locomo:{mini}"
    folders = {}
    for name, llm in (("std", None), ("hashed", {"text_embedder": "hashed"})):
        _, q = memsim.compare(["keep-all", "pai"], [TINY, loco], seeds=[0], llm=llm)
        folders[name] = tmp_path / name
        folders[name].mkdir()
        q.to_parquet(folders[name] / "per_query.parquet")
        (folders[name] / "manifest.json").write_text('{"git_commit": "abcdef123"}')
    text = doc.document(folders["std"], folders["hashed"])
    _, q = memsim.compare(["keep-all"], [loco], seeds=[0])
    assert f"| keep-all | {q.recall.mean():.3f} | {q.recall.mean():.3f} |" in text
    _, q = memsim.compare(["keep-all"], [TINY], seeds=[0])
    assert f"| keep-all | {q.recall.mean():.3f} / {q.bound.mean():.3f} (" in text
    assert "Expected: the clairvoyant" in text and "**met**" in text

    repo = Path(__file__).resolve().parents[2]
    std = doc.default_protocol(pd.read_parquet(repo / "results" / "standard" / "per_query.parquet"))
    committed = (repo / "results" / "calibration.md").read_text(encoding="utf-8")
    for section in (doc.bound_section(std)[0], doc.loss_section(std)):
        assert "\n".join(section) in committed, (
            "results/calibration.md is stale: run `python -m scripts.calibration --write`"
        )


def test_the_gap_splits_into_what_was_not_kept_and_what_was_ranked_out():
    summary, q = memsim.compare(["keep-all", "recency"], [TINY], seeds=[0])
    split = stats.add_gap(q.drop(columns=["gap", "gap_retention", "gap_ranking"], errors="ignore"))
    pd.testing.assert_series_equal(split["gap_ranking"], q["ranked_out"], check_names=False)
    total = split["gap_retention"] + split["gap_ranking"]
    np.testing.assert_allclose(total, split["gap"], atol=1e-12)
    assert (split["gap_ranking"] > 0).any()  # keep-all ranks some kept values out
    means = summary[summary.policy == "keep-all"].set_index("metric")["mean"]
    parts = means["gap_retention"] + means["gap_ranking"]
    assert parts == pytest.approx(means["gap"])


def test_a_negative_gap_part_is_marked_not_netted():
    # policy a: bound 0.5, recall 1.0, nothing ranked out -> retention part -0.5 (its
    # memories cover more than raw ones could); b: bound 1.0, recall 0.5, 0.5 ranked out ->
    # retention 0, ranking 0.5; c: retention -0.2 in seed 0 and +0.4 in seed 1 (mean 0.1);
    # d: retention 0 up to float64 rounding (0.7 - (0.5 + 0.2)), never marked
    rows = []
    for seed in (0, 1):
        for i in range(4):
            base = {"scenario": TINY, "seed": seed, "query_id": f"q{i}", "stale": 0.0}
            base |= {"forgotten": 0.0, "never_kept": 0.0}
            c_bound = 0.4 if seed == 0 else 1.0
            for policy, recall, bound, ranked_out in (
                ("a", 1.0, 0.5, 0.0),
                ("b", 0.5, 1.0, 0.5),
                ("c", 0.4, c_bound, 0.2),
                ("d", 0.5, 0.7, 0.2),
            ):
                rows.append(
                    {**base, "policy": policy, "recall": recall, "bound": bound}
                    | {"ranked_out": ranked_out}
                )
    md = calibration.calibration_markdown(pd.DataFrame(rows))
    first = md[: md.index("## Superiority")]
    table = {ln.split("|")[1].strip(): ln for ln in first.splitlines() if ln.startswith("| ")}
    header = [c.strip() for c in table["policy"].split("|")[1:-1]]
    cells = {p: dict(zip(header, (c.strip() for c in table[p].split("|")[1:-1]))) for p in "abcd"}
    assert cells["a"]["gap"] == "-0.500 ‡" and cells["a"]["gap: not kept"] == "-0.500 ‡"
    assert cells["b"]["gap: not kept"] == "0.000" and cells["b"]["gap: ranked out"] == "0.500"
    # c's pooled retention part is 0.1 but seed 0's is -0.2: marked, not averaged away
    assert cells["c"]["gap: not kept"].startswith("0.100 [") and cells["c"][
        "gap: not kept"
    ].endswith("‡ 1/2")
    assert (
        cells["c"]["gap: ranked out"].startswith("0.200")
        and "‡" not in cells["c"]["gap: ranked out"]
    )


def test_hit_is_recall_on_synthetic_streams():
    """Every synthetic query asks one key, so recall@10 is hit@10 there, query by query."""
    profiles = ("steady", "churn", "noisy", "longgap")
    specs = [f"synthetic:{p},episodes=300,queries=20,facts=30,horizon=30" for p in profiles]
    _, q = memsim.compare(["keep-all", "kernle"], specs, seeds=[0])
    assert (q["n_units"] <= 1).all() and (q["n_units"] == 1).any()
    assert set(q["recall"].dropna()) == {0.0, 1.0}  # both outcomes occur: the test can fail
    pd.testing.assert_series_equal(q["hit"], q["recall"], check_names=False)
