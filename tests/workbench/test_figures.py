"""Figures: each figure function on small stand-in tables of the documented shapes, the
palette, the defensive benchmark reader, and the `memsim figures` command (skips missing
inputs with a notice, writes PNGs)."""

from __future__ import annotations

import argparse
import json
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from memsim.engine.errors import MemsimError, UnknownIdError  # noqa: E402
from memsim.workbench.cli import figures as figures_command  # noqa: E402
from memsim.workbench.present import figures as F  # noqa: E402
from memsim.workbench.present import style as S  # noqa: E402

POLICIES = ["keep-all", "recency", "pai", "izzie", "kernle", "engram", "cosmo"]
SCENARIOS = [
    "synthetic:steady",
    "synthetic:churn",
    "scripted/name-preference",
    "locomo:/x/locomo-dev.json",
]


def stand_in_per_query(seed_count: int = 2) -> pd.DataFrame:
    """A per-query table of the runner/metrics shape, deterministic."""
    rng = np.random.default_rng(0)
    rows = []
    for s in SCENARIOS:
        for p in POLICIES:
            for seed in range(seed_count):
                for q in range(30):
                    t = float(q * 4 + rng.uniform(0, 3))
                    rows.append(
                        {
                            "policy": p,
                            "scenario": s,
                            "seed": seed,
                            "query_id": f"q{q}",
                            "time": t,
                            "group": ("single-hop", "multi-hop", "temporal")[q % 3]
                            if s.startswith("locomo")
                            else "",
                            "k": 5,
                            "n_units": 1,
                            "returned": 5,
                            "recall": float(rng.uniform() < 0.3 + 0.08 * POLICIES.index(p)),
                            "hit": 1.0,
                            "mrr": 0.5,
                            "ndcg": 0.5,
                            "stale": float(rng.uniform(0, 0.4)),
                            "needed_forgotten": 0.0,
                            "evidence_age": float(rng.uniform(0, 120)),
                            "footprint": int(10 + q * (3 if p == "keep-all" else 1)),
                        }
                    )
    return pd.DataFrame(rows)


def stand_in_summary(per_query: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (s, p), g in per_query.groupby(["scenario", "policy"], sort=False):
        for m in ("recall", "stale"):
            mean = float(g[m].mean())
            rows.append(
                {
                    "scenario": s,
                    "policy": p,
                    "metric": m,
                    "mean": mean,
                    "ci_low": mean - 0.05,
                    "ci_high": mean + 0.05,
                    "n": len(g),
                    "unit": "queries",
                    "better": "higher",
                }
            )
        fp = float(g["footprint"].mean())
        rows.append(
            {
                "scenario": s,
                "policy": p,
                "metric": "footprint_mean",
                "mean": fp,
                "ci_low": fp - 1,
                "ci_high": fp + 1,
                "n": 2,
                "unit": "runs",
                "better": "lower",
            }
        )
    return pd.DataFrame(rows)


def stand_in_curves() -> pd.DataFrame:
    days = np.arange(0, 121, 1.0)
    rows = []
    for p, rate in zip(POLICIES, (0.0, 0.01, math.log(2) / 30, 0.01, 0.02, 0.03, 0.02)):
        for pat in F.CURVE_PATTERNS:
            start = 0.0 if p == "kernle" else 0.6
            s = np.exp(-rate * days) * (0.6 if p == "kernle" else start)
            if p == "kernle":
                s[0] = 0.0  # Kernle: log(0 + 1) = 0 at creation
            rows.append(pd.DataFrame({"policy": p, "pattern": pat, "day": days, "strength": s}))
    return pd.concat(rows, ignore_index=True)


def texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.texts]
    out += [fig.get_suptitle(), fig.get_supxlabel()]
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    for leg in fig.legends:
        out += [t.get_text() for t in leg.get_texts()]
    return out


def legend_colors(fig) -> dict[str, str]:
    """Label -> hex colour of each legend entry, over all legends of the figure."""
    from matplotlib.colors import to_hex

    out = {}
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    for leg in legends:
        for h, t in zip(leg.legend_handles, leg.get_texts()):
            c = h.get_color() if hasattr(h, "get_color") else h.get_facecolor()
            if hasattr(h, "get_markeredgecolor") and t.get_text() not in S.palette():
                continue
            if isinstance(c, np.ndarray) and c.ndim == 2:
                c = c[0]
            out[t.get_text()] = to_hex(c)
    return out


