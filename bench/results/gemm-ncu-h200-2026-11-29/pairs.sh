#!/usr/bin/env bash
# Nsight Compute on augur's 128 x 128 TMA kernel alone and in pairs sharing B (AUGUR_TMA_PAIR,
# ../swap-cluster-h200-2026-11-29/halves.patch's build) at 256 x 8192 x 4096, one launch each:
# where the pairs' extra time goes. From the repository root with .carry/augur.xz of that build:
#   bash bench/results/gemm-ncu-h200-2026-11-29/pairs.sh      (writes $OUT/pairs-*.txt, *.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for mode in base pair; do
  if [ $mode = pair ]; then export AUGUR_TMA_PAIR=1; else unset AUGUR_TMA_PAIR; fi
  timeout 200 ncu --clock-control none --launch-skip 4 --launch-count 1 --set full \
    --import-source no --page details .carry/augur overlap gemm --reps 2 --kernels augur_tma_128x128 256,8192,4096 > "$OUT/pairs-$mode.txt" 2>&1
  echo "$mode rc=$?"
  timeout 120 ncu --clock-control none --launch-skip 4 --launch-count 1 --section SourceCounters \
    --page source --print-source sass --csv .carry/augur overlap gemm --reps 2 --kernels augur_tma_128x128 256,8192,4096 > "$OUT/pairs-sass-$mode.csv" 2>&1
  echo "$mode sass rc=$?"
done
