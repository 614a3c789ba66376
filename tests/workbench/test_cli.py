"""The command line: every verb has --help; user mistakes print one line and exit 2."""

import subprocess
import sys

import pytest

from memsim.workbench.cli.main import main

VERBS = ("list", "run", "compare", "curve", "claims", "figures", "robustness")


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "memsim", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.parametrize("verb", VERBS)
def test_help_of_every_verb(verb, capsys):
    with pytest.raises(SystemExit) as e:
        main([verb, "--help"])
    assert e.value.code == 0
    assert "usage: memsim" in capsys.readouterr().out


_CLAIRVOYANT = ["run", "--policy", "clairvoyant", "--scenario", "scripted/duplicates"]
_INDEXED = ["run", "--scenario", "scripted/duplicates", "--policy"]


def _on_duplicates(verb: str, policies: str, *more: str) -> list[str]:
    """A study command over ``policies`` on scripted/duplicates, with ``more`` arguments."""
    return [verb, "--policies", policies, "--scenarios", "scripted/duplicates", *more]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["run", "--policy", "nope", "--scenario", "scripted/name-preference"],
            "unknown policy id 'nope'",
        ),
        (["run", "--policy", "pai", "--scenario", "scripted/nope"], "nope"),
        (
            [
                "run",
                "--policy",
                "pai",
                "--scenario",
                "scripted/name-preference",
                "--param",
                "prune_threshold=1.5",
            ],
            "1.5",
        ),
        (
            [
                "run",
                "--policy",
                "pai",
                "--scenario",
                "scripted/name-preference",
                "--param",
                "bogus=1",
            ],
            "bogus",
        ),
        (["run", "--policy", "pai", "--scenario", "synthetic:nope"], "nope"),
        (
            ["run", "--policy", "pai", "--scenario", "locomo:/does/not/exist.json"],
            "/does/not/exist.json",
        ),
        (["compare", "--policies", "keep-all"], "--suite"),
        (["compare", "--suite", "nope"], "unknown suite 'nope'"),
        (["compare", "--seeds", "a,b", "--suite", "quick"], "--seeds"),
        (["curve", "pai", "--pattern", "sometimes", "--days", "0:10:1"], "sometimes"),
        # the clairvoyant's budget must be a positive number
        (_CLAIRVOYANT + ["--param", "budget=0"], "budget must be a positive number, got 0.0"),
        (_CLAIRVOYANT + ["--param", "budget=-2"], "budget=-2.0"),
        (_CLAIRVOYANT + ["--param", "budget=lots"], "'lots'"),
        (_CLAIRVOYANT + ["--param", "budget=nan"], "budget=nan"),
        # an index no search of the policy goes through would change nothing
        (
            _INDEXED + ["keep-all", "--index", "mode=ivf"],
            "no search of keep-all goes through a candidate index in that mode",
        ),
        (_INDEXED + ["pai", "--index", "mode=cones"], "policies whose searches do: actr,"),
        (_INDEXED + ["pai", "--index", "mode=hnsw"], "unknown candidate index mode 'hnsw'"),
        (
            _on_duplicates("compare", "keep-all,recency", "--index", "mode=ivf"),
            "no search of keep-all goes through",
        ),
        (
            _on_duplicates("sensitivity", "pai,recency", "--index", "mode=ivf"),
            "no search of recency goes through",
        ),
        (
            _on_duplicates("sensitivity", "pai", "--sobol", "4", "--index", "mode=cones"),
            "no search of pai goes through",
        ),
        (
            _on_duplicates("tune", "pai,keep-all", "--index", "mode=ivf"),
            "no search of keep-all goes through",
        ),
        (
            _on_duplicates(
                "robustness", "keep-all,recency", "--grid", "small", "--index", "mode=ivf"
            ),
            "no search of keep-all goes through",
        ),
        (
            ["robustness", "--policies", "pai,recency", "--grid", "small"]
            + ["--index", "mode=ivf", "--index", "nprobe=zero"],
            "--index nprobe: cannot read 'zero' as an integer",
        ),
    ],
)
def test_user_mistakes_print_one_line_and_exit_2(args, message):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memsim: error:"), r.stderr
    assert message in lines[0]
    assert "Traceback" not in r.stderr


def test_malformed_scenario_file_names_file_path_and_value(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\nepisodes:\n  - "
        "{id: e1, time: 1, text: hi, claims: [{key: a.b, value: x, importance: 7}]}\n"
    )
    r = _cli("run", "--policy", "keep-all", "--scenario", str(bad))
    assert r.returncode == 2
    assert "bad.yaml" in r.stderr and "importance" in r.stderr and "7" in r.stderr


