"""Results: definition-derived paths, atomic writes, resume, manifests."""

import json

import numpy as np
import pandas as pd
import pytest

from memsim.workbench.runs import results
from memsim.workbench.runs.results import RunDef, RunResult


def _result(d: RunDef) -> RunResult:
    q = pd.DataFrame({"query_id": ["q1", "q2"], "recall": [1.0, 0.5]})
    f = pd.DataFrame({"time": [0.0, 1.0], "retrievable": [1, 2], "rows": [1, 2]})
    return RunResult(
        d, q, f, {"footprint_mean": 1.5}, manifest={"key": d.key}, timings={"ingest": 0.1}
    )


def test_path_is_derived_from_the_whole_definition(tmp_path):
    a = RunDef("pai-v1", "synthetic:steady,episodes=200", 0)
    assert a.path(tmp_path) == RunDef("pai-v1", "synthetic:steady,episodes=200", 0).path(tmp_path)
    others = [
        RunDef("pai-v2", a.scenario, 0),
        RunDef("pai-v1", a.scenario, 1),
        RunDef("pai-v1", a.scenario, 0, params=(("prune_threshold", 0.1),)),
        RunDef("pai-v1", a.scenario, 0, llm=(("faults.embed_fail", 0.1),)),
    ]
    assert len({a.path(tmp_path)} | {o.path(tmp_path) for o in others}) == 5
    assert "synthetic-steady-episodes-200" in str(a.path(tmp_path))


def test_slug_of_a_long_path_is_short_and_distinct():
    a = results.slug("locomo:/very/long/" + "x" * 200 + "/a.json")
    b = results.slug("locomo:/very/long/" + "x" * 200 + "/b.json")
    assert len(a) <= 60 and a != b


def test_save_then_load_round_trip_and_completion(tmp_path):
    d = RunDef("keep-all-v1", "scripted/x", 3)
    assert not results.is_complete(tmp_path, d)
    results.save(tmp_path, _result(d))
    assert results.is_complete(tmp_path, d)
    back = results.load(tmp_path, d)
    pd.testing.assert_frame_equal(back.queries, _result(d).queries)
    assert back.summary == {"footprint_mean": 1.5}
    assert back.timings == {"ingest": 0.1}


def test_same_result_gives_identical_bytes(tmp_path):
    d = RunDef("keep-all-v1", "scripted/x", 0)
    p1 = results.save(tmp_path / "a", _result(d))
    p2 = results.save(tmp_path / "b", _result(d))
    for f in ("queries.parquet", "footprint.parquet", "summary.json", "manifest.json"):
        assert (p1 / f).read_bytes() == (p2 / f).read_bytes(), f


def test_a_crash_mid_write_leaves_no_file_under_its_final_name(tmp_path, monkeypatch):
    target = tmp_path / "out.json"

    class Boom(Exception):
        pass

    def explode(*a, **k):
        raise Boom

    monkeypatch.setattr(results.os, "fsync", explode)
    with pytest.raises(Boom):
        results.atomic_write_json(target, {"a": 1})
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # the temporary file is removed too


def test_incomplete_run_without_manifest_is_not_complete(tmp_path):
    d = RunDef("keep-all-v1", "scripted/x", 0)
    p = d.path(tmp_path)
    p.mkdir(parents=True)
    results.atomic_write_parquet(p / "queries.parquet", pd.DataFrame({"a": [1]}))
    assert not results.is_complete(tmp_path, d)


def test_json_writer_handles_numpy_scalars(tmp_path):
    results.atomic_write_json(
        tmp_path / "x.json", {"a": np.int64(3), "b": np.float32(0.5), "c": {1, 2}}
    )
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 3, "b": 0.5, "c": [1, 2]}


def test_a_code_change_changes_the_result_path(tmp_path, monkeypatch):
    d = RunDef("pai-v1", "scripted/x", 0)
    before = d.path(tmp_path)
    monkeypatch.setattr(results, "code_fingerprint", lambda: "another-code-version")
    assert d.path(tmp_path) != before


def test_code_fingerprint_is_stable_within_a_checkout():
    results.code_fingerprint.cache_clear()
    a = results.code_fingerprint()
    results.code_fingerprint.cache_clear()
    assert results.code_fingerprint() == a and len(a) == 16


def test_git_changed_files_are_the_tracked_files_git_reports(tmp_path, monkeypatch):
    """git_changed_files (the benchmark report's header, a run's "-dirty" commit): the
    tracked files with uncommitted changes, untracked ones left out (as pytest-benchmark's
    "dirty"), a renamed file by its new path; None outside git."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # no repository above
    assert results.git_changed_files(tmp_path) is None
    git("init", "-q")
    (tmp_path / "results").mkdir()
    for name in ("results/benchmarks.md", "code.py", "old.py"):
        (tmp_path / name).write_text("a\n")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    assert results.git_changed_files(tmp_path) == []
    (tmp_path / "results/benchmarks.md").write_text("b\n")
    (tmp_path / "untracked.py").write_text("u\n")
    assert results.git_changed_files(tmp_path) == ["results/benchmarks.md"]
    (tmp_path / "code.py").write_text("b\n")
    git("mv", "old.py", "new.py")
    assert results.git_changed_files(tmp_path) == ["code.py", "new.py", "results/benchmarks.md"]
