"""Print, or write into README.md, the scorecard of a compare output folder.

python -m scripts.headline                 # print the scorecard of results/standard
python -m scripts.headline --write         # rewrite README.md's headline and scorecard.md
python -m scripts.headline --results DIR   # another compare output
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memsim.workbench.present.scorecard import read_results, replace_table, scorecard_markdown

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "standard")
    parser.add_argument(
        "--write", action="store_true", help="rewrite README.md's headline and scorecard.md"
    )
    args = parser.parse_args(argv)
    for name in ("summary.csv", "per_query.parquet"):
        if not (args.results / name).is_file():
            print(
                f"headline: {args.results / name}: no such file (run ./scripts/main.sh)",
                file=sys.stderr,
            )
            return 2
    robustness = ROOT / "results" / "robustness.csv"
    table = scorecard_markdown(*read_results(args.results, robustness))
    if not args.write:
        sys.stdout.write(table)
        return 0
    readme = ROOT / "README.md"
    readme.write_text(replace_table(readme.read_text(encoding="utf-8"), table), encoding="utf-8")
    (args.results / "scorecard.md").write_text(f"# Scorecard\n\n{table}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
