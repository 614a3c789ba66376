"""Mutation check: how many small, plausible bugs in the policies do the tests catch?

    .venv/bin/python -m scripts.mutation                 # every policy, 2 workers
    .venv/bin/python -m scripts.mutation --behavioural   # defaults, behavioural tests only
    .venv/bin/python -m scripts.mutation --policy pai --jobs 1 --list

For every policy module named by a registered spec's entry point (policies/<module>.py), two
kinds of mutant are made from the source, one at a time (AST-located, text-edited, so the
rest of the file stays byte for byte):

- every ``Params`` field whose default (read from the dataclass, whatever expression gives
  it) is a number or a bool: a number moves by 10% (0.01 when it is 0; an int by 1; a number
  with ``choices`` to the next choice), inside the field's declared range; a bool flips;
- every threshold comparison ``<``, ``<=``, ``>``, ``>=`` whose other side is a Params field
  (``p.x``, ``self.params.x``, ``params.x``) or a number: ``<`` <-> ``<=``, ``>`` <-> ``>=``.

Each mutant is written into a private copy of the repository (one per worker) and tests run
there with ``pytest -x``. In the full mode, both kinds, judged by tests/policies/test_<module>*.py
and the policy's rows of tests/policies/test_defaults.py (which notices any default by
construction). In the behavioural mode (``--behavioural``), the default mutants only, judged
without that table by every test exercising the module's policies (behavioural_tests_for). A
mutant is killed when the tests fail (or time out); a default mutant declared in EQUIVALENT
is counted apart. The script prints each survivor and the kill rate per policy and overall.
It is not part of the test command (it takes a while).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures as cf
import dataclasses
import importlib
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COPY = ("memsim", "policies", "scenarios", "tests", "benchmarks", "docs", "pyproject.toml")
FLIP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
DEFAULTS_TABLE = "tests/policies/test_defaults.py"
TOKEN = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


# Default mutants no behaviour can reveal, "<module>:<Params class>.<field>" -> why. They are
# run all the same (one that dies must leave the table) and counted apart from the kill rate.
EQUIVALENT: dict[str, str] = {
    "engram:EngramParams.never_accessed_strength": "-1 is the off switch: every negative "
    "value (-0.9 too) leaves R decaying from creation (strength: >= 0 turns it on), and the "
    "bound's max(1, value) is 1 either way",
    "generative_agents:GenerativeAgentsParams.reinforce_cosine": "2.0 and 2.2 both exceed "
    "every cosine (1 + the float32 screen margin): no claim is ever a repetition either way",
    "generative_agents:GenerativeAgentsParams.retrieval_is_review": "a retrieval sets the "
    "rows' last access in _accessed, and the review it adds (_review = _touch) sets the same "
    "last access to the same time again: nothing reads the difference",
}


@dataclass(frozen=True)
class Mutant:
    policy: str  # module stem, e.g. "pai" or "baselines"
    path: str  # relative to the repository
    start: int  # character offsets of the replaced text
    end: int
    new: str
    line: int
    what: str
    field: str = ""  # "<Params class>.<field>" for a default mutant, "" for a comparison


def equivalent(m: Mutant) -> bool:
    return bool(m.field) and f"{m.policy}:{m.field}" in EQUIVALENT


def _offsets(text: str) -> list[int]:
    out, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        out.append(pos)
    return out


def _number(node: ast.expr) -> float | int | bool | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    return None


def perturb(value: Any, meta: dict[str, Any]) -> Any:
    """A nearby legal value, or None when the field has none.

    A bool flips; a number from a set of ``choices`` moves to the next choice (the previous
    one when it is the last); any other number moves up by 10% (0.01 from 0; an int by one
    step), else down, staying inside the field's declared range.
    """
    if isinstance(value, bool):
        return not value
    if not isinstance(value, (int, float)):
        return None
    choices = meta.get("choices")
    if choices:
        if value not in choices or len(choices) < 2:
            return None
        i = list(choices).index(value)
        return choices[i + 1] if i + 1 < len(choices) else choices[i - 1]
    if isinstance(value, int):
        tries: list[Any] = [value + 1, value - 1]
    else:
        step = abs(value) * 0.1 or 0.01
        tries = [value + step, value - step]
    lo, hi = meta.get("lo"), meta.get("hi")
    for v in tries:
        if lo is not None and (v < lo or (meta.get("lo_open") and v == lo)):
            continue
        if hi is not None and (v > hi or (meta.get("hi_open") and v == hi)):
            continue
        return v
    return None


def _default_expr(stmt: ast.AnnAssign) -> ast.expr | None:
    """The expression that gives a field its default: ``param(<here>, ...)`` or ``= <here>``."""
    value = stmt.value
    if value is None:
        return None
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "param":
        if value.args:
            return value.args[0]
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def _is_param_ref(node: ast.expr) -> bool:
    """``p.x``, ``params.x``, ``self.params.x``, ``self.p.x``."""
    if not isinstance(node, ast.Attribute):
        return False
    base = node.value
    if isinstance(base, ast.Name):
        return base.id in ("p", "params")
    return isinstance(base, ast.Attribute) and base.attr in ("params", "p")


def mutants_of(path: Path, policy: str, comparisons: bool = True) -> list[Mutant]:
    text = path.read_text()
    tree = ast.parse(text)
    offs = _offsets(text)
    rel = str(path.relative_to(ROOT))
    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))

    def at(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        line_text = text[offs[line - 1] : offs[line]]
        return offs[line - 1] + len(line_text.encode()[:col].decode())

    out: list[Mutant] = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        params_cls = getattr(module, cls.name, None)
        if not (isinstance(params_cls, type) and dataclasses.is_dataclass(params_cls)):
            continue
        if not cls.name.endswith("Params"):
            continue
        fields = {f.name: f for f in dataclasses.fields(params_cls)}
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            name = stmt.target.id
            arg = _default_expr(stmt)
            if arg is None or name not in fields:
                continue
            # the value the class really holds, so any expression (1 / 3, math.log(2)) counts
            value = fields[name].default
            new = perturb(value, dict(fields[name].metadata))
            if new is None:
                continue
            start = at(arg.lineno, arg.col_offset)
            end = at(arg.end_lineno or arg.lineno, arg.end_col_offset or 0)
            out.append(
                Mutant(
                    policy,
                    rel,
                    start,
                    end,
                    repr(new),
                    arg.lineno,
                    f"{cls.name}.{name} default {value!r} -> {new!r}",
                    field=f"{cls.name}.{name}",
                )
            )
    if not comparisons:
        return out
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if type(op) not in FLIP:
                continue
            left, right = operands[i], operands[i + 1]
            if not any(_is_param_ref(x) or _number(x) is not None for x in (left, right)):
                continue
            a = at(left.end_lineno or left.lineno, left.end_col_offset or 0)
            b = at(right.lineno, right.col_offset)
            gap = text[a:b]
            token = TOKEN[type(op)]
            k = gap.find(token if len(token) == 2 else token)
            # skip the two-character token when looking for a one-character one
            while k >= 0 and len(token) == 1 and gap[k + 1 : k + 2] == "=":
                k = gap.find(token, k + 2)
            if k < 0:
                continue
            seg = ast.get_source_segment(text, node) or ""
            out.append(
                Mutant(
                    policy,
                    rel,
                    a + k,
                    a + k + len(token),
                    FLIP[type(op)],
                    left.lineno,
                    f"{seg.splitlines()[0][:70]!s}: {token} -> {FLIP[type(op)]}",
                )
            )
    return out


def policy_modules() -> dict[str, Path]:
    """Module stem -> file of every registered policy whose code lives in policies/."""
    from memsim.engine import registry

    out = {}
    for spec in registry.specs():
        module = spec.entry_point.partition(":")[0]
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        if path.is_file():
            out[path.stem] = path
    return out


def tests_for(stem: str) -> list[str]:
    """The fast subset of tests that guards one policy module (full mode)."""
    from memsim.engine import registry

    files = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "policies").glob(f"test_{stem}*.py")
    )
    ids = [
        s.id for s in registry.specs() if s.entry_point.partition(":")[0].rsplit(".", 1)[-1] == stem
    ]
    defaults = [
        f"{DEFAULTS_TABLE}::test_params_defaults_equal_the_documented_table[{i}]" for i in ids
    ]
    return defaults + files  # the table first: a changed default fails in seconds


def collected_tests() -> list[str]:
    """Node ids of every test under tests/policies except the defaults table's."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "--collect-only", "-q"]
        + ["tests/policies"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    nodes = [ln for ln in done.stdout.splitlines() if "::" in ln]
    if done.returncode != 0 or not nodes:
        raise SystemExit(f"mutation: cannot collect tests/policies: {done.stdout[-400:]}")
    return [n for n in nodes if not n.startswith(DEFAULTS_TABLE)]


def behavioural_tests_for(stem: str, nodes: list[str]) -> list[str]:
    """Every test that exercises one policy module through its behaviour, not its table.

    A test file counts when its name starts or ends with the module's, imports it, or names
    one of its policy ids in quotes; a parametrized case counts when its id names one of the
    module's policies or classes (conformance ``pai:check_x``, claims ``pai.x``,
    ``KeepAll-None``), or names no policy at all and sits in a file that counts. The
    ``test_param_effects_*`` files run first, then the module's own files, then the shared
    parametrized ones (conformance, claims, properties).
    """
    from memsim.engine import registry

    specs = registry.specs()

    def owner(spec: Any) -> str:
        return str(spec.entry_point.partition(":")[0].rsplit(".", 1)[-1])

    ours = [s for s in specs if owner(s) == stem]
    words = {s.id for s in ours} | {s.entry_point.partition(":")[2] for s in ours} | {stem}
    every = {s.id for s in specs} | {s.entry_point.partition(":")[2] for s in specs}
    every |= {owner(s) for s in specs}

    def names(text: str, word: str) -> bool:
        # pytest joins parameters with "-": a word may follow one
        return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None

    def counts(path: str) -> bool:
        name = Path(path).stem
        if name.startswith(f"test_{stem}") or name.endswith(f"_{stem}"):
            return True
        text = (ROOT / path).read_text()
        if re.search(rf"\bpolicies(\.|\s+import\s+(\w+,\s*)*){stem}\b", text):
            return True
        return any(f'"{s.id}"' in text or f"'{s.id}'" in text for s in ours)

    files: dict[str, bool] = {}
    own, shared = [], []
    for node in nodes:
        path, _, rest = node.partition("::")
        if path not in files:
            files[path] = counts(path)
        case = rest.partition("[")[2]
        if case:
            mine = any(names(case, w) for w in words)
            if not mine and (any(names(case, w) for w in every) or not files[path]):
                continue
            (own if files[path] and Path(path).name.startswith(f"test_{stem}") else shared).append(
                node
            )
        elif files[path]:
            (own if Path(path).name.startswith(f"test_{stem}") else shared).append(node)
    # the tests written to notice one default each first: a mutant they kill dies at once
    return sorted(own + shared, key=lambda n: "/test_param_effects_" not in n)


def _make_copy(base: Path) -> Path:
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, base / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, base / name)
    return base