def assert_reads(fig) -> None:
    """What every figure owes a reader: a title that asks its question, no empty panel, no
    legend inside a panel (over the data)."""
    title = fig.get_suptitle() or " ".join(ax.get_title() for ax in fig.axes)
    assert "?" in title, title
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        drawn = len(ax.lines) + len(ax.collections) + len(ax.patches) + len(ax.containers)
        assert drawn > 0 or ax.texts, f"empty panel {ax.get_title()!r}"
        assert ax.get_legend() is None, f"legend over the data of {ax.get_title()!r}"


def policy_rows(fig) -> list[str]:
    """The policies a dot matrix has a row for (its family headings left out)."""
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    return sorted(x for x in labels if x not in S.FAMILIES)


@pytest.fixture(scope="module")
def per_query():
    return stand_in_per_query()


@pytest.fixture(scope="module")
def summary(per_query):
    return stand_in_summary(per_query)


# ------------------------------------------------------------------ palette


def test_palette_fixed_distinct_and_version_blind():
    palette = S.palette()
    assert set(POLICIES) <= set(palette)
    parents = {p: c for p, c in palette.items() if S.variant_parent(p) is None}
    assert len(set(parents.values())) == len(parents)  # every model its own colour
    assert palette["pai-code"] == palette["pai"]  # a variant wears its parent's colour
    assert S.policy_style("pai-code")["linestyle"] == ":" and S.hollow("pai-code")
    assert {palette["keep-all"], palette["recency"]} <= set(S.GREYS)  # baselines grey
    assert not set(parents.values()) - set(S.GREYS) & set(S.GREYS)
    assert S.policy_color("pai-v1") == S.policy_color("pai") == S.palette()["pai"]
    assert S.policy_color("my-policy") == S.policy_color("my-policy")  # stable spare colour
    assert (
        S.policy_style("keep-all")["linestyle"] == "--"
        and S.policy_style("pai")["linestyle"] == "-"
    )


def test_policy_families_from_the_registry():
    assert S.policy_family("pai") == "seed, documented"
    assert S.policy_family("pai-code") == "seed, as built"
    assert S.policy_family("fsrs") == "reference model"
    assert S.policy_family("actr-spacing") == "reference model"
    assert S.policy_family("keep-all") == "baseline"
    assert S.policy_family("bound") == "bound"
    groups = S.family_groups(["pai-code", "keep-all", "pai", "fsrs"])
    assert groups == [
        ("seed, documented", ["pai"]),
        ("seed, as built", ["pai-code"]),
        ("reference model", ["fsrs"]),
        ("baseline", ["keep-all"]),
    ]


def test_one_protocol_with_and_without_the_column():
    t = pd.DataFrame({"x": [1, 2, 3], "protocol": ["default", "value-aware", "default"]})
    assert S.one_protocol(t)["x"].tolist() == [1, 3]
    assert S.one_protocol(t.drop(columns="protocol"))["x"].tolist() == [1, 2, 3]
    assert S.one_protocol(t.drop(columns="protocol"), "value-aware").empty


def test_ordered_policies_baselines_first():
    assert S.ordered_policies(["cosmo", "zeta", "pai", "recency", "keep-all"]) == [
        "keep-all",
        "recency",
        "cosmo",
        "pai",
        "zeta",
    ]  # registry order: baselines first, then by id; unregistered ids last


# ------------------------------------------------------------------ 1. decay curves


def test_worked_examples_fallback_cites_sections():
    ex = F.worked_examples(None)
    pai = ex[ex.policy == "pai"].iloc[0]
    assert (pai.day, pai.start, pai.value, pai.ratio) == (30, 0.6, 0.3, 0.5)  # 000 §7
    izzie = ex[ex.policy == "izzie"].iloc[0]
    assert izzie.value == 0.67 and izzie.day == 30  # 003 strength example
    assert ex["source"].str.len().gt(0).all()


def test_worked_examples_from_claims_table_with_day_column():
    claims = pd.DataFrame(
        {
            "id": ["c1", "c2"],
            "policy": ["pai", "izzie"],
            "document": ["000", "003"],
            "section": ["§7", "strength"],
            "statement": ["a", "b"],
            "day": [30, np.nan],
            "start": [0.6, 0.9],
            "documented": [0.3, 0.67],
        }
    )
    ex = F.worked_examples(claims)
    assert list(ex.policy) == ["pai"] and ex.ratio.iloc[0] == pytest.approx(0.5)
    # a claims table without a day column falls back to the explicit table
    assert len(F.worked_examples(claims.drop(columns="day"))) == len(F.declared_worked_examples())


def test_normalise_curves_by_day0_or_max():
    n = F.normalise_curves(stand_in_curves())
    first = n[n.day == 0].set_index(["policy", "pattern"])["relative"]
    assert np.allclose(first.drop("kernle", level="policy"), 1.0)
    kern = n[(n.policy == "kernle") & (n.pattern == "never")]
    assert kern["relative"].max() == pytest.approx(1.0) and kern["relative"].iloc[0] == 0.0


