#!/usr/bin/env bash
# The swapped TMA GEMM with pairs of blocks sharing each B tile (cluster of 2, multicast) against
# the same kernel alone, cuBLASLt beside, alternating, two rounds. From the repository root with
# .carry/augur.xz (the build with AUGUR_SWAP_CLUSTER):
#   bash bench/results/swap-cluster-h200-2026-11-29/cluster.sh     (writes $OUT/*.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gpu.txt"
# Odd shapes first (token tiles part-filled, an odd count of them: a pair's second block past M).
ODD=(72,1032,1000 136,2056,2048 200,4096,1024 96,1032,3000)
for ty in bf16 f16; do
  AUGUR_SWAP_CLUSTER=1 timeout 100 .carry/augur overlap gemm --reps 3 --dtype $ty \
    --kernels augur_tma_swap_64x128,augur_tma_swap_64x128_k2,augur_tma_swap_32x128_k3,augur_tma_auto \
    "${ODD[@]}" > "$OUT/odd-$ty.csv" 2>> "$OUT/err.txt"; echo "odd $ty rc=$?"
done
L=()
for w in 4096,1024 4096,2048 4096,3584 4096,7168 7168,2048 8192,2048 8192,4096; do L+=("128,$w" "256,$w"); done
L+=(96,4096,3584 192,4096,2048 192,8192,2048)
K=augur_tma_swap_64x128,augur_tma_swap_64x128_k2,augur_tma_auto,cublaslt
for round in 1 2; do
  timeout 120 .carry/augur overlap gemm --reps 15 --kernels $K "${L[@]}" > "$OUT/base-$round.csv" 2>> "$OUT/err.txt"; echo "base $round rc=$?"
  AUGUR_SWAP_CLUSTER=1 timeout 120 .carry/augur overlap gemm --reps 15 --kernels $K "${L[@]}" > "$OUT/pair-$round.csv" 2>> "$OUT/err.txt"; echo "pair $round rc=$?"
done
