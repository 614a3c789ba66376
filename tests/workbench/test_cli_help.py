"""The help of every command, and values that used to be accepted silently: every option has
help text, every id the help names exists, the verbs share their option names, and an empty
or impossible value is one line and exit 2."""

from __future__ import annotations

import argparse
import re

import pytest

from memsim.engine import registry
from memsim.engine.curve import curve
from memsim.engine.errors import MemsimError
from memsim.workbench.cli.main import build_parser, main
from scenarios import scripted
from scenarios.synthetic import PROFILES


def subparsers() -> dict[str, argparse.ArgumentParser]:
    p = build_parser()
    (sub,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def texts(parser: argparse.ArgumentParser) -> list[str]:
    return [parser.description or "", parser.epilog or ""] + [
        a.help for a in parser._actions if isinstance(a.help, str)
    ]


RUNNERS = ("run", "check", "compare", "sweep", "tune", "sensitivity", "robustness", "drift")


def test_every_option_of_every_command_has_help():
    missing = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, parser in subparsers().items()
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction)
        and (not a.help or a.help == argparse.SUPPRESS or not a.help.strip())
    ]
    assert not missing, f"options without help: {missing}"


def test_every_id_the_help_names_exists():
    policy_like = re.compile(r"\b[a-z]+(?:-[a-z]+)*-(?:v\d+|code)\b")
    named: list[tuple[str, str]] = []
    for name, parser in subparsers().items():
        for a in parser._actions:
            if a.dest in ("policy", "policies") and isinstance(a.help, str):
                for example in re.findall(r"e\.g\. ([^;()]*)", a.help):
                    named += [(name, w) for w in re.findall(r"[a-z][a-z0-9-]*", example)]
        for text in texts(parser):
            named += [(name, w) for w in policy_like.findall(text)]
            for profile in re.findall(r"synthetic:([a-z]+)", text):
                assert profile in PROFILES, f"{name}: synthetic:{profile}"
            for scene in re.findall(r"scripted/([a-z][a-z0-9-]*)", text):
                assert scene in scripted.names(), f"{name}: scripted/{scene}"
    named = [(n, w) for n, w in named if w != "or"]
    assert named, "no policy example found: the check would pass vacuously"
    for _command, word in named:
        registry.spec(word)  # raises on an id that is refused


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert re.fullmatch(r"memsim \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


@pytest.mark.parametrize("name", RUNNERS)
def test_every_verb_that_runs_policies_shares_the_option_names(name):
    parser = subparsers()[name]
    flags = {f for a in parser._actions for f in a.option_strings}
    assert {"--quiet", "--progress"} <= flags
    if name != "drift":  # drift runs the registered variant pairs
        assert "--policies" in flags


@pytest.mark.parametrize("flag", ["--policy", "--policies"])
def test_run_takes_policies_and_keeps_policy_as_an_alias(flag, capsys):
    args = [flag, "pai", "--scenario", "scripted/name-preference", "--quiet"]
    assert main(["run", *args]) == 0
    assert "pai-v" in capsys.readouterr().out


def one_line_refusal(argv: list[str], capsys, *words: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("memsim: error: "), err
    for w in words:
        assert w in err[0]
    return err[0]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["compare", "--policies", "", "--scenarios", "scripted/name-preference"], ["--policies"]),
        (["compare", "--policies", ",", "--scenarios", "scripted/name-preference"], ["names no"]),
        (["check", "scripted/name-preference", "--policies", " "], ["--policies"]),
        (["run", "--policies", "pai,izzie", "--scenario", "scripted/name-preference"], ["one"]),
        (["robustness", "--policies", "pai", "--out", "/tmp/memsim-unused.md"], ["pairs"]),
        (["robustness", "--policies", "pai,pai", "--out", "/tmp/memsim-unused.md"], ["pairs"]),
        (["tune", "--policies", "keep-all", "--scenarios", "synthetic:steady"], ["keep-all"]),
        (["tune", "--policies", "", "--scenarios", "synthetic:steady"], ["--policies"]),
        (
            ["tune", "--policies", "pai", "--objectives", "", "--scenarios", "synthetic:steady"],
            ["objective"],
        ),
        (["curve", "pai", "--days", "0,10", "--memory", "stability=-5"], ["stability"]),
        (["curve", "pai", "--days", "0,10", "--memory", "stability=nan"], ["stability"]),
        (["curve", "pai", "--days", "0,10", "--memory", "stability=6"], ["stability_cap"]),
        (["curve", "pai", "--days", "0,10", "--memory", "category=bogus"], ["bogus"]),
        (["curve", "izzie", "--days", "0,10", "--memory", "type=bogus"], ["bogus"]),
    ],
)
def test_values_once_accepted_silently_are_refused(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (default outputs, if any, land here)
    one_line_refusal(argv, capsys, *words)
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_locomo_is_applied_to_a_suite_without_it(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    missing = str(tmp_path / "no-such-locomo.json")
    argv = ["compare", "--policies", "keep-all", "--suite", "quick", "--locomo", missing]
    assert main([*argv, "--quiet", "--no-calibration"]) == 2
    assert missing in capsys.readouterr().err  # read, so not dropped


def test_a_planted_stability_within_its_range_decays():
    strength = curve("pai", "never", [0, 30, 90], memory=["stability=2"])["strength"]
    assert strength.is_monotonic_decreasing and strength.iloc[-1] < strength.iloc[0]
    with pytest.raises(MemsimError, match="stability"):
        curve("pai", "never", [0, 30], memory={"stability": "-5"})
