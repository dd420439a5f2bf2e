#!/usr/bin/env bash
# Issue 24, one H200: the same candidates (candidates.sh) on layers fit.sh did not see: one
# GPU's share of the third weight set's 4-GPU layers (bench/results/third-weights-h200-2026-11-28:
# the all-gather's N / 4, the reduce-scatter's K / 4) at M values fit.sh did not use:
# validate.csv.
# From the repository root with .carry/augur.xz:  bash bench/results/tile-192-h200-2026-11-29/validate.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
source bench/results/tile-192-h200-2026-11-29/candidates.sh
for m in ${MS:-384 768 1536 2560 6144}; do
  S=()
  for s in 2048,3584 7168,5120 2304,7168 10240,7168 3584,1024 5120,3584 7168,1792 7168,5120; do S+=("$m,$s"); done
  timeout 200 $A overlap gemm --reps 7 --kernels "$K" "${S[@]}" >> "$OUT/validate.csv" 2>> "$OUT/validate.err"
  echo "validate $m rc=$?"
done