def test_decay_curves_figure_one_unit_per_row_and_examples():
    c = stand_in_curves()
    c.loc[c.policy == "kernle", "strength"] *= 4  # a salience on its own scale, above 1
    fig = F.decay_curves_figure(c, F.worked_examples())
    rows = F.strength_rows(c)
    assert len(fig.axes) == len(rows) * len(F.CURVE_PATTERNS)
    # bounded strengths share a [0, 1] axis; kernle's salience gets a row of its own
    assert rows[-1] == ("kernle: strength on its own scale (leaves [0, 1])", ["kernle"])
    assert all(t.endswith("[0, 1]") for t, _ in rows[:-1])
    assert not any("kernle" in members for _, members in rows[:-1])
    t = " | ".join(texts(fig))
    assert "days since the memory was created" in t and "worked example" in t
    assert_reads(fig)
    # each policy named once per panel of its row, at its line's end, in its colour
    for (title, members), axes in zip(rows, np.reshape(fig.axes, (len(rows), -1))):
        for ax in axes:
            labels = sorted(a.get_text() for a in ax.texts)
            assert [x.split(" (")[0] for x in labels] == sorted(members), title
    never = fig.axes[0]  # seed, documented row: pai's worked example at (30, 0.3)
    pts = [tuple(np.ravel(ln.get_xydata())[:2]) for ln in never.lines if len(ln.get_xdata()) == 1]
    assert (30.0, pytest.approx(0.3)) in pts


def test_decay_curves_needs_columns():
    with pytest.raises(MemsimError, match="strength"):
        F.decay_curves_figure(pd.DataFrame({"policy": [], "pattern": [], "day": []}))


# ------------------------------------------------------------------ 2. over time


def test_rolling_by_time_trailing_window():
    frame = pd.DataFrame({"time": [0.2, 1.5, 2.0, 10.0], "recall": [1.0, 0.0, 0.0, 1.0]})
    r = F.rolling_by_time(frame, "recall", window=2)
    got = dict(zip(r["day"], r["recall"]))
    assert got[0] == 1.0
    assert got[1] == pytest.approx(0.5)  # days 0-1: (1 + 0) / 2
    assert got[2] == pytest.approx(0.0)  # days 1-2: (0 + 0) / 2
    assert got[10] == 1.0 and 5 not in got  # only days with queries are reported


def test_recall_footprint_over_time_rows_per_synthetic_scenario(per_query):
    fig = F.recall_footprint_over_time_figure(per_query, window=14)
    fams = S.family_groups(POLICIES)
    assert len(fig.axes) == 2 * 2 * len(fams)  # two synthetic streams, two rows each
    t = " | ".join(texts(fig))
    assert "recall@5" in t and "14-day rolling mean" in t and "retrievable memories" in t
    assert "simulated time (days)" in t
    assert_reads(fig)
    # each policy named once in each row, in its family's panel, in its colour
    grid = np.reshape(fig.axes, (4, len(fams)))
    for row in grid:
        names = [a.get_text() for ax in row for a in ax.texts if a.get_text() in POLICIES]
        assert sorted(names) == sorted(POLICIES)
    from matplotlib.colors import to_hex

    cosmo = [a for ax in grid[0] for a in ax.texts if a.get_text() == "cosmo"][0]
    assert to_hex(cosmo.get_color()) == S.palette()["cosmo"]


def test_over_time_without_synthetic_scenario_is_a_memsim_error(per_query):
    with pytest.raises(MemsimError, match="synthetic"):
        F.recall_footprint_over_time_figure(
            per_query[per_query.scenario.str.startswith("scripted")]
        )


# ------------------------------------------------------------------ 3, 4. summary figures


def test_recall_vs_footprint_one_point_per_policy_and_stream(summary):
    fig = F.recall_vs_footprint_figure(summary)
    fams = S.family_groups(POLICIES)
    streams = ["synthetic:steady", "synthetic:churn", "LoCoMo (1 conversation pooled)"]
    assert len(fig.axes) == len(streams) * len(fams)  # scripted streams left out
    grid = np.reshape(fig.axes, (len(streams), len(fams)))
    assert grid[0, 0].get_ylabel().startswith("synthetic:steady")
    for row in grid:  # every policy drawn once per stream, labelled where it is
        drawn = [a.get_text() for ax in row for a in ax.texts]
        assert sorted(drawn) == sorted(POLICIES)
        assert sum(len(ax.containers) for ax in row) == len(POLICIES)
    s = summary[(summary.scenario == SCENARIOS[0])]
    want = (
        s[(s.policy == "pai") & (s.metric == "footprint_mean")]["mean"].iloc[0],
        s[(s.policy == "pai") & (s.metric == "recall")]["mean"].iloc[0],
    )
    pai_panel = grid[0, [f for f, _ in fams].index("seed, documented")]
    pts = [tuple(c.lines[0].get_xydata()[0]) for c in pai_panel.containers]
    assert any(pt == pytest.approx(want) for pt in pts)
    assert any(t.startswith("mean footprint (retrievable memories") for t in texts(fig))
    assert "1 scripted streams not shown" in " ".join(texts(fig))
    assert_reads(fig)


