#!/usr/bin/env bash
# Issue 24, one H200: where `fused-reduce:0:K`'s time goes at small M against `fused-reduce:0`
# (the k split was slower than no split at 16 x 8192 x 7168 though it doubles the blocks). A
# diagnostic build (phases.patch on a19d04b, carried as .carry/augur_phase.xz): the globaltimer
# per block at P0 kernel entry, P1 the producer's helper warps' start, P2 this GPU's rows zeroed,
# P3 the block counted in (the last block's ready words), P4 the first ready word seen, P5 the
# first unit's products done, P6 the block's last counts released, P7 the launch's end, P8 the
# last split unit's products done, P9 that unit's partial added and fenced; each call synchronised
# and printed (from a barrier), then the product build (.carry/augur.xz) timed from a held start.
#   bash bench/results/split-phases-h200-2026-11-29/phases.sh   (writes $OUT/phases.txt, $OUT/timed.csv)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
for s in 16,8192,7168:fused-reduce:0,fused-reduce:0:2 16,8192,2048:fused-reduce:0,fused-reduce:0:2,fused-reduce:0:8 \
         16,4096,3584:fused-reduce:0,fused-reduce:0:4 16,4096,2048:fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4; do
  echo "== $s" >> "$OUT/phases.txt"
  AUGUR_PHASES=1 timeout 60 .carry/augur_phase overlap tp --gpus 1 --ops reduce-scatter --start barrier \
    --samples 3 --warmup 1 --patterns "${s#*:}" "${s%%:*}" >> "$OUT/phases.txt" 2>&1
  echo "rc=$?" >> "$OUT/phases.txt"
done
timeout 120 .carry/augur overlap tp --gpus 1 --ops reduce-scatter --samples 15 \
  --patterns gemm,fused-reduce:0,fused-reduce:0:2,fused-reduce:0:4,fused-reduce:0:8 \
  16,8192,7168 16,8192,2048 16,4096,3584 16,4096,2048 > "$OUT/timed.csv" 2> "$OUT/timed.err"
echo "timed rc=$?"
