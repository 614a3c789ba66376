"""The documented benchmark commands (``python -m benchmarks COMMAND``): a user mistake prints one
line naming the command and what is wrong, exits 2, and never shows a traceback, as the
``memsim`` command does (memsim.workbench.cli.main.user_command)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memsim.engine.errors import ParamError
from memsim.workbench.runs.results import read_json


def _bench(command: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", command, *args],
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
    "command, args, message",
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
        ("scaling", ["nope"], "unknown policy id 'nope'"),
        ("scaling", ["--small", "2"], "need 0 < --small < --large, got 2.0 and 1.0"),
        ("scaling", ["--from-log", "{d}/bad.log"], "bad.log: not JSON at line 2"),
        ("ten-year", ["nope"], "unknown policy id 'nope'"),
        ("ten-year", ["--from-json", "{d}/empty.json"], "empty.json: empty, no JSON line"),
        ("actr-groups", ["--episodes", "-5"], "episodes=-5"),
        ("report", ["--from-json", "{d}/bad.json"], "bad.json: not JSON at line 1"),
        ("ingest-steps", ["nope", "30"], "unknown policy id 'nope'"),
        ("ingest-steps", ["pai", "30", "--rounds", "0"], "--rounds=0: need at least 1"),
        ("ingest-steps", ["pai", "365"], "day=365: need 1 <= day < 365"),
        ("ingest-steps", ["pai", "30", "_similar", "nope"], "method 'nope': policy pai has no"),
        ("ingest-steps", ["pai", "30", "llm.nope"], "method 'llm.nope': policy pai has no"),
        ("ingest-steps", ["pai", "30", "--free", "nope"], "method 'nope': policy pai has no"),
        ("ingest-steps", ["pai", "30", "nope.search"], "method 'nope.search': policy pai"),
        # (an index made on demand: checked again once warmed up, still not made on day 3)
        ("ingest-steps", ["pai", "3", "candidates._index.search"], "'candidates._index.search'"),
    ],
)
def test_benchmark_commands_refuse_user_mistakes_in_one_line(command, args, message, files):
    r = _bench(command, *(a.format(d=files) for a in args))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m benchmarks {command}: error: ")
    assert message.format(d=files) in lines[0]


def test_the_entry_point_lists_its_commands_and_refuses_an_unknown_one():
    from benchmarks.__main__ import COMMANDS

    listed = _bench("--help")
    assert listed.returncode == 0
    assert all(f"  {name} " in listed.stdout for name in COMMANDS)
    r = _bench("nope")
    assert r.returncode == 2 and "unknown command 'nope'" in r.stderr


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


def test_ingest_steps_times_outer_steps_of_both_modes_and_unwraps_them():
    """benchmarks.ingest_steps on a small day: each mode's outcomes identical (checked
    inside), the named steps' times within the day's, a step called inside another named
    one counted but not timed again, and every wrapper taken off after its round (the LLM is
    shared by the copies: a wrapper left on it would count the next round's calls twice)."""
    from benchmarks import ingest_steps

    steps = ["_process_new_belief", "_similar", "llm.summarize"]
    m = ingest_steps.measure("pai", 3, steps, rounds=2)
    for mode in (ingest_steps.BATCHED, ingest_steps.ONE_BY_ONE):
        assert len(m["days"][mode]) == len(m["wrapped_days"][mode]) == 2
        for r, day in enumerate(m["wrapped_days"][mode]):
            assert 0 < sum(m["steps"][mode][name][r] for name in steps) <= day
        assert m["steps"][mode]["_similar"] == [0.0, 0.0]  # inside _process_new_belief
        assert m["calls"][mode]["_similar"] > 0
    calls = m["calls"]
    assert calls[ingest_steps.BATCHED]["_process_new_belief"] > 0
    for name in ("_process_new_belief", "llm.summarize"):
        assert calls[ingest_steps.BATCHED][name] == calls[ingest_steps.ONE_BY_ONE][name]
    text = ingest_steps.report(m)
    assert "one-by-one / batched: " in text and "| the day |" in text
    assert "one-by-one / the named steps of the batched day: " in text
    assert m["wrapper_seconds"] > 0 and "what a wrapper records itself, ~" in text


def test_ingest_steps_free_steps_answer_from_a_recording_with_the_same_outcomes():
    """--free: each mode's free steps answer every round from one untimed run's answers
    (the outcomes checked identical inside), their work skipped; the report gives the
    free day and one-by-one's day as it is over it; a stand-in asked more often than its
    recording had answers fails rather than inventing one."""
    from benchmarks import ingest_steps

    m = ingest_steps.measure("pai", 3, ["_similar"], rounds=2, free=["_best_if_reinforced"])
    for mode in (ingest_steps.BATCHED, ingest_steps.ONE_BY_ONE):
        assert len(m["free_days"][mode]) == 2 and min(m["free_days"][mode]) > 0
    assert m["free"] == ["_best_if_reinforced"]
    text = ingest_steps.report(m)
    assert "the fastest day with _best_if_reinforced free: " in text
    assert "one-by-one as it is / that batched day: " in text
    replay = ingest_steps._replaying([(1, 0.9), None], "step")
    assert replay("anything") == (1, 0.9) and replay() is None
    with pytest.raises(AssertionError, match="free step 'step': called more often"):
        replay()


def test_ingest_steps_ratios_are_of_each_modes_fastest_rounds():
    """The days are each mode's fastest bare day; the steps those of its fastest wrapped
    round (not each step's own fastest), less what the wrappers record themselves per call;
    the ceiling one-by-one's fastest day over the batched steps' sum."""
    from benchmarks import ingest_steps as s

    m = {
        "policy": "p",
        "day": 1,
        "episodes": 2,
        "days": {s.BATCHED: [3.0, 2.0, 2.5], s.ONE_BY_ONE: [12.0, 10.0, 11.0]},
        "wrapped_days": {s.BATCHED: [3.5, 3.0, 2.5], s.ONE_BY_ONE: [13.0, 12.0, 11.5]},
        "steps": {
            s.BATCHED: {"a": [0.5, 0.2, 1.0], "b": [0.5, 0.1, 0.5]},
            s.ONE_BY_ONE: {"a": [1.0, 2.0, 3.0], "b": [1.0, 1.0, 1.0]},
        },
        "calls": {s.BATCHED: {"a": 2, "b": 3}, s.ONE_BY_ONE: {"a": 4, "b": 6}},
        "wrapper_seconds": 0.0,
    }
    best = s.fastest(m)
    assert best[s.BATCHED] == {"day": 2.0, "steps": {"a": 1.0, "b": 0.5}, "named": 1.5}
    assert best[s.ONE_BY_ONE]["day"] == 10.0 and best[s.ONE_BY_ONE]["named"] == 4.0
    assert s.ceiling(m) == 10.0 / 1.5
    m["wrapper_seconds"] = 0.1  # a: 2 calls batched, b: 3
    assert s.fastest(m)[s.BATCHED]["steps"] == pytest.approx({"a": 0.8, "b": 0.2})
    assert s.ceiling(m) == pytest.approx(10.0 / 1.0)
    # bench_ingest's: the day one at a time its own, the steps' runs only (no bare day)
    assert s.ceiling(m, 8.0) == pytest.approx(8.0 / 1.0)
    wrapped_only = {**m, "days": {s.BATCHED: [], s.ONE_BY_ONE: []}}
    assert s.fastest(wrapped_only)[s.BATCHED]["named"] == pytest.approx(1.0)
    assert s.ceiling(wrapped_only, 8.0) == pytest.approx(8.0)
    text = s.report(m)
    assert "| a | 2 | 800.00 | 4 | 2600.00 |" in text
    assert "| the day | | 2000.00 | | 10000.00 |" in text
    assert "one-by-one / batched: 5.00x" in text
