#!/usr/bin/env bash
# Issue 24, 2 H200s, one call: the swapped `fused-reduce:0` (M <= 64) and the rows of the sum
# zeroed in the launch, between GPUs. isolate.sh (which pattern of the first build stopped);
# rs-2gpu.sh with a10ecef and this build (MS 16-1024); odd shapes in both types (rows per GPU
# not whole tiles, M 66 past the swapped kernel's, the summing blocks' `fused-reduce:16`); the
# library's plan on a caller's buffers (`overlap run --pattern`). From the repository root with
# .carry/augur.xz, .carry/augur_b1.xz, .carry/augur_head.xz:
#   bash bench/results/fused-reduce-swap-h200-2026-11-29/verify-2gpu.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
# The launch-zeroed sum and the swapped GEMM between GPUs (fused.rs, in_launch).
export AUGUR_TP_UNVERIFIED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=bench/results/fused-reduce-swap-h200-2026-11-29
T0=$SECONDS
bash $R/isolate.sh; echo "isolate $((SECONDS-T0)) s"
BUILDS="head new" LIMIT=110 bash $R/rs-2gpu.sh; echo "rs $((SECONDS-T0)) s"
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 2 --dtype $t --ops reduce-scatter \
    --patterns gemm,bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:16 \
    16,1032,1040 40,2056,2048 64,4096,2048 66,4096,2048 200,1032,2048 > "$OUT/odd2-$t.csv" 2>> "$OUT/odd2.err"
  echo "odd $t rc=$?"
done
timeout 60 .carry/augur overlap run --gpus 2 --op reduce-scatter --pattern fused-reduce:0 \
  16,4096,4096 64,8192,8192 1024,8192,8192 > "$OUT/run2.csv" 2>> "$OUT/odd2.err"
echo "run rc=$? end $((SECONDS-T0)) s"
