#!/usr/bin/env bash
# Issue 24, one H200: the final build (128 x 192 tiles, the tail split taken with a 5% margin,
# the 256-wide kernel back at 158 registers) checked and timed once more, under final-check/:
# every TMA kind on odd shapes in bf16 and f16 (edges.csv); the row gate in front of kernels on
# every SM, one of them a tail split (arrive.csv: with the tile held over the products the
# 256-wide kernel took 168 registers and the gate's row copies never started); the fused
# all-gather and reduce-scatter on one GPU (fused.csv); augur_tma_auto against cuBLASLt on the
# fit and validate shapes (auto.csv), and the build before this session's two changes (209f558,
# .carry/augur_old.xz, if carried) on the same shapes just before (auto-old.csv).
# From the repository root with .carry/augur.xz:  bash bench/results/tail-split-h200-2026-11-29/final-check.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt"
E=augur_tma_128x256_t2,augur_tma_128x192_t3,augur_tma_128x128_t8,augur_tma_128x192,augur_tma_128x192_k2,augur_tma_128x256,augur_tma_swap_64x128_k3,augur_tma_auto,cublaslt
for t in bf16 f16; do
  timeout 90 $A overlap gemm --dtype $t --kernels $E 7,8,8 1000,136,40 129,264,1032 2000,2056,1000 \
    1100,4104,520 4097,1032,1032 2560,5120,3584 >> "$OUT/edges.csv" 2>> "$OUT/check.err"
  echo "edges $t rc=$?"
done
timeout 120 $A overlap arrive --blocks 1,4 4096,4096,3584 2560,5120,3584 2048,1536,4096 > "$OUT/arrive.csv" 2>> "$OUT/check.err"
echo "arrive rc=$?"
timeout 120 $A overlap tp --gpus 1 --start held --samples 10 --ops all-gather,reduce-scatter \
  --patterns gemm,fused-push:1:8,fused-reduce:0,fused-reduce:16 2048,2560,8192 1536,4096,1024 32,10240,7168 \
  > "$OUT/fused.csv" 2>> "$OUT/check.err"
echo "fused rc=$?"
for m in 256 512 1024 2048 3072 4096 384 768 1536 2560 6144; do
  S=()
  for s in 1536,4096 7168,4096 2560,8192 14336,8192 4096,1024 4096,3584 8192,2048 8192,7168 \
    2048,3584 7168,5120 2304,7168 10240,7168 3584,1024 5120,3584 7168,1792 7168,5120; do S+=("$m,$s"); done
  [ -x .carry/augur_old ] && timeout 200 .carry/augur_old overlap gemm --reps 7 \
    --kernels augur_tma_auto,cublaslt "${S[@]}" >> "$OUT/auto-old.csv" 2>> "$OUT/auto.err"
  timeout 200 $A overlap gemm --reps 7 --kernels augur_tma_auto,cublaslt "${S[@]}" >> "$OUT/auto.csv" 2>> "$OUT/auto.err"
  echo "auto $m rc=$?"
done
