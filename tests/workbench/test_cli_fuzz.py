"""Fuzzing the command line: malformed scenario files and argument lists.

Every case calls ``memsim.workbench.cli.main`` in-process (subprocesses would cost ~1 s each)
and is judged by :func:`outcome`: ``ok`` (exit 0), ``clean`` (exit 2 with one
``memsim: error:`` line, or argparse's usage error), ``traceback`` (an exception escaped),
``hang`` (over the time limit) or ``unclean`` (a non-zero exit without a one-line error).
The corpus holds the cases a new user tried; a corpus case marked ``bad`` must not exit 0
(``silent`` otherwise). ``python tests/workbench/test_cli_fuzz.py`` prints the tally.
"""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsim.workbench.cli.main import main

LIMIT_S = 10.0  # a case over this is a hang
BASE: dict[str, Any] = {
    "name": "fuzz",
    "horizon": 12,
    "episodes": [
        {
            "id": "e1",
            "time": 0,
            "text": "Call me Masa",
            "claims": [{"key": "owner.name", "value": "Masa", "importance": 0.9}],
        },
        {"id": "e2", "time": 1, "text": "I work at Acme", "claims": [{"key": "owner.job"}]},
    ],
    "queries": [{"id": "q1", "time": 2, "text": "my name?", "keys": ["owner.name"], "k": 3}],
    "expect": [{"policy": "*", "query": "q1", "in_top": "e1"}],
}


class _Hang(BaseException):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang()


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def outcome(argv: list[str], limit: float = LIMIT_S) -> tuple[str, str]:
    """(class, stderr) of ``memsim ARGV`` run in-process."""
    err, out = io.StringIO(), io.StringIO()
    code: Any
    try:
        with _time_limit(limit), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse
                code = e.code
    except _Hang:
        return "hang", err.getvalue()
    except BaseException as e:  # noqa: BLE001 - the point is to catch everything
        return "traceback", f"{type(e).__name__}: {e}"[:300]
    text = err.getvalue()
    if code in (0, None):
        return "ok", text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if (
        code == 2
        and lines
        and (lines[-1].startswith("memsim: error:") and len(lines[-1]) < 2000 or "usage:" in text)
    ):
        return "clean", text
    return "unclean", text[-300:]


# -- the corpus: a new user's cases ------------------------------------------------------
def _nest(open_: str, close: str, n: int = 5000) -> str:
    return open_ * n + close * n


BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)
SCENARIO_CORPUS: dict[str, str] = {
    "nested-flow": "episodes: " + _nest("[", "]"),
    "nested-block": "episodes:\n" + "".join("  " * i + "- \n" for i in range(3000)),
    "nested-attrs": "episodes:\n- id: e\n  time: 0\n  text: t\n  claims:\n  - key: k\n"
    "    attrs: " + _nest("{a: ", "}", 3000),
    "overflow": yaml.safe_dump(BASE).replace("k: 3", "k: 1.0e+23"),
    "alias-bomb": BOMB + "episodes: *i\n",
    "small-bomb": BOMB + "horizon: *i\n",
    "horizon-1e6": yaml.safe_dump({**BASE, "horizon": 1e6}),
    "query-1e7": yaml.safe_dump(
        {**BASE, "horizon": None, "queries": [{**BASE["queries"][0], "time": 1e7}]}
    ).replace("horizon: null\n", ""),
    "horizon-1e15": yaml.safe_dump({**BASE}).replace("horizon: 12", "horizon: 1.0e+15"),
    "episode-1e300": yaml.safe_dump({**BASE})
    .replace("horizon: 12", "horizon: 1.0e+301")
    .replace("time: 1\n", "time: 1.0e+300\n"),
    "repeat-1e9": yaml.safe_dump(
        {
            **BASE,
            "episodes": BASE["episodes"]
            + [{"id": "r{i}", "time": 0, "text": "x", "repeat": 10**9}],
        }
    ),
    "dup-key": yaml.safe_dump(BASE) + "horizon: 30\n",
    "seed-banana": yaml.safe_dump({**BASE, "seed": "banana"}),
    "empty-key": yaml.safe_dump(
        {**BASE, "episodes": [{**BASE["episodes"][0], "claims": [{"key": ""}]}]}
    ),
    "status-flying": yaml.safe_dump(
        {**BASE, "expect": [{"policy": "*", "memory_of": "e1", "status": "flying"}]}
    ),
    "unasserted-key": yaml.safe_dump(
        {**BASE, "queries": [{**BASE["queries"][0], "keys": ["nobody.said.this"]}]}
    ),
    "failing-expect": yaml.safe_dump(
        {**BASE, "expect": [{"policy": "*", "query": "q1", "not_in_top": "e1"}]}
    ),
    "huge-k": yaml.safe_dump(BASE).replace("k: 3", "k: 1000000000000000000000000000000"),
    "yaml12-float": yaml.safe_dump({**BASE}).replace("horizon: 12", "horizon: 1e300"),
    "empty": "",
    "top-list": "- 1\n- 2\n",
    "int-400-digits": yaml.safe_dump(BASE).replace("horizon: 12", "horizon: " + "9" * 400),
    "int-5000-digits": yaml.safe_dump(BASE).replace("horizon: 12", "horizon: " + "9" * 5000),
    "float-1e400": yaml.safe_dump(BASE).replace("horizon: 12", "horizon: 1e400"),
    "nul": yaml.safe_dump(BASE).replace("Call me Masa", "Call me\x00Masa"),
    "escaped-control": yaml.safe_dump(BASE).replace("Call me Masa", '"Call me\\x01Masa"'),
    "lone-surrogate": yaml.safe_dump(BASE).replace("id: e1", 'id: "e\\ud800"'),
    "note-2mb": yaml.safe_dump(BASE).replace("Call me Masa", "x" * 2_000_000),
    "repeat-21x100000": yaml.safe_dump(
        {
            **BASE,
            "episodes": BASE["episodes"]
            + [{"id": f"r{j}_{{i}}", "time": 0, "text": "x", "repeat": 100_000} for j in range(21)],
        }
    ),
}
BAD_SCENARIOS = set(SCENARIO_CORPUS) - {
    "yaml12-float",
    "failing-expect",  # run prints the verdict (FAIL) and exits 0; `memsim check` exits 1
}


def _scenario_argv(tmp: Path, name: str, text: str, policy: str = "keep-all") -> list[str]:
    f = tmp / f"{name}.yaml"
    f.write_text(text, encoding="utf-8")
    return ["run", "--policy", policy, "--scenario", str(f)]


def _arg_corpus(tmp: Path) -> dict[str, list[str]]:
    good = tmp / "good.yaml"
    good.write_text(yaml.safe_dump(BASE), encoding="utf-8")
    afile = tmp / "a-file"
    afile.write_text("x")
    corrupt = tmp / "corrupt-cache"
    run = ["run", "--policy", "keep-all", "--scenario", str(good)]
    cmp = ["compare", "--policies", "keep-all", "--scenarios", str(good), "--quiet"]
    cmp += ["--cache", str(tmp / "cache")]
    nolocomo = tmp / "noq.json"
    nolocomo.write_text('[{"sample_id": "s", "conversation": {}, "qa": []}]')
    return {
        "llm-faults-nosuch": run + ["--llm", "faults.nosuch=1"],
        "llm-bands-nosuch": run + ["--llm", "bands.nosuch=1"],
        "run-out-file": run + ["--out", str(afile)],
        "compare-out-file": cmp + ["--out", str(afile)],
        "seeds-reversed": cmp + ["--seeds", "5:0", "--out", str(tmp / "c1")],
        "seeds-empty": cmp + ["--seeds", "", "--out", str(tmp / "c2")],
        "dask-malformed": cmp + ["--dask", "not a url::", "--out", str(tmp / "c3")],
        "curve-huge": ["curve", "izzie", "--days", "0:1e9:1"],
        "param-inf": ["run", "--policy", "pai", "--scenario", str(good), "--param", "w_cosine=inf"],
        "policies-twice": cmp + ["--policies", "keep-all,keep-all", "--out", str(tmp / "c4")],
        "seeds-twice": cmp + ["--seeds", "0,0", "--out", str(tmp / "c5")],
        "locomo-noq": ["run", "--policy", "keep-all", "--scenario", f"locomo:{nolocomo}"],
        "figures-missing": ["figures", "--out", str(tmp / "figs"), "--no-curves"]
        + [
            "--results",
            str(tmp / "no"),
            "--benchmarks",
            str(tmp / "no"),
            "--claims",
            str(tmp / "no"),
        ],
        "scenario-dir": ["run", "--policy", "keep-all", "--scenario", str(tmp) + "/x.yaml/"],
        "corrupt-cache": cmp + ["--out", str(corrupt / "out"), "--cache", str(corrupt)],
    }


