#!/usr/bin/env bash
# Nsight Compute on cuBLASLt's and augur's GEMM kernels at mid M (one H200; clocks left alone):
# which kernel cuBLASLt runs (its tile, grid, cluster), and where each spends its time. From the
# repository root with .carry/augur.xz:
#   bash bench/results/gemm-ncu-h200-2026-11-29/ncu.sh       (writes $OUT/ncu-*.txt)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
for shape in 256,4096,2048 128,4096,2048 256,8192,4096 1024,4096,2048; do
  for k in cublaslt augur_tma_auto; do
    timeout 150 "$NCU" --clock-control none --launch-skip 4 --launch-count 2 \
      --section SpeedOfLight --section LaunchStats --section Occupancy \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
      .carry/augur overlap gemm --reps 2 --kernels $k $shape > "$OUT/ncu-$k-${shape//,/x}.txt" 2>&1
    echo "$k $shape rc=$?"
  done
done