def test_identical_variant_is_named_not_hidden(summary):
    extra = summary[summary.policy == "pai"].assign(policy="pai-code")
    fig = F.recall_vs_footprint_figure(pd.concat([summary, extra], ignore_index=True))
    labels = [a.get_text() for ax in fig.axes for a in ax.texts]
    assert "pai-code = pai" in labels and "pai-code" not in labels
    fig = F.stale_figure(pd.concat([summary, extra], ignore_index=True))
    assert "pai-code = pai" in [t.get_text() for t in fig.axes[0].get_yticklabels()]


def test_stale_beside_recall_one_row_per_policy(summary):
    fig = F.stale_figure(summary)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "synthetic:steady\nrecall@k",
        "synthetic:steady\nstale@k",
        "synthetic:churn\nrecall@k",
        "synthetic:churn\nstale@k",
        "LoCoMo (1 conversation pooled)\nrecall@k",
        "LoCoMo (1 conversation pooled)\nstale@k",
    ]
    ax = fig.axes[1]
    assert policy_rows(fig) == sorted(POLICIES)
    got = sorted(round(float(c.lines[0].get_xdata()[0]), 9) for c in ax.containers)
    s = summary[(summary.metric == "stale") & (summary.scenario == "synthetic:steady")]
    assert got == sorted(round(v, 9) for v in s["mean"])
    assert_reads(fig)


