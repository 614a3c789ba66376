"""benchmarks.blocks: the marked blocks of results/benchmarks.md that benchmark commands
write on their own, and benchmarks.report keeps; and the steady-year benchmark's sizes."""

from pathlib import Path

import pytest

from benchmarks import blocks, simrun

B, E = "<!-- X_BEGIN -->", "<!-- X_END -->"


def test_splice_replaces_in_place_and_appends_when_absent():
    md = f"# Benchmarks\n\nbefore\n\n{B}\nold\n{E}\n\nafter\n"
    new = f"{B}\nnew\n{E}\n"
    got = blocks.splice(md, new, B, E)
    assert got == f"# Benchmarks\n\nbefore\n\n{B}\nnew\n{E}\nafter\n"
    assert blocks.splice("# Benchmarks\n", new, B, E) == f"# Benchmarks\n\n{new}"


def test_kept_is_the_block_with_its_markers(tmp_path):
    new = f"{B}\nrows\n{E}\n"
    path = tmp_path / "b.md"
    blocks.write(path, new, B, E)
    assert path.read_text() == f"# Benchmarks\n\n{new}"
    assert blocks.kept(path.read_text(), B, E) == new
    assert blocks.kept("# Benchmarks\n", B, E) == ""


def _decade(policy: str, seconds: float) -> dict:
    """simrun's JSON of a ten-year run (the fields the table reads)."""
    return {
        "policy": policy,
        "episodes": 1_000_000,
        "queries": 100_000,
        "run_seconds": seconds,
        "run_cpu_seconds": seconds - 1,
        "timings": {"ingest": 1.0, "recall": 3.0, "maintain": 0.0, "actions": 0.0},
        "store_rows": 1_000_000,
        "peak_rss_mib": 3000.0,
        "stream_rss_mib": 1000.0,
        "raw_embedding_mib": 1000.0,
    }


def test_ten_year_table_keeps_the_rows_of_policies_not_run_again():
    """A decade is an hour or more per policy: each run of bench_tenyear adds or replaces its
    policies' rows and keeps the others', each row with its own date and code."""
    from benchmarks import bench_tenyear as T

    first = {
        p: T.row(_decade(p, s), "2026-11-24", "aaa") for p, s in [("keep-all", 10), ("izzie", 20)]
    }
    md = "# Benchmarks\n\n" + T.table(first, "cmd")
    kept = T.kept_rows(md)
    assert kept == first
    kept.update({"cosmo": T.row(_decade("cosmo", 30), "2026-11-25", "bbb")})
    kept["izzie"] = T.row(_decade("izzie", 25), "2026-11-25", "bbb")
    again = T.kept_rows(blocks.splice(md, T.table(kept, "cmd"), T.BEGIN, T.END))
    assert list(again) == ["keep-all", "cosmo", "izzie"]  # keep-all first, then by name
    assert again["keep-all"] == first["keep-all"]
    assert "| 25 | 24 |" in again["izzie"] and again["izzie"].endswith("| 2026-11-25, bbb |")
    assert "| 2.00 |" in again["cosmo"]  # (peak - after the stream) / raw


def test_the_steady_year_benchmark_takes_the_last_step_to_the_full_year():
    from benchmarks import bench_sim as b

    full = float(b.PROBE)
    # a probe whose first jump lands at 85% of the year: the next step is the full year
    first = b.next_scale(1.0, b.BUDGET / (0.853 * full) ** 2, 2.0)
    assert first is not None and abs(first - 0.853 * full) < 1e-9
    assert b.next_scale(first, 0.3 * b.BUDGET, 1.42) == full
    # a small step short of the full year is not worth a run; the full year ends the climb
    assert b.next_scale(0.4 * full, 0.9 * b.BUDGET, 1.5) is None
    assert b.next_scale(full, 1.0, 2.0) is None
    # a year predicted to take over the budget gets the size that fits
    part = b.next_scale(0.5 * full, 0.5 * b.BUDGET, 2.0)
    assert part is not None and 0.5 * full * 1.25 <= part < full


