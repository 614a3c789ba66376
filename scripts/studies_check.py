"""Do the long studies and the standard comparison come from one code?

python -m scripts.studies_check     # the table; exit 1 (and the commands) when they disagree

Reads results/standard/manifest.json and the provenance line of results/drift.md,
robustness.md, sensitivity.md, tuning.md (and calibration.md when it has one): each names the
git commit and the code fingerprint it came from (memsim.workbench.studies.provenance).
tests/workbench/test_studies_agree.py fails on the same disagreement.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memsim.workbench.runs.results import code_fingerprint
from memsim.workbench.studies.provenance import agreement, agreement_table, disagreement_message

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default this one)")
    args = parser.parse_args(argv)
    found, agree = agreement(args.root)
    print(agreement_table(found, current=code_fingerprint()))
    if agree:
        print("studies_check: every file names one code fingerprint")
        return 0
    print(disagreement_message(found), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