def test_stale_figure_draws_rank_inversion_when_the_summary_has_it(summary):
    ri = summary[summary.metric == "stale"].assign(metric="rank_inversion")
    fig = F.stale_figure(pd.concat([summary, ri], ignore_index=True))
    assert "synthetic:steady\nrank inversion" in [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 9


def test_figures_keep_to_the_default_protocol(summary, per_query):
    other = summary.assign(protocol="value-aware", mean=summary["mean"] * 0 + 0.123)
    both = pd.concat([summary.assign(protocol="default"), other], ignore_index=True)
    fig = F.stale_figure(both)
    xs = [float(c.lines[0].get_xdata()[0]) for ax in fig.axes for c in ax.containers]
    assert 0.123 not in [round(x, 3) for x in xs]
    assert len(xs) == len(F.stale_figure(summary).axes) * len(POLICIES)


def test_scorecard_figure_rows_by_family_panels_per_protocol_and_metric():
    rows = []
    for p in POLICIES + ["pai-code"]:
        for proto in ("default", "value-aware"):
            for metric, base in (("recall@10", 0.5), ("footprint (memories)", 300.0)):
                m = base * (1 + POLICIES.index(p.replace("-code", "")) / 10)
                rows.append(
                    {
                        "policy": p,
                        "family": S.policy_family(p),
                        "protocol": proto,
                        "metric": metric,
                        "mean": m,
                        "ci_low": m * 0.9,
                        "ci_high": m * 1.1,
                    }
                )
    card = pd.DataFrame(rows)
    fig = F.scorecard_figure(card)
    assert [ax.get_title() for ax in fig.axes] == [
        "recall@10\ndefault",
        "recall@10\nvalue-aware",
        "footprint (memories)\ndefault",
        "footprint (memories)\nvalue-aware",
    ]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    # families as headings, in order, each policy once under its own
    heads = [x for x in labels if x in S.FAMILIES]
    assert heads == ["seed, documented", "seed, as built", "baseline"]
    assert "pai-code = pai" in labels
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()  # one metric, one range
    for ax in fig.axes:
        assert len(ax.containers) == len(POLICIES) + 1
    assert_reads(fig)
    with pytest.raises(MemsimError, match="scorecard"):
        F.scorecard_figure(card.drop(columns="mean"))


def test_summary_without_metric_raises(summary):
    with pytest.raises(MemsimError, match="stale"):
        F.stale_figure(summary[summary.metric != "stale"])


# ------------------------------------------------------------------ 5. LoCoMo


def test_locomo_tables_and_figure(per_query):
    by_cat, by_age = F.locomo_tables(per_query)
    assert set(by_cat["category"]) == {"single-hop", "multi-hop", "temporal"}
    lq = per_query[per_query.scenario.str.startswith("locomo") & (per_query.policy == "pai")]
    row = by_cat[(by_cat.policy == "pai") & (by_cat.category == "temporal")].iloc[0]
    assert row["mean"] == pytest.approx(lq[lq.group == "temporal"]["recall"].mean())
    # every question in one category, counted once whatever the seeds (LoCoMo ignores them)
    assert lq.seed.nunique() == 2
    assert by_cat.groupby("policy")["n"].sum()["pai"] == lq["query_id"].nunique()
    assert by_age.groupby("policy")["n"].sum()["pai"] <= len(lq)
    assert set(by_age["age"]) <= set(S.age_bin_labels())
    fig = F.locomo_figure(per_query)
    assert len(fig.axes) == 3 + by_age["age"].nunique()
    assert any("evidence age" in t for t in texts(fig))
    assert policy_rows(fig) == sorted(POLICIES)
    assert F.locomo_question_time_table(per_query).empty  # no protocol column
    assert_reads(fig)


def test_locomo_figure_draws_question_times_when_there(per_query):
    lq = per_query[per_query.scenario.str.startswith("locomo")]
    later = [
        lq.assign(protocol=f"evidence-{n}d", recall=lq["recall"] * f)
        for n, f in ((30, 0.2), (1, 0.9), (7, 0.5))
    ]
    frame = pd.concat([per_query.assign(protocol="default"), *later], ignore_index=True)
    fig = F.locomo_figure(frame)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[-4:] == [
        "asked at:\nend of conversation",
        "asked at:\n1 d after evidence",
        "asked at:\n7 d after evidence",
        "asked at:\n30 d after evidence",
    ]
    t = F.locomo_question_time_table(frame)
    pai = t[t.policy == "pai"].set_index("protocol")["mean"]
    base = lq[lq.policy == "pai"]["recall"].mean()
    assert pai["evidence-30d"] == pytest.approx(0.2 * base)
    assert pai["default"] == pytest.approx(base)
    # the category and age panels keep to the default protocol
    assert F.locomo_figure(per_query).axes[0].get_title() == fig.axes[0].get_title()
    assert "the time it is asked?" in fig.get_suptitle()


def test_locomo_missing_is_memsim_error(per_query):
    with pytest.raises(MemsimError, match="LoCoMo"):
        F.locomo_tables(per_query[~per_query.scenario.str.startswith("locomo")])


# ------------------------------------------------------------------ 6. latency


def test_benchmark_frame_pytest_benchmark_shape():
    data = {
        "benchmarks": [
            {
                "name": "test_recall[pai-n1000]",
                "group": "recall",
                "params": {"policy": "pai", "n": 1000},
                "stats": {"median": 0.002, "mean": 0.003},
            },
            {
                "name": "test_recall[pai-n10000]",
                "group": "recall",
                "params": {"policy": "pai", "n": 10000},
                "stats": {"median": 0.02},
            },
            {
                "name": "test_bare_matvec[n1000]",
                "group": "recall",
                "params": {"n": 1000},
                "stats": {"median": 0.0001},
            },
            {"name": "no-size", "stats": {"median": 1.0}},
        ]
    }
    b = F.benchmark_frame(data)
    assert len(b) == 3
    assert b[b.series == "pai"]["seconds"].tolist() == [0.002, 0.02]  # median preferred
    assert b["floor"].tolist() == [False, False, True]
    fig = F.latency_figure(b)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "bandwidth floor: bare X @ q (measured)" in texts(fig)
    assert "floor extended in proportion to n" in texts(fig)


def test_benchmark_frame_flat_records_and_junk():
    recs = [
        {"policy": "engram", "operation": "ingest", "n_memories": 100, "ms": 5.0},
        {"series": "bare X@q", "operation": "recall", "memories": 100, "seconds": 1e-5},
    ]
    b = F.benchmark_frame({"results": recs})
    assert b["seconds"].tolist() == [0.005, 1e-5] and b["floor"].tolist() == [False, True]
    assert F.benchmark_frame("nonsense").empty and F.benchmark_frame({"x": 1}).empty
    with pytest.raises(MemsimError, match="no record"):
        F.latency_figure(F.benchmark_frame([]))


# ------------------------------------------------------------------ the command


def test_write_figures_skips_missing_inputs_with_notices(tmp_path, per_query, summary):
    res = tmp_path / "standard"
    res.mkdir()
    summary.to_csv(res / "summary.csv", index=False)
    per_query.to_parquet(res / "per_query.parquet", index=False)
    notes: list[str] = []
    written = F.write_figures(
        tmp_path / "figs",
        results=res,
        benchmarks=tmp_path / "none.json",
        claims=None,
        curves=False,
        notice=notes.append,
    )
    assert sorted(p.name for p in written) == sorted(
        [
            "recall_footprint_over_time.png",
            "recall_vs_footprint.png",
            "stale.png",
            "locomo.png",
            "scorecard.png",
        ]
    )
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(n.startswith("skipped latency: no ") for n in notes)
    assert any(n.startswith("skipped decay_curves") for n in notes)
    assert all("\n" not in n for n in notes)


def test_write_figures_nothing_available(tmp_path):
    notes: list[str] = []
    assert (
        F.write_figures(
            tmp_path / "f",
            results=tmp_path / "absent",
            benchmarks=None,
            claims=None,
            curves=False,
            notice=notes.append,
        )
        == []
    )
    assert len(notes) == len(F.FIGURES) and all(n.startswith("skipped ") for n in notes)


def test_cli_figures_only_latency(tmp_path, capsys):
    from memsim.workbench.cli.main import main

    bench = tmp_path / "b.json"
    bench.write_text(
        json.dumps(
            [
                {"policy": "pai", "n": 10, "seconds": 0.1},
                {"policy": "pai", "n": 100, "seconds": 0.5},
            ]
        )
    )
    rc = main(
        [
            "figures",
            "--out",
            str(tmp_path / "figs"),
            "--results",
            str(tmp_path / "none"),
            "--benchmarks",
            str(bench),
            "--only",
            "latency",
        ]
    )
    assert rc == 0
    assert (tmp_path / "figs" / "latency.png").exists()
    assert "wrote" in capsys.readouterr().out


def test_cli_unknown_figure_and_bad_json(tmp_path, capsys):
    from memsim.workbench.cli.main import main

    assert main(["figures", "--out", str(tmp_path), "--only", "pie"]) == 2
    assert "unknown figure 'pie'" in capsys.readouterr().err
    bad = tmp_path / "b.json"
    bad.write_text("{nope")
    assert (
        main(["figures", "--out", str(tmp_path), "--benchmarks", str(bad), "--only", "latency"])
        == 2
    )
    assert "not JSON" in capsys.readouterr().err
    with pytest.raises(UnknownIdError):
        figures_command.run(
            argparse.Namespace(
                out=str(tmp_path),
                results="x",
                benchmarks="y",
                claims="z",
                only="pie",
                no_curves=True,
            )
        )


def test_decay_curves_unbounded_row_and_unretrievable_marker():
    c = stand_in_curves()
    c["retrievable"] = True
    pai_never = (c.policy == "pai") & (c.pattern == "never")
    c.loc[pai_never & (c.day >= 100), "retrievable"] = False  # pruned at day 100
    boost = (c.policy == "izzie") & (c.pattern == "every:3")
    c.loc[boost, "strength"] = c.loc[boost, "strength"] * np.linspace(1, 8, boost.sum())
    fig = F.decay_curves_figure(c, None)
    rows = F.strength_rows(c)
    assert (
        "izzie: strength on its own scale (leaves [0, 1])",
        ["izzie"],
    ) in rows  # leaves [0, 1]: own axis
    never = fig.axes[0]
    crosses = [ln for ln in never.lines if ln.get_marker() == "X" and len(ln.get_xdata()) == 1]
    assert [float(ln.get_xdata()[0]) for ln in crosses] == [100.0]
    assert never.get_ylim() == (-0.03, 1.05)
    izzie_row = [t for t, _ in rows].index("izzie: strength on its own scale (leaves [0, 1])")
    every = np.reshape(fig.axes, (len(rows), -1))[izzie_row, 1]
    assert every.get_ylim()[1] > 1.5  # the whole curve, not clipped
    assert "cross: no longer retrievable" in fig.get_supxlabel()


def test_compute_curves_with_the_real_curve_tool():
    """Integration with memsim.curve: every registered policy gives a curve (a missing curve
    tool or policy is a failure, not a skip)."""
    import memsim

    F.curve_function()
    notes: list[str] = []
    c = F.compute_curves(["pai", "izzie"], patterns=["never"], days="0:30:15", notice=notes.append)
    assert not notes
    pai = c[c.policy == "pai"].set_index("day")["strength"]
    assert pai[30.0] == pytest.approx(0.3)  # 000 §7: 0.6 -> 0.3 after 30 days
    izzie = c[c.policy == "izzie"].set_index("day")["strength"]
    assert izzie[30.0] == pytest.approx(0.9 * math.exp(-0.3))  # 003 strength example
    assert set(c.columns) >= {
        "policy",
        "pattern",
        "day",
        "strength",
        "status",
        "memory",
        "retrievable",
    }
    assert memsim.list_policies() is not None


def test_benchmark_frame_interleaved_targets_and_size_groups():
    """The shape benchmarks/bench_recall.py writes through pytest-benchmark: variant records
    grouped per size, target records carrying interleaved per-variant seconds."""
    data = {
        "benchmarks": [
            {
                "name": "test_recall_variant[n=100k-fused]",
                "group": "recall 1 query n=100k",
                "params": {"variant": "fused"},
                "extra_info": {"n": 100000, "variant": "fused"},
                "stats": {"median": 0.004},
            },
            {
                "name": "test_recall_variant[n=100k-bare_matvec]",
                "group": "recall 1 query n=100k",
                "params": {"variant": "bare_matvec"},
                "extra_info": {"n": 100000, "variant": "bare_matvec"},
                "stats": {"median": 0.003},
            },
            {
                "name": "test_target1_fused_vs_bare_matvec",
                "group": "targets",
                "stats": {"median": 0.05},
                "extra_info": {
                    "target": "1",
                    "ratio": 1.1,
                    "n": 1000000,
                    "seconds": {"bare_matvec": 0.03, "fused": 0.033},
                },
            },
            {
                "name": "test_scalar_loop_scaled",
                "group": "targets",
                "stats": {"median": 0.001},
                "extra_info": {"n": 1000000, "what": "scalar loop timed at n=20000"},
            },
        ]
    }
    b = F.benchmark_frame(data)
    assert set(b["operation"]) == {"recall 1 query"}
    assert sorted(zip(b.series, b.n, b.seconds)) == [
        ("bare X @ q", 100000, 0.003),
        ("bare X @ q", 1000000, 0.03),
        ("fused kernel (policies.pai_fastscore)", 100000, 0.004),
        ("fused kernel (policies.pai_fastscore)", 1000000, 0.033),
    ]
    assert b.set_index(["series", "n"])["floor"].to_dict()[("bare X @ q", 1000000)]
    fig = F.latency_figure(b)
    assert len(fig.axes) == 1


def test_overlapping_series_groups_coinciding_lines():
    a = pd.Series([100.0, 200.0, 300.0], index=[1, 2, 3])
    groups = F.overlapping_series(
        {"keep-all": a, "pai": a * 0.5, "izzie": a * 1.01, "recency": a.copy()}
    )
    assert groups == [["keep-all", "izzie", "recency"]]
    assert F.overlapping_series({"pai": a}) == []


def test_stale_figure_names_streams_without_any_stale_memory(summary):
    clean = summary.copy()
    zero = (clean.scenario == "synthetic:churn") & (clean.metric == "stale")
    clean.loc[zero, ["mean", "ci_low", "ci_high"]] = 0.0
    fig = F.stale_figure(clean)
    assert not any(ax.get_title().startswith("synthetic:churn") for ax in fig.axes)
    assert len(fig.axes) == 4
    assert "no policy returned a stale memory on: synthetic:churn" in " ".join(texts(fig))


def test_benchmark_frame_report_targets_only():
    """results/benchmarks.json as benchmarks/report.py writes it: only target records; the
    ones timed beside the floor are latencies, an ingest target's n (episodes) is not."""
    data = {
        "command": "python -m benchmarks.report",
        "targets": [
            {
                "target": "1 exact recall (fused)",
                "n": 1000000,
                "ratio": 1.01,
                "seconds": {"bare_matvec": 0.16, "numpy": 0.32, "fused": 0.16},
            },
            {"target": "5 ingest pai", "n": 86, "seconds": {"batched": 0.04, "one_by_one": 0.04}},
            {"target": "2 kernel topk", "n": 1000000, "kernel_seconds": 0.02},
        ],
    }
    b = F.benchmark_frame(data)
    assert sorted(b.series) == [
        "bare X @ q",
        "fused kernel (policies.pai_fastscore)",
        "numpy: full scores + top-k",
    ]
    assert set(b.operation) == {"recall of one query"} and set(b.n) == {1000000}
    fig = F.latency_figure(b)
    floor_line = [
        ln for ln in fig.axes[0].lines if ln.get_label() == "floor extended in proportion to n"
    ][0]
    x, y = floor_line.get_xdata(), floor_line.get_ydata()
    assert y[-1] / y[0] == pytest.approx(x[-1] / x[0])  # slope 1 on log-log
    assert np.interp(1e6, x, y) == pytest.approx(160.0, rel=1e-3)  # through the measured floor (ms)


def test_cli_figures_results_folder_missing_is_an_error(tmp_path, capsys):
    """A mistyped --results folder used to exit 0 (the decay curves need no input)."""
    from memsim.workbench.cli.main import main

    rc = main(["figures", "--out", str(tmp_path / "f"), "--results", str(tmp_path / "typo")])
    err = capsys.readouterr().err
    assert rc == 2 and "typo" in err and "no such folder" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "f").exists()


