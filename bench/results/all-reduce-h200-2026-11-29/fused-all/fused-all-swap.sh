#!/usr/bin/env bash
# Issue 24, `fused-all` at any rows per GPU and with the swapped GEMM where `fused-reduce:0`
# takes it (M <= 64, or 64-row token tiles that fit in one wave), on 2 GPUs: checked before and
# after its timed calls on small and odd shapes, bf16 and f16, beside bulk; then re-timed with
# bulk on every layer of the three weight sets' all-reduce grids. Through the device tool with
# carry [".carry/augur.xz"]:
#   bash bench/results/all-reduce-h200-2026-11-29/fused-all/fused-all-swap.sh
source bench/tp-env.sh
odd swap-check fused-all-swap 150 --gpus 2 --ops all-reduce \
  --patterns gemm,comm,bulk,fused-all --samples 5 \
  16,4096,4096 32,3584,18944 64,8192,8192 96,5120,5120 200,4096,4096 128,5120,14336 \
  256,3584,3584 1000,1000,512 3000,7168,7168
OUT=$OUT/regrid OPS=all-reduce GPUS=2 LIMIT=${LIMIT:-100} F=bulk,fused-all bash bench/regrid-fused.sh
