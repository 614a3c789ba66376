"""benchmarks.bench_scaling's table from repeated runs (``--repeat``): each policy and size
counts as its fastest run, so one run slowed by the machine's other jobs does not decide
whether a policy meets the growth target."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import bench_scaling as bs
from memsim.engine.errors import ParamError


def _result(wall: float, cpu: float, ingest: float = 0.5) -> dict:
    return {
        "run_seconds": wall,
        "run_cpu_seconds": cpu,
        "store_rows": 10,
        "timings": {"total": 1.0, "ingest": ingest, "recall": 1.0 - ingest, "maintain": 0.0},
    }


def _records(times: dict[tuple[str, float, str], list[tuple[float, float]]]) -> list[dict]:
    return [
        {"policy": p, "scale": sc, "when": w, "result": _result(wall, cpu, ingest=0.1 * i)}
        for (p, sc, w), runs in times.items()
        for i, (wall, cpu) in enumerate(runs)
    ]


def test_fastest_takes_the_least_cpu_run_and_the_least_wall_time():
    runs = [_result(5.0, 4.0, 0.2), _result(3.0, 4.5, 0.3), _result(6.0, 3.5, 0.4)]
    got = bs.fastest(runs)
    assert got["run_cpu_seconds"] == 3.5
    assert got["run_seconds"] == 3.0
    assert got["timings"]["ingest"] == 0.4  # the least-CPU run's shares
    assert got["repeats"] == 3
    assert runs[2]["run_seconds"] == 6.0  # the inputs are left as they were


def test_pytest_path_keeps_the_fastest_of_its_small_runs(monkeypatch):
    """The scaling benchmark through pytest (the benchmark report's path) runs the small size
    SMALL_RUNS times and keeps the fastest; the large size once."""
    runs = iter([_result(5.0, 4.0), _result(3.0, 3.2), _result(4.0, 3.9)])
    asked: list[tuple[str, float]] = []

    def fake(policy: str, scale: float) -> dict:
        asked.append((policy, scale))
        return next(runs)

    monkeypatch.setattr(bs, "measure", fake)
    monkeypatch.setattr(bs, "SMALL_RUNS", 3)
    got = bs.measure_small("actr")
    assert asked == [("actr", bs.SMALL)] * 3
    assert (got["run_seconds"], got["run_cpu_seconds"], got["repeats"]) == (3.0, 3.2, 3)


def test_rows_of_a_repeated_log_use_each_size_fastest_run():
    records = _records(
        {
            ("keep-all", 0.1, "first"): [(1.0, 1.0), (0.8, 0.9)],
            ("keep-all", 1.0, "first"): [(14.0, 13.0), (12.0, 12.0)],
            ("recency", 0.1, "run"): [(2.0, 2.0), (1.0, 1.0), (1.5, 1.4)],
            ("recency", 1.0, "run"): [(20.0, 19.0), (13.0, 12.5), (30.0, 29.0)],
            ("keep-all", 1.0, "last"): [(12.0, 12.0), (16.0, 15.0)],
        }
    )
    rows, ref = bs._rows_of_log(records, 0.1, 1.0)
    by = {r["policy"]: r for r in rows}
    assert ref == {"first": 12.0, "last": 12.0}
    rec = by["recency"]
    assert rec["small_seconds"] == 1.0 and rec["large_seconds"] == 13.0
    assert math.isclose(rec["exponent"], math.log10(13.0))
    assert math.isclose(rec["exponent_cpu"], math.log10(12.5))
    assert math.isclose(rec["ratio_cpu"], 12.5 / 12.0)
    assert rec["repeats"] == (3, 3) and by["keep-all"]["repeats"] == (2, 2)
    text = bs.table(rows, ref, 0.1, 1.0, "cmd")
    assert "at least 2 at the small size, 2 at the large" in text  # the fewest of any row


def test_a_log_without_repeats_reads_as_before():
    records = _records(
        {
            ("keep-all", 0.1, "first"): [(1.0, 1.0)],
            ("keep-all", 1.0, "first"): [(12.0, 12.0)],
            ("pai", 0.1, "run"): [(2.0, 2.0)],
            ("pai", 1.0, "run"): [(30.0, 29.0)],
        }
    )
    rows, ref = bs._rows_of_log(records, 0.1, 1.0)
    assert [r["policy"] for r in rows] == ["keep-all", "pai"]
    assert rows[1]["large_seconds"] == 30.0 and rows[1]["repeats"] == (1, 1)
    assert ref == {"first": 12.0, "last": None}
    assert "fastest of" not in bs.table(rows, ref, 0.1, 1.0, "cmd")


def test_from_log_builds_the_table_of_a_repeated_log(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    records = _records(
        {
            ("keep-all", 0.1, "first"): [(1.0, 1.0), (0.9, 0.9)],
            ("keep-all", 1.0, "first"): [(12.0, 12.0), (11.0, 11.0)],
            ("ebisu", 0.1, "run"): [(1.5, 1.5), (1.2, 1.2)],
            ("ebisu", 1.0, "run"): [(19.0, 19.0), (15.0, 15.0)],
        }
    )
    header = {"command": "cmd --repeat 2", "code": "abc", "started": "2026-01-02 03:04"}
    header |= {"small": 0.1, "large": 1.0}
    log.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))
    assert bs.main(["--from-log", str(log), "--no-write"]) == 0
    out = capsys.readouterr().out
    assert "| ebisu | 1.20 | 15.00 |" in out
    assert "`cmd --repeat 2` on 2026-01-02 03:04 UTC, code at commit abc" in out


def test_from_log_refuses_a_log_without_its_header(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"policy": "pai", "scale": 0.1, "when": "run"}) + "\n")
    with pytest.raises(ParamError, match="no header line"):
        bs.main(["--from-log", str(log), "--no-write"])


@pytest.mark.parametrize("flag", ["--repeat", "--repeat-small"])
@pytest.mark.parametrize("bad", ["0", "-1"])
def test_repeat_below_one_is_refused(flag, bad):
    # (the command prints it in one line and exits 2: tests/benchmarks/test_commands.py)
    with pytest.raises(ParamError, match=f"--repeat must be >= 1, got {bad}"):
        bs.main([flag, bad, "--no-write"])


def _fake_measure(monkeypatch, calls):
    """bench_scaling.measure replaced: each call recorded, its seconds from a counter (the
    small size's runs get slower, so only the first of them is the fastest)."""

    def measure(pid, scale):
        calls.append((pid, scale))
        t = (1.0 if scale < 0.5 else 10.0) + len(calls) / 100
        return _result(t, t)

    monkeypatch.setattr(bs, "measure", measure)


def test_repeat_small_runs_the_small_size_more_often(tmp_path, monkeypatch, capsys):
    calls: list[tuple[str, float]] = []
    _fake_measure(monkeypatch, calls)
    log = tmp_path / "log.jsonl"
    args = ["pai", "--repeat", "2", "--repeat-small", "3", "--no-write", "--log", str(log)]
    assert bs.main(args) == 0
    assert calls.count(("pai", 0.1)) == 3 and calls.count(("pai", 1.0)) == 2
    assert calls.count(("keep-all", 0.1)) == 3 and calls.count(("keep-all", 1.0)) == 4
    out = capsys.readouterr().out
    assert "--repeat 2 --repeat-small 3 pai" in out
    assert "at least 3 at the small size, 2 at the large" in out
    assert len(log.read_text().splitlines()) == 1 + len(calls)  # its header first


def test_a_run_writes_its_log_afresh_and_from_log_rebuilds_its_table(tmp_path, monkeypatch, capsys):
    """One log per run: a second run replaces the first's log; --from-log of it gives the
    run's own table (same command, code and time)."""
    calls: list[tuple[str, float]] = []
    _fake_measure(monkeypatch, calls)
    log = tmp_path / "log.jsonl"
    out_md = tmp_path / "benchmarks.md"
    monkeypatch.setattr(bs, "OUT_MD", out_md)
    monkeypatch.setattr(bs, "LOG", log)
    assert bs.main(["pai", "--code", "c0de"]) == 0
    assert bs.main(["ebisu", "--code", "c0de"]) == 0
    lines = log.read_text().splitlines()
    assert json.loads(lines[0])["command"].endswith("scaling ebisu")
    assert len(lines) == 1 + 5  # the header; keep-all first at both sizes, ebisu, keep-all last
    measured = out_md.read_text()
    capsys.readouterr()
    out_md.unlink()
    assert bs.main(["--from-log"]) == 0
    assert out_md.read_text() == measured
