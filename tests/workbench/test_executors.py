"""Worker processes die with memsim: after ``kill -9`` of a ``--jobs 2`` compare, no
worker and no resource tracker stays behind. Every wait here is bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsim.workbench.runs.executors import PARENT_POLL_S

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc), children first."""
    parent_of: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parent_of[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = [], [pid]
    while frontier:
        kids = [c for c, p in parent_of.items() if p in frontier]
        out += kids
        frontier = kids
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def test_kill_9_of_a_parallel_compare_leaves_no_process(tmp_path):
    stream = "synthetic:steady,episodes=400,queries=40,facts=40,horizon=60"
    argv = [sys.executable, "-m", "memsim", "compare", "--policies", "keep-all,recency"]
    argv += ["--scenarios", stream, "--seeds", "0:400", "--jobs", "2", "--quiet"]
    argv += ["--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kids: list[int] = []
    try:
        # two workers (plus the resource tracker) once the pool is up and busy
        assert _wait(lambda: len(_children(proc.pid)) >= 3, 90), (
            f"the pool never started: {proc.poll()=}"
        )
        time.sleep(1.0)  # let the workers get into a run
        kids = _children(proc.pid)
        assert proc.poll() is None, "compare ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        gone = _wait(lambda: not any(_alive(k) for k in kids), 10 + 4 * PARENT_POLL_S)
        survivors = [k for k in kids if _alive(k)]
        assert gone, f"still alive after kill -9 of memsim: {survivors}"
    finally:
        for k in [proc.pid, *kids, *_children(proc.pid)]:  # never leave one behind
            if _alive(k):
                os.kill(k, signal.SIGKILL)
        proc.wait(10)


def test_the_watchdog_ends_a_worker_whose_parent_is_gone():
    """The initializer itself: a process whose recorded parent is not its parent exits."""
    code = (
        "from memsim.workbench.runs.executors import die_with_parent\n"
        "import time\n"
        "die_with_parent(1, deathsig=False)\n"
        "time.sleep(30)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], timeout=30)
    assert r.returncode == 1
