"""Run the benchmarks and write results/benchmarks.md, results/benchmarks.json and the
figure drawn from it (results/figures/latency.png).

    python -m benchmarks report                 full run (real sizes, ~1 hour on 2 cores)
    python -m benchmarks report --from-json F   rebuild the table from a pytest-benchmark JSON
    python -m benchmarks report -- -k recall    extra arguments go to pytest
    python -m benchmarks report --rerun bench_sweep   one module again, the rest from the cache

The full run is ``python -m pytest benchmarks/MODULE.py`` for each benchmark module, each in
its own process (a module that sets ``ONE_PROCESS_PER_CASE = True``: each of its cases in its
own, ``python -m pytest 'benchmarks/MODULE.py::CASE'``), their JSONs merged into
results/cache/benchmarks-raw.json; every target's measured ratio comes from its benchmark's
extra_info (see benchmarks/conftest.py).
A missed target makes pytest fail but the table is still written, with the ratio.
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from benchmarks import blocks
from benchmarks.workloads import CACHE, CASES_ENV, REPO
from memsim.workbench.runs.results import git_changed_files, read_json

RAW = CACHE / "benchmarks-raw.json"
# a module's pytest exit code, kept in its cached JSON for a later --rerun of other modules
EXIT_CODE_KEY = "memsim_pytest_exit_code"
# a module-level ``ONE_PROCESS_PER_CASE = True`` asks for a process per case (run_pytest)
PER_CASE_FLAG = "ONE_PROCESS_PER_CASE"
# the checkout's tracked files with uncommitted changes when the report is written (main)
CHANGED_KEY = "memsim_changed_files"
OUT_MD = REPO / "results" / "benchmarks.md"
OUT_JSON = REPO / "results" / "benchmarks.json"
# the figure `memsim figures` draws from OUT_JSON, drawn again with it so the two agree
OUT_FIGURES = REPO / "results" / "figures"
# the order of the checks in the report, by the module that measures them: one query's
# recall and the kernels under it first, then batches, ingest, whole runs and their memory,
# the sweep last; a module not named here comes after these; within a module, by label
CHECK_ORDER = (
    "bench_recall",
    "bench_kernels",
    "bench_actr_groups",
    "bench_batch",
    "bench_ann",
    "bench_ingest",
    "bench_generate",
    "bench_sim",
    "bench_memory",
    "bench_index",
    "bench_scaling",
    "bench_tenyear",
    "bench_sweep",
    "bench_suite",
)


def modules() -> list[Path]:
    """The benchmark modules, in the order pytest would collect them."""
    return sorted((REPO / "benchmarks").glob("bench_*.py"))


def uncommitted_note(commit: dict, changed: list[str] | None) -> str:
    """What the header says after the commit: nothing for a clean checkout; the files where
    only results/ changed (a table a benchmark command wrote before the report: the code
    measured is the commit's); else "(dirty: ...)". ``changed`` None (a JSON not written by
    this report): pytest-benchmark's own "dirty" flag."""
    if changed is None:
        return " (dirty)" if commit.get("dirty") else ""
    if not changed:
        return ""
    if all(path.startswith("results/") for path in changed):
        return f" (uncommitted changes in {', '.join(changed)} only; the code is the commit's)"
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f" (dirty: {shown})"


def merge(parts: list[dict]) -> dict:
    """One pytest-benchmark JSON of several runs: the first run's machine, commit and time,
    every run's benchmarks in order."""
    merged = dict(parts[0]) if parts else {}
    merged["benchmarks"] = [b for part in parts for b in part.get("benchmarks", [])]
    return merged


def _exit_code(part: dict) -> int:
    """The pytest exit code of a module's cached JSON: as recorded, or (a JSON written before
    the code was kept) 1 where a target was missed, as pytest exits then, else 0."""
    if EXIT_CODE_KEY in part:
        return int(part[EXIT_CODE_KEY])
    missed = any(not b.get("extra_info", {}).get("met", True) for b in part.get("benchmarks", []))
    return int(missed)


class RerunError(Exception):
    """A ``--rerun`` the cache cannot serve (an unknown module, a module not cached, or
    cached JSONs of another commit)."""


def _cached_parts(rerun: list[str]) -> dict[str, dict]:
    """The cached JSON of every module not in ``rerun``, checked to be of this checkout's
    commit (one commit for the whole report)."""
    known = [m.stem for m in modules()]
    unknown = sorted(set(rerun) - set(known))
    if unknown:
        raise RerunError(f"--rerun {unknown[0]}: no such module; known: {', '.join(known)}")
    head, parts = blocks.commit(), {}
    for stem in known:
        if stem in rerun:
            continue
        out = CACHE / f"benchmarks-raw-{stem}.json"
        if not out.exists():
            raise RerunError(f"--rerun: no cached JSON of {stem} ({out}); run the full report")
        part = json.loads(out.read_text())
        commit = str(part.get("commit_info", {}).get("id", ""))
        if not head or not commit.startswith(head):
            raise RerunError(
                f"--rerun: {out.name} is of commit {commit[:10] or '?'}, this checkout is "
                f"{head or '?'}; run the full report"
            )
        parts[stem] = part
    return parts