BAD_ARGS = {
    "llm-faults-nosuch",
    "llm-bands-nosuch",
    "run-out-file",
    "compare-out-file",
    "seeds-reversed",
    "seeds-empty",
    "dask-malformed",
    "curve-huge",
    "param-inf",
    "locomo-noq",
    "figures-missing",
    "scenario-dir",
}


@pytest.mark.parametrize("name", sorted(SCENARIO_CORPUS))
def test_scenario_corpus(name: str, tmp_path: Path) -> None:
    kind, err = outcome(_scenario_argv(tmp_path, name, SCENARIO_CORPUS[name], "pai"))
    assert kind in ("ok", "clean"), (name, kind, err)
    if name in BAD_SCENARIOS:
        assert kind == "clean", (name, "silently accepted", err)
        assert f"{name}.yaml" in err, err  # names the file


# -- generated cases --------------------------------------------------------------------------
WEIRD = st.sampled_from(
    [None, "", "banana", -1, 0, 1, 0.5, 1.5, 10**30, -(10**30), 1e300, float("inf"),
     float("nan"), True, [], {}, [1, 2], {"a": 1}, "e1", "q1", "{i}", "x" * 300]
)  # fmt: skip
PATHS = [
    ("horizon",),
    ("seed",),
    ("description",),
    ("episodes",),
    ("episodes", 0),
    ("episodes", 0, "id"),
    ("episodes", 0, "time"),
    ("episodes", 0, "text"),
    ("episodes", 0, "claims"),
    ("episodes", 0, "claims", 0, "key"),
    ("episodes", 0, "claims", 0, "value"),
    ("episodes", 0, "claims", 0, "importance"),
    ("episodes", 0, "claims", 0, "confidence"),
    ("episodes", 0, "claims", 0, "attrs"),
    ("episodes", 1, "repeat"),
    ("episodes", 1, "every"),
    ("episodes", 1, "time"),
    ("queries", 0, "time"),
    ("queries", 0, "keys"),
    ("queries", 0, "answers"),
    ("queries", 0, "k"),
    ("expect", 0, "policy"),
    ("expect", 0, "query"),
    ("expect", 0, "in_top"),
    ("expect", 0, "after"),
    ("nosuchfield",),
]


