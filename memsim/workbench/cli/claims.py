"""``memsim claims``: regenerate the table of the seed documents' worked examples
(docs/claims.md and results/claims.csv) and print a one-line summary."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ..runs import results
from ..studies.claims import write_claims
from .outputs import writable_folder


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        "--root",
        dest="root",
        default=None,
        help="folder to write docs/claims.md and results/claims.csv under "
        "(default: the memsim checkout, whatever the current directory)",
    )


def run(args: argparse.Namespace) -> int:
    root = results.project_root() if args.root is None else Path(args.root)
    writable_folder(args.root if args.root is not None else root)
    md, csv = write_claims(root)
    table = pd.read_csv(csv)
    n_dis = int((table["agrees"].astype(str) == "False").sum())
    print(
        f"wrote {md} and {csv}: {len(table)} claims, {n_dis} where the document disagrees "
        "with its formula"
    )
    return 0
