#!/usr/bin/env bash
# The TMA GEMM's producer, while it waits for A's rows, loading the unit's first B stages and
# fetching up to 8 more B boxes into L2 (issue 24), against the committed build, on one H200:
# `augur overlap arrive` (A's rows arriving by a copy and a flag on a second stream while the
# row-gated GEMM runs; A poisoned until then, checked exactly), the builds alternating, three
# rounds. With .carry/augur.xz (committed) and .carry/augur_new.xz (l2-prefetch.patch), from the
# repository root: bash bench/results/l2-prefetch-h200-2026-11-29/ab.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
AR=(32,2048,3584 32,2304,7168 32,7168,5120 32,10240,7168 128,7168,5120 128,10240,7168 512,2304,7168 512,10240,7168 2048,7168,4096)
for round in 1 2 3; do
  for b in augur augur_new; do
    timeout 90 .carry/$b overlap arrive --blocks 1,4 "${AR[@]}" 2>> "$OUT/ab.err" | sed "s/^/$round,$b,/" >> "$OUT/arrive.csv"
    echo "arrive $b $round rc=${PIPESTATUS[0]}"
  done
done
