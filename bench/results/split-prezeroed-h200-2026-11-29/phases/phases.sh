#!/usr/bin/env bash
# Issue 24, one H200: where `fused-reduce:0[:K]`'s time goes with the prezeroed split (a
# diagnostic build: phases.patch on a52ca1b, carried as .carry/augur_phase.xz; the points of
# ../../split-phases-h200-2026-11-29/, but P4 is now rs_convert's wait done (the prezeroed way
# waits for no ready word) and P9 the last unit's halves issued and read); each call
# synchronised and printed, from a barrier.
#   bash bench/results/split-prezeroed-h200-2026-11-29/phases/phases.sh   (writes $OUT/phases.txt)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for s in 16,4096,2048:fused-reduce:0,fused-reduce:0:4 16,4096,1024:fused-reduce:0:4 \
         16,8192,2048:fused-reduce:0:2,fused-reduce:0:8 64,4096,3584:fused-reduce:0:4 \
         256,4096,2048:fused-reduce:0; do
  echo "== $s" >> "$OUT/phases.txt"
  AUGUR_PHASES=1 timeout 60 .carry/augur_phase overlap tp --gpus 1 --ops reduce-scatter --start barrier \
    --samples 3 --warmup 1 --patterns "${s#*:}" "${s%%:*}" >> "$OUT/phases.txt" 2>&1
  echo "rc=$?" >> "$OUT/phases.txt"
done
