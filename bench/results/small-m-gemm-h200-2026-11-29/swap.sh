#!/usr/bin/env bash
# Issue 24, one H200: the swapped TMA GEMM (augur_tma_swap_{32,64}x128[_kS]) at small M, checked
# on odd shapes in bf16 and f16 (edges.csv), then timed in every split beside cuBLASLt and
# augur_tma_auto on one GPU's share of the third weight set's layers (sweep.csv).
# From the repository root with .carry/augur.xz:  bash bench/results/small-m-gemm-h200-2026-11-29/swap.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
E=augur_tma_swap_32x128,augur_tma_swap_64x128,augur_tma_swap_32x128_k3,augur_tma_swap_64x128_k5,augur_tma_auto,cublaslt
for t in bf16 f16; do
  timeout 120 $A overlap gemm --dtype $t --kernels $E 7,8,8 1000,136,40 129,264,1032 300,520,2056 \
    1,4096,4096 33,1000,520 65,2056,3000 64,128,64 16,10240,7168 > "$OUT/edges-$t.csv" 2>> "$OUT/edges.err"
  echo "edges $t rc=$?"
done
S=(2048,3584 2304,7168 7168,5120 10240,7168 4096,4096)
sweep() {  # M values, then kernels
  local ms=$1 ks=$2 sh=()
  for m in $ms; do for s in "${S[@]}"; do sh+=("$m,$s"); done; done
  timeout 280 $A overlap gemm --kernels "$ks" "${sh[@]}" >> "$OUT/sweep.csv" 2>> "$OUT/sweep.err"
  echo "sweep $ms rc=$?"
}
sw() { local mt=$1; shift; for s in "$@"; do printf ',augur_tma_swap_%sx128_k%s' $mt $s; done; }
sweep "16 32" "cublaslt,augur_tma_auto$(sw 32 1 2 3 4 5 6 8 12 16)"
sweep "64 128" "cublaslt,augur_tma_auto$(sw 64 1 2 3 4 5 6 8 12 16)$(sw 32 2 4)"