def _fake_pytest(calls, codes=None, nothing=()):
    """A stand-in for benchmarks.report's pytest processes: a collecting one writes the
    module's two cases to the file CASES_ENV names (or exits with ``codes[module]`` where
    it is 2, a failed collection); a running one writes a JSON naming its target and exits
    with ``codes.get(module, 0)``; either exits 5 for a module in ``nothing``."""
    import json
    import subprocess

    from benchmarks.workloads import CASES_ENV

    def fake_run(cmd, cwd, env, **kw):
        calls.append(cmd)
        target = cmd[3]
        module = target.split("::")[0]
        if module.endswith(nothing):
            return subprocess.CompletedProcess(cmd, 5)  # nothing selected
        if "--collect-only" in cmd:
            if (codes or {}).get(module) == 2:
                return subprocess.CompletedProcess(cmd, 2)
            cases = [f"{module}::test[{i}]" for i in range(2)]
            Path(env[CASES_ENV]).write_text("".join(f"{c}\n" for c in cases))
            return subprocess.CompletedProcess(cmd, 0)
        out = next(a.split("=", 1)[1] for a in cmd if a.startswith("--benchmark-json="))
        raw = {"machine_info": {"m": target}, "benchmarks": [{"name": target}]}
        with open(out, "w") as f:
            json.dump(raw, f)
        return subprocess.CompletedProcess(cmd, (codes or {}).get(module, 0))

    return fake_run


def test_report_runs_each_benchmark_module_in_its_own_process(tmp_path, monkeypatch):
    """benchmarks.report runs every bench_*.py module in a pytest process of its own (the
    extra arguments passed to each), and each case of a module that sets
    ONE_PROCESS_PER_CASE (bench_ingest) in one of its own; skips a module the arguments
    select nothing of (exit code 5), merges the JSONs in module and case order, and returns
    the first failing exit code."""
    import json

    from benchmarks import report

    monkeypatch.setattr(report, "CACHE", tmp_path)
    monkeypatch.setattr(report, "RAW", tmp_path / "raw.json")
    mods = report.modules()
    assert [m.name for m in mods] == sorted(m.name for m in mods)
    assert {"bench_ingest.py", "bench_recall.py", "bench_kernels.py"} <= {m.name for m in mods}
    per_case = [m for m in mods if report.one_process_per_case(m)]
    assert [m.name for m in per_case] == ["bench_ingest.py"]
    calls: list[list[str]] = []
    fake = _fake_pytest(calls, codes={"benchmarks/bench_ingest.py": 1}, nothing=("bench_ann.py",))
    monkeypatch.setattr(report.subprocess, "run", fake)
    code, command = report.run_pytest(["-k", "x"])
    want = []
    for m in mods:
        path = str(m.relative_to(report.REPO))
        want += [path, f"{path}::test[0]", f"{path}::test[1]"] if m in per_case else [path]
    assert [c[3] for c in calls] == want
    assert all(c[-2:] == ["-k", "x"] for c in calls)
    merged = json.loads((tmp_path / "raw.json").read_text())
    names = [b["name"] for b in merged["benchmarks"]]
    ran = [c[3] for c in calls if "--collect-only" not in c]
    assert names == [t for t in ran if not t.endswith("bench_ann.py")]
    assert merged["machine_info"] == {"m": calls[0][3]}
    assert code == 1 and "each in its own process (bench_ingest: each case" in command
    # the per-case JSONs are merged into the module's, which keeps the exit code
    kept = json.loads((tmp_path / "benchmarks-raw-bench_ingest.json").read_text())
    cases = [f"benchmarks/bench_ingest.py::test[{i}]" for i in range(2)]
    assert [b["name"] for b in kept["benchmarks"]] == cases
    assert kept[report.EXIT_CODE_KEY] == 1
    assert not list(tmp_path.glob("*.case*.json")) and not list(tmp_path.glob("*cases*"))


