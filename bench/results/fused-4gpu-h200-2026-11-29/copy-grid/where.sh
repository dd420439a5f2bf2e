#!/usr/bin/env bash
# Issue 24, four H200s, one call: where `own-bulk`'s all-gather time goes at M 512-2048 (its
# copy ~51 us for the 6 MiB a GPU takes in at 1024 x 6144 x 4096). augur's all-gathers alone
# (`collect comm`: back-to-back batches, bf16, 2-16 MiB in all), then the layer's patterns with
# each call timed alone (--batch 1) and 8 calls back to back a sample (--batch 8: per-call
# latency, the stream waits on peers' words included, overlapped with the next call's work).
# From the repository root with .carry/augur.xz:
#   bash bench/results/fused-4gpu-h200-2026-11-29/copy-grid/where.sh   (writes $OUT/where-*.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
T0=$SECONDS
timeout 120 .carry/augur collect comm --gpus 4 --collectives all-gather --dtypes bf16 \
  --sizes 2MiB,4MiB,8MiB,16MiB --patterns nccl,ll,pull,push,copy-engine --out "$OUT/where-comm.csv" 2>> "$OUT/where.err"
echo "comm rc=$? $((SECONDS - T0)) s"
L=(512,6144,4096 1024,6144,4096 2048,6144,4096 1024,10240,8192)
for b in 1 8; do
  timeout 120 .carry/augur overlap tp --gpus 4 --ops all-gather --batch $b \
    --patterns gemm,comm,bulk,own-bulk,ll-bulk,pull-bulk,pc-push:1:8 "${L[@]}" \
    > "$OUT/where-tp-batch$b.csv" 2>> "$OUT/where.err"
  echo "tp batch $b rc=$? $((SECONDS - T0)) s"
done
