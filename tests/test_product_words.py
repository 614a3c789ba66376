"""The product describes the product as it is; the history lives in git.

Product files (the packages, plug-ins, benchmarks, scripts, notebooks, docs and committed
results) and the names of test files and test functions must not carry development-process
words: a step, issue or target number used as a name, "this round", or "this machine" used
as a time reference. A legitimate use is allowed by its exact file and line pattern, with
the reason, in ALLOWED.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PRODUCT = (
    "memsim",
    "policies",
    "scenarios",
    "benchmarks",
    "scripts",
    "notebooks",
    "docs",
    "results",
)
PRODUCT_FILES = ("README.md",)
SUFFIXES = {".py", ".md", ".csv", ".json", ".jsonl", ".txt", ".ipynb", ".yaml", ".toml", ".sh"}
SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints", ".venv", ".pytest_cache", ".hypothesis"}

# Word-bounded, case-insensitive; an underscore separates words too, so that an identifier
# such as `bench_target5_x` is caught.
_B, _E = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
PATTERNS = {
    "step number": re.compile(_B + r"stop ?\d+" + _E, re.IGNORECASE),
    "issue number": re.compile(_B + r"issue (?:#\s?)?\d+" + _E, re.IGNORECASE),
    "target number": re.compile(_B + r"target ?\d+" + _E, re.IGNORECASE),
    "this round": re.compile(_B + r"this round" + _E, re.IGNORECASE),
    "this machine": re.compile(_B + r"this machine" + _E, re.IGNORECASE),
}

# (file, regex the offending line must match, reason). Keep it short.
ALLOWED: tuple[tuple[str, str, str], ...] = ()


def product_files(root: Path) -> list[Path]:
    """Every product text file under ``root``: git's tracked and untracked-but-not-ignored
    files when ``root`` is a checkout, else a walk that skips caches."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "--", *PRODUCT, *PRODUCT_FILES],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        paths = [root / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for d in PRODUCT if (root / d).is_dir() for p in (root / d).rglob("*")]
        paths += [root / f for f in PRODUCT_FILES]
    return sorted(
        p
        for p in paths
        if p.is_file()
        and p.suffix in SUFFIXES
        and not SKIPPED_DIRS.intersection(p.relative_to(root).parts)
    )


def _allowed(rel: str, line: str) -> bool:
    return any(rel == f and re.search(rx, line) for f, rx, _ in ALLOWED)


def hits_in_text(rel: str, text: str) -> list[str]:
    """``rel:line: [kind] excerpt`` for every process word in ``text`` (and in ``rel``)."""
    found = []
    for kind, rx in PATTERNS.items():
        if rx.search(rel.replace("_", " ").replace("-", " ")):
            found.append(f"{rel}:0: [{kind}] in the file name")
    for n, line in enumerate(text.splitlines(), 1):
        for kind, rx in PATTERNS.items():
            m = rx.search(line)
            if m and not _allowed(rel, line):
                start = max(m.start() - 40, 0)
                found.append(f"{rel}:{n}: [{kind}] ...{line[start : m.end() + 40]}...")
    return found


def scan(root: Path, files: list[Path]) -> list[str]:
    found = []
    for p in files:
        rel = p.relative_to(root).as_posix()
        found += hits_in_text(rel, p.read_text(encoding="utf-8", errors="replace"))
    return found


def names_in_tests(root: Path) -> list[str]:
    """Test file names and test function names under ``root/tests``, as ``rel:line: name``."""
    found = []
    for p in sorted((root / "tests").rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        names = [(0, p.stem)] + [
            (node.lineno, node.name)
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name.lower().startswith("test")
        ]
        for lineno, name in names:
            words = name.replace("_", " ")
            found += [
                f"{rel}:{lineno}: [{kind}] {name}"
                for kind, rx in PATTERNS.items()
                if rx.search(words)
            ]
    return found


def test_product_files_carry_no_development_process_words():
    found = scan(REPO, product_files(REPO))
    assert not found, "development-process words in product files:\n" + "\n".join(found)


def test_test_names_carry_no_development_process_words():
    found = names_in_tests(REPO)
    assert not found, "development-process words in test names:\n" + "\n".join(found)


def test_a_planted_step_number_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# A page\n\nMeasured at stop 12, then kept.\n")
    (tmp_path / "memsim").mkdir()
    (tmp_path / "memsim" / "mod.py").write_text("x = 1  # a stop value of 12 is fine\n")
    found = scan(tmp_path, product_files(tmp_path))
    assert len(found) == 1 and found[0].startswith("docs/page.md:3: [step number]"), found


def test_each_pattern_and_its_neighbours():
    caught = [
        "stop 12",
        "stop12",
        "Stop 70's bound",
        "issue 16",
        "issue #16",
        "target 5",
        "bench_target5_x",
        "this round",
        "before this round",
        "on this machine",
    ]
    clean = [
        "stop=12",
        "a stop of 12",
        "targets 5",
        "the 5x target",
        "issues 16",
        "github.com/org/repo/issues/16",
        "this rounding",
        "run on the machine",
    ]
    for text in caught:
        assert hits_in_text("x.md", text), text
    for text in clean:
        assert not hits_in_text("x.md", text), text


def test_test_names_are_checked(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_stop7_things.py").write_text(
        "def test_target5_met():\n    pass\n\ndef test_fine():\n    pass\n"
    )
    found = names_in_tests(tmp_path)
    assert [f.split(": ")[0] for f in found] == [
        "tests/test_stop7_things.py:0",
        "tests/test_stop7_things.py:1",
    ], found
