#!/usr/bin/env bash
# The 128 x 128 TMA kernel with 4 (as committed), 5 or 6 shared-memory stages (cuBLASLt's
# 128 x 128 kernel at these sizes keeps 6): standalone, and the fused reduce-scatter on one GPU
# where it takes 128-row tiles, alternating, two rounds. From the repository root with
# .carry/augur.xz (stages.patch's build; AUGUR_WG128_STAGES picks the count):
#   bash bench/results/gemm-stages-h200-2026-11-29/stages.sh     (writes $OUT/stages.tgz)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=$(mktemp -d)
source bench/unpack-carry.sh
T=(256,7168,2048 256,8192,2048 256,8192,4096 256,8192,14336 512,4096,2048 512,8192,4096 1024,4096,2048 1024,4096,7168 384,4096,3584 2048,4096,4096)
R=(256,8192,4096 256,8192,14336 256,7168,2048 512,8192,4096)
for st in 6 5; do
  AUGUR_WG128_STAGES=$st timeout 100 .carry/augur overlap gemm --reps 3 --kernels augur_tma_128x128,augur_tma_128x128_k3,augur_tma_128x128_t4 \
    136,1032,1000 264,2056,2048 1024,4096,1024 200,8200,2048 > "$W/odd-$st.csv" 2>> "$W/err.txt"; echo "odd $st rc=$?"
done
for round in 1 2; do
  for st in 4 6 5; do
    AUGUR_WG128_STAGES=$st timeout 120 .carry/augur overlap gemm --reps 15 --kernels augur_tma_128x128,cublaslt "${T[@]}" > "$W/gemm-$st-$round.csv" 2>> "$W/err.txt"; echo "gemm $st $round rc=$?"
    AUGUR_WG128_STAGES=$st timeout 120 .carry/augur overlap tp --gpus 1 --ops reduce-scatter --samples 7 --patterns gemm,fused-reduce:0,fused-reduce:16 "${R[@]}" > "$W/rs-$st-$round.csv" 2>> "$W/err.txt"; echo "rs $st $round rc=$?"
  done
done
tar czf "$OUT/stages.tgz" -C "$W" .
