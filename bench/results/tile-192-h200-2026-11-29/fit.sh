#!/usr/bin/env bash
# Issue 24, one H200: every width and split of the 128-row TMA kernel (candidates.sh) beside
# cuBLASLt on one GPU's share of bench/tp-grid.sh's 4-GPU layers (the all-gather's weights N / 4,
# the reduce-scatter's K / 4) at M 256-4096, the mid band: fit.csv, where the estimate's cost of a
# 192-wide step is fitted.
# From the repository root with .carry/augur.xz:  bash bench/results/tile-192-h200-2026-11-29/fit.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
source bench/results/tile-192-h200-2026-11-29/candidates.sh
for m in ${MS:-256 512 1024 2048 3072 4096}; do
  S=()
  for s in 1536,4096 7168,4096 2560,8192 14336,8192 4096,1024 4096,3584 8192,2048 8192,7168; do S+=("$m,$s"); done
  timeout 200 $A overlap gemm --reps 7 --kernels "$K" "${S[@]}" >> "$OUT/fit.csv" 2>> "$OUT/fit.err"
  echo "fit $m rc=$?"
done
