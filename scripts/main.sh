#!/usr/bin/env bash
# Set everything up, then run the main job: every registered policy on the standard suite.
# Writes results/standard/ (summary.md, summary.csv, per_query.parquet, manifest.json)
# and the figures under results/figures/. Extra arguments go to `memsim compare`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export MPLBACKEND=Agg
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
.venv/bin/python -m memsim compare --suite standard --jobs 2 --out results/standard "$@"
if .venv/bin/python -c "import memsim.figures" 2>/dev/null; then
  .venv/bin/python -m memsim figures --out results/figures
fi
