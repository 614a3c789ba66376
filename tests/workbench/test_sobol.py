"""Sobol' indices: scipy's design and estimator, several metrics from one set of runs, runs
cached and resumable through the sweep executor, refused combinations dropped with a count,
bad input as one line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.stats import sobol_indices, uniform

from memsim.engine.errors import ParamError
from memsim.workbench.cli.main import main
from memsim.workbench.studies import sweep
from memsim.workbench.studies.sweep import sobol, sobol_estimates, sobol_ranges, sobol_sample

SMALL = "synthetic:churn,episodes=300,queries=20,facts=30,horizon=30"
# prune_threshold moves every metric of pai; stale_threshold none on this stream
FIELDS = ["prune_threshold", "stale_threshold"]


def _ishigami(x: np.ndarray) -> np.ndarray:
    return np.sin(x[0]) + 7 * np.sin(x[1]) ** 2 + 0.1 * x[2] ** 4 * np.sin(x[0])


def test_design_and_estimator_are_scipys():
    dists = [uniform(loc=-np.pi, scale=2 * np.pi)] * 3
    ref = sobol_indices(func=_ishigami, n=256, dists=dists, rng=np.random.default_rng(3))
    a_b, ab = sobol_sample(dists, 256, 3)
    first, total = sobol_estimates(_ishigami(a_b[0]), _ishigami(a_b[1]), _ishigami_pages(ab))
    np.testing.assert_allclose(first, ref.first_order, rtol=1e-12)
    np.testing.assert_allclose(total, ref.total_order, rtol=1e-12)
    # x3 acts only through its interaction with x1: total well above first
    assert total[2] > 0.15 and total[2] > 2 * first[2]


def test_an_output_that_varies_only_by_rounding_has_zero_indices():
    rng = np.random.default_rng(0)
    f_a = np.full(16, 142.894)
    f_b = f_a + rng.choice([0.0, 2.8e-14], size=16)
    first, total = sobol_estimates(f_a, f_b, np.array([f_b, f_a]))
    assert (first == 0).all() and (total == 0).all()
    f_b = f_a + rng.random(16)  # a real variation, carried by the first field alone
    first, total = sobol_estimates(f_a, f_b, np.array([f_b, f_a]))
    assert total[0] > 0.5 and total[1] == 0


def _ishigami_pages(ab: np.ndarray) -> np.ndarray:
    return np.array([_ishigami(page) for page in ab])


def test_a_field_that_moves_nothing_has_zero_indices_and_metrics_share_one_set_of_runs(
    tmp_path, monkeypatch
):
    t = sobol("pai", SMALL, fields=FIELDS, n=4, bootstrap=20, root=tmp_path)
    assert list(dict.fromkeys(t["metric"])) == ["recall", "stale", "footprint_mean"]
    by = t.set_index(["metric", "field"])
    for m in ("recall", "stale", "footprint_mean"):
        assert by.loc[(m, "stale_threshold"), "first_order"] == 0.0
        assert by.loc[(m, "stale_threshold"), "total_order"] == 0.0
    assert by.loc[("footprint_mean", "prune_threshold"), "total_order"] > 0.5
    assert by.loc[("footprint_mean", "stale_threshold"), "sd"] > 1  # memories, over A and B
    assert (t["used"] == 4).all() and (t["first_low"] <= t["first_high"]).all()

    # the runs are cached: a second analysis runs nothing and one metric alone gives the rows
    # the three-metric analysis gave for it
    def no_runs(d):
        raise AssertionError(f"ran {d}")

    monkeypatch.setattr(sweep, "execute", no_runs)
    alone = sobol("pai", SMALL, fields=FIELDS, n=4, bootstrap=20, root=tmp_path, metrics="recall")
    assert (alone["used"] == 4).all()
    assert alone.equals(t[t["metric"] == "recall"].reset_index(drop=True))


def test_refused_combinations_are_dropped_and_counted():
    # pai's Params refuse a grey zone that ends above the reinforce threshold
    t = sobol("pai", SMALL, fields=["reinforce_above", "grey_lo"], n=8, metrics="recall")
    used = set(t["used"])
    assert len(used) == 1 and 2 <= used.pop() < 8


def test_a_field_without_a_finite_declared_range_moves_from_half_to_twice_its_default():
    assert sobol_ranges("cosmo", ["base_rate", "core_retrievals"]) == {
        "base_rate": (0.01, 0.04, float),
        "core_retrievals": (5.0, 20.0, int),
    }


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"fields": ["nope"]}, "has no parameter 'nope'"),
        ({"fields": ["prune_threshold", "prune_threshold"]}, "named twice"),
        ({"n": 6}, "n must be a power of 2.*6"),
        ({"n": 1}, "n must be a power of 2"),
        ({"metrics": ["recall", "nope"]}, "unknown metric 'nope'"),
    ],
)
def test_bad_sobol_requests_name_the_problem(kw, match):
    with pytest.raises(ParamError, match=match):
        sobol("pai", SMALL, **{"fields": FIELDS, **kw})


def test_a_field_that_is_not_numeric_is_refused():
    with pytest.raises(ParamError, match="'decay_mode' is not a numeric field"):
        sobol_ranges("cosmo", ["decay_mode"])


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--sobol", "6"], "power of 2"),
        (["--sobol", "4", "--fields", "nope"], "no parameter 'nope'"),
        (["--sobol", "4", "--metrics", "nope"], "unknown metric 'nope'"),
        # options of --sobol without it are refused, not ignored
        (["--metrics", "recall"], "--metrics recall applies to --sobol only"),
        (["--sobol-scenarios", SMALL], "--sobol-scenarios .* applies to --sobol only"),
        (["--sample-seed", "3"], "--sample-seed 3 applies to --sobol only"),
    ],
)
def test_sensitivity_sobol_bad_input_exits_2_with_one_line(tmp_path, capsys, extra, match):
    argv = ["sensitivity", "--policies", "pai", "--scenarios", SMALL, "--quiet"]
    assert main([*argv, "--out", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert re.search(match, err)
    assert not list(tmp_path.glob("sobol_*.csv")) and not list(tmp_path.glob("*_oat.csv"))


@pytest.mark.slow
def test_sensitivity_sobol_writes_one_csv_per_profile_with_the_same_bytes_on_two_jobs(tmp_path):
    argv = ["sensitivity", "--policies", "pai", "--scenarios", SMALL, "--sobol", "4"]
    argv += ["--fields", ",".join(FIELDS), "--quiet"]
    got = {}
    for name, extra in [("serial", []), ("jobs", ["--jobs", "2"])]:
        assert main([*argv, *extra, "--out", str(tmp_path / name)]) == 0
        got[name] = (tmp_path / name / "sobol_pai_churn.csv").read_bytes()
    assert got["serial"] == got["jobs"]
    assert got["serial"].startswith(b"policy,scenario,metric,field,lo,hi,first_order")


def test_sobol_runs_through_the_index_it_is_given(tmp_path):
    """sobol(index=...): every run of the design carries the candidate index
    settings, and its manifest the audit."""
    import json

    ivf = {"mode": "ivf", "min_rows": 50}
    t = sobol("pai", SMALL, [0], fields=["similar_limit"], n=2, root=tmp_path, index=ivf)
    assert set(t["field"]) == {"similar_limit"}
    manifests = list(tmp_path.rglob("manifest.json"))
    assert len(manifests) >= 2
    for m in manifests:
        doc = json.loads(m.read_text())
        assert doc["definition"]["index"] == [["min_rows", 50], ["mode", "ivf"]]
        assert doc["index_audit"]["searches"] > 0
