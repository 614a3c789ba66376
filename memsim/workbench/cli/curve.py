"""The ``memsim curve`` command: one memory's decay curve (:func:`memsim.engine.curve.curve`)
as CSV on stdout.

    memsim curve izzie --pattern never --days 0:90:10 \
        --memory category=preference --memory importance=0.9
    memsim curve kernle --pattern every:7 --days 0:60:1 --param half_life=14
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from memsim.engine.curve import curve

from .args import add_seed


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("policy", help="policy id, e.g. izzie or kernle-code")
    p.add_argument(
        "--pattern", default="never", help="never | every:N | at:D1,D2,... (default never)"
    )
    p.add_argument(
        "--days", required=True, help="comma list of days or START:END:STEP (END inclusive)"
    )
    p.add_argument(
        "--memory",
        action="append",
        metavar="KEY=VALUE",
        help="planted memory attribute, e.g. category=preference, importance=0.9, stability=2",
    )
    p.add_argument(
        "--param", action="append", metavar="KEY=VALUE", help="policy parameter, e.g. half_life=14"
    )
    add_seed(p, help="seed of the policy's random draws (default 0)")


def run(args: argparse.Namespace) -> int:
    """Write the curve as CSV to stdout (floats in full precision)."""
    frame = curve(
        args.policy,
        args.pattern,
        args.days,
        memory=args.memory or [],
        params=args.param or [],
        seed=args.seed,
    )
    out = sys.stdout
    out.write(",".join(frame.columns) + "\n")
    for rec in frame.itertuples(index=False):
        out.write(",".join(_cell(v) for v in rec) + "\n")
    return 0


def _cell(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)
