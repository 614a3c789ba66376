"""The shell examples of README.md and docs/usage.md run as written.

Every command in a fenced ``bash`` block is run in a fresh working folder (``memsim`` from this
environment), after the ``yaml`` blocks that open with ``# NAME.yaml`` are written there as
that file, and must exit 0 (or the code in ``EXIT_CODES``, which the page explains). A command
that is not run is in ``NOT_RUN`` with the reason; a command in neither fails the test, so a
new example is either run or declared.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/usage.md")
COMMAND_LIMIT_S = 300

# command (as written, comments and continuations removed) -> why it is not run here
NOT_RUN = {
    "./scripts/main.sh": "the whole standard comparison (about 12 minutes); its committed "
    "output, results/standard/, is checked by tests/workbench",
    "./scripts/test.sh": "runs this test suite itself",
    ". .venv/bin/activate": "shell set-up; this test runs the environment's memsim directly",
    ".venv/bin/python -m pip install -e docs/examples/halflife": (
        "installs a package into the shared environment"
    ),
    "memsim check scripted/name-preference --policies halflife": (
        "needs the halflife plug-in installed (tests/policies/test_plugin*.py install it aside)"
    ),
    "memsim params halflife": "needs the halflife plug-in installed",
    ".venv/bin/python -m pytest tests/policies/test_conformance.py -k halflife": (
        "a test run inside the test suite; needs the halflife plug-in"
    ),
    "memsim compare --suite standard --locomo /path/to/locomo10.json": (
        "a placeholder path and the whole standard suite"
    ),
    "memsim claims": (
        "rewrites the committed docs/claims.md and results/claims.csv "
        "(tests/workbench/test_claims* check them)"
    ),
    "memsim drift --kind code --locomo ../shared/data/locomo/locomo-dev.json --seeds 0:5 "
    "--jobs 2": "rewrites the committed results/drift.md; minutes of runs",
    "memsim compare --policies keep-all,actr,fsrs,ebisu,memorybank,generative-agents "
    "--scenarios synthetic:churn --seeds 0": "six policies on a full-size stream (minutes)",
    "memsim compare --policies pai,cosmo --scenarios synthetic:churn "
    "--param pai.prune_threshold=0.1": "full-size stream with calibration (a minute and more)",
    "memsim sweep --policy pai --field prune_threshold=0.01:0.2 --field synthesis_threshold "
    "--method lhs --n 20 --scenarios synthetic:churn --seeds 0:3 --jobs 2": (
        "60 full-size runs (minutes)"
    ),
    "memsim sensitivity --policies pai,cosmo --scenarios synthetic:churn --n 5 "
    "--out /tmp/memsim-sensitivity": "one-at-a-time curves of two policies (minutes)",
    "memsim sensitivity --policies pai --scenarios synthetic:churn --sobol 64 "
    "--fields prune_threshold,default_confidence,cosine_floor --jobs 2 "
    "--out /tmp/memsim-sensitivity": "320 full-size runs (many minutes)",
    "memsim tune --policies pai --scenarios synthetic:churn --objectives recall,footprint_mean "
    "--trials 40 --train-seeds 0:5 --test-seeds 5:10 --out /tmp/memsim-tuning": (
        "40 Optuna trials of five runs each (many minutes)"
    ),
    "memsim sweep my-sweep.yaml --dask local:2": "a sweep file the page does not give",
    "memsim run --policy pai --scenario scripted/name-preference "
    "--llm openai:http://127.0.0.1:8080/v1,model=local,cache=llm-cache": (
        "needs a model server on 127.0.0.1:8080 (tests/engine/test_openai_llm.py fakes one)"
    ),
    "memsim run --policy pai --scenario scripted/name-preference --llm replay:llm-cache": (
        "replays the cache the model-server example above records"
    ),
    "memsim compare --policies keep-all,pai,kernle --scenarios my.yaml,synthetic:churn": (
        "a full-size stream with calibration (a minute and more)"
    ),
}

# command -> its exit code when not 0 (the page says why)
EXIT_CODES = {"memsim check my.yaml": 1}

FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block of a markdown page."""
    out: list[tuple[str, str]] = []
    lang: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        m = FENCE.match(line.strip())
        if m and lang is None:
            lang, body = m.group(1), []
        elif line.strip() == "```" and lang is not None:
            out.append((lang, "\n".join(body)))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def commands(body: str) -> list[str]:
    """The commands of a shell block: continuations joined, comments dropped, words single
    spaced."""
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(shlex.join(words))
    return out


def examples(page: str) -> tuple[dict[str, str], list[str]]:
    """The files (``# NAME.yaml`` blocks) and the shell commands of one page."""
    files: dict[str, str] = {}
    cmds: list[str] = []
    for lang, body in blocks((ROOT / page).read_text()):
        first = body.splitlines()[0].strip() if body.strip() else ""
        if lang == "yaml" and re.fullmatch(r"#\s*[\w.-]+\.ya?ml", first):
            files[first.lstrip("#").strip()] = body + "\n"
        elif lang == "bash":
            cmds += commands(body)
    return files, cmds


CASES = [(page, cmd) for page in PAGES for cmd in dict.fromkeys(examples(page)[1])]


def test_the_pages_have_examples_and_every_declaration_is_used():
    every = {cmd for _, cmd in CASES}
    assert "memsim check my.yaml" in every and len(every) > 10
    assert not set(NOT_RUN) - every, "a NOT_RUN entry names no example any more"
    assert not set(EXIT_CODES) - every
    for reason in NOT_RUN.values():
        assert len(reason) > 10


@pytest.mark.slow
@pytest.mark.parametrize(("page", "command"), CASES, ids=[f"{p}: {c[:60]}" for p, c in CASES])
def test_example_runs_as_written(page: str, command: str, tmp_path: Path):
    if command in NOT_RUN:
        pytest.skip(f"not run: {NOT_RUN[command]}")
    files, _ = examples(page)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    words = shlex.split(command)
    assert words[0] == "memsim", f"{page}: {command!r} is neither run nor declared in NOT_RUN"
    r = subprocess.run(
        [sys.executable, "-m", "memsim", *words[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=COMMAND_LIMIT_S,
    )
    expected = EXIT_CODES.get(command, 0)
    assert r.returncode == expected, f"{page}: {command}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