def test_the_committed_figures_are_drawn_from_the_committed_results(tmp_path):
    """What `memsim figures` (scripts/main.sh's last step) draws from the committed
    results/standard, results/benchmarks.json and results/claims.csv is, byte for byte, what
    results/figures holds: a table changed without its figure drawn again, or a figure's code
    changed without its PNG, fails here (a clean clone's main.sh redrew latency.png, which
    had not been drawn from the benchmarks.json committed beside it)."""
    from tests.conftest import REPO

    res = REPO / "results"
    written = F.write_figures(
        tmp_path,
        results=res / "standard",
        benchmarks=res / "benchmarks.json",
        claims=res / "claims.csv",
        notice=lambda m: None,
    )
    assert sorted(p.stem for p in written) == sorted(F.FIGURES)
    differ = [p.name for p in written if p.read_bytes() != (res / "figures" / p.name).read_bytes()]
    assert not differ, f"results/figures/{differ}: not what `memsim figures` draws now"


# ------------------------------------------------------------------ tornado


def tornado_spread(spread_kernle: float = 0.2) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "field": ["half_life", "forgetting_threshold", "verify_step"],
            "scenario": "synthetic:churn",
            "metric": "recall",
            "at_low": [0.5, 0.6, 0.55],
            "at_high": [0.5 + spread_kernle, 0.5, 0.55],
            "spread": [spread_kernle, 0.1, 0.0],
        }
    )


