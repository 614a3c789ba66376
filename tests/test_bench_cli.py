"""The documented benchmark commands (``python -m benchmarks.*``): a user mistake prints one
line naming the command and what is wrong, exits 2, and never shows a traceback, as the
``memsim`` command does (memsim.workbench.cli.user_command)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memsim.engine.errors import ParamError
from memsim.workbench.results import read_json


def _bench(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench_cli")
    (d / "bad.json").write_text("x\n")
    (d / "bad.log").write_text('{"policy": "pai"}\nnope\n')
    (d / "empty.json").write_text("\n")
    return d


@pytest.mark.parametrize(
    "module, args, message",
    [
        ("simrun", ["nope", "500", "50"], "unknown policy id 'nope'"),
        ("simrun", ["pai", "500", "50", "--index", "mode=ivf,min_rows=abc"], "'abc'"),
        ("simrun", ["pai", "500", "50", "--index", "mode=hnsw"], "mode 'hnsw'"),
        ("simrun", ["pai", "500", "50", "--index", "nprobe=4"], "give mode=ivf"),
        ("simrun", ["keep-all", "500", "50", "--index", "mode=ivf"], "no search of keep-all"),
        ("fingerprint", ["nope"], "unknown policy id 'nope'"),
        ("fingerprint", ["pai", "--check", "{d}/missing.json"], "no such file: {d}/missing.json"),
        ("fingerprint", ["pai", "--check", "{d}/bad.json"], "bad.json: not JSON at line 1"),
        ("profiles", ["nope"], "unknown policy id 'nope'"),
        ("bench_scaling", ["nope"], "unknown policy id 'nope'"),
        ("bench_scaling", ["--small", "2"], "need 0 < --small < --large, got 2.0 and 1.0"),
        ("bench_scaling", ["--from-logs", "{d}/bad.log"], "bad.log: not JSON at line 2"),
        ("bench_tenyear", ["nope"], "unknown policy id 'nope'"),
        ("bench_tenyear", ["--from-json", "{d}/empty.json"], "empty.json: empty, no JSON line"),
        ("bench_actr_groups", ["--episodes", "-5"], "episodes=-5"),
        ("report", ["--from-json", "{d}/bad.json"], "bad.json: not JSON at line 1"),
    ],
)
def test_benchmark_commands_refuse_user_mistakes_in_one_line(module, args, message, files):
    r = _bench(module, *(a.format(d=files) for a in args))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m benchmarks.{module}: error: ")
    assert message.format(d=files) in lines[0]


def test_read_json_reads_a_document_lines_or_the_last_line(tmp_path):
    f = tmp_path / "runs.log"
    f.write_text('progress 1\n{"a": 1}\n\n{"b": 2}\n')
    assert read_json(f, part="last") == {"b": 2}
    with pytest.raises(ParamError, match=r"runs.log: not JSON at line 1, column 1"):
        read_json(f, part="lines")
    f.write_text('{"a": 1}\n{"b": 2}\n')
    assert read_json(f, part="lines") == [{"a": 1}, {"b": 2}]
    f.write_text('{"a": [1,\n 2,]}')
    with pytest.raises(ParamError, match=r"not JSON at line 2, column 4"):
        read_json(f)
