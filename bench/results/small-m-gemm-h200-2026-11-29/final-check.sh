#!/usr/bin/env bash
# Issue 24, one H200: the final build (after the consumer loop and shared-memory set-up were
# shared between the TMA kernels) checked again: every TMA kernel kind on odd shapes in bf16 and
# f16 with cuBLASLt beside (edges.csv), the fused all-gather at M <= 64 on one GPU (fused.csv)
# and the row-gated swapped GEMM (arrive.csv); all under final-check/.
# From the repository root with .carry/augur.xz:  bash bench/results/small-m-gemm-h200-2026-11-29/final-check.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
E=augur_tma_swap_32x128,augur_tma_swap_64x128_k5,augur_tma_128x256,augur_tma_128x128_k4,augur_tma_auto,cublaslt
for t in bf16 f16; do
  timeout 60 $A overlap gemm --dtype $t --kernels $E 7,8,8 1000,136,40 129,264,1032 33,1000,520 \
    65,2056,3000 16,10240,7168 512,4096,1024 >> "$OUT/edges.csv" 2>> "$OUT/check.err"
  echo "edges $t rc=$?"
done
timeout 60 $A overlap tp --gpus 1 --ops all-gather --start held --samples 10 \
  --patterns gemm,fused-push:1:8 16,2048,3584 32,10240,7168 64,7168,5120 128,2304,7168 \
  > "$OUT/fused.csv" 2>> "$OUT/check.err"
echo "fused rc=$?"
timeout 60 $A overlap arrive --blocks 1,4 32,10240,7168 128,4096,3584 > "$OUT/arrive.csv" 2>> "$OUT/check.err"
echo "arrive rc=$?"
