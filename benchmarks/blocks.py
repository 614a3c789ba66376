"""Marked blocks of results/benchmarks.md that a benchmark command writes on its own (the
profiles, the scaling table, the ten-year table): each between a BEGIN and an END marker,
replaced in place by its command and kept by ``benchmarks.report``; and what those tables
share (the commit measured, a run's time shares)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchmarks.workloads import REPO


def splice(md: str, block: str, begin: str, end: str) -> str:
    """``md`` with its block between ``begin`` and ``end`` replaced by ``block`` (which holds
    the markers), appended when absent."""
    if begin in md and end in md:
        head, rest = md.split(begin, 1)
        return head + block + rest.split(end, 1)[1].lstrip("\n")
    return md.rstrip("\n") + "\n\n" + block


def kept(md: str, begin: str, end: str) -> str:
    """The block of ``md`` between ``begin`` and ``end``, markers included ('' when none)."""
    if begin in md and end in md:
        return begin + md.split(begin, 1)[1].split(end, 1)[0] + end + "\n"
    return ""


def write(path: Path, block: str, begin: str, end: str) -> None:
    """Put ``block`` into the markdown file ``path`` (created as a bare "# Benchmarks")."""
    md = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(splice(md, block, begin, end))


def commit() -> str:
    """The checkout's commit (short), '' outside git (e.g. a ``git archive`` snapshot)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
    except OSError:
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def shares(timings: dict) -> str:
    """A run's ingest / recall / maintain shares of its total time, as the tables show them."""
    total = max(timings.get("total", 0.0), 1e-12)
    return " / ".join(
        f"{timings.get(k, 0.0) / total:.0%}" for k in ("ingest", "recall", "maintain")
    )
