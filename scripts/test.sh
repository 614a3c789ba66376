#!/usr/bin/env bash
# Set everything up, then run the whole test suite (unit, property-based, conformance,
# scenario expectations, notebooks) and a one-shot smoke run of every benchmark.
# pytest's exit code 5 (no tests collected) counts as a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export MPLBACKEND=Agg
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
status=0
.venv/bin/python -m pytest tests "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no tests: failing" >&2; exit 1; fi
[ "$status" -eq 0 ] || exit "$status"
if [ -n "$(ls benchmarks/bench_*.py 2>/dev/null)" ]; then
  MEMSIM_BENCH_SMOKE=1 .venv/bin/python -m pytest benchmarks -p no:cacheprovider -q --benchmark-disable || status=$?
  if [ "$status" -eq 5 ]; then echo "test.sh: no benchmarks collected: failing" >&2; exit 1; fi
fi
exit "$status"