@pytest.mark.parametrize("collected", ["nothing", "a failed collection"])
def test_report_per_case_module_that_collects_nothing_or_fails(tmp_path, monkeypatch, collected):
    """A per-case module of which ``extra`` selects nothing is skipped like any module
    (exit code 5, nothing merged); one whose collection fails (a module that does not
    import: exit code 2) runs no case and its exit code is the report's."""
    import json

    from benchmarks import report

    monkeypatch.setattr(report, "CACHE", tmp_path)
    monkeypatch.setattr(report, "RAW", tmp_path / "raw.json")
    calls: list[list[str]] = []
    ingest = "benchmarks/bench_ingest.py"
    if collected == "nothing":
        fake = _fake_pytest(calls, nothing=(ingest,))
    else:
        fake = _fake_pytest(calls, codes={ingest: 2})
    monkeypatch.setattr(report.subprocess, "run", fake)
    code, _ = report.run_pytest([])
    assert [c[3] for c in calls if c[3].startswith(ingest)] == [ingest]  # the collection only
    names = [b["name"] for b in json.loads((tmp_path / "raw.json").read_text())["benchmarks"]]
    assert not any(n.startswith(ingest) for n in names) and len(names) == len(report.modules()) - 1
    assert code == (0 if collected == "nothing" else 2)
    assert not (tmp_path / "benchmarks-raw-bench_ingest.json").exists()


@pytest.mark.parametrize(
    "source, per_case",
    [
        ("ONE_PROCESS_PER_CASE = True\n", True),
        ("ONE_PROCESS_PER_CASE = False\n", False),
        ("ONE_PROCESS_PER_CASE = 1\n", False),
        ("def f():\n    ONE_PROCESS_PER_CASE = True\n", False),
        ("X = 1\n", False),
    ],
)
def test_one_process_per_case_is_read_from_the_module_top_level(tmp_path, source, per_case):
    from benchmarks import report

    module = tmp_path / "bench_x.py"
    module.write_text(source)
    assert report.one_process_per_case(module) is per_case


def _cache_every_module(report, tmp_path, commit: str, missed: set[str] = frozenset()) -> None:
    """A cached JSON per benchmark module, as a full report leaves them (without the exit
    codes kept since --rerun: the modules in ``missed`` have a missed target)."""
    import json

    for m in report.modules():
        raw = {
            "commit_info": {"id": commit},
            "machine_info": {"m": m.stem},
            "benchmarks": [{"name": m.stem, "extra_info": {"met": m.stem not in missed}}],
        }
        (tmp_path / f"benchmarks-raw-{m.stem}.json").write_text(json.dumps(raw))


def test_report_rerun_runs_only_the_named_modules(tmp_path, monkeypatch):
    """--rerun bench_sweep runs that module alone and merges every other module's cached
    JSON in module order; the exit code counts the cached modules' missed targets; the
    command says what ran again."""
    import json
    import subprocess

    from benchmarks import report

    monkeypatch.setattr(report, "CACHE", tmp_path)
    monkeypatch.setattr(report, "RAW", tmp_path / "raw.json")
    monkeypatch.setattr(blocks, "commit", lambda: "abcdef0123")
    _cache_every_module(report, tmp_path, "abcdef0123" + "4" * 30, missed={"bench_ingest"})
    calls = []

    def fake_run(cmd, cwd, env):
        calls.append(cmd)
        out = next(a.split("=", 1)[1] for a in cmd if a.startswith("--benchmark-json="))
        raw = {"commit_info": {"id": "abcdef0123"}, "benchmarks": [{"name": "again"}]}
        with open(out, "w") as f:
            json.dump(raw, f)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(report.subprocess, "run", fake_run)
    code, command = report.run_pytest([], ["bench_sweep"])
    assert [c[3] for c in calls] == ["benchmarks/bench_sweep.py"]
    names = [b["name"] for b in json.loads((tmp_path / "raw.json").read_text())["benchmarks"]]
    assert names == [m.stem if m.stem != "bench_sweep" else "again" for m in report.modules()]
    assert code == 1  # bench_ingest's cached JSON has a missed target
    assert "bench_sweep run again alone" in command
    # the re-run module's JSON keeps its exit code for the next --rerun
    kept = json.loads((tmp_path / "benchmarks-raw-bench_sweep.json").read_text())
    assert kept[report.EXIT_CODE_KEY] == 0