def _mutate(doc: Any, path: tuple, value: Any) -> Any:
    import copy

    doc = copy.deepcopy(doc)
    node = doc
    for step in path[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return doc
    try:
        node[path[-1]] = value
    except (IndexError, TypeError):
        pass
    return doc


@st.composite
def scenario_texts(draw: st.DrawFn) -> str:
    doc: Any = BASE
    for _ in range(draw(st.integers(1, 3))):
        doc = _mutate(doc, draw(st.sampled_from(PATHS)), draw(WEIRD))
    text = yaml.safe_dump(doc, sort_keys=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:  # raw text damage: a cut, a duplicate line
        cut = draw(st.integers(0, len(text)))
        text = (
            text[:cut] + draw(st.sampled_from(["", "\n", ": :", "\t", "&a x", "*b"])) + text[cut:]
        )
    return text


FLAGS = {
    "run": {
        "--policy": ["keep-all", "pai", "nosuch", "", "recency-v9"],
        "--seed": ["0", "-1", "x", "99999999999999999999"],
        "--param": ["w_cosine=inf", "nosuch=1", "=", "half_life=-1", "w_cosine=nan", "x"],
        "--llm": ["faults.nosuch=1", "bands.nosuch=1", "faults.embed_fail=2", "text_embedder=zz"],
    },
    "compare": {
        "--policies": ["keep-all", "keep-all,keep-all", "nosuch", ",", "all"],
        "--seeds": ["0", "5:0", "", "0,0", "a:b", "0:2", "-3", "1e3"],
        "--llm": ["faults.nosuch=1", "faults.embed_fail=nan", "q"],
        "--suite": ["nosuch"],
        "--jobs": ["0", "-1", "x"],
    },
    "curve": {
        "--days": ["0:1e9:1", "0:10:0", "5:0:1", "a", "", "0,1,inf", "0:30:1", "1e400"],
        "--pattern": ["never", "every:0", "every:-1", "at:", "at:x", "bogus", "every:1e-9"],
        "--param": ["half_life=0", "nosuch=1"],
        "--memory": ["category=nosuch", "importance=2", "x"],
    },
}


@st.composite
def arg_lists(draw: st.DrawFn, good: str, tmp: str) -> list[str]:
    cmd = draw(st.sampled_from(sorted(FLAGS)))
    argv = [cmd]
    if cmd == "curve":
        argv.append(draw(st.sampled_from(["izzie", "pai", "nosuch", "keep-all"])))
        argv += ["--days", "0:5:1"]
    elif cmd == "run":
        argv += ["--policy", "keep-all", "--scenario", good]
    else:
        argv += ["--policies", "keep-all", "--scenarios", good, "--quiet", "--out", tmp + "/c"]
        argv += ["--cache", tmp + "/cache"]
    for flag in draw(st.lists(st.sampled_from(sorted(FLAGS[cmd])), max_size=3)):
        argv += [flag, draw(st.sampled_from(FLAGS[cmd][flag]))]
    return argv


TALLY: Counter = Counter()
FAST = settings(
    max_examples=700,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@FAST
@given(text=scenario_texts())
def test_generated_scenarios(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kind, err = outcome(_scenario_argv(Path(tmp), "gen", text))
    TALLY[kind] += 1
    assert kind in ("ok", "clean"), (kind, err, text)
    if kind == "clean" and "usage:" not in err:
        assert "gen.yaml" in err, err


@settings(FAST, max_examples=350)
@given(data=st.data())
def test_generated_arguments(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "good.yaml"
        good.write_text(yaml.safe_dump(BASE), encoding="utf-8")
        argv = data.draw(arg_lists(str(good), tmp))
        kind, err = outcome(argv)
    TALLY[kind] += 1
    assert kind in ("ok", "clean"), (kind, err, argv)


def test_arg_corpus(tmp_path: Path) -> None:
    for name, argv in _arg_corpus(tmp_path).items():
        if name == "corrupt-cache":
            continue
        kind, err = outcome(argv)
        assert kind in ("ok", "clean"), (name, kind, err)
        if name in BAD_ARGS:
            assert kind == "clean", (name, "silently accepted", err)


# -- numbers beyond float range, sizes beyond memory, encodings (docs/limits.md) ------------
BEYOND = [
    "1e400", "-1e400", "9" * 400, "-" + "9" * 400, str(2**64), str(2**63), "1e-400", "nan",
    "-inf", "inf", "0x10", "1_0", " ", "", "+-1", "1e3", "2.5", "\x00", "\ud800", "٣",
    "9" * 5000, "1099511627776", "1000000000", "-1", "0",
]  # fmt: skip
# a number's text: the corpus above, any integer of up to 25 digits, any float's repr
NUMBER_TEXT = st.one_of(
    st.sampled_from(BEYOND),
    st.integers(-(10**25), 10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
# a count: refused unless it is small (an accepted one must stay quick to run)
COUNT_TEXT = st.one_of(
    st.sampled_from(BEYOND), st.integers(-5, 4).map(str), st.integers(10**4 + 1, 2**80).map(str)
)
# a seed list beyond the limits or malformed: always refused
BAD_SEEDS = st.one_of(
    st.sampled_from([b for b in BEYOND if b not in ("0", "1000000000", "1099511627776")]),
    st.integers(10_001, 2**70).map(lambda n: f"0:{n}"),
    st.integers(2**63, 2**80).map(str),
    st.integers(-(2**80), -1).map(str),
)
SPECIAL_CHARS = ["\x00", "\x01", "\x1b", "\x7f", "\x85", "\ud800", "\udfff", "\ufeff",
                 "\u2028", "\U0001f600", "é"]  # fmt: skip
SMALL = "synthetic:churn,episodes=120,queries=12,facts=12,horizon=20"
FUZZ_FIELDS = "prune_threshold"


def _number_argv(verb: str, flag: str, value: str, tmp: str, good: str) -> list[str]:
    out = ["--out", tmp + "/o"]
    return {
        "run": ["run", "--policy", "pai", "--scenario", good, flag, value],
        "check": ["check", good, flag, value],
        "curve": ["curve", "pai", "--days", "0:3:1", flag, value],
        "compare": ["compare", "--policies", "keep-all", "--scenarios", good, "--quiet", flag]
        + [value, "--cache", tmp + "/cache", *out],
        "sweep": ["sweep", "--policy", "pai", "--field", FUZZ_FIELDS, "--scenarios", SMALL]
        + ["--quiet", flag, value, *out],
        "sensitivity": ["sensitivity", "--policies", "pai", "--fields", FUZZ_FIELDS]
        + ["--scenarios", SMALL, "--quiet", flag, value, *out],
    }[verb]


NUMBER_FLAGS = [
    ("run", "--seed", COUNT_TEXT),
    ("check", "--seed", COUNT_TEXT),
    ("curve", "--seed", COUNT_TEXT),
    ("compare", "--seeds", COUNT_TEXT),
    ("sweep", "--n", COUNT_TEXT),
    ("sweep", "--sample-seed", NUMBER_TEXT),
    ("sensitivity", "--sobol", COUNT_TEXT),
    ("sensitivity", "--n", COUNT_TEXT),
]
VALUE_FLAGS = [  # KEY=VALUE flags of run whose VALUE is a number
    ("--llm", "bands.spread"),
    ("--llm", "faults.embed_fail"),
    ("--param", "reflect_every"),
    ("--param", "w_cosine"),
    ("--param", "max_links"),
    ("--index", "nprobe"),
]
QUICK = settings(FAST, max_examples=60)


@QUICK
@given(data=st.data())
def test_generated_numbers_on_every_number_flag(data: st.DataObject) -> None:
    verb, flag, strategy = data.draw(st.sampled_from(NUMBER_FLAGS))
    value = data.draw(strategy)
    with tempfile.TemporaryDirectory() as tmp:
        good = Path(tmp) / "good.yaml"  # no expect: block (`check` exits 1 when one fails)
        good.write_text(yaml.safe_dump({k: v for k, v in BASE.items() if k != "expect"}))
        argv = _number_argv(verb, flag, value, tmp, str(good))
        kind, err = outcome(argv, limit=30)
    assert kind in ("ok", "clean"), (kind, err[-300:], argv)


@QUICK
@given(data=st.data())
def test_generated_numbers_in_key_value_flags(data: st.DataObject) -> None:
    flag, key = data.draw(st.sampled_from(VALUE_FLAGS))
    value = data.draw(NUMBER_TEXT)
    argv = ["run", "--policy", "pai", "--scenario", "scripted/name-preference"]
    if flag == "--index":
        argv += ["--index", "mode=ivf"]
    kind, err = outcome([*argv, flag, f"{key}={value}"], limit=30)
    assert kind in ("ok", "clean"), (kind, err[-300:], flag, key, value)


def _numeric_params() -> list[tuple[str, str]]:
    """(policy id, Params field) of every numeric field of every registered policy."""
    import dataclasses

    from memsim.engine.registry import specs

    return [
        (s.id, f.name)
        for s in specs()
        for f in dataclasses.fields(s.load().Params)
        if isinstance(f.default, (int, float)) and not isinstance(f.default, bool)
    ]


@settings(FAST, max_examples=150)
@given(data=st.data())
def test_generated_param_values_on_every_policy(data: st.DataObject) -> None:
    """Any policy's numeric parameter at any number (5e-324, 1e300, 2**64, 1e400): the run
    either finishes or is refused in one line (a degenerate Ebisu prior, a maintenance
    period of 5e-324 days), never a traceback from inside a formula or a package."""
    policy, field = data.draw(st.sampled_from(_numeric_params()))
    value = data.draw(
        st.one_of(
            st.sampled_from(["5e-324", "1e-10", "1e300", str(2**64), "1e400", "-1", "0"]),
            NUMBER_TEXT,
        )
    )
    argv = ["run", "--policy", policy, "--scenario", "scripted/name-preference"]
    kind, err = outcome([*argv, "--param", f"{field}={value}"], limit=30)
    assert kind in ("ok", "clean"), (kind, err[-300:], policy, field, value)


@settings(FAST, max_examples=40)
@given(data=st.data())
def test_generated_seed_lists_beyond_the_limits_are_refused(data: st.DataObject) -> None:
    """Seeds no command can run (too many, beyond 2**63 - 1, negative, malformed): every
    verb that takes a seed list refuses them up front, in one line."""
    verb = data.draw(st.sampled_from(["compare", "sweep", "robustness", "drift", "tune"]))
    seeds = data.draw(BAD_SEEDS)
    flag = "--train-seeds" if verb == "tune" else "--seeds"
    with tempfile.TemporaryDirectory() as tmp:
        argv = {
            "compare": ["compare", "--policies", "keep-all", "--scenarios", SMALL],
            "sweep": ["sweep", "--policy", "pai", "--field", FUZZ_FIELDS, "--scenarios", SMALL],
            "robustness": ["robustness", "--policies", "pai,keep-all"],
            "drift": ["drift"],
            "tune": ["tune", "--policies", "pai", "--scenarios", SMALL],
        }[verb] + [flag, seeds, "--out", tmp + "/o"]
        kind, err = outcome(argv, limit=10)
    assert kind == "clean", (kind, err[-300:], argv)


def _leaves(doc: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _leaves(v, (*path, k))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _leaves(v, (*path, i))]
    return [path]


@st.composite
def damaged_files(draw: st.DrawFn, doc: Any, kind: str) -> bytes:
    """``doc`` written as YAML or JSON with one leaf replaced by a raw number text (beyond
    float range, thousands of digits) or a string holding control characters, NUL or lone
    surrogates (escaped, or raw bytes that are no UTF-8)."""
    import json

    path = draw(st.sampled_from(_leaves(doc)))
    marker = "@@LEAF@@"
    text = (yaml.safe_dump if kind == "yaml" else json.dumps)(_mutate(doc, path, marker))
    how = draw(st.sampled_from(["number", "escaped", "raw"]))
    if how == "number":
        leaf = draw(st.one_of(st.sampled_from(BEYOND), NUMBER_TEXT))
        text = text.replace(repr(marker) if kind == "yaml" else f'"{marker}"', leaf or "0")
        text = text.replace(marker, leaf)
    else:
        chars = draw(st.lists(st.sampled_from(SPECIAL_CHARS), min_size=1, max_size=3))
        body = "x" + "".join(chars)
        # escaped: \uXXXX as JSON and YAML both read it; raw: the characters themselves, a
        # lone surrogate as the bytes no UTF-8 reader accepts
        quoted = json.dumps(body) if how == "escaped" else f'"{body}"'
        text = text.replace(repr(marker) if kind == "yaml" else f'"{marker}"', quoted)
        text = text.replace(marker, quoted)
    return text.encode("utf-8", errors="surrogatepass")


def _file_argv(kind: str, f: Path, tmp: str) -> list[str]:
    if kind == "scenario":
        return ["run", "--policy", "keep-all", "--scenario", str(f)]
    if kind == "locomo":
        return ["run", "--policy", "keep-all", "--scenario", f"locomo:{f}"]
    return ["sweep", str(f), "--quiet", "--out", tmp + "/o"]


LOCOMO = Path(__file__).resolve().parents[1] / "data" / "locomo-mini.json"
FILE_DOCS = {
    "scenario": ("yaml", BASE),
    "sweep": (
        "yaml",
        {
            "scenarios": [SMALL],
            "seeds": [0],
            "policies": {"pai": {"method": "grid", "n": 1, "fields": {FUZZ_FIELDS: [0.05, 0.1]}}},
        },
    ),
}


@settings(FAST, max_examples=90)
@given(data=st.data())
def test_generated_encodings_and_numbers_in_every_input_file(data: st.DataObject) -> None:
    import json

    kind = data.draw(st.sampled_from(["scenario", "sweep", "locomo"]))
    if kind == "locomo":
        fmt, doc = "json", json.loads(LOCOMO.read_text(encoding="utf-8"))[:1]
    else:
        fmt, doc = FILE_DOCS[kind]
    raw = data.draw(damaged_files(doc, fmt))
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / ("gen.json" if fmt == "json" else "gen.yaml")
        f.write_bytes(raw)
        kind_, err = outcome(_file_argv(kind, f, tmp), limit=30)
    assert kind_ in ("ok", "clean"), (kind_, err[-300:], raw[:300])
    if kind_ == "clean" and "usage:" not in err:
        assert f.name in err, err[-300:]


def tally(n_scen: int = 700, n_args: int = 350) -> Counter:
    """Counts over corpus + generated cases (for the issue's before/after note)."""
    counts: Counter = Counter()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, text in SCENARIO_CORPUS.items():
            kind, err = outcome(_scenario_argv(tmp, name, text, "pai"))
            if kind == "ok" and name in BAD_SCENARIOS:
                kind = "silent"
            counts[kind] += 1
            print(f"corpus {name}: {kind} {err.strip()[-160:]!r}", file=sys.__stderr__)
        for name, argv in _arg_corpus(tmp).items():
            kind, err = outcome(argv)
            if kind == "ok" and name in BAD_ARGS:
                kind = "silent"
            counts[kind] += 1
            print(f"corpus {name}: {kind} {err.strip()[-160:]!r}", file=sys.__stderr__)
    for test, n in ((test_generated_scenarios, n_scen), (test_generated_arguments, n_args)):
        inner = settings(FAST, max_examples=n)(test.hypothesis.inner_test)  # type: ignore[attr-defined]

        def record(*a: Any, **k: Any) -> None:
            try:
                inner(*a, **k)  # noqa: B023 - used at once, in this iteration
            except AssertionError as e:  # show what went wrong, keep counting
                print(f"generated: {str(e)[:600]!r}", file=sys.__stderr__)

        TALLY.clear()
        strategy = scenario_texts() if test is test_generated_scenarios else st.data()
        kw = "text" if test is test_generated_scenarios else "data"
        settings(FAST, max_examples=n)(given(**{kw: strategy})(record))()
        counts.update(TALLY)
    return counts


if __name__ == "__main__":
    c = tally(*(int(a) for a in sys.argv[1:3]))
    print(dict(c), "total", sum(c.values()))