def one_process_per_case(module: Path) -> bool:
    """Whether ``module`` asks for each of its cases in a pytest process of its own (a
    top-level ``ONE_PROCESS_PER_CASE = True``, read from its source without importing it)."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == PER_CASE_FLAG for t in node.targets
        ):
            return isinstance(node.value, ast.Constant) and node.value.value is True
    return False


def _pytest_command(target: str) -> list[str]:
    """The start of every pytest process the report runs over ``target`` (a module or a
    case's node id)."""
    return [sys.executable, "-m", "pytest", target, "-p", "no:cacheprovider"]


def _pytest(target: str, out: Path, extra: list[str], env: dict[str, str]) -> tuple[int, dict]:
    """One pytest process over ``target`` (a module or a case's node id), its exit code and
    its JSON (empty where it wrote none)."""
    out.unlink(missing_ok=True)
    cmd = [
        *_pytest_command(target),
        "-q",
        f"--benchmark-json={out}",
        "--benchmark-columns=min,median,max,rounds",
        *extra,
    ]
    code = subprocess.run(cmd, cwd=REPO, env=env).returncode
    return code, json.loads(out.read_text()) if out.exists() else {}


def _cases(module: str, extra: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """The exit code of collecting ``module``'s cases with ``extra``, and the node ids of
    those it selects, in collection order (the collecting process writes them to the file
    named by CASES_ENV: benchmarks/conftest.py)."""
    listing = CACHE / "benchmarks-cases.txt"
    listing.unlink(missing_ok=True)
    code = subprocess.run(
        [*_pytest_command(module), "--collect-only", *extra],
        cwd=REPO,
        env={**env, CASES_ENV: str(listing)},
        stdout=subprocess.DEVNULL,
    ).returncode
    cases = listing.read_text().splitlines() if listing.exists() else []
    listing.unlink(missing_ok=True)
    return code, cases


def _run_module(
    module: Path, per_case: bool, out: Path, extra: list[str], env: dict[str, str]
) -> tuple[int, dict]:
    """A module's exit code and JSON: one pytest process, or one per case with ``per_case``
    (:func:`one_process_per_case`; their JSONs merged in collection order, the first failing
    exit code kept; a collection that fails, a module that does not import, gives its exit
    code and no JSON). Exit code 5: ``extra`` selects none of its cases."""
    target = str(module.relative_to(REPO))
    if not per_case:
        return _pytest(target, out, extra, env)
    code, cases = _cases(target, extra, env)
    if code != 0 or not cases:
        return code or 5, {}
    codes, parts = [], []
    for i, case in enumerate(cases):
        case_out = out.with_suffix(f".case{i}.json")
        code, part = _pytest(case, case_out, extra, env)
        case_out.unlink(missing_ok=True)
        codes.append(code)
        parts += [part] if part else []
    return next((c for c in codes if c), 0), merge(parts) if parts else {}


def run_pytest(extra: list[str], rerun: list[str] | None = None) -> tuple[int, str]:
    """Each benchmark module in its own pytest process (``extra`` passed to each), their
    JSONs merged into RAW. A module's numbers do not depend on the modules before it: in
    one process, an hour of other benchmarks left the allocator's heap in a state that
    slowed the batched ingest days by ~10% (docs/performance.md, batched ingest). A module that
    sets ``ONE_PROCESS_PER_CASE = True`` runs each case in a process of its own, for the
    same reason within the module (bench_ingest: a policy's batched day ran up to ~20%
    slower after another policy's cases than alone). With
    ``rerun`` (module names such as ``bench_sweep``), only those run again and every other
    module's JSON is the cached one of the last run, of the same commit: a report whose one
    module another job disturbed is mended without running the rest."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = {} if rerun is None else _cached_parts(rerun)
    env = {k: v for k, v in os.environ.items() if k != "MEMSIM_BENCH_SMOKE"}
    per_case = {m.stem for m in modules() if one_process_per_case(m)}
    parts, codes = [], []
    for module in modules():
        out = CACHE / f"benchmarks-raw-{module.stem}.json"
        if module.stem in cached:
            parts.append(cached[module.stem])
            codes.append(_exit_code(cached[module.stem]))
            continue
        code, part = _run_module(module, module.stem in per_case, out, extra, env)
        if code == 5:  # no benchmark of this module selected by ``extra``
            continue
        codes.append(code)
        if part:
            part[EXIT_CODE_KEY] = code  # for a later --rerun of other modules
            out.write_text(json.dumps(part, indent=1))
            parts.append(part)
    RAW.write_text(json.dumps(merge(parts), indent=1))
    returncode = next((c for c in codes if c), 0)
    command = " ".join(
        ["python -m pytest benchmarks/bench_MODULE.py -p no:cacheprovider -q", *extra]
    )
    merged = RAW.relative_to(REPO) if RAW.is_relative_to(REPO) else RAW
    again = ""
    if rerun:
        when = f"{_dt.datetime.now(_dt.UTC):%Y-%m-%dT%H:%M}"
        # (build puts the command between backticks: close the path's, leave --rerun's open)
        again = f"`; {', '.join(sorted(rerun))} run again alone at {when} UTC with `--rerun"
    cases = f" ({', '.join(sorted(per_case))}: each case in its own)" if per_case else ""
    return (
        returncode,
        f"{command}` per module, each in its own process{cases}, merged into `{merged}{again}",
    )


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _seconds(d: dict) -> str:
    return ", ".join(f"{k} {v * 1000:.1f} ms" if v < 10 else f"{k} {v:.1f} s" for k, v in d.items())


def check_order(check: dict) -> tuple[int, str, str]:
    """Sort key of a check (its ``test`` node id and ``target`` label): its module's place
    in CHECK_ORDER (unknown modules after, by name), then its label."""
    module = Path(str(check["test"]).split("::")[0]).stem
    place = CHECK_ORDER.index(module) if module in CHECK_ORDER else len(CHECK_ORDER)
    return place, module, str(check["target"])


def build(raw: dict, command: str, returncode: int | None) -> tuple[str, dict]:
    benches = raw.get("benchmarks", [])
    targets = []
    for b in benches:
        e = b.get("extra_info", {})
        if "target" in e:
            targets.append({"test": b["fullname"], **e})
    targets.sort(key=check_order)
    machine = raw.get("machine_info", {})
    commit = raw.get("commit_info", {})
    changed = raw.get(CHANGED_KEY)
    when = raw.get("datetime") or _dt.datetime.now(_dt.UTC).isoformat()
    met = sum(t["met"] for t in targets)
    lines = [
        "# Benchmarks",
        "",
        f"Produced by `python -m benchmarks report` (runs `{command}`) on {when[:19]} UTC, "
        f"commit {commit.get('id', '?')[:10]}{uncommitted_note(commit, changed)}, "
        f"{machine.get('cpu', {}).get('brand_raw', platform.processor() or '?')}, "
        f"{os.cpu_count()} cores, shared with other jobs (absolute times are noisy; every "
        "claim is a ratio against a reference timed interleaved in the same run).",
        "",
        f"**{met} of {len(targets)} target checks met.**"
        + (
            ""
            if returncode in (None, 0)
            else f" (pytest exit code {returncode}: a missed target fails its benchmark)"
        ),
        "",
        "| target | measured ratio | needed | met | n | what is compared |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for t in targets:
        op = "<=" if t["better"] == "lower" else ">="
        lines.append(
            f"| {t['target']} | {_fmt(t['ratio'])} | {op} {_fmt(t['limit'])} | "
            f"{'yes' if t['met'] else '**no**'} | {t['n']:,} | {t['what']} |"
        )
    details = []
    for t in targets:
        extra = {
            k: v
            for k, v in t.items()
            if k
            in (
                "numpy_ratio",
                "straightforward_ratio",
                "gemm_only_ratio",
                "python_lists_ratio",
                "overlap",
                "growth_exponent",
                "speedup_over_exact",
                "query_differ_share",
                "after_copy_ratio",
            )
        }
        bits = [f"{k} {_fmt(v)}" for k, v in extra.items()]
        if isinstance(t.get("seconds"), dict):
            bits.append(_seconds(t["seconds"]))
        if isinstance(t.get("after_copy_seconds"), dict):
            bits.append("right after a copy: " + _seconds(t["after_copy_seconds"]))
        if "shares" in t:
            bits.append(
                "run "
                + f"{t['run_seconds']:.1f} s; "
                + ", ".join(f"{k} {100 * v:.0f}%" for k, v in t["shares"].items())
                + f"; store rows {t['store_rows']:,}"
            )
        if "peak_bytes" in t:
            bits.append(
                f"peak {t['peak_bytes'] / 2**20:,.0f} MiB, baseline "
                f"{t['baseline_bytes'] / 2**20:,.0f} MiB, "
                f"raw {t['raw_bytes'] / 2**20:,.0f} MiB"
            )
        if "build" in t:
            bits.append(
                f"IVF build (cached, untimed): train {t['build']['train_seconds']:.1f} s, "
                f"add {t['build']['add_seconds']:.1f} s"
            )
        if bits:
            details.append(f"- **{t['target']}**: " + "; ".join(bits))
    if details:
        lines += ["", "## Details", "", *details]
    others = [b for b in benches if "target" not in b.get("extra_info", {})]
    if others:
        lines += [
            "",
            "## Other timings (pytest-benchmark, seconds)",
            "",
            "| benchmark | min | median | rounds | notes |",
            "| --- | --- | --- | --- | --- |",
        ]
        for b in others:
            s = b.get("stats", {})
            notes = ", ".join(
                f"{k}={_fmt(v) if isinstance(v, float) else v}" for k, v in b["extra_info"].items()
            )
            lines.append(
                f"| {b['fullname'].split('::')[-1]} | {s.get('min', float('nan')):.4g} | "
                f"{s.get('median', float('nan')):.4g} | {s.get('rounds', '')} | {notes} |"
            )
    profiles = [t for t in targets if t.get("profile")]
    if profiles:
        lines += [
            "",
            "## Simulation profiles (cProfile of the 1/10-year probe, top entries by cumulative "
            "time)",
            "",
        ]
        for t in profiles:
            body = "\n".join(t["profile"].strip().splitlines()[:40])
            lines += [f"### {t['target']}", "", "```", body, "```", ""]
    doc = {
        "command": "python -m benchmarks report",
        "pytest_command": command,
        "datetime": when,
        "commit": commit.get("id"),
        "changed_files": changed,
        "machine": {"cpu": machine.get("cpu", {}).get("brand_raw"), "cores": os.cpu_count()},
        "targets": [{k: v for k, v in t.items() if k != "profile"} for t in targets],
        "latency": latency_sweep(raw),
        "met": met,
        "total": len(targets),
    }
    return "\n".join(lines) + "\n", doc


def latency_sweep(raw: dict) -> list[dict]:
    """One-query recall latency per store size and variant (median seconds), from the
    ``test_recall_variant`` sweep: the points of the latency-vs-size figure."""
    out = []
    for b in raw.get("benchmarks", []):
        if b.get("name", "").startswith("test_recall_variant"):
            info = b.get("extra_info", {})
            out.append(
                {
                    "operation": "recall of one query",
                    "n": info.get("n"),
                    "variant": info.get("variant"),
                    "seconds": b["stats"]["median"],
                    "floor": info.get("variant") == "bare_matvec",
                }
            )
    return sorted(out, key=lambda r: (r["variant"], r["n"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks report")
    ap.add_argument("--from-json", type=Path, help="rebuild from an existing pytest-benchmark JSON")
    ap.add_argument(
        "--rerun",
        nargs="+",
        metavar="MODULE",
        help="run only these modules again (e.g. bench_sweep); the others' JSONs are the last "
        "run's, of the same commit",
    )
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args(argv)
    if a.from_json:
        raw_path, returncode = a.from_json, None
        command = "python -m pytest benchmarks --benchmark-json=" + str(a.from_json)
    else:
        try:
            returncode, command = run_pytest(a.pytest_args, a.rerun)
        except RerunError as exc:
            print(f"python -m benchmarks report: {exc}", file=sys.stderr)
            return 2
        raw_path = RAW
    raw = read_json(raw_path)
    if not a.from_json:  # (a JSON given was measured on a checkout this one may not be)
        raw[CHANGED_KEY] = git_changed_files(REPO)
    md, doc = build(raw, command, returncode)
    from benchmarks.bench_scaling import kept_block as kept_scaling
    from benchmarks.bench_tenyear import kept_block as kept_tenyear
    from benchmarks.profiles import kept_block  # the profile summary has its own command

    for keep in (kept_block, kept_scaling, kept_tenyear):  # blocks written by their own commands
        if OUT_MD.exists() and (kept := keep(OUT_MD.read_text())):
            md = md.rstrip("\n") + "\n\n" + kept
    OUT_MD.write_text(md)
    OUT_JSON.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    written = ", ".join(map(_shown, [OUT_MD, OUT_JSON, *draw_latency_figure()]))
    print(f"wrote {written}: {doc['met']} of {doc['total']} targets met")
    return 0


def _shown(path: Path) -> str:
    """``path`` relative to the checkout when it is inside it."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def draw_latency_figure() -> list[Path]:
    """Draw the latency figure from OUT_JSON into OUT_FIGURES, as ``memsim figures`` would
    (none when the run measured no recall sweep); the paths written."""
    from memsim.workbench.present.figures import write_figures

    return write_figures(
        OUT_FIGURES,
        results=None,
        benchmarks=OUT_JSON,
        claims=None,
        only=["latency"],
        notice=lambda m: print(m, file=sys.stderr),
    )