@pytest.mark.parametrize("case", ["unknown module", "missing JSON", "other commit"])
def test_report_rerun_refuses_what_the_cache_cannot_serve(tmp_path, monkeypatch, capsys, case):
    """--rerun with an unknown module, a module not cached or a cache of another commit:
    one line naming it, exit code 2, nothing run and nothing written."""
    from benchmarks import report

    monkeypatch.setattr(report, "CACHE", tmp_path)
    monkeypatch.setattr(report, "RAW", tmp_path / "raw.json")
    monkeypatch.setattr(report, "OUT_MD", tmp_path / "benchmarks.md")
    monkeypatch.setattr(blocks, "commit", lambda: "abcdef0123")
    _cache_every_module(report, tmp_path, "9" * 40 if case == "other commit" else "abcdef0123")
    if case == "missing JSON":
        (tmp_path / "benchmarks-raw-bench_ann.json").unlink()
    ran = []
    monkeypatch.setattr(report.subprocess, "run", lambda *a, **k: ran.append(a))
    module = "bench_nothing" if case == "unknown module" else "bench_sweep"
    assert report.main(["--rerun", module]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    want = {"unknown module": "bench_nothing", "missing JSON": "bench_ann", "other commit": "9999"}
    assert want[case] in err[0]
    assert not ran and not (tmp_path / "raw.json").exists()
    assert not (tmp_path / "benchmarks.md").exists()


def test_profile_paths_are_the_same_from_any_checkout():
    """simrun's profile names the checkout's files from its root and installed packages'
    from site-packages on, so a report made in a worktree does not print its path."""
    cols = "    1    0.135    0.135    9.576    9.576 "
    text = (
        f"{cols}/tmp/rep/main/memsim/engine/runner.py:297(run)\n"
        f"{cols}/tmp/rep/main/.venv/lib/python3.11/site-packages/numpy/linalg/_linalg.py:2(norm)\n"
        f"{cols}{{built-in method numpy.arange}}\n"
    )
    assert simrun.portable(text, Path("/tmp/rep/main")).splitlines() == [
        f"{cols}memsim/engine/runner.py:297(run)",
        f"{cols}site-packages/numpy/linalg/_linalg.py:2(norm)",
        f"{cols}{{built-in method numpy.arange}}",
    ]


def test_report_header_says_which_uncommitted_files_it_was_measured_with():
    """The header after the commit: nothing when clean; the files when only results/ changed
    (a table written before the report: the code is the commit's); "(dirty: ...)" naming up
    to three files otherwise; pytest-benchmark's flag for a JSON the report did not write."""
    from benchmarks import report

    dirty, clean = {"id": "a" * 40, "dirty": True}, {"id": "a" * 40, "dirty": False}
    assert report.uncommitted_note(dirty, []) == ""
    note = report.uncommitted_note(dirty, ["results/benchmarks.md"])
    assert "results/benchmarks.md only" in note and "code is the commit's" in note
    code = ["benchmarks/report.py", "memsim/x.py", "policies/y.py", "results/z.md"]
    assert report.uncommitted_note(dirty, code) == (
        " (dirty: benchmarks/report.py, memsim/x.py, policies/y.py and 1 more)"
    )
    assert report.uncommitted_note(dirty, None) == " (dirty)"
    assert report.uncommitted_note(clean, None) == ""
    raw = {"commit_info": dirty, "benchmarks": [], report.CHANGED_KEY: ["results/benchmarks.md"]}
    md, doc = report.build(raw, "cmd", 0)
    assert "commit aaaaaaaaaa (uncommitted changes in results/benchmarks.md only" in md
    assert doc["changed_files"] == ["results/benchmarks.md"]


def test_report_orders_checks_by_module_then_label():
    """The table's order comes from CHECK_ORDER and the labels, whatever the labels say:
    every benchmark module is placed, and a module not named comes after the named ones."""
    from benchmarks import report

    assert sorted(report.CHECK_ORDER) == sorted(m.stem for m in report.modules())

    def bench(module: str, test: str, label: str) -> dict:
        info = dict(target=label, ratio=1.0, limit=2.0, better="lower", n=1, what="w", met=True)
        return {"fullname": f"benchmarks/{module}.py::{test}", "extra_info": info}

    raw = {
        "benchmarks": [
            bench("bench_tenyear", "test_ten_year_stream_runs_to_the_end[keep-all]", "ten-year"),
            bench("bench_new", "test_new", "a new check"),
            bench("bench_kernels", "test_topk_vs_scalar", "kernel topk"),
            bench("bench_recall", "test_pai_policy_recall", "pai policy recall"),
            bench("bench_kernels", "test_kernel_vs_scalar[exp_decay-chunked]", "kernel exp_decay"),
            bench("bench_recall", "test_fused_vs_bare_matvec", "exact recall (fused)"),
        ]
    }
    _, doc = report.build(raw, "cmd", 0)
    assert [t["target"] for t in doc["targets"]] == [
        "exact recall (fused)",
        "pai policy recall",
        "kernel exp_decay",
        "kernel topk",
        "ten-year",
        "a new check",
    ]


def test_report_draws_the_latency_figure_from_the_json_it_writes(tmp_path, monkeypatch):
    """The report writes results/figures/latency.png with benchmarks.json, byte for byte what
    `memsim figures` draws from that JSON (a new report left the committed figure stale);
    a run without the recall sweep draws nothing and still writes its tables."""
    import json

    from benchmarks import report
    from memsim.workbench.present.figures import write_figures

    def sweep(variant: str, n: int, seconds: float) -> dict:
        return {
            "name": f"test_recall_variant[n={n}-{variant}]",
            "fullname": f"benchmarks/bench_recall.py::test_recall_variant[n={n}-{variant}]",
            "stats": {"median": seconds},
            "extra_info": {"n": n, "variant": variant},
        }

    variants = (("bare_matvec", 1e-7), ("fused", 2e-7))
    points = [sweep(v, n, n * k) for n in (10_000, 100_000) for v, k in variants]
    for name, benchmarks in (("with", points), ("without", [])):
        out = tmp_path / name
        out.mkdir()
        raw = out / "raw.json"
        raw.write_text(json.dumps({"commit_info": {"id": "a" * 40}, "benchmarks": benchmarks}))
        monkeypatch.setattr(report, "OUT_MD", out / "benchmarks.md")
        monkeypatch.setattr(report, "OUT_JSON", out / "benchmarks.json")
        monkeypatch.setattr(report, "OUT_FIGURES", out / "figures")
        assert report.main(["--from-json", str(raw)]) == 0
        assert (out / "benchmarks.md").is_file() and (out / "benchmarks.json").is_file()
        drawn = sorted(p.name for p in (out / "figures").glob("*.png"))
        if name == "without":
            assert drawn == []
            continue
        assert drawn == ["latency.png"]
        again = write_figures(
            tmp_path / "again", results=None, benchmarks=out / "benchmarks.json", only=["latency"]
        )
        assert [p.read_bytes() for p in again] == [(out / "figures" / "latency.png").read_bytes()]
