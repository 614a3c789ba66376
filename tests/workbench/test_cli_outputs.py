"""Output targets of every command that writes: refused before any work, in one line naming
the flag and the path (exit 2); and what can only fail later (a full disk, a file-size limit,
a reader that left, SIGTERM) ends in one line too, never a traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsim.workbench.cli.main import TERMINATED, main

SCENARIO = "scripted/name-preference"
FOLDER, FILE = "folder", "file"

# command -> (its arguments but the targets, {target flag: what it names})
WRITERS: dict[str, tuple[list[str], dict[str, str]]] = {
    "run": (["run", "--policies", "pai", "--scenario", SCENARIO], {"--out": FOLDER}),
    "compare": (
        ["compare", "--policies", "pai", "--scenarios", SCENARIO],
        {"--out": FOLDER, "--cache": FOLDER},
    ),
    "sweep": (
        ["sweep", "--policies", "pai", "--field", "prune_threshold", "--scenarios", SCENARIO],
        {"--out": FOLDER, "--cache": FOLDER},
    ),
    "tune": (
        ["tune", "--policies", "pai", "--scenarios", SCENARIO, "--trials", "1"],
        {"--out": FOLDER},
    ),
    "sensitivity": (
        ["sensitivity", "--policies", "pai", "--scenarios", SCENARIO, "--n", "2"],
        {"--out": FOLDER},
    ),
    "robustness": (
        ["robustness", "--policies", "pai,keep-all", "--scenarios", SCENARIO, "--grid", "small"],
        {"--out": FILE, "--cache": FOLDER},
    ),
    "claims": (["claims"], {"--out": FOLDER}),
    "figures": (["figures", "--no-curves"], {"--out": FOLDER}),
    "drift": (["drift", "--scenarios", SCENARIO], {"--out": FILE, "--cache": FOLDER}),
    "bands": (["bands", "--embedder", "hashed"], {"--out": FILE, "--json": FILE}),
}


def unwritable_folder(tmp: Path) -> Path | None:
    """A folder this process cannot create files in: sysfs (refused even to root), else one
    without write permission (refused to anyone but root); None when there is neither."""
    probe = Path("/sys/memsim-probe")
    if Path("/sys").is_dir():
        try:
            probe.touch()
        except OSError:
            return Path("/sys")
        probe.unlink()
    if os.geteuid() == 0:
        return None
    locked = tmp / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    return locked


def bad_targets(tmp: Path, kind: str) -> dict[str, tuple[Path, str]]:
    """name -> (a target that cannot be written as ``kind``, a word the refusal must say)."""
    a_file = tmp / "a-file.txt"
    a_file.write_text("kept\n")
    a_folder = tmp / "a-folder"
    a_folder.mkdir(exist_ok=True)
    out = {
        "under a file": (a_file / "sub" / "out.md", "not a folder"),
        "a broken link above it": (tmp / "dangling" / "out.md", "broken link"),
    }
    link = tmp / "dangling"
    if not link.is_symlink():
        link.symlink_to(tmp / "nowhere")
    if kind == FOLDER:
        out["an existing file"] = (a_file, "is a file")
    else:
        out["an existing folder"] = (a_folder, "is a folder")
    locked = unwritable_folder(tmp)
    if locked is not None:
        out["in an unwritable folder"] = (locked / "memsim-out" / "x.md", "cannot write")
        if kind == FOLDER:
            out["an unwritable folder"] = (locked, "cannot write")
    return out


def test_every_writing_command_is_covered():
    from memsim.workbench.cli.main import VERBS

    stdout_only = {"list", "params", "check", "curve"}  # they write to stdout only
    assert {v[0] for v in VERBS} == set(WRITERS) | stdout_only


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_an_output_target_that_cannot_be_written_is_refused_before_any_work(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture
):
    tmp = tmp_path_factory.mktemp("targets")
    command = data.draw(st.sampled_from(sorted(WRITERS)))
    args, targets = WRITERS[command]
    flag = data.draw(st.sampled_from(sorted(targets)))
    cases = bad_targets(tmp, targets[flag])
    name = data.draw(st.sampled_from(sorted(cases)))
    target, word = cases[name]
    # the other targets are good ones, inside the temporary folder
    others = [x for f in targets if f != flag for x in (f, str(tmp / f"ok{f}"))]
    before = sorted(p.name for p in tmp.iterdir())
    start = time.monotonic()
    code = main([*args, *others, flag, str(target)])
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2, (command, flag, name, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memsim: error: "), err
    assert flag in lines[0] and str(target) in lines[0] and word in lines[0], lines[0]
    assert took < 5.0, f"{command} {flag} {name}: refused only after {took:.1f} s"
    assert sorted(p.name for p in tmp.iterdir()) == before  # nothing made
    assert (tmp / "a-file.txt").read_text() == "kept\n"


@pytest.mark.parametrize(
    ("command", "flag"), [(c, f) for c, (_, targets) in sorted(WRITERS.items()) for f in targets]
)
def test_an_empty_output_target_names_nothing(command, flag, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an empty path must not mean this folder
    args, targets = WRITERS[command]
    others = [x for f in targets if f != flag for x in (f, str(tmp_path / f"ok{f}"))]
    assert main([*args, *others, flag, ""]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"memsim: error: {flag} '': names no path"]
    assert not any(tmp_path.iterdir())


def memsim(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memsim", *args], capture_output=True, text=True, timeout=120, **kw
    )


def one_line_error(r: subprocess.CompletedProcess, words: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memsim: error: "), r.stderr
    assert words in lines[0]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_on_a_full_disk_is_one_line():
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "memsim", "curve", "pai", "--days", "0:2000:1"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines == ["memsim: error: writing the output: No space left on device"], r.stderr


def test_a_file_size_limit_is_one_line(tmp_path: Path):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    out = tmp_path / "curve.csv"
    with open(out, "w") as f:
        r = subprocess.run(
            [sys.executable, "-m", "memsim", "curve", "pai", "--days", "0:3000:1"],
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            preexec_fn=limit,
        )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == ["memsim: error: writing the output: File too large"]
    r = memsim(
        "run", "--policies", "pai", "--scenario", SCENARIO, "--out", str(tmp_path / "r"),
        preexec_fn=limit,
    )  # fmt: skip
    one_line_error(r, "File too large")


def test_a_reader_that_leaves_the_pipe_is_no_error():
    p = subprocess.Popen(
        [sys.executable, "-m", "memsim", "curve", "pai", "--days", "0:3000:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()  # the reader leaves, as `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0 and err == ""


@pytest.mark.slow
def test_sigterm_ends_a_parallel_compare_in_one_line_without_leaks(tmp_path: Path):
    p = subprocess.Popen(
        [
            sys.executable, "-m", "memsim", "compare", "--policies", "keep-all,pai,cosmo,izzie",
            "--scenarios", "synthetic:churn", "--seeds", "0:4", "--jobs", "2", "--quiet",
            "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    time.sleep(6)  # the workers are busy
    p.send_signal(signal.SIGTERM)
    assert p.stderr is not None
    err = p.stderr.read()
    assert p.wait(timeout=120) == TERMINATED == 143
    assert "leaked" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == "memsim: terminated"


def test_progress_lines_reach_a_log_but_never_the_results(tmp_path, monkeypatch, capsys):
    from memsim.workbench.runs import execution

    monkeypatch.setattr(execution, "PROGRESS_LINE_EVERY_S", 0.0)  # a line per run
    base = ["compare", "--policies", "keep-all,recency", "--scenarios", SCENARIO, "--seeds", "0:2"]
    written = {}
    for name, extra in (("logged", []), ("quiet", ["--quiet"])):
        out = tmp_path / name
        assert main([*base, "--out", str(out), "--cache", str(tmp_path / name / "c"), *extra]) == 0
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("runs: ")]
        assert bool(lines) == (name == "logged"), err
        written[name] = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    for name in ("summary.csv", "per_query.parquet", "summary.md"):
        assert written["logged"][name] == written["quiet"][name], name