def test_list_and_run_work(tmp_path):
    r = _cli("list")
    assert r.returncode == 0 and "pai-v3" in r.stdout and "scripted/name-preference" in r.stdout
    r = _cli(
        "run",
        "--policy",
        "recency",
        "--scenario",
        "scripted/name-preference",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    assert "recall" in r.stdout and list(tmp_path.glob("runs/*/*/*/manifest.json"))


def test_compare_writes_the_tables(tmp_path):
    out = tmp_path / "cmp"
    r = _cli(
        "compare",
        "--policies",
        "keep-all,recency",
        "--scenarios",
        "scripted/name-preference",
        "--out",
        str(out),
        "--cache",
        str(tmp_path / "cache"),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    for f in ("summary.md", "summary.csv", "per_query.parquet", "manifest.json"):
        assert (out / f).exists(), f
    assert "n = 2 distinct questions" in (out / "summary.md").read_text()


def test_scenario_lists_keep_each_specs_own_options():
    from memsim.workbench.cli.args import split_specs

    assert split_specs("synthetic:steady,episodes=200,horizon=30,scripted/x") == [
        "synthetic:steady,episodes=200,horizon=30",
        "scripted/x",
    ]
    assert split_specs(["locomo:/d/a.json,sample=conv-26", "scripted/y,synthetic:churn"]) == [
        "locomo:/d/a.json,sample=conv-26",
        "scripted/y",
        "synthetic:churn",
    ]
    assert split_specs(None) == []


def test_compare_on_locomo_reports_recall_by_category(tmp_path):
    from tests.conftest import LOCOMO_DEV

    if not LOCOMO_DEV.exists():
        pytest.skip(f"LoCoMo dev subset not found at {LOCOMO_DEV}")
    r = _cli(
        "compare",
        "--scenario",
        f"locomo:{LOCOMO_DEV},sample=conv-30",
        "--policies",
        "keep-all",
        "--out",
        str(tmp_path / "lc"),
        "--cache",
        str(tmp_path / "cache"),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    assert "recall@k by group" in r.stdout
    for category in ("multi-hop", "temporal", "single-hop"):
        assert category in r.stdout


def test_run_with_candidate_index_writes_the_audit(tmp_path, capsys):
    """--index mode=ivf runs through the candidate index and writes its
    exactness audit to the manifest and the summary; a bad setting is a one-line error."""
    import json

    from memsim.workbench.cli.main import main

    spec = "synthetic:steady,episodes=500,queries=50,horizon=20"
    args = ["run", "--policy", "pai", "--scenario", spec, "--out", str(tmp_path)]
    assert main([*args, "--index", "mode=ivf", "--index", "min_rows=100"]) == 0
    capsys.readouterr()
    (manifest,) = tmp_path.rglob("manifest.json")
    audit = json.loads(manifest.read_text())["index_audit"]
    assert audit["mode"] == "ivf" and audit["searches"] > 0 and audit["decisions_checked"] > 0
    summary = json.loads((manifest.parent / "summary.json").read_text())
    assert summary["index_decision_differ_share"] == audit["decision_differ_share"]
    assert main([*args, "--index", "mode=ivf", "--index", "nprobes=3"]) == 2
    assert "--index nprobes: unknown setting" in capsys.readouterr().err


def test_run_prints_the_index_audit(tmp_path, capsys):
    """The printed summary of a run through the index says how many searches it answered
    and how many audited queries differ from the full scan's."""
    spec = "synthetic:steady,episodes=500,queries=50,horizon=20"
    args = ["run", "--policy", "pai", "--scenario", spec, "--quiet", "--index", "mode=ivf"]
    assert main([*args, "--index", "min_rows=100", "--index", "audit_every=1"]) == 0
    out = capsys.readouterr().out
    assert "candidate index: mode ivf from 100 stored rows, nprobe 16" in out
    assert "queries whose top-k differs from the full scan's: none audited" in out
    assert "ingest decisions that differ: " in out
    assert "ingest decisions that differ: none audited" not in out
    assert main(args) == 0  # the default min_rows: the store never reaches it
    assert "it answered no search (the store stayed under 20,000 rows" in capsys.readouterr().out


def _audit(**kw):
    base = dict(mode="ivf", min_rows=100, nprobe=4, audit_every=10, searches=40, trainings=2)
    base.update(checked=4, differ=0, decisions_checked=0, decisions_differ=0)
    return {**base, **kw}


def test_index_lines_flag_a_share_over_one_percent():
    from memsim.workbench.cli.run import index_lines

    text = index_lines(_audit(differ=1, decisions_checked=200, decisions_differ=2))
    assert "40 searches through it, 2 training(s)" in text
    assert "differs from the full scan's: 1 of 4 audited (25.0%, over 1%: not the full" in text
    assert "decisions that differ: 2 of 200 audited (1.0%)\n" not in text  # (the last line)
    assert text.endswith("decisions that differ: 2 of 200 audited (1.0%)")  # at 1%: within
    assert "over 1%" not in index_lines(_audit())
    assert (
        index_lines(_audit(mode="exact"))
        == "candidate index: mode exact (every search the full scan)"
    )
    assert "nothing to audit" in index_lines(_audit(mode="cones", searches=0))
    assert "it answered no search" in index_lines(_audit(searches=0, checked=0))


def test_clairvoyant_on_a_stream_without_queries_says_so(tmp_path):
    quiet = tmp_path / "quiet.yaml"
    quiet.write_text("name: quiet\nepisodes:\n  - {id: e1, time: 1, text: hi}\n")
    r = _cli("run", "--policy", "clairvoyant", "--scenario", str(quiet), "--out", str(tmp_path))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no queries" in lines[0] and str(quiet) in lines[0]


TINY = "synthetic:churn,episodes=200,queries=10,facts=20,horizon=30"


@pytest.mark.parametrize(
    "override, group, field, value",
    [
        ("modes.synthesis=latest", "modes", "synthesis", "latest"),
        ("modes.summary=first", "modes", "summary", "first"),
        ("modes.entity_forms=2", "modes", "entity_forms", 2),
        ("modes.resolution_error=0.1", "modes", "resolution_error", 0.1),
        ("modes.chatter_confidence=0.9", "modes", "chatter_confidence", 0.9),
        ("modes.fact_confidence_spread=0.2", "modes", "fact_confidence_spread", 0.2),
        ("modes.query_value=0.3", "modes", "query_value", 0.3),
        ("faults.wrong_class=0.1", "faults", "wrong_class", 0.1),
        ("bands.spread=2", "bands", "spread", 2.0),
    ],
)
def test_every_mode_is_set_with_llm_and_recorded_in_the_manifest(
    tmp_path, capsys, override, group, field, value
):
    """Each mode of docs/mock-llm.md (and the classification and paraphrase
    knobs the robustness grid varies) is one --llm KEY=VALUE, and the run's manifest
    records it beside the other modes at their defaults."""
    import json

    from memsim.engine.llm import Modes

    args = ["run", "--policy", "keep-all", "--scenario", TINY, "--quiet", "--out", str(tmp_path)]
    assert main([*args, "--llm", override]) == 0
    capsys.readouterr()
    (manifest,) = tmp_path.rglob("manifest.json")
    llm = json.loads(manifest.read_text())["llm"]
    assert llm[group][field] == value
    expected_modes = Modes().to_dict()
    if group == "modes":
        expected_modes[field] = value
    assert llm["modes"] == expected_modes


@pytest.mark.parametrize(
    "override, key, value",
    [
        ("modes.nope=1", "modes.nope", "1"),
        ("modes.synthesis=median", "synthesis", "median"),
        ("modes.summary=best", "summary", "best"),
        ("modes.resolution_error=1.5", "resolution_error", "1.5"),
        ("modes.query_value=-0.2", "query_value", "-0.2"),
        ("modes.fact_confidence_spread=3", "fact_confidence_spread", "3"),
        ("modes.chatter_confidence=1.2", "chatter_confidence", "1.2"),
        ("modes.entity_forms=0", "entity_forms", "0"),
        ("faults.wrong_class=2", "wrong_class", "2"),
        ("faults.nope=0.1", "faults.nope", "nope"),
    ],
)
def test_bad_llm_modes_are_one_line_errors_naming_key_and_value(capsys, override, key, value):
    """An unknown mode or value, or a rate outside [0, 1]: exit 2, one line naming both."""
    code = main(["run", "--policy", "keep-all", "--scenario", TINY, "--quiet", "--llm", override])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("memsim: error:"), err
    assert key in err and value in err, err


def test_compare_prints_a_failing_expectation_in_one_readable_line(tmp_path, capsys):
    """The failure line read ``v.where`` off a pandas row: DataFrame.where, a method, so the
    whole row was printed as "<bound method NDFrame.where ...>" over nine lines."""
    import yaml

    from memsim.workbench.cli.main import main

    scenario = {
        "name": "fails",
        "horizon": 5,
        "episodes": [
            {
                "id": "e1",
                "time": 0,
                "text": "Call me Masa",
                "claims": [{"key": "owner.name", "value": "Masa"}],
            },
            {
                "id": "e2",
                "time": 1,
                "text": "I work at Acme",
                "claims": [{"key": "owner.job", "value": "Acme"}],
            },
        ],
        "queries": [{"id": "q1", "time": 2, "text": "what is my name", "keys": ["owner.name"]}],
        "expect": [{"policy": "keep-all", "query": "q1", "top1_from": "e2"}],
    }
    path = tmp_path / "fails.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    code = main(
        [
            "compare",
            "--policies",
            "keep-all",
            "--scenarios",
            str(path),
            "--quiet",
            "--out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "1 of 1" not in out and "0 of 1 hold, these fail:" in out
    line = next(li for li in out.splitlines() if li.startswith("  keep-all on "))
    assert "bound method" not in out and "fails.yaml: expect[0]" in line and "top1_from" in line


@pytest.mark.parametrize(
    "verb", ["compare", "check", "sweep", "tune", "sensitivity", "robustness", "drift"]
)
@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_jobs_below_one_is_refused_not_run_serially(verb, jobs, capsys):
    """--jobs 0 or -2 once ran serially without a word; argparse now refuses it (exit 2)."""
    with pytest.raises(SystemExit) as e:
        main([verb, "--jobs", jobs])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --jobs: needs 1 or more worker processes, got {jobs}" in err


def test_map_in_order_refuses_no_workers():
    from memsim.engine.errors import ParamError
    from memsim.workbench.runs.executors import map_in_order

    with pytest.raises(ParamError, match="jobs=0: needs 1 or more worker processes"):
        map_in_order(print, [(1,)], jobs=0)
