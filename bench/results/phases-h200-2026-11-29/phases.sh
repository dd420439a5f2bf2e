#!/usr/bin/env bash
# Issue 24, one H200, a diagnostic build (phases.patch on 36db38f, .carry/augur_phase.xz): where
# the time of one `fused-reduce:0[:K]` launch goes, block by block (the globaltimer at 8 points:
# P0 kernel entry, P1 the consumers' start, P2 this GPU's rows zeroed, P3 the block counted in
# (fence, atomic; the last block's ready words), P4 the first ready word seen, P5 the first unit's
# products done (its first store), P6 the block's last counts released, P7 the launch's end
# (block 0's wait for every count, or the f32 sum rounded)), each call synchronised and printed
# (from a barrier: a held start would wait on the host that waits here).
#   bash bench/results/phases-h200-2026-11-29/phases.sh   (writes $OUT/phases.txt)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for s in 16,4096,1024 64,4096,1024 128,4096,1024 16,8192,2048 256,4096,2048 1024,4096,3584; do
  echo "== $s" >> "$OUT/phases.txt"
  AUGUR_PHASES=1 timeout 60 .carry/augur_phase overlap tp --gpus 1 --ops reduce-scatter --start barrier \
    --samples 3 --warmup 1 --patterns fused-reduce:0,fused-reduce:0:2 "$s" >> "$OUT/phases.txt" 2>&1
  echo "rc=$?" >> "$OUT/phases.txt"
done
