#!/usr/bin/env bash
# Set everything up, then run the whole test suite (unit, property-based, conformance,
# scenario expectations, notebooks) after a one-shot smoke run of every benchmark
# (MEMSIM_BENCH_SMOKE=1: tiny sizes, timing disabled, so benchmarks cannot rot) and the lint
# and type checks (ruff check, ruff format --check, mypy), each failing the script on an error.
# pytest's exit code 5 (no tests collected) counts as a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export MPLBACKEND=Agg
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}

run_pytest() {  # run_pytest WHAT ARGS...: fail on errors and on "no tests collected"
  local what=$1 status=0
  shift
  .venv/bin/python -m pytest "$@" || status=$?
  if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no $what: failing" >&2; exit 1; fi
  if [ "$status" -ne 0 ]; then exit "$status"; fi
}

echo "== benchmarks, smoke mode =="
MEMSIM_BENCH_SMOKE=1 run_pytest benchmarks benchmarks --benchmark-disable
echo "== lint and types (ruff, mypy; config in pyproject.toml) =="
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m mypy
echo "== test suite =="
run_pytest tests tests "$@"
