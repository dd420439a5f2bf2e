#!/usr/bin/env bash
# augur's standalone GEMM (no fusion) at convert.sh's layers, beside cuBLASLt: what part of the
# fused kernel's gap to cuBLASLt is its GEMM's. From the repository root with .carry/augur.xz:
#   bash bench/results/swap-mid-h200-2026-11-29/gemm-gap/gemm-gap.sh   (writes $OUT/gemm-*.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S1=(); S2=()
for w in 4096,1024 4096,3584 8192,2048 7168,2048; do S1+=("16,$w" "64,$w"); S2+=("128,$w" "256,$w"); done
timeout 150 .carry/augur overlap gemm --reps 15 --kernels augur_tma_auto,augur_tma_swap_32x128_k2,augur_tma_swap_32x128_k4,augur_tma_swap_64x128_k2,augur_tma_swap_64x128_k4,cublaslt "${S1[@]}" > "$OUT/gemm-small.csv" 2> "$OUT/gemm.err"
echo "small rc=$?"
timeout 150 .carry/augur overlap gemm --reps 15 --kernels augur_tma_auto,augur_tma_128x128_k2,augur_tma_128x128_k4,augur_tma_128x128_k8,cublaslt "${S2[@]}" > "$OUT/gemm-mid.csv" 2>> "$OUT/gemm.err"
echo "mid rc=$?"
