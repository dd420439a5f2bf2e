#!/usr/bin/env bash
# Issue 24, one H200: the fused patterns on one GPU (no peer) where their GEMM's tile choice
# moves to 128 x 192, the build before the 192-wide tiles (209f558, .carry/augur_old.xz) against
# this one (.carry/augur.xz), in alternating rounds, held start; `gemm` (cuBLASLt alone) beside.
# All-gather (fused-push:1:8, 124 GEMM SMs) and reduce-scatter (fused-reduce:0, 132) on one
# GPU's share of 4-GPU layers: fused-ab.csv (column `build` added: old / new).
# Build the old binary from 209f558 the same way (cargo build --release --locked -p augur-cli,
# strip, xz) into .carry/augur_old.xz; carry both.
# From the repository root:  bash bench/results/tile-192-h200-2026-11-29/fused-ab.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
AG="512,2560,8192 1024,2304,7168 2048,2560,8192 2048,10240,7168 3072,1536,4096"
RS="512,5120,3584 1536,4096,1024 1536,3584,1024 3072,7168,5120"
for round in 1 2; do
  for build in old new; do
    A=.carry/augur; [ $build = old ] && A=.carry/augur_old
    timeout 120 $A overlap tp --gpus 1 --ops all-gather --start held --samples 10 \
      --patterns gemm,fused-push:1:8 $AG 2>> "$OUT/fused-ab.err" | sed "s/^/$build,$round,/" >> "$OUT/fused-ab.csv"
    timeout 120 $A overlap tp --gpus 1 --ops reduce-scatter --start held --samples 10 \
      --patterns gemm,fused-reduce:0 $RS 2>> "$OUT/fused-ab.err" | sed "s/^/$build,$round,/" >> "$OUT/fused-ab.csv"
    echo "round $round $build done"
  done
done
