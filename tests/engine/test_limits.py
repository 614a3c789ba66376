"""The input limits (memsim/engine/limits.py, docs/limits.md): numbers range-checked before
conversion, sizes counted before anything is built, files read bounded, YAML and JSON read
strictly, every refusal one short line."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from memsim.engine import limits
from memsim.engine.errors import ParamError, ScenarioError

DOC = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


def _one_short_line(e: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(e.value)
    assert "\n" not in text and len(text) < 400, text
    return text


def test_every_limit_is_in_the_documented_table():
    table = DOC.read_text(encoding="utf-8")
    for name, value in limits.iter_limits():
        row = next((ln for ln in table.splitlines() if ln.startswith(f"| `{name}` |")), None)
        assert row is not None, f"docs/limits.md has no row for {name}"
        shown = row.split("|")[2].strip()
        expected = {f"{value:,}", str(value), "2**63 - 1" if value == 2**63 - 1 else ""}
        assert any(shown.startswith(t) for t in expected if t), (name, value, shown)


@pytest.mark.parametrize(
    "text, match",
    [
        ("x", "cannot read 'x'"),
        ("1e3", "cannot read '1e3'"),
        ("9" * 5000, r"cannot read .*\(5000 characters\)"),
        ("-1", r"must be an integer in \[0, 10\], got -1"),
        ("11", r"in \[0, 10\], got 11"),
    ],
)
def test_parse_int_checks_length_and_range_before_converting(text, match):
    with pytest.raises(ParamError, match=match) as e:
        limits.parse_int(text, "--n", 0, 10)
    assert _one_short_line(e).startswith("--n: ")


@pytest.mark.parametrize("text", ["1e400", "-1e400", "nan", "inf", "1" * 200, "x"])
def test_parse_float_refuses_what_is_no_finite_number(text):
    with pytest.raises(ParamError) as e:
        limits.parse_float(text, "--llm bands.spread")
    assert _one_short_line(e).startswith("--llm bands.spread: ")


def test_parse_float_reads_tiny_and_huge_finite_numbers():
    assert limits.parse_float("5e-324", "x") == 5e-324
    assert limits.parse_float("1e300", "x") == 1e300


def test_check_number_compares_huge_integers_without_converting():
    with pytest.raises(ParamError, match="an integer of 400 digits") as e:
        limits.check_number(10**399, "horizon", 0)
    _one_short_line(e)
    assert limits.check_number(10**300, "n", integer=True) == 10**300
    with pytest.raises(ParamError, match=r"in \[1, 1000000\]"):
        limits.check_number(10**400, "k", 1, limits.MAX_K, integer=True)


def test_seed_lists_are_counted_before_they_are_built():
    start = time.perf_counter()
    with pytest.raises(ParamError, match="10,000,000,000 seeds asked; the limit is 10,000"):
        limits.parse_seeds("0:10000000000")
    assert time.perf_counter() - start < 1.0
    assert limits.parse_seeds("3:6") == [3, 4, 5]
    assert limits.parse_seeds(" 1, 2 ") == [1, 2]
    assert limits.parse_seeds(f"0:{limits.MAX_SEEDS}") == list(range(limits.MAX_SEEDS))


@pytest.mark.parametrize(
    "text, match",
    [
        ("x", "cannot read 'x' as a seed"),
        ("5:0", "names no seed"),
        ("", "names no seed"),
        ("-3", r"must be an integer in \[0, 9223372036854775807\], got -3"),
        (str(2**64), "got 18446744073709551616"),
        ("0:a", "STOP: cannot read 'a'"),
        (",".join(["1"] * (limits.MAX_SEEDS + 1)), "10,001 seeds asked"),
    ],
)
def test_bad_seed_lists_are_one_line_naming_the_flag(text, match):
    with pytest.raises(ParamError, match=match) as e:
        limits.parse_seeds(text, "--seeds")
    assert _one_short_line(e).startswith("--seeds")


def test_shown_cuts_long_values_and_says_their_length():
    assert limits.shown("abc") == "'abc'"
    long = limits.shown("x" * 2_000_000)
    assert len(long) < 200 and "2000000 characters" in long
    assert limits.shown(list(range(1000))) == "a list of 1000 items"


@pytest.mark.parametrize(
    "text, what",
    [
        ("a\x00b", "a control character .U\\+0000."),
        ("a\x07b", "U\\+0007"),
        ("e\ud800", "a lone surrogate .U\\+D800."),
        ("x" * (limits.MAX_TEXT + 1), "100,001 characters; the limit is 100,000"),
    ],
)
def test_check_text_refuses_controls_surrogates_and_long_strings(text, what):
    with pytest.raises(ParamError, match=what) as e:
        limits.check_text(text, "f.yaml: episodes[0].id")
    _one_short_line(e)


def test_check_text_keeps_tabs_newlines_and_unicode():
    assert limits.check_text("a\tb\nc\r — ü 日本", "x") == "a\tb\nc\r — ü 日本"


def test_read_text_says_what_a_path_is(tmp_path):
    with pytest.raises(ScenarioError, match="does not exist"):
        limits.read_text(tmp_path / "none.yaml", "scenario file", ScenarioError)
    with pytest.raises(ScenarioError, match="is a directory"):
        limits.read_text(tmp_path, "scenario file", ScenarioError)
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(ScenarioError, match="symbolic links"):
        limits.read_text(loop, "scenario file", ScenarioError)
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "gone")
    with pytest.raises(ScenarioError, match="symbolic link to nothing"):
        limits.read_text(dangling, "scenario file", ScenarioError)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="a FIFO"):  # and never blocks opening it
        limits.read_text(fifo, "scenario file", ScenarioError)
    if Path("/dev/zero").exists():
        with pytest.raises(ScenarioError, match="a character device"):
            limits.read_text("/dev/zero", "scenario file", ScenarioError)


def test_read_text_refuses_a_file_over_the_limit_without_reading_it(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:  # sparse: no disk used
        f.truncate(limits.MAX_FILE_BYTES + 1)
    with pytest.raises(ParamError, match="67,108,865 bytes; the limit is 67,108,864"):
        limits.read_text(big, "sweep file")


def test_read_text_refuses_bytes_that_are_not_utf8(tmp_path):
    f = tmp_path / "latin.yaml"
    f.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ParamError, match=r"not UTF-8 text \(byte 9"):
        limits.read_text(f, "sweep file")


BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)


@pytest.mark.parametrize(
    "text, match",
    [
        (BOMB + "episodes: *i\n", "line 1: anchors and aliases"),
        ("a: 1\nb: 2\na: 3\n", "line 3: duplicate key 'a'"),
        ("a: " + "[" * 5000 + "]" * 5000, "nested more than 40 levels"),
        ("a:\n" + "".join("  " * i + "- \n" for i in range(3000)), "nested more than 40"),
        ("a: \x01\n", "unacceptable character #x0001"),
        ('a: "\\ud800"\n', "lone surrogate"),
        ("a: " + "9" * 400 + "\n", "must be a finite number within float range"),
        ("a: 1e400\n", "must be a finite number within float range, got inf"),
        ("a: [1, 2\n", "not valid YAML"),
        ("a: " + "1" * 5000 + "\n", "a number cannot be read: Exceeds the limit"),
    ],
)
def test_read_yaml_is_strict_and_bounded(text, match):
    start = time.perf_counter()
    with pytest.raises(ParamError, match=match) as e:
        limits.read_yaml(text, "f.yaml")
    assert time.perf_counter() - start < 2.0
    assert _one_short_line(e).startswith("f.yaml: ")


def test_read_yaml_reads_yaml12_floats():
    assert limits.read_yaml("a: 1e300\nb: 1.0e+15\n", "f.yaml") == {"a": 1e300, "b": 1e15}


@pytest.mark.parametrize(
    "text, match",
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than 40 levels"),
        ('[{"a": "\\ud800"}]', "lone surrogate"),
        ('[{"a": "x\\u0000"}]', "control character"),
        ("[1e400]", "within float range"),
        ("[NaN]", "within float range"),
        ("[1, ", "not valid JSON"),
        ("[" + "1" * 5000 + "]", "a number cannot be read: Exceeds the limit"),
    ],
)
def test_read_json_is_bounded_as_yaml_is(text, match):
    with pytest.raises(ScenarioError, match=match) as e:
        limits.read_json(text, "l.json", ScenarioError)
    assert _one_short_line(e).startswith("l.json")


def test_no_limit_is_estimated_at_run_time():
    """The limits are plain integers in the module's source, not computed from the machine."""
    source = Path(limits.__file__).read_text(encoding="utf-8")
    for name, _ in limits.iter_limits():
        line = next(ln for ln in source.splitlines() if ln.startswith(f"{name} = "))
        assert re.fullmatch(rf"{name} = [0-9_*\s+-]+(#.*)?", line), line