def run_tests(copy: Path, tests: list[str], timeout: float) -> tuple[bool, float]:
    """(passed, seconds) of the tests in a copy of the repository."""
    env = {
        **os.environ,
        "PYTHONPATH": str(copy),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            cmd,
            cwd=copy,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )
        ok = done.returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    return ok, time.monotonic() - t0


def _rate(killed: int, n: int) -> str:
    return f"{killed:4d} / {n:4d} killed  {100 * killed / max(n, 1):5.1f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", action="append", help="module stem (pai, baselines, ...)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument("--timeout-factor", type=float, default=5.0)
    ap.add_argument(
        "--behavioural",
        action="store_true",
        help="default mutants only, judged by the behavioural tests (no defaults table)",
    )
    ap.add_argument(
        "--only", action="append", help="run only the mutants whose description holds this text"
    )
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    modules = policy_modules()
    chosen = args.policy or sorted(modules)
    unknown = sorted(set(chosen) - set(modules))
    if unknown:
        print(f"mutation: unknown policy module {unknown[0]!r}; known: {', '.join(modules)}")
        return 2
    everything = [m for stem in sorted(modules) for m in mutants_of(modules[stem], stem, False)]
    stale = sorted(set(EQUIVALENT) - {f"{m.policy}:{m.field}" for m in everything})
    if stale:
        print(f"mutation: EQUIVALENT names {stale[0]!r}, which has no default mutant; remove it")
        return 2
    mutants = [m for stem in chosen for m in mutants_of(modules[stem], stem, not args.behavioural)]
    if args.only:
        mutants = [m for m in mutants if any(text in m.what for text in args.only)]
    # the sources as they were when the mutants were made (the checkout may change meanwhile)
    sources = {m.path: (ROOT / m.path).read_text() for m in mutants}
    if args.behavioural:
        nodes = collected_tests()
        tests = {stem: behavioural_tests_for(stem, nodes) for stem in chosen}
    else:
        tests = {stem: tests_for(stem) for stem in chosen}
    if args.list:
        for m in mutants:
            note = " (declared equivalent)" if equivalent(m) else ""
            print(f"{m.path}:{m.line}: {m.what}{note}")
        for stem in chosen:
            print(f"{stem}: {len(tests[stem])} tests")
        print(f"{len(mutants)} mutants")
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="memsim-mutation-"))
    copies: queue.Queue[Path] = queue.Queue()
    for j in range(max(1, args.jobs)):
        copies.put(_make_copy(tmp / f"w{j}"))

    def unmutated(stem: str) -> tuple[str, bool, float]:
        copy = copies.get()
        try:
            return (stem, *run_tests(copy, tests[stem], timeout=1800))
        finally:
            copies.put(copy)

    baseline: dict[str, float] = {}
    with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        # the unmutated tests must pass, and give the timeout
        for stem, ok, secs in pool.map(unmutated, chosen):
            if not ok:
                print(f"mutation: the tests of {stem} fail without any mutant; fix them first")
                shutil.rmtree(tmp, ignore_errors=True)
                return 1
            baseline[stem] = secs
            print(f"{stem}: {len(tests[stem])} tests, {secs:.0f} s unmutated", flush=True)

    def one(m: Mutant) -> tuple[Mutant, bool]:
        copy = copies.get()
        target = copy / m.path
        original = sources[m.path]
        try:
            target.write_text(original[: m.start] + m.new + original[m.end :])
            timeout = max(60.0, args.timeout_factor * baseline[m.policy])
            ok, _ = run_tests(copy, tests[m.policy], timeout)
            return m, not ok
        finally:
            target.write_text(original)
            copies.put(copy)

    killed: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    apart: dict[str, int] = defaultdict(int)  # declared equivalent: counted apart
    try:
        with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for m, dead in pool.map(one, mutants):
                if equivalent(m):
                    apart[m.policy] += 1
                    if dead:
                        print(f"killed but declared equivalent (remove it)  {m.field}", flush=True)
                    continue
                total[m.policy] += 1
                killed[m.policy] += dead
                if not dead:
                    print(f"survived  {m.path}:{m.line}: {m.what}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    for stem in chosen:
        print(f"{stem:18s} {_rate(killed[stem], total[stem])}  ({apart[stem]} equivalent)")
    n, k, e = sum(total.values()), sum(killed.values()), sum(apart.values())
    print(f"{'overall':18s} {_rate(k, n)}  ({e} declared equivalent, counted apart)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
