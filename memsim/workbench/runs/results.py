"""Run definitions, their deterministic result paths, and atomic result files.

A run is defined by (policy id with version, scenario spec, seed, parameter overrides,
mock-LLM overrides). Its results land in ``<root>/runs/<policy>/<scenario>/seed<N>-<key>/``
where ``key`` hashes the whole definition together with a fingerprint of the code that
produces results (the sources of memsim, policies and scenarios), so an interrupted sweep
resumes, and a changed metric or policy never reuses a stale result: a directory whose
``manifest.json`` exists is complete (the manifest is written last) and is loaded, not rerun.
Every file is written to a temporary name and renamed into place, so a crash never leaves a
half-written file under its final name.

Files of one run: ``queries.parquet`` (one row per query, metrics), ``footprint.parquet``,
``summary.json`` (run-level metrics), ``expectations.json`` (the scenario's stated
expectations judged on this run, when it states any), ``manifest.json`` (definition,
resolved params, seeds, package versions, git commit, LLM config). Timings are machine noise
and live apart in ``timings.json`` so the other files are byte-identical for the same
definition.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import json
import numbers
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import memsim
from memsim.engine import limits
from memsim.engine.errors import MemsimError, ParamError
from memsim.engine.registry import ENTRY_POINT_GROUP
from memsim.engine.sources import SOURCE_GROUP, SUITE_GROUP, parse

PACKAGE = Path(memsim.__file__).resolve().parent  # memsim/, wherever this module sits in it

RESULT_FILES = ("queries.parquet", "footprint.parquet", "summary.json", "manifest.json")
PACKAGES = ("memsim", "numpy", "scipy", "pandas", "pyarrow", "faiss-cpu", "rank-bm25", "PyYAML")


@dataclass(frozen=True)
class RunDef:
    """One run of the grid. ``params`` and ``llm`` are sorted (name, value) override pairs."""

    policy: str
    scenario: str
    seed: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    llm: tuple[tuple[str, Any], ...] = ()
    # candidate index settings (mode, min_rows, nprobe, audit_every), () = the
    # policy's default (Policy.default_index: exact, or from 5,000 rows for the reference
    # models and Personal AI, whose ingest searches the store per claim)
    index: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:  # a seed is an int64 column of every result table
        seed = self.seed
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise ParamError(f"run {self.policy}: seed must be an integer, got {seed!r}")
        if not 0 <= seed <= limits.MAX_SEED:
            raise ParamError(
                f"run {self.policy}: seed must be in [0, {limits.MAX_SEED}], "
                f"got {limits.shown(int(seed))}"
            )

    def canonical(self) -> str:
        d = asdict(self)
        if not d["index"]:  # exact runs keep the definition (and key) they always had
            del d["index"]
        return json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)

    @property
    def key(self) -> str:
        """A hash of everything that makes the results: the definition, the code, and the
        content of an input file the scenario reads, so runs cached under one root are safe
        to share between any output folders."""
        text = self.canonical() + code_fingerprint() + input_fingerprint(self.scenario)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def path(self, root: Path | str) -> Path:
        return (
            Path(root)
            / "runs"
            / slug(self.policy)
            / slug(self.scenario)
            / f"seed{self.seed}-{self.key}"
        )


# What makes results among a package's files: its code, its scripted scenarios and the
# model prompts (memsim/engine/prompts/*.json).
SOURCE_SUFFIXES = (".py", ".yaml", ".json")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 over the source files of the packages that make results, read once per process:
    memsim itself and every top-level package that provides a registered policy, scenario
    source or suite (the built-in ``policies`` and ``scenarios``, and any plug-in's)."""
    names = {"memsim"}
    for group in (ENTRY_POINT_GROUP, SOURCE_GROUP, SUITE_GROUP):
        names |= {ep.value.split(":")[0].split(".")[0] for ep in metadata.entry_points(group=group)}
    h = hashlib.sha256()
    for name in sorted(names):
        pkg = importlib.import_module(name)
        base = Path(pkg.__file__ or "").resolve().parent
        files = (  # a plug-in that is one module, not a package: that file (not its folder)
            sorted(p for p in base.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
            if hasattr(pkg, "__path__")
            else [Path(pkg.__file__ or "").resolve()]
        )
        for f in files:
            h.update(f"{name}/{f.relative_to(base).as_posix()}\0".encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def project_root() -> Path:
    """The checkout memsim runs from (the folder with pyproject.toml above the package): the
    home of default output folders, whatever the current directory."""
    base = PACKAGE.parent
    if not (base / "pyproject.toml").is_file():
        raise MemsimError(f"memsim is installed outside a checkout ({base}): give --out")
    return base


@functools.lru_cache(maxsize=256)
def _input_file(spec: str) -> Path | None:
    """The file a scenario spec reads (a user's YAML, a LoCoMo JSON), if it names one."""
    try:
        target = Path(parse(spec).target)
    except MemsimError:
        return None
    return target.resolve() if target.is_file() else None


@functools.lru_cache(maxsize=256)
def _file_digest(path: Path, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def input_fingerprint(spec: str) -> str:
    """sha256 of the input file ``spec`` reads ("" for none, e.g. shipped scenarios, which
    the code fingerprint covers): an edited file never reuses a stale cached run."""
    path = _input_file(spec)
    if path is None:
        return ""
    try:
        st = path.stat()
        return _file_digest(path, st.st_mtime_ns, st.st_size)
    except OSError:  # gone since: loading it will say so
        return ""


def slug(text: str) -> str:
    """A filesystem-safe, readable rendering of a spec (``synthetic:steady,n=5`` ->
    ``synthetic-steady-n-5``); long specs (paths) keep their tail and a short hash."""
    s = re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "x"
    if len(s) > 60:
        s = s[-40:].strip("-.") + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return s


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a result file is shared
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(
        path, (json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n").encode()
    )


def atomic_write_parquet(path: Path, frame: pd.DataFrame) -> None:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, engine="pyarrow")
    atomic_write_bytes(path, buf.getvalue())


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (set, frozenset, tuple)):
        return sorted(o) if isinstance(o, (set, frozenset)) else list(o)
    return str(o)


def package_versions() -> dict[str, str]:
    return dict(_package_versions())


# Asked once per process (every run's manifest records both; they cost ~10 and ~5 ms a run):
# the packages and code a process runs are the ones it imported.
@functools.cache
def _package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def git_changed_files(root: Path) -> list[str] | None:
    """The tracked files of the checkout at ``root`` with uncommitted changes (``git
    status``; untracked files left out, as a "-dirty" commit and pytest-benchmark's flag
    leave them; a renamed file by its new path), sorted; None outside git or when git does
    not answer."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    # each line "XY path", or "XY old -> new" for a rename
    return sorted(line[3:].split(" -> ")[-1] for line in out.stdout.splitlines() if line.strip())


def read_json(path: Path, part: str = "whole") -> Any:
    """The JSON in ``path``: the whole file's document, its non-blank lines' documents as a
    list (``part="lines"``: a --log), or its last non-blank line's (``part="last"``:
    benchmarks.simrun's output after anything printed before it); a one-line ParamError
    naming the file, line and column where it is not JSON."""
    text = path.read_text()
    rows = [(i, x) for i, x in enumerate(text.splitlines(), 1) if x.strip()]
    if part == "last":
        rows = rows[-1:]
    try:
        if part == "whole":
            return json.loads(text)
        docs = [json.loads(x) for _, x in rows]
        return docs[-1] if part == "last" else docs
    except json.JSONDecodeError as e:
        line = e.lineno if part == "whole" else next(i for i, x in rows if x == e.doc)
        raise ParamError(f"{path}: not JSON at line {line}, column {e.colno}: {e.msg}") from None
    except IndexError:  # (part "last" of an empty file)
        raise ParamError(f"{path}: empty, no JSON line") from None


@functools.cache
def git_commit() -> str:
    here = PACKAGE
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("-dirty" if git_changed_files(here) else "")


@dataclass
class RunResult:
    definition: RunDef
    queries: pd.DataFrame
    footprint: pd.DataFrame
    summary: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # the scenario's stated expectations judged on this run (memsim.engine.sources.Verdict
    # fields as dicts); empty for a scenario that states none
    expectations: list[dict[str, Any]] = field(default_factory=list)


def is_complete(root: Path | str, d: RunDef) -> bool:
    p = d.path(root)
    return all((p / f).exists() for f in RESULT_FILES)


def save(root: Path | str, r: RunResult) -> Path:
    """Write a run's files; the manifest goes last so its presence means 'complete'."""
    p = r.definition.path(root)
    atomic_write_parquet(p / "queries.parquet", r.queries)
    atomic_write_parquet(p / "footprint.parquet", r.footprint)
    atomic_write_json(p / "summary.json", r.summary)
    atomic_write_json(p / "timings.json", r.timings)
    if r.expectations:
        atomic_write_json(p / "expectations.json", r.expectations)
    atomic_write_json(p / "manifest.json", r.manifest)
    return p


def load(root: Path | str, d: RunDef) -> RunResult:
    p = d.path(root)
    try:
        manifest = json.loads((p / "manifest.json").read_text())
        timings_path = p / "timings.json"
        verdicts_path = p / "expectations.json"
        return RunResult(
            definition=d,
            queries=pd.read_parquet(p / "queries.parquet"),
            footprint=pd.read_parquet(p / "footprint.parquet"),
            summary=json.loads((p / "summary.json").read_text()),
            manifest=manifest,
            timings=json.loads(timings_path.read_text()) if timings_path.exists() else {},
            expectations=(json.loads(verdicts_path.read_text()) if verdicts_path.exists() else []),
        )
    except Exception as e:  # noqa: BLE001 - any damage to a cached file means the same
        raise MemsimError(
            f"cached run {p} is unreadable ({type(e).__name__}: {' '.join(str(e).split())[:200]});"
            " rerun with --no-resume, or delete that folder"
        ) from None


def manifest_for(
    d: RunDef, *, policy: Any, llm_config: Mapping[str, Any], stream: Any
) -> dict[str, Any]:
    spec = policy.spec
    return {
        "definition": json.loads(d.canonical()),
        "key": d.key,
        "policy": {
            "id": spec.id if spec else d.policy,
            "version": spec.version if spec else None,
            "class": f"{type(policy).__module__}.{type(policy).__qualname__}",
            "params": policy.params.to_dict(),
        },
        "scenario": {
            "spec": d.scenario,
            "name": stream.name,
            "description": stream.description,
            "events": len(stream),
            "horizon_days": stream.horizon,
            "meta": {k: v for k, v in stream.meta},
        },
        "seeds": {"run": d.seed, "llm": llm_config.get("seed", d.seed)},
        "llm": dict(llm_config),
        **({"index_audit": policy.index_audit()} if d.index or policy.candidates.answered else {}),
        "packages": package_versions(),
        "git_commit": git_commit(),
        "code_fingerprint": code_fingerprint(),
    }


# timings.json fields of timing_table's columns (a run cached before they were kept lacks
# the recall latency: NaN)
TIMING_COLUMNS = {
    "recall_ms_mean": "recall_ms_mean",
    "recall_ms_p95": "recall_ms_p95",
    "maintenance_s": "maintenance",
    "total_s": "total",
}


def timing_table(results: Sequence[RunResult]) -> pd.DataFrame:
    """One row per run (policy, scenario, seed): recall latency per query in milliseconds,
    mean and 95th percentile (a query batch's recall time shared by its queries), and the
    seconds of maintenance (ingest and maintenance ticks) and of the whole run, from each
    run's ``timings.json``. Timings are machine noise: they never enter summary.csv."""
    rows = []
    for r in results:
        d = r.definition
        row: dict[str, Any] = {"policy": r.summary.get("policy", d.policy)}
        row.update(scenario=d.scenario, seed=d.seed)
        timings = dict(r.timings)
        if "maintenance" not in timings and {"ingest", "maintain"} <= set(timings):
            timings["maintenance"] = timings["ingest"] + timings["maintain"]  # (older runs)
        for column, field_name in TIMING_COLUMNS.items():
            value = timings.get(field_name)
            row[column] = float(value) if isinstance(value, numbers.Real) else np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=["policy", "scenario", "seed", *TIMING_COLUMNS])
