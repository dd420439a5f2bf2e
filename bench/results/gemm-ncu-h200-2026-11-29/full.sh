#!/usr/bin/env bash
# Nsight Compute's full set on one launch each of cuBLASLt's kernel and augur's swapped kernel
# at 256 x 4096 x 2048 (one H200; clocks left alone), with the warp stall sampling per SASS
# instruction. From the repository root with .carry/augur.xz:
#   bash bench/results/gemm-ncu-h200-2026-11-29/full.sh       (writes $OUT/full-*.txt)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for k in augur_tma_swap_64x128 cublaslt; do
  timeout 250 ncu --clock-control none --launch-skip 4 --launch-count 1 --set full \
    --import-source no --print-details all --page details \
    .carry/augur overlap gemm --reps 2 --kernels $k 256,4096,2048 > "$OUT/full-$k.txt" 2>&1
  echo "$k rc=$?"
  timeout 120 ncu --clock-control none --launch-skip 4 --launch-count 1 --section SourceCounters \
    --page source --print-source sass --csv \
    .carry/augur overlap gemm --reps 2 --kernels $k 256,4096,2048 > "$OUT/sass-$k.csv" 2>&1
  echo "$k sass rc=$?"
done
