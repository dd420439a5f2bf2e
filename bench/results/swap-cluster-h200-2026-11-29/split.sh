#!/usr/bin/env bash
# 128 x 128 tiles with k cut in two over a cluster of two blocks, summed in shared memory
# (AUGUR_TMA_CLUSTER), against the same tiles split through f32 partials in memory and a second
# kernel, the swapped kernel (augur_tma_auto) and cuBLASLt, alternating, two rounds. From the
# repository root with .carry/augur.xz:
#   bash bench/results/swap-cluster-h200-2026-11-29/split.sh     (writes $OUT/split-*.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
ODD=(16,1032,1000 72,1032,1000 136,2056,2048 200,4096,128 264,2056,3000 1024,4096,1024 520,8200,2056)
for ty in bf16 f16; do
  AUGUR_TMA_CLUSTER=1 timeout 100 .carry/augur overlap gemm --reps 3 --dtype $ty \
    --kernels augur_tma_128x128_k2 "${ODD[@]}" > "$OUT/split-odd-$ty.csv" 2>> "$OUT/split-err.txt"; echo "odd $ty rc=$?"
done
L=()
for w in 4096,1024 4096,2048 4096,3584 4096,7168 7168,2048 8192,2048 8192,4096; do L+=("128,$w" "256,$w"); done
L+=(96,4096,3584 192,4096,2048 192,8192,2048 512,4096,2048 512,8192,4096)
K=augur_tma_128x128_k2,augur_tma_auto,cublaslt
for round in 1 2; do
  timeout 120 .carry/augur overlap gemm --reps 15 --kernels $K "${L[@]}" > "$OUT/split-base-$round.csv" 2>> "$OUT/split-err.txt"; echo "base $round rc=$?"
  AUGUR_TMA_CLUSTER=1 timeout 120 .carry/augur overlap gemm --reps 15 --kernels $K "${L[@]}" > "$OUT/split-cs-$round.csv" 2>> "$OUT/split-err.txt"; echo "cs $round rc=$?"
done
