#!/usr/bin/env bash
# Issue 24, one H200: the shapes where final-check/'s auto.csv (run after auto-old.csv) showed the
# same kernel (128 x 256, unsplit) 3-10% slower in this build than in 209f558's: the kernel named,
# cuBLASLt beside, the two builds alternating, this one first (same-kernel.csv; column `build`
# added: old / new, and the round).
# From the repository root with .carry/augur.xz and .carry/augur_old.xz:  bash bench/results/tail-split-h200-2026-11-29/same-kernel.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source bench/unpack-carry.sh
S="2560,8192,7168 3072,8192,7168 6144,10240,7168 6144,7168,4096 2048,3584,1024 4096,3584,1024 3072,4096,1024"
for round in 1 2; do
  for build in new old; do
    A=.carry/augur; [ $build = old ] && A=.carry/augur_old
    timeout 200 $A overlap gemm --reps 7 --kernels augur_tma_128x256,cublaslt $S 2>> "$OUT/same-kernel.err" \
      | sed "s/^/$build,$round,/" >> "$OUT/same-kernel.csv"
    echo "round $round $build rc=$?"
  done
done
