"""The newcomer's path (issue 17): `memsim params`, where default outputs go, progress bars."""

from __future__ import annotations

import csv
import dataclasses
import io
import subprocess
from pathlib import Path

import pytest

from memsim.engine import registry
from memsim.workbench import api
from memsim.workbench import results as results_mod
from memsim.workbench.cli import main

ROOT = Path(__file__).resolve().parents[1]


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
    names = ["results/compare/summary.csv", "results/quick/x", "results/cache/runs/x"]
    r = subprocess.run(
        ["git", "check-ignore", *names], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert sorted(r.stdout.split()) == sorted(names)
    r = subprocess.run(
        ["git", "check-ignore", "results/standard/summary.csv"], cwd=ROOT, capture_output=True
    )
    assert r.returncode == 1  # the committed results stay tracked


def test_progress_bars_only_on_a_terminal_or_when_asked(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    assert not api.show_progress(True)
    assert api.show_progress("always")
    assert not api.show_progress(False)
    assert isinstance(api._progress(3, True), api._NoBar)


@pytest.mark.parametrize("pattern", ["every:1e-9", "every:0.00001"])
def test_a_curve_with_too_many_accesses_is_refused(pattern, capsys):
    assert main(["curve", "pai", "--days", "0:5:1", "--pattern", pattern]) == 2
    err = capsys.readouterr().err
    assert "accesses" in err and "at most" in err