def test_tornado_marks_the_default_and_starts_bars_there(tmp_path):
    from matplotlib.figure import Figure

    from memsim.workbench.present.tune import default_metric, tornado, tornado_axes

    oat = pd.DataFrame(
        {
            "field": ["half_life"] * 3 + ["forgetting_threshold"] * 2,
            "value_of_field": [10.0, 30.0, 90.0, 0.1, 0.9],
            "recall": [0.5, 0.55, 0.7, 0.6, 0.5],
        }
    )
    # kernle's half_life defaults to 30 days (004): the run there is the default run
    assert default_metric(oat, "kernle") == pytest.approx(0.55)
    assert default_metric(oat[oat.field != "half_life"], "kernle") is None
    ax = Figure().subplots()
    tornado_axes(ax, tornado_spread(), "recall", at_default=0.55, defaults={"half_life": 30.0})
    marks = [ln for ln in ax.lines if list(ln.get_xdata()) == [0.55, 0.55]]
    assert len(marks) == 1 and "documented defaults" in marks[0].get_label()
    bars = [p for p in ax.patches]
    assert {round(b.get_x(), 9) for b in bars} == {0.55}  # every bar starts at the default
    assert "half_life (default 30)" in [t.get_text() for t in ax.get_yticklabels()]
    assert ax.get_legend() is not None and ax.get_legend().get_bbox_to_anchor() is not None
    assert (
        tornado(tornado_spread(), tmp_path / "t.png", "kernle", "synthetic:churn", at_default=0.55)
        is None
    )
    assert (tmp_path / "t.png").exists()


def test_tornado_without_any_spread_draws_nothing_and_says_why(tmp_path):
    from memsim.workbench.present.tune import tornado

    flat = tornado_spread(0.0).assign(at_low=0.0, at_high=0.0, spread=0.0)
    why = tornado(flat, tmp_path / "t.png", "kernle", "synthetic:longgap")
    assert why is not None and "no field of kernle moves recall" in why and "\n" not in why
    assert not (tmp_path / "t.png").exists()


def test_scorecard_figure_takes_the_families_it_is_given():
    card = pd.DataFrame(
        {
            "policy": ["pai", "keep-all", "clairvoyant"],
            "family": ["seed, documented", "baseline", "bound"],
            "protocol": "default",
            "metric": "hit@10",
            "mean": [0.9, 0.7, 1.0],
            "ci_low": [0.85, 0.65, 1.0],
            "ci_high": [0.95, 0.75, 1.0],
        }
    )
    fig = F.scorecard_figure(card)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[-2:] == ["baseline", "bound"] or labels.index("bound") > labels.index("baseline")
    assert [x for x in labels if x not in S.FAMILIES] == ["pai", "keep-all", "clairvoyant"]
