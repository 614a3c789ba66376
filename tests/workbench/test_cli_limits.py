"""Inputs beyond the limits (docs/limits.md), through the command line: each is refused before
any run, in one line naming the file or flag, the field, the value and the limit, exit 2; or
it runs correctly. In-process (``main``), so each case costs well under a second."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from memsim.workbench.cli.main import main

SMALL = "synthetic:churn,episodes=200,queries=20,facts=20,horizon=30"
BASE = {
    "name": "limits",
    "horizon": 12,
    "episodes": [
        {
            "id": "e1",
            "time": 0,
            "text": "Call me Masa",
            "claims": [{"key": "owner.name", "value": "Masa"}],
        }
    ],
    "queries": [{"id": "q1", "time": 2, "text": "my name?", "keys": ["owner.name"]}],
}
SWEEP = {
    "scenarios": [SMALL],
    "seeds": [0],
    "policies": {"pai": {"method": "grid", "n": 2, "fields": {"prune_threshold": [0.01, 0.2]}}},
}


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    """Run ``memsim ARGV``; assert exit 2 with one short ``memsim: error:`` line holding
    every one of ``parts``, within a few seconds; return the line."""
    start = time.perf_counter()
    code = main(argv)
    took = time.perf_counter() - start
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, (code, err[-500:])
    assert len(lines) == 1 and lines[0].startswith("memsim: error:"), err[-500:]
    assert len(lines[0]) < 400, lines[0][:500]
    for part in parts:
        assert part in lines[0], (part, lines[0])
    assert took < 10, f"refused only after {took:.1f} s"
    return lines[0]


def _run(scenario: str) -> list[str]:
    return ["run", "--policy", "pai", "--scenario", scenario]


def _compare(tmp: Path, *more: str) -> list[str]:
    return ["compare", "--policies", "keep-all", "--scenarios", "scripted/name-preference"] + [
        "--quiet",
        "--out",
        str(tmp / "c"),
        "--cache",
        str(tmp / "cache"),
        *more,
    ]


# -- sizes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", ["compare", "sweep", "robustness", "drift", "sensitivity", "tune"])
def test_too_many_seeds_are_refused_up_front_with_the_size_and_the_limit(verb, tmp_path, capsys):
    flag = "--train-seeds" if verb == "tune" else "--seeds"
    argv = {
        "compare": _compare(tmp_path),
        "sweep": ["sweep", "--policy", "pai", "--field", "prune_threshold", "--scenarios", SMALL],
        "robustness": ["robustness", "--policies", "pai,keep-all"],
        "drift": ["drift"],
        "sensitivity": ["sensitivity", "--policies", "pai", "--scenarios", SMALL],
        "tune": ["tune", "--policies", "pai", "--scenarios", SMALL],
    }[verb] + [flag, "0:10000000000", "--out", str(tmp_path / "o")]
    refused(argv, capsys, flag, "10,000,000,000 seeds asked", "the limit is 10,000")


@pytest.mark.parametrize(
    "seeds, part",
    [
        ("-3", "got -3"),
        ("x", "cannot read 'x'"),
        ("5:0", "'5:0' names no seed"),
        (str(2**64), "got 18446744073709551616"),
    ],
)
def test_bad_seed_lists_are_one_line(seeds, part, tmp_path, capsys):
    refused(_compare(tmp_path, "--seeds", seeds), capsys, "--seeds", part)


@pytest.mark.parametrize("verb", ["run", "check", "curve"])
@pytest.mark.parametrize("seed", ["-1", str(2**64), "1e3"])
def test_one_seed_is_an_integer_from_0_to_2_63(verb, seed, capsys):
    argv = {
        "run": _run("scripted/name-preference"),
        "check": ["check", "scripted/name-preference"],
        "curve": ["curve", "pai", "--days", "0:5:1"],
    }[verb]
    refused(argv + ["--seed", seed], capsys, "--seed")


@pytest.mark.parametrize(
    "option, part",
    [
        ("episodes=1000000000", "episodes=1000000000 is outside [1, 1000000]"),
        ("bursts=1000000000", "bursts=1000000000 is outside [1, 1000]"),
        ("queries=1000000000", "queries=1000000000 is outside [0, 1000000]"),
        ("topics=1000000000", "is outside [1, 100000]"),
        ("k=1000000000000", "k=1000000000000 is outside [1, 1000000]"),
        ("horizon=1e300", "is outside [1.0, 1000000000]"),
        ("episodes=1e400", "cannot read '1e400' as int"),
        ("episodes=" + "9" * 5000, "(5000 characters)"),
    ],
)
def test_synthetic_specs_are_capped_as_files_are(option, part, capsys):
    refused(_run(f"synthetic:churn,{option}"), capsys, "synthetic:churn", part)


def test_a_scenario_file_is_refused_by_its_expanded_size_before_it_is_built(tmp_path, capsys):
    items = [{"id": f"r{j}_{{i}}", "time": 0, "text": "x", "repeat": 100_000} for j in range(21)]
    f = tmp_path / "repeat.yaml"
    f.write_text(yaml.safe_dump({**BASE, "episodes": BASE["episodes"] + items}))
    refused(_run(str(f)), capsys, "repeat.yaml", "2,100,002 events", "the limit is 200,000")


def test_sobol_and_sweep_sizes_are_refused_before_sampling(tmp_path, capsys):
    out = ["--out", str(tmp_path / "o")]
    sens = ["sensitivity", "--policies", "pai", "--scenarios", SMALL]
    refused(sens + ["--sobol", "1099511627776"] + out, capsys, "--sobol", "[1, 65536]")
    sweep = ["sweep", "--policy", "pai", "--field", "prune_threshold", "--scenarios", SMALL]
    refused(sweep + ["--n", "100000"] + out, capsys, "--n", "[1, 10000]")
    grid = sweep + ["--field", "grey_lo", "--field", "link_lo", "--n", "100"] + out
    refused(grid, capsys, "1,000,000 points asked; the limit is 10,000")
    tune = ["tune", "--policies", "pai", "--scenarios", SMALL, "--trials", "1000000000"]
    refused(tune + out, capsys, "--trials", "[1, 10000]")


# -- numbers ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "field, value",
    [("horizon", "9" * 400), ("time", "9" * 400), ("importance", "9" * 400), ("k", "9" * 400)],
)
def test_numbers_beyond_float_range_in_a_scenario_file(field, value, tmp_path, capsys):
    text = yaml.safe_dump(BASE)
    text = {
        "horizon": text.replace("horizon: 12", f"horizon: {value}"),
        "time": text.replace("time: 2", f"time: {value}"),
        "importance": text.replace("value: Masa", f"value: Masa\n    importance: {value}"),
        "k": text.replace("keys:", f"k: {value}\n  keys:"),
    }[field]
    f = tmp_path / "big.yaml"
    f.write_text(text)
    refused(_run(str(f)), capsys, "big.yaml", field, "400 digits")


def test_llm_and_param_numbers(capsys):
    run = _run("scripted/name-preference")
    refused(run + ["--llm", "faults.embed_fail=1e400"], capsys, "--llm faults.embed_fail", "inf")
    refused(run + ["--param", "reflect_every=1e400"], capsys, "reflect_every")
    long = refused(run + ["--param", "reflect_every=" + "1" * 5000], capsys, "reflect_every")
    assert "5000 characters" in long
    # a period of 5e-324 days meets the maintenance budget, named
    refused(run + ["--param", "reflect_every=5e-324"], capsys, "maintenance ticks")
    # a prior the ebisu package cannot update is named, not an assertion from inside it
    ebisu = ["run", "--policy", "ebisu", "--scenario", "scripted/name-preference"]
    for beta in ("1e-10", "5e-324"):
        refused(ebisu + ["--param", f"beta={beta}"], capsys, "EbisuParams", "beta=")


def test_a_huge_spread_runs_as_the_widest_one(tmp_path, capsys):
    """bands.spread beyond the square root of a block's width leaves one coordinate active
    whatever its value: 1e300 runs, and gives the bytes of 1e6."""
    tables = []
    for spread in ("1e300", "1e6"):
        out = tmp_path / spread
        argv = _run("scripted/name-preference") + ["--llm", f"bands.spread={spread}"]
        assert main(argv + ["--out", str(out)]) == 0, capsys.readouterr().err
        tables.append(pd.read_parquet(next(out.rglob("queries.parquet"))))
    pd.testing.assert_frame_equal(*tables)


# -- files and encodings ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, text, part",
    [
        ("nul.yaml", "name: x\x00\n", "unacceptable character #x0000"),
        ("ctrl.yaml", 'name: "x\\x01"\n', "control character (U+0001)"),
        ("surrogate.yaml", 'name: "e\\ud800"\n', "lone surrogate (U+D800)"),
        ("note.yaml", "name: x\nnote: " + "n" * 2_000_000 + "\n", "2,000,000 characters"),
        ("bomb.yaml", "a: &a [x, x]\nepisodes: *a\n", "anchors and aliases"),
        ("dup.yaml", yaml.safe_dump(BASE) + "horizon: 30\n", "duplicate key 'horizon'"),
        ("deep.yaml", "episodes: " + "[" * 5000 + "]" * 5000, "nested more than 40"),
    ],
)
def test_scenario_file_encodings_and_shapes(name, text, part, tmp_path, capsys):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    refused(_run(str(f)), capsys, name, part)


def test_paths_that_are_no_regular_file_say_what_they_are(tmp_path, capsys):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "dir.yaml").mkdir()
    refused(_run(str(loop)), capsys, "loop.yaml", "symbolic links")
    refused(_run(str(fifo)), capsys, "fifo.yaml", "FIFO")
    refused(_run(str(tmp_path / "dir.yaml")), capsys, "dir.yaml", "directory")
    refused(_run(f"locomo:{fifo}"), capsys, "LoCoMo file", "FIFO")
    refused(_run(f"locomo:{tmp_path}"), capsys, "LoCoMo file", "directory")
    refused(["sweep", str(fifo)], capsys, "sweep file", "FIFO")
    if Path("/dev/zero").exists():
        refused(_run("locomo:/dev/zero"), capsys, "character device")
        refused(["sweep", "/dev/zero"], capsys, "character device")


@pytest.mark.parametrize("suffix", [".YAML", ".Yml", ".yml"])
def test_scenario_files_are_recognised_in_any_case(suffix, tmp_path, capsys):
    f = tmp_path / f"caps{suffix}"
    f.write_text(yaml.safe_dump(BASE))
    assert main(_run(str(f)) + ["--out", str(tmp_path / "o")]) == 0, capsys.readouterr().err


def test_locomo_nesting_and_encodings(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    refused(_run(f"locomo:{deep}"), capsys, "deep.json", "nested more than 40")
    surrogate = tmp_path / "surrogate.json"
    surrogate.write_text('[{"sample_id": "s\\ud800"}]')
    refused(_run(f"locomo:{surrogate}"), capsys, "surrogate.json", "lone surrogate")
    refused(_run(f"locomo:{deep},k=1000000000000"), capsys, "k", "[1, 1000000]")
    mini = Path(__file__).resolve().parents[1] / "data" / "locomo-mini.json"
    days = "9" * 400
    refused(_run(f"locomo:{mini},query_time=evidence+{days}"), capsys, "query_time", "400")


# -- sweep files ------------------------------------------------------------------------------
def _sweep_file(tmp: Path, doc: dict | str, name: str = "s.yaml") -> str:
    f = tmp / name
    f.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(f)


@pytest.mark.parametrize(
    "doc, part",
    [
        (
            "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nscenarios: *b\n",
            "anchors and aliases",
        ),
        (yaml.safe_dump(SWEEP) + "seeds: [1]\n", "duplicate key 'seeds'"),
        ("scenarios: " + "[" * 5000 + "]" * 5000, "nested more than 40"),
        (yaml.safe_dump({**SWEEP, "seeds": [2**64]}), "seeds[0]"),
        (yaml.safe_dump({**SWEEP, "seeds": list(range(10_001))}), "10,001 seeds given"),
        (yaml.safe_dump({**SWEEP, "llm": {"faults.nosuch": 1}}), "llm"),
        (yaml.safe_dump({**SWEEP, "llm": {"faults.embed_fail": 2}}), "embed_fail"),
    ],
)
def test_sweep_file_refusals(doc, part, tmp_path, capsys):
    refused(["sweep", _sweep_file(tmp_path, doc)], capsys, "s.yaml", part)


def _sweep_recall(tmp: Path, argv: list[str]) -> pd.DataFrame:
    out = tmp / "out"
    assert main(argv + ["--quiet", "--out", str(out)]) == 0
    return pd.read_parquet(out / "sweep.parquet")


def test_a_sweep_files_llm_is_applied_as_compare_applies_it(tmp_path, capsys):
    faulty = {**SWEEP, "llm": {"faults.embed_fail": 1}}
    table = _sweep_recall(tmp_path / "a", ["sweep", _sweep_file(tmp_path, faulty)])
    clean = _sweep_recall(tmp_path / "b", ["sweep", _sweep_file(tmp_path, SWEEP, "c.yaml")])
    recall = {
        name: t[t.metric == "recall"].value.mean() for name, t in (("f", table), ("c", clean))
    }
    assert recall["f"] < recall["c"], recall


def test_the_command_lines_seeds_replace_the_files(tmp_path, capsys):
    table = _sweep_recall(tmp_path, ["sweep", _sweep_file(tmp_path, SWEEP), "--seeds", "3,4"])
    assert sorted(table.seed.unique()) == [3, 4]


def test_a_sweep_whose_every_run_failed_exits_2(tmp_path, capsys):
    bad = {**SWEEP, "scenarios": [SMALL + ",nosuch=1"]}
    line = refused(
        ["sweep", _sweep_file(tmp_path, bad), "--quiet", "--out", str(tmp_path / "o")],
        capsys,
        "every one of the 2 runs failed",
        "nosuch",
    )
    assert (tmp_path / "o" / "sweep.parquet").exists(), line  # nothing lost


# -- workers ----------------------------------------------------------------------------------
def test_worker_counts_are_bounded(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:  # argparse's type: usage and one error line
        main(_compare(tmp_path, "--jobs", "1000000000"))
    assert e.value.code == 2
    assert "at most 256 worker processes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(_compare(tmp_path, "--jobs", "9" * 5000))
    assert len(capsys.readouterr().err) < 1000
    # (compare says where runs are cached before it starts the executor: the last line)
    for dask, part in (("local:100000", "100,000 workers asked"), ("local:" + "9" * 5000, "5000")):
        assert main(_compare(tmp_path, "--dask", dask)) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("memsim: error: --dask") and part in last and len(last) < 300
