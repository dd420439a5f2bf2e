#!/usr/bin/env bash
# A tensor-parallel layer's GEMM + collective between GPUs (issue 24): `augur overlap tp` (all-
# gather + GEMM and GEMM + reduce-scatter, every pattern, checked) on each GPU count in GPUS
# (default "2 4"), the default grid (Llama-3-8B's QKV and gate+up with K 4096, an 8192 x 8192
# layer; M 512 to 16384), bf16. Through the device
# tool with carry [".carry"] (.carry/augur.xz) on a machine with enough GPUs:
#   GPUS="2 4" bash bench/tp-gpu.sh          (writes $OUT/tp-<gpus>.csv and .err)
# Not yet run (written 2026-11-27 without device time left).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/unpack-carry.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
for g in ${GPUS:-2 4}; do
  timeout 280 .carry/augur overlap tp --gpus "$g" ${TP_ARGS:-} > "$OUT/tp-$g.csv" 2> "$OUT/tp-$g.err"
  echo "$g GPUs rc=$?"; column -s, -t < "$OUT/tp-$g.csv" | head -60; tail -3 "$OUT/tp-$g.err"
done
