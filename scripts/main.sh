#!/usr/bin/env bash
# Set everything up, then run the main job: every registered policy on the standard suite.
# Writes results/standard/ (scorecard.md, summary.md, summary.csv, per_query.parquet,
# manifest.json, expectations.csv), the claims table and the figures under results/figures/,
# and prints the scorecard (one line per policy, every column explained) at its end. Per-run results are
# cached under results/runs/ (reused when nothing changed). Extra arguments go to
# `memsim compare`.
#
# LoCoMo joins the suite when a copy is at hand: $MEMSIM_LOCOMO (a path to the official
# JSON), else the development subset in ../shared/data/locomo/ if it exists. Set
# MEMSIM_LOCOMO=none to leave it out. Nothing else depends on that folder.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export MPLBACKEND=Agg
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
locomo=${MEMSIM_LOCOMO:-}
if [ -z "$locomo" ] && [ -f ../shared/data/locomo/locomo-dev.json ]; then
  locomo=../shared/data/locomo/locomo-dev.json
fi
# Five seeds: 4 synthetic profiles x 5 seeds = 20 independent clusters, enough for the exact
# signed-rank test to pass Holm over every pair of ~20 policies (one seed gives 4 clusters, whose
# smallest attainable p is 0.125). LoCoMo and the scripted scenarios ignore the seed: their
# seeds vary only the policies' own tie-breaking and count as one unit per stream.
args=(--suite standard --seeds 0:5 --jobs 2 --out results/standard --brief)
if [ -n "$locomo" ] && [ "$locomo" != "none" ]; then
  echo "main: including LoCoMo from $locomo" >&2
  args+=(--locomo "$locomo")
fi
# compare's scorecard is printed last, after the claims and figures have been written
card=$(mktemp)
trap 'rm -f "$card"' EXIT
.venv/bin/python -m memsim compare "${args[@]}" "$@" >"$card"
.venv/bin/python -m memsim claims
.venv/bin/python -m memsim figures --out results/figures --results results/standard
# The README's headline is the scorecard of results/standard; keep them together, but only
# for the standard run itself (extra arguments change what results/standard holds).
if [ $# -eq 0 ]; then .venv/bin/python -m scripts.headline --write; fi
echo
cat "$card"
echo
echo "main: the scorecard with intervals in results/standard/scorecard.md; every protocol and"
echo "      scenario in summary.md and summary.csv; per query in per_query.parquet; worked"
echo "      examples in docs/claims.md; figures in results/figures/ (see results/README.md)"
