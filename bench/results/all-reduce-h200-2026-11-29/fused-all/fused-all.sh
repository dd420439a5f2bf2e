#!/usr/bin/env bash
# Issue 24, `fused-all` (the GEMM + all-reduce in one launch per GPU: every half-tile added into
# every GPU's whole sum) on 2 GPUs: checked before and after its timed calls on edge and layer
# shapes, bf16 and f16, beside bulk and the composition; then re-timed with bulk on the three
# weight sets' all-reduce layers from M 128 (every GPU's rows whole 64-row halves). Through the
# device tool with carry [".carry/augur.xz"]:
#   bash bench/results/all-reduce-h200-2026-11-29/fused-all/fused-all.sh
source bench/tp-env.sh
odd fused-all-check fused-all 120 --gpus 2 --ops all-reduce \
  --patterns gemm,comm,bulk,fused-reduce:0,fused-all --samples 5 \
  128,4096,4096 128,1000,512 384,5120,13824 1024,8192,8192 2048,3584,18944 8192,4096,4096 \
  1024,5120,5120 1536,3584,4096 3072,7168,7168 6144,3584,4096
OUT=$OUT/regrid OPS=all-reduce GPUS=2 LIMIT=${LIMIT:-100} MIN_M=128 F=bulk,fused-all \
  bash bench/regrid-fused.sh
