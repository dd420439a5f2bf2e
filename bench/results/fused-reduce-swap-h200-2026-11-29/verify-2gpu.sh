#!/usr/bin/env bash
# Issue 24, GPUS (default 2) H200s, one call: the swapped `fused-reduce:0` (M <= 64) and the
# rows of the sum zeroed in the launch, between GPUs. isolate.sh (which pattern of the first
# build stopped);
# rs-2gpu.sh with a10ecef and this build (MS 16-1024); odd shapes in both types (rows per GPU
# not whole tiles, M 66 past the swapped kernel's, the summing blocks' `fused-reduce:16`); the
# library's plan on a caller's buffers (`overlap run --pattern`). From the repository root with
# .carry/augur.xz, .carry/augur_b1.xz, .carry/augur_head.xz:
#   bash bench/results/fused-reduce-swap-h200-2026-11-29/verify-2gpu.sh   (GPUS=4 on four)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
# The launch-zeroed sum and the swapped GEMM between GPUs (fused.rs, in_launch).
export AUGUR_TP_UNVERIFIED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=bench/results/fused-reduce-swap-h200-2026-11-29
G=${GPUS:-2}; export GPUS=$G
T0=$SECONDS
bash $R/isolate.sh; echo "isolate $((SECONDS-T0)) s"
BUILDS="head new" LIMIT=110 bash $R/rs-2gpu.sh; echo "rs $((SECONDS-T0)) s"
for t in f16 bf16; do
  # M a multiple of the GPUs, k / P of 8 (M 66 or 68: past the swapped kernel's 64).
  timeout 60 .carry/augur overlap tp --gpus $G --dtype $t --ops reduce-scatter \
    --patterns gemm,bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:16 \
    16,1032,$((520 * G)) 40,2056,$((1024 * G)) 64,4096,$((1024 * G)) $((64 + G)),4096,$((1024 * G)) \
    200,1032,$((1024 * G)) > "$OUT/odd$G-$t.csv" 2>> "$OUT/odd$G.err"
  echo "odd $t rc=$?"
done
timeout 60 .carry/augur overlap run --gpus $G --op reduce-scatter --pattern fused-reduce:0 \
  16,4096,4096 64,8192,8192 1024,8192,8192 > "$OUT/run$G.csv" 2>> "$OUT/odd$G.err"
echo "run rc=$? end $((SECONDS-T0)) s"
