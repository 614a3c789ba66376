"""The decay-curve tool (memsim.curve) and its CLI (`memsim curve`)."""

from __future__ import annotations

import io
import math
from contextlib import redirect_stdout

import pytest

from memsim.engine.curve import CurveError, access_days, curve, parse_days
from memsim.engine.errors import MemsimError, ParamError, UnknownIdError
from memsim.workbench.cli.main import main

PREF = ["category=preference", "importance=0.9"]


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["curve", *argv])
    return rc, buf.getvalue()


def test_cli_header_and_rows():
    """003 §Memory Strength Calculation through the CLI: full-precision strength per day."""
    rc, out = cli(
        "izzie",
        "--pattern",
        "never",
        "--days",
        "0:60:30",
        *sum((["--memory", m] for m in PREF), []),
    )
    assert rc == 0
    lines = out.strip().splitlines()
    assert lines[0] == "day,strength,status,accessed,access_count"
    assert len(lines) == 4
    day, strength, status, accessed, count = lines[2].split(",")
    assert (day, status, accessed, count) == ("30.0", "active", "false", "0")
    assert float(strength) == 0.9 * math.exp(-0.3)  # repr round-trips exactly
    assert float(lines[3].split(",")[1]) == pytest.approx(0.9 * math.exp(-0.6), rel=1e-12)


def test_parse_days():
    assert parse_days("0:10:5") == [0.0, 5.0, 10.0]
    assert parse_days("0:1:0.1")[-1] == pytest.approx(1.0)
    assert len(parse_days("0:1:0.1")) == 11
    assert parse_days("30, 7,0") == [0.0, 7.0, 30.0]
    assert parse_days([3, 1]) == [1.0, 3.0]


def test_patterns():
    assert access_days("never", 30) == []
    assert access_days("every:7", 30) == [7.0, 14.0, 21.0, 28.0]
    assert access_days("at:5,1", 30) == [1.0, 5.0]


def test_every_pattern_refreshes_izzie():
    """An access refreshes lastAccessed (003 §Context Retrieval): strength resets to importance."""
    f = curve("izzie", "every:10", "0:30:5", memory=PREF)
    assert f["accessed"].tolist() == [False, False, True, False, True, False, True]
    assert f["access_count"].tolist() == [0, 0, 1, 1, 2, 2, 3]
    at = dict(zip(f["day"], f["strength"]))
    assert at[10.0] == at[20.0] == at[30.0] == 0.9
    assert at[15.0] == pytest.approx(0.9 * math.exp(-0.05))


def test_at_pattern_and_kernle_finding():
    """004: never accessed -> salience 0 -> tombstoned by the first cycle (day 7); one access
    at day 0 keeps it above 0.3 for 30 days."""
    never = curve("kernle", "never", [0, 6, 7, 8])
    assert never["strength"].tolist() == [0.0] * 4
    assert never["status"].tolist() == ["active", "active", "forgotten", "forgotten"]
    once = curve("kernle", "at:0", [0, 30], memory=["confidence=0.9"])
    assert once["accessed"].tolist() == [True, False]
    assert once["strength"].iloc[1] == pytest.approx(0.9 * math.log(2) / 2)
    assert once["status"].tolist() == ["active", "active"]


def test_memory_attributes_and_params():
    """Seed-named attributes (Kernle: protected) and Params (Kernle: half_life)."""
    prot = curve("kernle", "never", [30], memory=["protected=true"])
    assert prot["status"].tolist() == ["active"]
    hl = curve("kernle", "at:0", [10], memory=["confidence=1"], params=["half_life=10"])
    assert hl["strength"].iloc[0] == pytest.approx(math.log(2) / 2)
    typed = curve("kernle", "never", [3], memory={"type": "value"})
    assert typed["status"].tolist() == ["active"]
    acc = curve("kernle", "never", [0], memory=["times_accessed=3", "confidence=0.5"])
    assert acc["strength"].iloc[0] == pytest.approx(0.5 * math.log(4))


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"policy": "nope"}, UnknownIdError, "unknown policy id 'nope'"),
        ({"pattern": "sometimes"}, CurveError, "unknown --pattern 'sometimes'"),
        ({"pattern": "every:0"}, CurveError, "N > 0"),
        ({"pattern": "every:x"}, CurveError, "'x'"),
        ({"days": "0:10"}, CurveError, "START:END:STEP"),
        ({"days": "5:1:1"}, CurveError, "END < START"),
        ({"days": "-1,2"}, CurveError, "'-1'"),
        ({"memory": ["stability=2"]}, CurveError, "Izzie has no memory attribute 'stability'"),
        ({"memory": ["importance=1.5"]}, CurveError, r"importance='1.5' is outside \[0, 1\]"),
        ({"memory": ["importance"]}, CurveError, "KEY=VALUE"),
        ({"params": ["decay_rate_fact=-1"]}, ParamError, "decay_rate_fact"),
        ({"params": ["half_life=1"]}, ParamError, "no parameter 'half_life'"),
        ({"policy": "kernle", "memory": ["protected=maybe"]}, ParamError, "protected='maybe'"),
    ],
)
def test_bad_input(kwargs, err, match):
    args = {"policy": "izzie", "pattern": "never", "days": "0,1"} | kwargs
    with pytest.raises(err, match=match):
        curve(args.pop("policy"), args.pop("pattern"), args.pop("days"), **args)
    assert issubclass(err, MemsimError)


def test_cli_bad_input_is_one_line(capsys):
    rc, _ = cli("kernle", "--days", "0,1", "--param", "half_life=-3")
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "half_life" in err[0]
