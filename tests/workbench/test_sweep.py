"""Sweeps: points within declared ranges, sweep files, failures recorded, same bytes on every
executor, compare --param per policy."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memsim.engine.errors import ParamError
from memsim.workbench.cli.main import main
from memsim.workbench.runs import execution
from memsim.workbench.runs.executors import LOCAL_CLUSTER_CONFIG, dask_executor
from memsim.workbench.studies.sweep import (
    SweepSpec,
    declared_ranges,
    load_sweep_file,
    points,
    sweep,
    wide,
)

SMALL = "synthetic:churn,episodes=300,queries=20,facts=30,horizon=30"


@pytest.mark.parametrize("method", ["grid", "random", "lhs"])
def test_points_stay_inside_the_declared_ranges_and_are_reproducible(method):
    s = SweepSpec("pai", {"prune_threshold": None, "fallback_importance": None}, method, n=6)
    pts = points(s)
    assert pts == points(s)
    assert len(pts) == (36 if method == "grid" else 6)
    lo, hi, _ = declared_ranges("pai")["prune_threshold"]
    assert all(lo <= p["prune_threshold"] <= hi for p in pts)
    assert all(isinstance(p["fallback_importance"], int) for p in pts)


def test_latin_hypercube_puts_one_sample_in_each_stratum():
    pts = points(SweepSpec("pai", {"prune_threshold": (0.0, 1.0)}, "lhs", n=10, seed=3))
    strata = sorted(int(p["prune_threshold"] * 10) for p in pts)
    assert strata == list(range(10))


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"no_such": None}, "has no parameter 'no_such'"),
        ({"prune_threshold": (0.5, 2.0)}, "outside its declared range"),
        ({}, "empty grid"),
        ({"prune_threshold": []}, "empty list"),
    ],
)
def test_bad_sweeps_name_the_problem(fields, match):
    with pytest.raises(ParamError, match=match):
        points(SweepSpec("pai", fields))


def test_a_failing_run_is_recorded_and_the_rest_go_on():
    t = sweep(SweepSpec("pai", {"prune_threshold": [0.05]}), [SMALL, "synthetic:nope"], [0])
    runs = t.drop_duplicates(["scenario"])
    assert list(runs["error"] == "") == [True, False]
    assert "unknown synthetic profile" in runs["error"].iloc[1]
    assert (wide(t)["scenario"] == SMALL).all()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_serial_processes_and_dask_give_the_same_bytes(tmp_path):
    args = [
        "sweep",
        "--policy",
        "pai",
        "--field",
        "prune_threshold=0.02:0.2",
        "--n",
        "2",
        "--scenarios",
        SMALL,
        "--seeds",
        "0,1",
        "--quiet",
        "--no-resume",
    ]
    outs = {}
    for name, extra in [("serial", []), ("jobs", ["--jobs", "2"]), ("dask", ["--dask", "local:2"])]:
        out = tmp_path / name
        assert main([*args, *extra, "--out", str(out)]) == 0
        outs[name] = _sha(out / "sweep.parquet")
    assert outs["serial"] == outs["jobs"] == outs["dask"]


def test_sweep_file_errors_name_file_field_and_value(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("- not a mapping\n")
    assert main(["sweep", str(f)]) == 2
    err = capsys.readouterr().err
    assert "s.yaml" in err and "must be a mapping" in err and "Traceback" not in err
    f.write_text("scenarios: [x]\npolicies: {pai: {fields: {prune_threshold: [0.5, 9]}}}\n")
    with pytest.raises(ParamError, match=r"s.yaml.*prune_threshold.*outside"):
        load_sweep_file(f)
    f.write_text("scenarios: [x]\npolicies: {pai: {fields: {}}}\n")
    with pytest.raises(ParamError, match=r"policies.pai.fields: empty grid"):
        load_sweep_file(f)
    assert main(["sweep", str(tmp_path / "missing.yaml")]) == 2


def test_sweep_file_round_trip(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        f"scenarios: ['{SMALL}']\nseeds: [0]\npolicies:\n  pai:\n    method: grid\n    n: 2\n"
        "    fields:\n      prune_threshold: [0.05, 0.1]\n"
        "      fallback_importance: {values: [3]}\n"
    )
    specs, scenarios, seeds, llm = load_sweep_file(f)
    assert llm == {}
    assert scenarios == [SMALL] and seeds == [0]
    assert points(specs[0]) == [
        {"prune_threshold": 0.05, "fallback_importance": 3},
        {"prune_threshold": 0.1, "fallback_importance": 3},
    ]


def _sweep_on_dask(address: str) -> int:
    """memsim sweep's exit code for a small pai sweep sent to ``--dask address``."""
    argv = ["sweep", "--policy", "pai", "--field", "prune_threshold", "--scenarios", SMALL]
    return main(argv + ["--dask", address, "--out", "/tmp/never"])


