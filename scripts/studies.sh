#!/usr/bin/env bash
# Regenerate the long studies from this checkout's code, each with the command its report
# prints, and say how long each took:
#
#   scripts/studies.sh                         # all four, in this order
#   scripts/studies.sh sensitivity tuning      # some of them
#
#   drift        results/drift.md, references.md       code variants, reference models' variants
#   robustness   results/robustness.md, .csv, .png     conclusions under 17 mock-LLM modes
#   sensitivity  results/sensitivity.md, sensitivity/  one at a time, then Sobol' indices
#   tuning       results/tuning.md, tuning/trials.csv  documented vs tuned, held-out seeds
#
# Run ./scripts/main.sh first (the standard comparison and the README headline) from the same
# commit: every report and results/standard/manifest.json name the code fingerprint they came
# from, and tests/workbench/test_studies_agree.py (python -m scripts.studies_check) fails
# until they all name one. Commit the code first: results-only commits keep the fingerprint.
#
#   scripts/studies.sh --print [STUDY...]      # the commands only
#
# Times on a quiet 2-core machine (MEMSIM_JOBS=2, docs/results.md): drift about 2 min,
# robustness about 11 min, sensitivity about 14 min, tuning about 2 min. Each study caches its runs
# (resumable) under a gitignored folder; --jobs does not change a number. MEMSIM_JOBS sets
# the worker processes (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
export MPLBACKEND=Agg
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
jobs=${MEMSIM_JOBS:-2}
python=.venv/bin/python
if [ ! -x "$python" ]; then
  echo "studies: $python: no such interpreter (run ./scripts/setup.sh)" >&2
  exit 2
fi

# the synthetic profiles at the studies' reduced size: half the episodes and facts of the
# default profiles, a 180-day horizon
small=episodes=400,queries=40,facts=75
profiles=synthetic:steady,$small,synthetic:churn,$small,synthetic:noisy,$small,synthetic:longgap,$small
seeds_policies=pai,cosmo,izzie,kernle,engram

drift() {
  $python -m memsim drift --kind all \
    --scenarios synthetic:steady,synthetic:churn,synthetic:noisy,synthetic:longgap \
    --locomo ../shared/data/locomo/locomo-dev.json --seeds 0:5 --jobs "$jobs" --quiet
}

robustness() {
  $python -m memsim robustness --policies pai,izzie,kernle,engram,cosmo,keep-all,recency \
    --seeds 0,1,2,3,4 --grid default --jobs "$jobs" --cache results/cache/robustness --quiet
}

sensitivity() {
  $python -m memsim sensitivity --policies "$seeds_policies" --scenarios "$profiles" --n 3 \
    --sobol 128 --sobol-scenarios "synthetic:churn,$small,synthetic:longgap,$small" \
    --jobs "$jobs" --quiet
}

tuning() {
  $python -m memsim tune --policies "$seeds_policies" --scenarios "synthetic:churn,$small" \
    --objectives recall,footprint_mean --train-seeds 0:5 --test-seeds 5:10 \
    --jobs "$jobs" --quiet
}

all=(drift robustness sensitivity tuning)
print=no
if [ "${1:-}" = "--print" ]; then
  print=yes
  shift
fi
pieces=("$@")
if [ ${#pieces[@]} -eq 0 ]; then pieces=("${all[@]}"); fi
for piece in "${pieces[@]}"; do
  case " ${all[*]} " in
    *" $piece "*) ;;
    *) echo "studies: unknown study '$piece'; known: ${all[*]}" >&2; exit 2 ;;
  esac
done
if [ "$print" = yes ]; then
  python="echo $python"
  for piece in "${pieces[@]}"; do "$piece"; done
  exit 0
fi
for piece in "${pieces[@]}"; do
  echo "studies: $piece ..." >&2
  start=$SECONDS
  "$piece" >/dev/null
  echo "studies: $piece took $((SECONDS - start)) s" >&2
done
$python -m scripts.studies_check || true
