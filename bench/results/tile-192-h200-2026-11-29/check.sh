#!/usr/bin/env bash
# Issue 24, one H200: the 128 x 192 TMA tiles checked: every TMA kernel width on odd shapes in
# bf16 and f16 with cuBLASLt beside (edges.csv); the fused all-gather and both fused
# reduce-scatters on one GPU at shapes where their tile choice is 192 wide (fused.csv, all
# patterns checked against the f32-accumulated reference); the row-gated GEMM (arrive.csv).
# From the repository root with .carry/augur.xz:  bash bench/results/tile-192-h200-2026-11-29/check.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt"
E=augur_tma_128x192,augur_tma_128x192_k3,augur_tma_128x192_k8,augur_tma_128x256,augur_tma_128x128_k4,augur_tma_swap_32x128,augur_tma_auto,cublaslt
for t in bf16 f16; do
  timeout 90 $A overlap gemm --dtype $t --kernels $E 7,8,8 1000,136,40 129,264,1032 33,1000,520 \
    65,2056,3000 200,392,200 1536,4096,1024 2048,2304,7168 >> "$OUT/edges.csv" 2>> "$OUT/check.err"
  echo "edges $t rc=$?"
done
timeout 120 $A overlap tp --gpus 1 --ops all-gather --start held --samples 10 \
  --patterns gemm,fused-push:1:8 2048,2304,7168 1024,2560,8192 1536,1536,4096 \
  > "$OUT/fused-ag.csv" 2>> "$OUT/check.err"
echo "fused ag rc=$?"
timeout 120 $A overlap tp --gpus 1 --ops reduce-scatter --start held --samples 10 \
  --patterns gemm,fused-reduce:0,fused-reduce:16,fused-reduce:0:2 1536,4096,1024 2048,1536,4096 1000,1544,2048 \
  > "$OUT/fused-rs.csv" 2>> "$OUT/check.err"
echo "fused rs rc=$?"
timeout 60 $A overlap arrive --blocks 1,4 2048,1536,4096 1536,4096,1024 > "$OUT/arrive.csv" 2>> "$OUT/check.err"
echo "arrive rc=$?"
