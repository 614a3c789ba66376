"""Markdown tables, the one format every report of the workbench writes its tables in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a markdown table (the workbench's summary, calibration, tuning and headline
    tables)."""
    return [
        "| " + " | ".join(header) + " |",
        "|---" * len(header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
