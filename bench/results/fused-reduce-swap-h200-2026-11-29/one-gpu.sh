#!/usr/bin/env bash
# Issue 24, one H200: `fused-reduce:0` with the swapped GEMM at M <= 64 (gemm_tma_rsa_swap_*:
# 128 columns of C by a token tile of 32 or 64 rows a unit, each block added into its owners'
# rows by tensor-memory reductions), against the build before it (.carry/augur_old.xz, a10ecef:
# 128-row tiles) and cuBLASLt (the `gemm` pattern), one GPU (one owner: every row this GPU's).
# Also the refactored standalone swapped kernels and the fused all-gather's (their stores moved
# into the gates) checked on odd shapes. From the repository root with .carry/augur.xz (and
# .carry/augur_old.xz):  bash bench/results/fused-reduce-swap-h200-2026-11-29/one-gpu.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
A=.carry/augur
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt"
for t in bf16 f16; do
  timeout 60 $A overlap gemm --dtype $t --kernels augur_tma_swap_32x128,augur_tma_swap_64x128,augur_tma_swap_32x128_k3,augur_tma_swap_64x128_k2,augur_tma_auto,cublaslt \
    7,8,8 1,136,40 33,264,1032 64,2056,1000 17,4104,520 50,1032,1032 >> "$OUT/edges.csv" 2>> "$OUT/check.err"
  echo "edges $t rc=$?"
done
S=()
for m in 16 32 64; do
  for w in 4096,1024 4096,3584 8192,2048 8192,7168 5120,4608 3584,4608; do S+=("$m,$w"); done
done
for round in 1 2; do
  [ -x .carry/augur_old ] && timeout 120 .carry/augur_old overlap tp --gpus 1 --ops reduce-scatter \
    --patterns gemm,fused-reduce:0,fused-reduce:0:4 "${S[@]}" | sed "s/^/old,$round,/" >> "$OUT/rs-old.csv" 2>> "$OUT/check.err"
  echo "old $round rc=$?"
  timeout 150 $A overlap tp --gpus 1 --ops reduce-scatter \
    --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:0:8 "${S[@]}" | sed "s/^/new,$round,/" >> "$OUT/rs.csv" 2>> "$OUT/check.err"
  echo "new $round rc=$?"
done
for t in f16 bf16; do
  timeout 60 $A overlap tp --gpus 1 --dtype $t --ops all-gather,reduce-scatter --patterns gemm,fused-push:1:8,fused-reduce:0,fused-reduce:0:2 \
    16,1032,520 40,2056,1024 64,4096,1024 65,4096,1024 > "$OUT/odd-$t.csv" 2>> "$OUT/check.err"
  echo "odd $t rc=$?"
done