def _worker_config() -> dict[str, object]:
    import dask

    return {k: dask.config.get(k) for k in LOCAL_CLUSTER_CONFIG}


def test_the_local_cluster_workers_run_without_the_dashboard_samplers():
    """Nothing reads them without a dashboard, and they slowed every run (bench_sweep.py)."""
    pytest.importorskip("dask.distributed")
    with dask_executor("local:1") as ex:
        assert ex is not None
        assert ex.submit(_worker_config).result() == LOCAL_CLUSTER_CONFIG


def test_malformed_dask_address_is_a_one_line_error(capsys):
    assert _sweep_on_dask("not an address") == 2
    assert "expected local:N" in capsys.readouterr().err


def test_compare_param_applies_to_one_policy_only():
    defs = execution.grid(["keep-all", "pai"], [SMALL], [0], params={"pai.prune_threshold": 0.2})
    assert dict(defs[0].params) == {} and dict(defs[1].params) == {"prune_threshold": 0.2}
    with pytest.raises(ParamError, match="not being compared"):
        execution.grid(["pai"], [SMALL], [0], params={"cosmo.x": 1})


def test_compare_param_flag_types_and_checks_the_value(tmp_path, capsys):
    out = tmp_path / "c"
    code = main(
        [
            "compare",
            "--policies",
            "pai",
            "--scenarios",
            SMALL,
            "--quiet",
            "--out",
            str(out),
            "--param",
            "pai.prune_threshold=7",
        ]
    )
    assert code == 2 and "prune_threshold" in capsys.readouterr().err


def test_a_peer_that_is_not_a_scheduler_is_a_one_line_error(capsys):
    """A service that answers garbage (not a closed port) made distributed try to allocate an
    exabyte frame: the traceback reached the user. It must be the one-line error."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def answer_garbage() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"\xff" * 64)
                except OSError:
                    pass

    threading.Thread(target=answer_garbage, daemon=True).start()
    try:
        code = _sweep_on_dask(f"tcp://127.0.0.1:{port}")
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"tcp://127.0.0.1:{port}" in err and len(err.strip().splitlines()) == 1


def test_a_sweep_runs_through_the_index_it_is_given(tmp_path):
    """--index for sweeps: every run of the sweep carries the settings and its
    manifest the audit; mode exact of a policy that is exact anyway is its plain runs; a mode
    no search of the policy goes through is refused before anything runs."""
    import json

    from memsim.workbench.studies.sweep import definitions

    pai = SweepSpec("pai", {"similar_limit": [3, 5]}, "grid", 2)
    izzie = SweepSpec("izzie", {"search_limit": [10, 20]}, "grid", 2)
    ivf = {"mode": "ivf", "min_rows": 50, "audit_every": 1}
    defs = definitions([pai], [SMALL], [0, 1], index=ivf)
    assert {d.index for _, d in defs} == {(("audit_every", 1), ("min_rows", 50), ("mode", "ivf"))}
    assert {d.index for _, d in definitions([izzie], [SMALL], [0], index={"mode": "exact"})} == {()}
    with pytest.raises(ParamError, match="no search of izzie goes through"):
        definitions([izzie], [SMALL], [0], index=ivf)
    keep = SweepSpec("recency", {"budget": [10, 20]}, "grid", 2)
    with pytest.raises(ParamError, match="no search of recency goes through"):
        definitions([keep], [SMALL], [0], index=ivf)
    t = sweep(pai, [SMALL], [0], root=tmp_path, index=ivf)
    assert (t["error"] == "").all()
    manifests = list(tmp_path.rglob("manifest.json"))
    assert len(manifests) == 2
    for m in manifests:
        audit = json.loads(m.read_text())["index_audit"]
        assert audit["mode"] == "ivf" and audit["searches"] > 0
    assert (
        main(
            ["sweep", "--policy", "recency", "--field", "budget", "--scenarios", SMALL]
            + ["--index", "mode=cones", "--out", str(tmp_path / "x")]
        )
        == 2
    )
