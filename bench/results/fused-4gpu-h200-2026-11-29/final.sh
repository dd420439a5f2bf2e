#!/usr/bin/env bash
# Issue 24, four H200s, one call, the build committed with this folder (no AUGUR_TP_UNVERIFIED:
# the launch zeroes on four GPUs by default now): the reduce-scatter's fused patterns and the
# all-gather's copy-kernel patterns on odd shapes in both types (checked before and after their
# timed calls), then the library's plan with the shipped model's pick (no --pattern) on layers
# of both operations. From the repository root with .carry/augur.xz:
#   bash bench/results/fused-4gpu-h200-2026-11-29/final.sh   (writes $OUT/final-*.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
unset AUGUR_TP_UNVERIFIED
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
G=4
T0=$SECONDS
for t in f16 bf16; do
  timeout 75 .carry/augur overlap tp --gpus $G --dtype $t --ops reduce-scatter \
    --patterns bulk,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4 \
    16,1032,4096 40,2056,4096 68,4096,4096 136,2056,4096 200,1032,4096 1024,4096,4096 \
    > "$OUT/final-rs-$t.csv" 2>> "$OUT/final.err"
  echo "rs $t rc=$? $((SECONDS - T0)) s"
  timeout 75 .carry/augur overlap tp --gpus $G --dtype $t --ops all-gather \
    --patterns bulk,own-bulk,pc-push:1:8,pc-pull:1:8,pc-push:1:16 \
    16,2048,4096 40,4096,4096 68,6144,4096 200,2048,2056 1024,6144,4096 \
    > "$OUT/final-ag-$t.csv" 2>> "$OUT/final.err"
  echo "ag $t rc=$? $((SECONDS - T0)) s"
done
for op in reduce-scatter all-gather; do
  timeout 90 .carry/augur overlap run --gpus $G --op $op \
    16,4096,4096 256,8192,8192 1024,6144,4096 4096,8192,8192 > "$OUT/final-run-$op.csv" 2>> "$OUT/final.err"
  echo "run $op rc=$? $((SECONDS - T0)) s"
done
