"""The newcomer's path: `memsim params`, where default outputs go, progress bars."""

from __future__ import annotations

import csv
import dataclasses
import io
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from memsim.engine import registry
from memsim.workbench.cli.main import main
from memsim.workbench.runs import execution
from memsim.workbench.runs import results as results_mod

ROOT = Path(__file__).resolve().parents[2]


def test_params_lists_every_field_with_default_range_and_section(capsys):
    assert main(["params", "pai", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    fields = dataclasses.fields(registry.spec("pai").load().Params)
    assert [r["field"] for r in rows] == [f.name for f in fields]
    by = {r["field"]: r for r in rows}
    assert by["reinforce_above"]["default"] == "0.85"
    assert by["reinforce_above"]["range"] == "[0.0, 1.0]"
    for f in fields:
        assert by[f.name]["section"] == f.metadata["doc"] and by[f.name]["section"]
    assert main(["params", "fsrs"]) == 0
    table = capsys.readouterr().out
    assert "whole_days" in table and "true/false" in table and "seed section" in table


def test_params_of_an_unknown_policy_is_a_one_line_error(capsys):
    assert main(["params", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memsim: error:") and "nosuch" in err and "\n" not in err


def test_claims_write_into_the_project_not_the_current_folder(tmp_path, monkeypatch, capsys):
    project, cwd = tmp_path / "project", tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(results_mod, "project_root", lambda: project)
    assert main(["claims"]) == 0
    assert (project / "results" / "claims.csv").is_file()
    assert (project / "docs" / "claims.md").is_file()
    assert list(cwd.iterdir()) == []
    assert main(["claims", "--out", str(tmp_path / "mine")]) == 0
    assert (tmp_path / "mine" / "results" / "claims.csv").is_file()
    (tmp_path / "afile").write_text("x")
    assert main(["claims", "--out", str(tmp_path / "afile")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_project_root_is_this_checkout():
    assert results_mod.project_root() == ROOT


def test_default_output_folders_are_ignored_by_git():
    names = [
        "results/compare/summary.csv",
        "results/quick/x",
        "results/runs/x",
        "results/sensitivity/cache/x",
        "results/tuning/pai/optuna.db",
    ]
    r = subprocess.run(
        ["git", "check-ignore", *names], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert sorted(r.stdout.split()) == sorted(names)
    for committed in ("results/standard/summary.csv", "results/sensitivity/tornado_x.png"):
        r = subprocess.run(["git", "check-ignore", committed], cwd=ROOT, capture_output=True)
        assert r.returncode == 1, committed  # the committed results stay tracked


def test_progress_bars_only_on_a_terminal_plain_lines_elsewhere(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    assert not execution.show_progress(True)
    assert execution.show_progress("always")
    assert not execution.show_progress(False)
    assert isinstance(execution.progress_bar(3, True), execution.ProgressLines)
    assert isinstance(execution.progress_bar(3, False), execution._NoBar)  # --quiet


def test_progress_lines_are_bounded_in_rate_and_say_phase_count_and_time_left():
    now = [0.0]
    out = io.StringIO()
    bar = execution.ProgressLines(
        420, initial=20, what="runs", every=10.0, clock=lambda: now[0], stream=out
    )
    for _ in range(100):  # 100 runs over 50 s: one line per 10 s at most
        now[0] += 0.5
        bar.update(1)
    bar.close()
    lines = out.getvalue().splitlines()
    # time left at the phase's pace: 20 runs in 10 s, 380 to go
    assert lines[0] == "runs: 40/420, 10 s, about 3 min left"
    assert len(lines) == 5 and lines[-1] == "runs: 120/420, 50 s, about 2 min left"
    done = io.StringIO()
    bar = execution.ProgressLines(4, what="frontier", every=1.0, clock=lambda: now[0], stream=done)
    now[0] += 2.0
    bar.update(4)
    assert done.getvalue() == "frontier: 4/4, 2 s\n"  # nothing left: no estimate
    quiet = io.StringIO()
    short = execution.ProgressLines(3, clock=lambda: 0.0, stream=quiet)
    short.update(3)
    short.close()
    assert quiet.getvalue() == ""  # a phase shorter than the interval stays silent


@pytest.mark.parametrize("pattern", ["every:1e-9", "every:0.00001"])
def test_a_curve_with_too_many_accesses_is_refused(pattern, capsys):
    assert main(["curve", "pai", "--days", "0:5:1", "--pattern", pattern]) == 2
    err = capsys.readouterr().err
    assert "accesses" in err and "at most" in err


SCENARIO = """\
name: mine
horizon: 12
episodes:
  - {id: e1, time: 0, text: "Call me Masa", claims: [{key: owner.name, value: Masa}]}
  - {id: e2, time: 1, text: "I work at Acme", claims: [{key: owner.job, value: Acme}]}
queries:
  - {id: q1, time: 2, text: "my name?", keys: [owner.name], k: 3}
expect:
  - {policy: "*", query: q1, in_top: e1, note: "holds"}
  - {policy: keep-all, query: q1, not_in_top: e1, note: "fails on purpose"}
"""


@pytest.fixture()
def mine(tmp_path: Path) -> Path:
    p = tmp_path / "mine.yaml"
    p.write_text(SCENARIO)
    return p


def test_check_judges_the_expect_block_and_exits_1_on_a_failure(mine, capsys):
    assert main(["check", str(mine), "--policies", "keep-all,recency", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "keep-all on " in out and "1 of 2 hold" in out
    assert "FAIL " in out and "expect[1]: expected query q1: not_in_top='e1'" in out
    assert "returned #" in out and "[fails on purpose]" in out
    assert "recency on " in out and "1 of 1 hold" in out
    assert "2 of 3 expectations hold for 2 policies" in out
    assert main(["check", str(mine), "--policies", "recency", "--quiet"]) == 0


def test_check_of_a_scenario_without_expectations_is_an_error(tmp_path, capsys):
    p = tmp_path / "bare.yaml"
    p.write_text(SCENARIO.split("expect:")[0])
    assert main(["check", str(p), "--policies", "keep-all", "--quiet"]) == 2
    assert "states no expectation" in capsys.readouterr().err


def test_run_prints_metrics_with_meaning_and_each_verdict(mine, capsys):
    assert main(["run", "--policy", "keep-all", "--scenario", str(mine), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "recall" in out and "higher" in out and "share of the query's units" in out
    assert "noise_retention" in out and "n/a: the stream has no noise episodes" in out
    assert " nan" not in out
    assert "expectations stated for keep-all: 1 of 2 hold" in out
    assert "ok   " in out and "FAIL " in out


def test_compare_reports_verdicts_and_writes_them(mine, tmp_path, capsys):
    out_dir = tmp_path / "out"
    argv = ["compare", "--policies", "keep-all,recency", "--scenarios", str(mine), "--quiet"]
    assert main(argv + ["--out", str(out_dir), "--cache", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "expectations stated by the scenarios: 2 of 3 hold, these fail:" in out
    assert "keep-all on " in out and "not_in_top='e1'" in out
    table = pd.read_csv(out_dir / "expectations.csv")
    assert len(table) == 3 and int((~table["ok"]).sum()) == 1
    # from the cache: the same verdicts
    assert main(argv + ["--out", str(tmp_path / "again"), "--cache", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    again = pd.read_csv(tmp_path / "again" / "expectations.csv")
    assert again.equals(table)


def test_a_run_key_covers_the_input_file_it_reads(mine):
    from memsim.workbench.runs.results import RunDef

    d = RunDef("keep-all-v1", str(mine), 0)
    before = d.key
    assert RunDef("keep-all-v1", str(mine), 0).key == before  # stable
    mine.write_text(SCENARIO.replace("Call me Masa", "Call me Masa!"))
    assert RunDef("keep-all-v1", str(mine), 0).key != before  # an edited file: a new run
    assert RunDef("keep-all-v1", "scripted/name-preference", 0).key  # no file: still keyed


def test_compare_caches_under_the_explicit_default_whatever_out_is(mine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "--policies", "keep-all", "--scenarios", str(mine), "--quiet"]
    assert main(argv + ["--out", "a/b"]) == 0
    assert main(argv + ["--out", "c"]) == 0
    # (the frontier's reference runs are cached beside it)
    runs = list(tmp_path.glob("results/runs/keep-all*/*/*/manifest.json"))
    assert len(runs) == 1  # one run, shared by both output folders
    assert not list(tmp_path.glob("a/runs")) and not list(tmp_path.glob("runs"))


def test_the_readme_plug_in_example_passes_the_conformance_checks(monkeypatch):
    """docs/examples/halflife is a real plug-in: every conformance check passes on it."""
    from memsim.engine import checks

    monkeypatch.syspath_prepend(str(ROOT / "docs" / "examples" / "halflife"))
    import halflife_policy

    results = checks.run_checks(halflife_policy.HALFLIFE)
    assert results and all(v is None for v in results.values()), results
    toml = (ROOT / "docs" / "examples" / "halflife" / "pyproject.toml").read_text()
    assert '[project.entry-points."memsim.policies"]' in toml
    assert 'halflife = "halflife_policy:HALFLIFE"' in toml
    readme = (ROOT / "README.md").read_text()
    assert "## Writing a plug-in policy" in readme and "## Writing a scenario" in readme
