"""Marked blocks of results/benchmarks.md that a benchmark command writes on its own (the
profiles, the scaling table, the ten-year table): each between a BEGIN and an END marker,
replaced in place by its command and kept by ``benchmarks.report``."""

from __future__ import annotations

from pathlib import Path


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
