#!/usr/bin/env bash
# Issue 24, one H200: the fused all-gather's GEMM at small M on one GPU's share of a 4-GPU layer
# (per-GPU N = N / 4 of the third weight set), beside cuBLASLt alone, from a held start; and
# augur's TMA GEMM (auto and each split) against cuBLASLt in the throughput and graph modes.
# From the repository root with .carry/augur.xz:  bash bench/results/small-m-one-gpu-h200-2026-11-29/diag.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S=()
for m in ${MS:-32 128 512}; do S+=("$m,2048,3584" "$m,2304,7168" "$m,7168,5120" "$m,10240,7168"); done
timeout 150 .carry/augur overlap tp --gpus 1 --ops all-gather --start held --samples 15 \
  --patterns gemm,fused-push:1:8,fused-push:1:16 "${S[@]}" > "$OUT/fused-1gpu.csv" 2> "$OUT/fused-1gpu.err"
echo "tp rc=$?"; tail -3 "$OUT/fused-1gpu.err"
K=augur_tma_auto,cublaslt,augur_tma_128x256,augur_tma_128x256_k2,augur_tma_128x256_k4,augur_tma_128x256_k8,augur_tma_128x256_k16,augur_tma_128x128_k4,augur_tma_128x128_k8
timeout 200 .carry/augur overlap gemm --kernels $K "${S[@]}" > "$OUT/gemm.csv" 2> "$OUT/gemm.err"
echo "gemm rc=$?"; tail -3 "$OUT/gemm.err"
