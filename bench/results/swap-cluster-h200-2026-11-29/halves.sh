#!/usr/bin/env bash
# Pairs of blocks each loading half of the shared B tile for both (multicast), as cuBLASLt's
# kernels at these sizes do: the 128 x 128 tiles over two tile rows (AUGUR_TMA_PAIR) and the
# swapped kernel over two token tiles (AUGUR_SWAP_CLUSTER with AUGUR_SWAP_HALVES), each against
# the unpaired kernel, cuBLASLt beside, alternating, two rounds. From the repository root with
# .carry/augur.xz (halves.patch's build):
#   bash bench/results/swap-cluster-h200-2026-11-29/halves.sh     (writes $OUT/halves-*.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
if [ -z "${SKIP_ODD:-}" ]; then
ODD=(136,1032,1000 264,2056,2048 520,4096,1024 1024,2056,3000 200,8200,2048)
for ty in bf16 f16; do
  AUGUR_TMA_PAIR=1 timeout 100 .carry/augur overlap gemm --reps 3 --dtype $ty \
    --kernels augur_tma_128x128 "${ODD[@]}" > "$OUT/halves-odd-tma-$ty.csv" 2>> "$OUT/halves-err.txt"; echo "odd tma $ty rc=$?"
  AUGUR_SWAP_CLUSTER=1 AUGUR_SWAP_HALVES=1 timeout 100 .carry/augur overlap gemm --reps 3 --dtype $ty \
    --kernels augur_tma_swap_64x128,augur_tma_swap_64x128_k2,augur_tma_swap_32x128_k3 72,1032,1000 136,2056,2048 200,4096,1024 96,1032,3000 \
    > "$OUT/halves-odd-swap-$ty.csv" 2>> "$OUT/halves-err.txt"; echo "odd swap $ty rc=$?"
done
fi
T=(256,4096,2048 256,7168,2048 256,8192,2048 256,8192,4096 256,8192,14336 512,4096,2048 512,8192,4096 1024,4096,2048 1024,4096,7168 384,4096,3584)
S=(128,4096,2048 256,4096,2048 128,8192,2048 256,4096,3584 128,4096,7168 192,4096,2048)
for round in 1 2; do
  timeout 120 .carry/augur overlap gemm --reps 15 --kernels augur_tma_128x128,cublaslt "${T[@]}" > "$OUT/halves-tma-base-$round.csv" 2>> "$OUT/halves-err.txt"; echo "tma base $round rc=$?"
  AUGUR_TMA_PAIR=1 timeout 120 .carry/augur overlap gemm --reps 15 --kernels augur_tma_128x128,cublaslt "${T[@]}" > "$OUT/halves-tma-pair-$round.csv" 2>> "$OUT/halves-err.txt"; echo "tma pair $round rc=$?"
  timeout 120 .carry/augur overlap gemm --reps 15 --kernels augur_tma_swap_64x128,cublaslt "${S[@]}" > "$OUT/halves-swap-base-$round.csv" 2>> "$OUT/halves-err.txt"; echo "swap base $round rc=$?"
  AUGUR_SWAP_CLUSTER=1 AUGUR_SWAP_HALVES=1 timeout 120 .carry/augur overlap gemm --reps 15 --kernels augur_tma_swap_64x128,cublaslt "${S[@]}" > "$OUT/halves-swap-pair-$round.csv" 2>> "$OUT/halves-err.txt"; echo "swap pair $round rc=$?"
done
# One file back (the device tool returns a few files a call).
tar czf "$OUT/halves-timed.tgz" -C "$OUT" $(cd "$OUT" && ls halves-tma-*.csv halves-swap-*.csv) && rm "$OUT"/halves-tma-*.csv "$OUT"/halves-swap-*.csv
