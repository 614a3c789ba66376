"""``memsim params``: every Params field of one policy, its default, range and seed section."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys

from memsim.engine.params import describe_range
from memsim.engine.registry import spec


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("policy", help="policy id, e.g. pai (see `memsim list`)")
    s.add_argument("--csv", action="store_true", help="CSV on stdout instead of a table")


def run(args: argparse.Namespace) -> int:
    """Every Params field of one policy: default, legal range, the seed section it cites."""
    s = spec(args.policy)
    fields = dataclasses.fields(s.load().Params)
    rows = [
        (f.name, repr(f.default), describe_range(f), str(f.metadata.get("doc", ""))) for f in fields
    ]
    if args.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["field", "default", "range", "section"])
        w.writerows(rows)
        return 0
    doc = f" (seed document: {s.seed_document})" if s.seed_document else ""
    print(f"{s.full_id}{doc}: {len(rows)} parameters; set one with --param FIELD=VALUE")
    if not rows:
        return 0
    head = ("field", "default", "range", "seed section")
    rows = [(r[0], _short(r[1]), *r[2:]) for r in rows]  # full values: --csv
    width = [min(max(len(r[i]) for r in [head, *rows]), 28) for i in range(3)]
    for r in [head, *rows]:
        cells = [r[i].ljust(width[i]) for i in range(3)]
        print("  " + "  ".join(cells) + "  " + r[3])
    return 0


def _short(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[: width - 5] + " ...)"
