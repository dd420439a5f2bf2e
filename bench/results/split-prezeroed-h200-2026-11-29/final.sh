#!/usr/bin/env bash
# Issue 24, one H200: the committed build (.carry/augur.xz; ab.sh's "new" with the change kept to
# one GPU, fused.rs's prezeroed) checked on the odd shapes in both types again, then the issue's
# 0.8 bar (bench/fused-one-gpu.sh, now with fused-reduce:0:2 and :0:4). From the repository root:
#   bash bench/results/split-prezeroed-h200-2026-11-29/final.sh   (writes $OUT/final-odd-*.csv, $OUT/one-gpu-*.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for t in f16 bf16; do
  timeout 60 .carry/augur overlap tp --gpus 1 --dtype $t --ops reduce-scatter \
    --patterns fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:16 16,1032,512 72,1032,512 \
    136,2056,1024 264,1032,1024 520,2056,1024 > "$OUT/final-odd-$t.csv" 2>> "$OUT/final.err"
  echo "odd $t rc=$?"
done
OPS=reduce-scatter bash bench/fused-one-gpu.sh
