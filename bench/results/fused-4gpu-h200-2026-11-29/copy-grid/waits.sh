#!/usr/bin/env bash
# Issue 24, four H200s, one call: `own-bulk` with the copy kernel waiting itself
# (AUGUR_TP_COPY_WAITS=1: the peers' ready words spun on at its start, this GPU's arrival words
# by block 0 at its end, the GEMM after the kernel) against the stream waits
# (cuStreamWaitValue32 on the ready words before the launch and on the arrival words before the
# GEMM), same build, alternating, two rounds, 8 all-gather layers (M 512-2048); the odd shapes
# checked first. From the repository root with .carry/augur.xz:
#   bash bench/results/fused-4gpu-h200-2026-11-29/copy-grid/waits.sh   (writes $OUT/waits*.csv)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
T0=$SECONDS
AUGUR_TP_COPY_WAITS=1 timeout 60 .carry/augur overlap tp --gpus 4 --ops all-gather \
  --patterns bulk,own-bulk 16,2048,4096 40,4096,4096 68,6144,4096 200,2048,2056 \
  > "$OUT/waits-odd.csv" 2>> "$OUT/waits.err"
echo "odd rc=$? $((SECONDS - T0)) s"
L=()
for m in 512 1024 2048; do for w in 6144,4096 10240,8192 28672,4096; do L+=("$m,$w"); done; done
for round in 1 2; do
  for mode in stream kernel; do
    if [ $mode = kernel ]; then export AUGUR_TP_COPY_WAITS=1; else unset AUGUR_TP_COPY_WAITS; fi
    timeout 90 .carry/augur overlap tp --gpus 4 --ops all-gather --patterns gemm,bulk,own-bulk "${L[@]}" \
      | sed "s/^/$mode,$round,/" >> "$OUT/waits-ab.csv" 2>> "$OUT/waits.err"
    echo "$mode $round rc=${PIPESTATUS[0]} $((SECONDS - T0)) s"
  done
done
